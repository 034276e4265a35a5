"""One data set, every engine: interval length and wall time (docs: Choosing an engine).

Design of the ldp-sgd paper's Table 1 (n = 40,000, x = (1, s), s ~ N(0, I_3),
N(0, 0.5^2) errors, theta0 = 1), Huber loss, mu = 1, declared bounds, defaults
otherwise; AdaSSP and the non-private OLS for reference.

Run:  python benchmarks/compare_engines.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

import dpreg

FORMULA = "y ~ x1 + x2 + x3"
BOUNDS = {"y": (-10, 12), "x1": (-4, 4), "x2": (-4, 4), "x3": (-4, 4)}


def main(n: int = 40_000) -> None:
    warnings.simplefilter("ignore", dpreg.PrivacyLeakWarning)
    rng = np.random.default_rng(5)
    s = rng.standard_normal((n, 3))
    data = pd.DataFrame({"y": 1 + s.sum(axis=1) + 0.5 * rng.standard_normal(n),
                         "x1": s[:, 0], "x2": s[:, 1], "x3": s[:, 2]})
    rows = []
    fits = [("DP-SGD", dpreg.dp_huber, {"engine": "dpsgd"}),
            ("DP-GD", dpreg.dp_huber, {"engine": "dpgd"}),
            ("LDP-SGD", dpreg.dp_huber, {"engine": "ldp_sgd"}),
            ("AdaSSP (least squares)", dpreg.dp_ols, {"engine": "adassp"})]
    for label, fit, kw in fits:
        t0 = time.perf_counter()
        res = fit(FORMULA, data, mu=1, bounds=BOUNDS, random_state=1, **kw)
        ci = res.conf_int().to_numpy()
        rows.append({"engine": label, "cov_type": res.cov_type,
                     "mean 95% length": (ci[:, 1] - ci[:, 0]).mean(),
                     "seconds": time.perf_counter() - t0})
    oracle = dpreg.oracle(FORMULA, data)
    ci = oracle.conf_int().to_numpy()
    rows.append({"engine": "OLS (NON-PRIVATE)", "cov_type": "oracle",
                 "mean 95% length": (ci[:, 1] - ci[:, 0]).mean(), "seconds": float("nan")})
    print(pd.DataFrame(rows).round(4).to_string(index=False))


if __name__ == "__main__":
    main()
