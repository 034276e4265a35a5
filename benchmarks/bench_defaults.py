"""Wall time of private fits at the package's defaults (issue 14, item 6).

Two workloads a user meets first: statsmodels' ``fair`` data (n = 6,366, p = 10: an OLS
of rate_marriage in natural units with honest declared bounds) and a simulated
n = 10^6, p = 20 design. Each fit runs once to compile (numba cache), then is timed.
Targets: at most 1 s for the first, 10 s for the second, on 2 cores.

    python benchmarks/bench_defaults.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

import dpreg

FAIR_FORMULA = ("rate_marriage ~ np.log(yrs_married) + age + educ + children"
                " + C(religious) + age:educ")
FAIR_BOUNDS = {"rate_marriage": (1, 5), "age": (17.5, 42), "educ": (9, 20),
               "children": (0, 5.5), "yrs_married": (0.5, 23), "np.log(yrs_married)":
               (np.log(0.5), np.log(23))}
FAIR_LEVELS = {"religious": [1, 2, 3, 4]}


def fair_data() -> pd.DataFrame:
    import statsmodels.api as sm

    return sm.datasets.fair.load_pandas().data


def large_data(n: int = 1_000_000, p: int = 20, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p - 1))
    y = 1 + X @ np.linspace(-1, 1, p - 1) + rng.standard_normal(n)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(1, p)])
    df["y"] = np.clip(y, -10, 10)
    bounds = {f"x{j}": (-1, 1) for j in range(1, p)} | {"y": (-10, 10)}
    return df, bounds


def timed(fn, repeats: int = 1) -> float:
    fn()  # compile / warm the numba cache
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    warnings.simplefilter("ignore")
    fair = fair_data()
    t_fair = timed(lambda: dpreg.dp_ols(FAIR_FORMULA, fair, mu=10, bounds=FAIR_BOUNDS,
                                        levels=FAIR_LEVELS, random_state=1), repeats=3)
    print(f"fair OLS (n = {len(fair)}, p = 10), defaults, mu = 10: {t_fair:.2f} s "
          "(target 1 s)")
    df, bounds = large_data()
    formula = "y ~ " + " + ".join(c for c in df.columns if c != "y")
    t_large = timed(lambda: dpreg.dp_ols(formula, df, mu=1, bounds=bounds, random_state=1))
    print(f"simulated OLS (n = {len(df)}, p = 20), defaults, mu = 1: {t_large:.2f} s "
          "(target 10 s)")


if __name__ == "__main__":
    main()
