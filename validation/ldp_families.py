"""Coverage of PRS, PPI and PBM under LDP-SGD for logistic and robust expectile
regression (issue 5), in the ldp-sgd paper's design: x = (1, s), s ~ N(0, I_3),
theta0 = 1 (their Figure 1 and Examples 2-3), Mallows weights, alpha = 0.51.

Logistic: y ~ Bernoulli(1 / (1 + exp(-x'theta0))), B0 = sqrt(2).
Robust expectile (c = 1.345, tau in {0.2, 0.8}): y = x'theta0 + e, e ~ N(0, 0.5^2); the
target is theta0 with the intercept shifted by the root s of
E[|tau - 1{e < s}| psi_c(e - s)] = 0 (quadrature), B0 = sqrt(2) c max(tau, 1 - tau).
As in Table 1, path and plug-in matrices each get mu (total sqrt(3) mu).

Run:  python validation/ldp_families.py --reps 300 --n 100000
      (writes validation/results/ldp_families.csv)
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy import integrate, optimize, stats

import dpreg

C = 1.345
METHODS = ("plugin", "batch_means", "rs")


def expectile_shift(tau: float) -> float:
    dens = stats.norm(scale=0.5).pdf

    def score(s):
        def f(e):
            r = e - s
            return (tau if r >= 0 else 1 - tau) * np.clip(r, -C, C) * dens(e)
        return integrate.quad(f, -np.inf, s)[0] + integrate.quad(f, s, np.inf)[0]

    return optimize.brentq(score, -3, 3, xtol=1e-12)


def one_rep(family, tau, shift, mu, n, seed):
    rng = np.random.default_rng(seed)
    s = rng.standard_normal((n, 3))
    eta = 1 + s.sum(axis=1)
    data = pd.DataFrame({"x1": s[:, 0], "x2": s[:, 1], "x3": s[:, 2]})
    truth = np.ones(4)
    if family == "logistic":
        data["y"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
        res = dpreg.dp_logit("y ~ x1 + x2 + x3", data, engine="ldp_sgd",
                             mu=math.sqrt(3) * mu, cov_type="plugin", weights="mallows",
                             random_state=seed + 1)
    else:
        data["y"] = eta + 0.5 * rng.standard_normal(n)
        res = dpreg.dp_expectile("y ~ x1 + x2 + x3", data, tau=tau, engine="ldp_sgd",
                                 mu=math.sqrt(3) * mu, cov_type="plugin",
                                 random_state=seed + 1)
        truth[0] += shift
    rows = []
    for method in METHODS:
        ci = res.conf_int(method=method).to_numpy()
        rows.append({"family": family if family == "logistic" else f"expectile tau={tau:g}",
                     "mu": mu, "n": n, "method": method,
                     "cover": float(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1]))),
                     "length": float(np.mean(ci[:, 1] - ci[:, 0]))})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--mu", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                         "ldp_families.csv"))
    args = ap.parse_args(argv)
    t0 = time.time()
    designs = [("logistic", 0.5, 0.0)] + [("expectile", tau, expectile_shift(tau))
                                           for tau in (0.2, 0.8)]
    tasks = [(f, tau, sh, mu, 1000 * r + 29) for f, tau, sh in designs for mu in args.mu
             for r in range(args.reps)]
    out = Parallel(n_jobs=args.jobs, batch_size=8)(
        delayed(one_rep)(f, tau, sh, mu, args.n, seed) for f, tau, sh, mu, seed in tasks)
    raw = pd.DataFrame([row for rows in out for row in rows])
    g = raw.groupby(["family", "mu", "n", "method"])
    table = pd.DataFrame({
        "CP": 100 * g["cover"].mean(),
        "CP_se": 100 * g["cover"].std(ddof=1) / np.sqrt(g.size()),
        "AL_x100": 100 * g["length"].mean(),
        "reps": g.size()}).reset_index()
    table["minutes"] = (time.time() - t0) / 60
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    with pd.option_context("display.width", 160):
        print(table.round(3).to_string(index=False))
    print(f"{len(tasks)} fits in {(time.time() - t0) / 60:.1f} min -> {args.out}")


if __name__ == "__main__":
    main()
