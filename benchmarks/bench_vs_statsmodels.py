"""Wall time of dpreg's default private fits against statsmodels' non-private fit of the
same formula on the same data, in one run (issue 30, item 3: target at most 3 times).

Three workloads: statsmodels' ``fair`` OLS (n = 6,366, p = 10), a ``fair`` logit of
whether any affair was reported, and a simulated OLS with n = 10^6, p = 20, at the
defaults (for OLS the engine the engines study's rule picks, for the logit at mu = 5
noisy Newton, n mu >= 25,000; the fit's engine is printed); the three again with
``engine="dpsgd"``. Each fit runs
once to warm numba's cache and statsmodels' imports, then the best of ``repeats`` runs
is kept for each side (``bench_defaults.timed``; three runs at 10^6 rows, whose random
reads of memory vary by up to a third from run to run on a shared machine). The ratio
is what a user sees: formula parsing included on both sides.

    python benchmarks/bench_vs_statsmodels.py
"""

from __future__ import annotations

import warnings

import numpy as np  # noqa: F401 - the formulas call np.log, looked up here
import statsmodels.formula.api as smf
from bench_defaults import FAIR_BOUNDS, FAIR_FORMULA, FAIR_LEVELS, fair_data, large_data, timed

import dpreg

LOGIT_FORMULA = "any_affair ~ np.log(yrs_married) + age + educ + children + C(religious)"


def main() -> None:
    warnings.simplefilter("ignore")
    fair = fair_data()
    fair["any_affair"] = (fair["affairs"] > 0).astype(float)
    logit_bounds = {k: v for k, v in FAIR_BOUNDS.items() if k != "rate_marriage"}
    logit_bounds["any_affair"] = (0, 1)
    big, big_bounds = large_data()
    big_formula = "y ~ " + " + ".join(c for c in big.columns if c != "y")
    rows = [
        ("fair OLS", 5,
         lambda: dpreg.dp_ols(FAIR_FORMULA, fair, mu=5, bounds=FAIR_BOUNDS, levels=FAIR_LEVELS,
                              random_state=1),
         lambda: smf.ols(FAIR_FORMULA, fair).fit()),
        ("fair logit", 5,
         lambda: dpreg.dp_logit(LOGIT_FORMULA, fair, mu=5, bounds=logit_bounds,
                                levels=FAIR_LEVELS, random_state=1),
         lambda: smf.logit(LOGIT_FORMULA, fair).fit(disp=0)),
        ("simulated OLS n=1e6 p=20", 3,
         lambda: dpreg.dp_ols(big_formula, big, mu=1, bounds=big_bounds, random_state=1),
         lambda: smf.ols(big_formula, big).fit()),
        # DP-SGD, the default before the engines study's rule (linear) and the Newton
        # rule (logistic), and the engine a user gets with engine="dpsgd" or its options
        ("fair OLS (dpsgd)", 5,
         lambda: dpreg.dp_ols(FAIR_FORMULA, fair, mu=5, bounds=FAIR_BOUNDS, levels=FAIR_LEVELS,
                              engine="dpsgd", random_state=1),
         lambda: smf.ols(FAIR_FORMULA, fair).fit()),
        ("fair logit (dpsgd)", 5,
         lambda: dpreg.dp_logit(LOGIT_FORMULA, fair, mu=5, bounds=logit_bounds,
                                levels=FAIR_LEVELS, engine="dpsgd", random_state=1),
         lambda: smf.logit(LOGIT_FORMULA, fair).fit(disp=0)),
        ("simulated OLS n=1e6 (dpsgd)", 3,
         lambda: dpreg.dp_ols(big_formula, big, mu=1, bounds=big_bounds, engine="dpsgd",
                              random_state=1),
         lambda: smf.ols(big_formula, big).fit()),
    ]
    print(f"{'fit':<28}{'engine':<14}{'dpreg (s)':>10}{'statsmodels (s)':>17}{'ratio':>8}")
    for name, repeats, private, public in rows:
        engine = private().engine  # also warms numba's cache before the timing
        t_dp = timed(private, repeats)
        t_sm = timed(public, repeats)
        print(f"{name:<28}{engine:<14}{t_dp:>10.3f}{t_sm:>17.3f}{t_dp / t_sm:>8.1f}")


if __name__ == "__main__":
    main()
