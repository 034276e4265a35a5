"""Why logistic plug-in intervals undercover at small n mu: bias of the averaged iterate.

The robustness study's one failing cell (logistic, n = 1,000, p = 3, mu = 1). For each
of ``--reps`` data sets (seeds 1000, 1001, ...) from
:func:`dpreg.studies.robustness.natural_units_design`, fit ``dp_logit`` at the defaults
(plus the options given) and report, over the fits that did not warn, the bias of each
coefficient in units of its standard deviation across replications, that standard
deviation against the mean plug-in standard error, and the plug-in coverage.

    python validation/logistic_bias.py --reps 100
    python validation/logistic_bias.py --reps 100 --lr 0.2
    python validation/logistic_bias.py --reps 100 --steps 1000000
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import dpreg
from dpreg.exceptions import ConvergenceWarning
from dpreg.studies.robustness import natural_units_design


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--lr", type=float)
    parser.add_argument("--steps", type=int)
    args = parser.parse_args()
    options = {k: v for k, v in (("lr", args.lr), ("steps", args.steps)) if v is not None}
    errors, scales, warned = [], [], []
    for r in range(args.reps):
        rng = np.random.default_rng(1000 + r)
        data, formula, bounds, truth = natural_units_design(1000, 3, rng, family="logistic",
                                                            errors="hetero")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpreg.dp_logit(formula, data, mu=1, bounds=bounds, random_state=r,
                                 **options)
        warned.append(any(issubclass(w.category, ConvergenceWarning) for w in caught))
        errors.append(res.params.to_numpy() - truth)
        scales.append(res.inferences["plugin"].scale)
    errors, scales, warned = np.array(errors), np.array(scales), np.array(warned)
    quiet = ~warned
    sd = errors[quiet].std(axis=0)
    print(f"options {options}: {warned.mean():.0%} of {args.reps} fits warned")
    print("bias / sd        ", np.round(errors[quiet].mean(axis=0) / sd, 2))
    print("sd of estimates  ", np.round(sd, 3))
    print("mean plug-in s.e.", np.round(scales[quiet].mean(axis=0), 3))
    covered = np.abs(errors) <= 1.96 * scales
    print("plug-in coverage ", np.round(covered[quiet].mean(axis=0), 3))


if __name__ == "__main__":
    main()
