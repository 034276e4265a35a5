"""Coverage of the DP-GD iterate intervals (issue 6; dpgd-linear-regression paper, Figure 5).

Design of Section 4 of Brown et al. (2024): p = 10, theta* uniform on the unit sphere
(drawn per replication), x ~ N(0, I), N(0, 1) errors; gamma = 5 sqrt(p), eta = 1/3,
rho = 0.015 (zCDP), m = 10 runs/checkpoints/batches, burn-in 20 iterates. The paper does
not state n for Figures 5-6; n = 10,000 by default (see the user guide).

The target is what the intervals are for: the empirical minimizer of the clipped
objective, computed here non-privately by noiseless clipped gradient descent run to
convergence. For each total number of gradient iterations N (the x axis of Figure 5):

* batch means and checkpoints: one run of N steps (both constructions from one path);
* independent runs: 10 runs of N / 10 steps, each estimate the mean of its post-burn-in
  iterates (the paper's "average of the final few iterates"), each run paying a tenth
  of rho (absent when N / 10 <= burn-in, as in the paper).

Coverage is averaged over the 10 coordinates and the replications; ``mcse`` is its
Monte Carlo standard error (spread of the per-replication coverage / sqrt(reps)).
``cov_min``/``cov_max`` are the lowest/highest per-coordinate coverage (the paper's
error bars show percentiles across coordinates); ``coverage_theta_star`` is the coverage
of the population parameter, which these intervals do not target. ``length`` is the
mean interval length, ``ols_length`` the mean length of the textbook 95% OLS interval
for the population parameter (the dashed line of Figure 6), ``clip_share`` the
(non-private) share of clipped gradients.

Run:  python validation/dpgd_coverage.py --reps 300 --n 10000 --out validation/results
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

import dpreg
from dpreg.frontend.model import DPRegression
from dpreg.studies.reference import clipped_minimizer

P, RHO, LR, BURN_IN, M = 10, 0.015, 1 / 3, 20, 10
GAMMA = 5 * math.sqrt(P)
GRID = (300, 500, 1000, 2000, 4000, 8000)


def one_rep(n, grid, seed):
    warnings.simplefilter("ignore", dpreg.PrivacyLeakWarning)  # diagnostics=True, below
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=P)
    theta /= np.linalg.norm(theta)
    X = rng.normal(size=(n, P))
    y = X @ theta + rng.normal(size=n)
    model = DPRegression(y, X)
    X, y = model.design.exog, model.design.endog
    target = clipped_minimizer(X, y, GAMMA, lr=LR)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    s2 = np.sum((y - X @ ols) ** 2) / (n - P)
    ols_len = 2 * 1.959964 * np.sqrt(s2 * np.diag(np.linalg.inv(X.T @ X)))
    common = dict(engine="dpgd", condition="none", rho=RHO, clip=GAMMA, lr=LR,
                  x_bound=5 * math.sqrt(P),
                  burn_in=BURN_IN, n_estimates=M, diagnostics=True)
    rows = []
    fit_seeds = np.random.SeedSequence(seed).spawn(2 * len(grid))
    for i, total in enumerate(grid):
        fits = [("single", model.fit(steps=total, random_state=fit_seeds[2 * i], **common))]
        if total // M > BURN_IN:
            fits.append(("runs", model.fit(steps=total // M, cov_type="runs", runs=M,
                                           random_state=fit_seeds[2 * i + 1], **common)))
        for kind, res in fits:
            for name, inf in res.inferences.items():
                ci = res.conf_int(0.05, method=name).to_numpy()
                rows.append(dict(
                    construction=name, total_iters=total,
                    steps_per_run=total if kind == "single" else total // M,
                    cover=(ci[:, 0] <= target) & (target <= ci[:, 1]),
                    cover_star=(ci[:, 0] <= theta) & (theta <= ci[:, 1]),
                    length=ci[:, 1] - ci[:, 0], sq_err=(inf.center - target) ** 2,
                    ols_length=ols_len, clip_share=res.diagnostics["clip_share"],
                    noise_std=res.settings.value("noise_std")))
    return rows


def run(reps, n, out_dir, n_jobs=2, grid=GRID, entropy=20251122):
    seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(entropy).spawn(reps)]
    t0 = time.perf_counter()
    results = Parallel(n_jobs=n_jobs)(delayed(one_rep)(n, grid, s) for s in seeds)
    seconds = time.perf_counter() - t0
    frame = pd.DataFrame([r for rep in results for r in rep])
    rows = []
    for (name, total), g in frame.groupby(["construction", "total_iters"], sort=False):
        cover = np.stack(g["cover"].to_numpy())  # (reps, p)
        per_rep = cover.mean(axis=1)
        coord = cover.mean(axis=0)
        rows.append(dict(
            construction=name, total_iters=total, steps_per_run=int(g["steps_per_run"].iloc[0]),
            n=n, reps=len(g), coverage=per_rep.mean(),
            mcse=per_rep.std(ddof=1) / math.sqrt(len(g)),
            cov_min=coord.min(), cov_max=coord.max(),
            coverage_theta_star=np.stack(g["cover_star"].to_numpy()).mean(),
            length=np.stack(g["length"].to_numpy()).mean(),
            ols_length=np.stack(g["ols_length"].to_numpy()).mean(),
            rmse=math.sqrt(np.stack(g["sq_err"].to_numpy()).mean()),
            clip_share=g["clip_share"].mean(), noise_std=g["noise_std"].mean()))
    table = pd.DataFrame(rows).sort_values(["construction", "total_iters"], kind="stable")
    table.attrs["seconds"] = seconds
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        table.to_csv(Path(out_dir) / "dpgd_coverage.csv", index=False, float_format="%.5g")
    return table, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--grid", type=int, nargs="+", default=list(GRID))
    ap.add_argument("--out", default="validation/results")
    args = ap.parse_args()
    table, seconds = run(args.reps, args.n, args.out, args.jobs, tuple(args.grid))
    print(table.round(4).to_string(index=False))
    print(f"\n{args.reps} replications in {seconds / 60:.1f} min on {args.jobs} job(s)")


if __name__ == "__main__":
    main()
