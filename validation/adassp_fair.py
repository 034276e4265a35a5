"""AdaSSP on statsmodels' ``fair`` OLS: how often its intervals contain OLS, and its
ridge warning as a test (issue 26).

The model of ``benchmarks/bench_defaults.py`` (rate_marriage on log years married, age,
schooling, children, religiousness and age x schooling, declared bounds and levels) at
(epsilon, 1e-5) for epsilon 1, 3 and 10, 20 seeds each. Per budget: the share of fits
that warn (the ridge is positive), and the share of (coefficient, fit) pairs whose
interval contains statsmodels' OLS estimate, among the warned and the unwarned fits.

    python validation/adassp_fair.py
"""

from __future__ import annotations

import pathlib
import sys
import warnings

import numpy as np
import statsmodels.formula.api as smf

import dpreg
from dpreg.exceptions import ConvergenceWarning

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "benchmarks"))
from bench_defaults import FAIR_BOUNDS, FAIR_FORMULA, FAIR_LEVELS, fair_data  # noqa: E402

OUT = pathlib.Path(__file__).parent / "results" / "adassp_fair.txt"


def main(seeds: int = 20) -> None:
    fair = fair_data()
    ols = smf.ols(FAIR_FORMULA, fair).fit().params.to_numpy()  # same column order
    lines = []
    for eps in (1.0, 3.0, 10.0):
        warned, inside = [], {True: [], False: []}
        for seed in range(seeds):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = dpreg.dp_ols(FAIR_FORMULA, fair, bounds=FAIR_BOUNDS, levels=FAIR_LEVELS,
                                   engine="adassp", epsilon=eps, delta=1e-5,
                                   random_state=seed)
            w = any(issubclass(c.category, ConvergenceWarning) for c in caught)
            ci = res.conf_int().to_numpy()
            warned.append(w)
            inside[w].extend((ci[:, 0] <= ols) & (ols <= ci[:, 1]))

        def share(v):
            return f"{np.mean(v):.2f}" if v else "-"

        lines.append(f"epsilon = {eps:g}: warned {np.mean(warned):.2f}; contains OLS: all "
                     f"{share(inside[True] + inside[False])}, warned {share(inside[True])}, "
                     f"unwarned {share(inside[False])}")
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text + "\n")


if __name__ == "__main__":
    main()
