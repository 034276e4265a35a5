"""Which linear-regression intervals cover under strong heteroskedasticity: the check
behind the rule that the linear family's default interval must not assume
homoskedastic errors (issue 30, item 2).

Design: ``x ~ U(0, 10)`` (declared box ``[0, 10]``), ``y = 1 + 0.5 x + 2 |x - 5| e``,
``e ~ N(0, 1)``, the outcome clipped to its declared box ``[-40, 40]`` (a negligible
share of rows). The error variance grows towards both ends of the box, where the
slope's leverage is, so an interval built on one common error variance is too short
(White 1980). The slope's truth is 0.5 (the clipping is symmetric about the line up to
a tail share of 1e-4). Per ``n`` and ``mu``, ``reps`` data sets; for each interval, the
share covering the slope, its mean length over statsmodels' HC1 interval on the same
data, and the share of private fits that warned:

* statsmodels OLS, non-robust (its default) and HC1;
* DP-SGD's plug-in (a sandwich of the private Hessian and score covariance);
* SSP's plug-in and parametric bootstrap (``sigma~^2 G~^-1``: homoskedastic);
* SSP's sandwich (``robust=True``: the released meat).

    python validation/heteroskedastic_intervals.py            # 200 data sets per cell
    python validation/heteroskedastic_intervals.py --n 2000 --mu 2 5  # the recorded run,
    python validation/heteroskedastic_intervals.py --n 10000 --mu 2 5 --append  # in 2 parts
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

import dpreg
from dpreg.exceptions import ConvergenceWarning

OUT = pathlib.Path(__file__).parent / "results" / "heteroskedastic_intervals.txt"
BOUNDS = dict(x=(0.0, 10.0), y=(-40.0, 40.0))
SLOPE = 0.5
#: (label, fit options, interval method)
PRIVATE = (("DP-SGD plug-in", dict(engine="dpsgd"), "plugin"),
           ("SSP plug-in", dict(engine="ssp"), "plugin"),
           ("SSP bootstrap", dict(engine="ssp"), "pboot"),
           ("SSP sandwich", dict(engine="ssp", robust=True, cov_type="sandwich"),
            "sandwich"))


def simulate(n: int, rng: np.random.Generator) -> pd.DataFrame:
    x = rng.uniform(0, 10, n)
    y = np.clip(1 + SLOPE * x + 2 * np.abs(x - 5) * rng.standard_normal(n), *BOUNDS["y"])
    return pd.DataFrame(dict(x=x, y=y))


def cell(n: int, mu: float, reps: int, seed: int) -> list[str]:
    rng = np.random.default_rng([seed, n, int(mu * 100)])
    covered = {k: [] for k in ("OLS non-robust", "OLS HC1", *(p[0] for p in PRIVATE))}
    length = {k: [] for k in covered}
    warned = {p[0]: [] for p in PRIVATE}
    for rep in range(reps):
        data = simulate(n, rng)
        ols = smf.ols("y ~ x", data).fit()
        for label, fit in (("OLS non-robust", ols), ("OLS HC1", ols.get_robustcov_results("HC1"))):
            lo, hi = np.asarray(fit.conf_int())[1]
            covered[label].append(lo <= SLOPE <= hi)
            length[label].append(hi - lo)
        for label, options, method in PRIVATE:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = dpreg.dp_ols("y ~ x", data, bounds=BOUNDS, mu=mu,
                                   random_state=seed * 1000 + rep, **options)
            lo, hi = np.asarray(res.conf_int(method=method))[1]
            covered[label].append(lo <= SLOPE <= hi)
            length[label].append(hi - lo)
            warned[label].append(any(issubclass(w.category, ConvergenceWarning)
                                     for w in caught))
    reference = np.mean(length["OLS HC1"])
    mcse = np.sqrt(0.05 * 0.95 / reps)
    lines = [f"n = {n}, mu = {mu:g}, {reps} data sets (coverage MC s.e. {mcse:.3f} at 0.95)"]
    for label in covered:
        flag = f"  warned {np.mean(warned[label]):.2f}" if label in warned else ""
        lines.append(f"  {label:<16} covers {np.mean(covered[label]):.3f}  "
                     f"length / HC1 {np.mean(length[label]) / reference:.2f}{flag}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--n", type=int, nargs="+", default=[2000, 10_000])
    parser.add_argument("--mu", type=float, nargs="+", default=[2.0, 5.0])
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--append", action="store_true",
                        help="add to --out instead of replacing it (a run in parts)")
    args = parser.parse_args()
    start = time.perf_counter()
    lines = []
    for n in args.n:
        for mu in args.mu:
            lines += cell(n, mu, args.reps, args.seed)
            print("\n".join(lines[-(len(PRIVATE) + 3):]), flush=True)
    lines.append(f"({(time.perf_counter() - start) / 60:.1f} min: python "
                 f"validation/heteroskedastic_intervals.py {' '.join(sys.argv[1:])})")
    with open(args.out, "a" if args.append else "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
