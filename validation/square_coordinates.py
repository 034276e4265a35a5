"""A quadratic in natural units: the square's Legendre coordinate (issue 25, item 3).

A simulated log-wage equation ``lw ~ educ + exper + I(exper ** 2)`` (schooling about
N(13, 2.5) in [6, 20], experience Gamma(3, 6) capped at 45, the returns of a textbook
Mincer equation, noise sd 0.5) with codebook bounds (schooling 0-25, experience 0-60, log
wage -3 to 6), n = 2,000 and 5,000, mu = 5, 10 seeds, the defaults of DP-SGD and SSP.
Per cell: the share of coefficients whose private interval contains statsmodels' OLS
estimate, the share of fits without a ``ConvergenceWarning``, and the median length of
the private interval over the OLS one. Run at 3b26604 for the figures before the square
had its own coordinate (recorded in the convergence docs and the CHANGELOG).

    python validation/square_coordinates.py
"""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

import dpreg
from dpreg.exceptions import ConvergenceWarning

FORMULA = "lw ~ educ + exper + I(exper ** 2)"
BOUNDS = {"lw": (-3, 6), "educ": (0, 25), "exper": (0, 60)}
OUT = pathlib.Path(__file__).parent / "results" / "square_coordinates.txt"


def simulate(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    educ = np.clip(rng.normal(13, 2.5, n), 6, 20)
    exper = np.clip(rng.gamma(3, 6, n), 0, 45)
    lw = 1 + 0.08 * educ + 0.04 * exper - 0.0007 * exper ** 2 + rng.normal(0, 0.5, n)
    return pd.DataFrame({"lw": np.clip(lw, -3, 6), "educ": educ, "exper": exper})


def cell(engine: str, n: int, mu: float, seeds: int = 10) -> str:
    contains, unwarned, lengths = [], 0, []
    for seed in range(seeds):
        data = simulate(n, seed)
        ols = smf.ols(FORMULA, data).fit()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpreg.dp_ols(FORMULA, data, bounds=BOUNDS, mu=mu, engine=engine,
                               random_state=seed)
        unwarned += not any(issubclass(w.category, ConvergenceWarning) for w in caught)
        ci, ci0 = res.conf_int(), ols.conf_int()
        contains.append(((ci[0] <= ols.params) & (ols.params <= ci[1])).mean())
        lengths.append(((ci[1] - ci[0]) / (ci0[1] - ci0[0])).to_numpy())
    return (f"{engine:6s} n = {n:5d} mu = {mu:g}: contains {np.mean(contains):.2f}, "
            f"unwarned {unwarned / seeds:.1f}, median length / OLS "
            f"{np.median(lengths):.2f}")


def main() -> None:
    lines = [cell(engine, n, 5.0) for engine in ("dpsgd", "ssp") for n in (2000, 5000)]
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text + "\n")


if __name__ == "__main__":
    main()
