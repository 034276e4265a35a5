"""The outcome's private range against its declared box, in one cell of the DP-SGD
coverage study (``validation/dpsgd_coverage.py``): Section 6.1's design (p = 3, no
intercept, identity covariance, N(0, 1) errors), n = 1000, m = 1, uniform sampling,
mu = 0.5, the outcome declared in (-10, 10). The same data sets and seeds are fitted with
``ranges="auto"`` (the outcome's range learned privately, the default) and
``ranges="declared"``. Per variant: the share of fits unwarned, the unwarned plug-in
intervals' coverage, and each slope's mean error with its standard error.

    python validation/outcome_range_bias.py --reps 200 > validation/results/outcome_range_bias.txt
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from joblib import Parallel, delayed

import dpreg
from dpreg.exceptions import ConvergenceWarning


def one(seed: int, ranges: str):
    sim = dpreg.datasets.simulate_linear(1000, p=3, cov="identity", random_state=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dpreg.dp_ols(sim.formula, sim.data, mu=0.5, batch_size=1, sampling="uniform",
                           x_bound=4.0, clip=6.0, bounds={"y": (-10.0, 10.0)},
                           condition="none", ranges=ranges, random_state=seed + 1)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    truth = sim.params.to_numpy()
    ci = res.conf_int(0.05, method="plugin").to_numpy()
    return warned, np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])), res.params.to_numpy() - truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    t0 = time.perf_counter()
    for ranges in ("auto", "declared"):
        out = Parallel(n_jobs=args.jobs)(delayed(one)(seed, ranges) for seed in range(args.reps))
        warned = np.array([o[0] for o in out])
        cover = np.array([o[1] for o in out])
        err = np.array([o[2] for o in out])
        print(f"ranges={ranges!r}: unwarned {1 - warned.mean():.3f}, unwarned plug-in coverage "
              f"{cover[~warned].mean():.3f}; mean error {np.round(err.mean(axis=0), 4)} "
              f"(s.e. {np.round(err.std(axis=0, ddof=1) / np.sqrt(len(err)), 4)}; "
              f"sd of an estimate {np.round(err.std(axis=0, ddof=1), 3)})")
    print(f"({(time.perf_counter() - t0) / 60:.1f} min: python validation/outcome_range_bias.py "
          f"--reps {args.reps})")


if __name__ == "__main__":
    main()
