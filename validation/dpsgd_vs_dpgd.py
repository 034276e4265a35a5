"""DP-SGD versus DP-GD as iterations grow (dpsgd-inference paper, Section 6.2, Figure 3).

Linear model of Section 6.1 (identity design): n = 1000, p = 3, x ~ N(0, I),
theta* ~ U[0, 1]^3 drawn per replication, N(0, 1) errors, no intercept, mu = 2 (GDP).
Both engines clip per-example gradients at 6; DP-SGD clips design rows at x_bound = 4 for
its private Hessian (as validation/dpsgd_coverage.py).

* DP-SGD (``engine="dpsgd"``, batch size 1, lr decay 0.501) with T1 = n^kappa steps,
  kappa in {1.5, ..., 2.0} (the top axis of Figure 3), plug-in intervals with all three
  variance parts (the paper's "plug-in with finite-sample correction").
* DP-GD (``engine="dpgd"``, step 1/2) with T2 in {5, ..., 30} steps (the bottom axis):
  - ``dpgd_last_plugin``: the last iterate with the interval the paper describes for
    DP-GD, a plug-in whose privacy part "only considers noise added at the final
    iteration": variance ``s^2 (X'X)^{-1} + (eta lambda)^2 I`` (the statistical part
    from the non-private OLS residual variance, which favours DP-GD);
  - ``dpgd_runs``: dpreg's independent-runs t interval (10 runs of T2 steps, last
    iterates, each run a tenth of mu^2), built for the empirical minimizer of the
    clipped objective; its coverage of that target (computed non-privately by noiseless
    clipped GD) is ``coverage_target``.

Coverage and RMSE are against theta*, as in Figure 3; ``mcse`` is the Monte Carlo
standard error of the coverage. Writes ``dpsgd_vs_dpgd.csv`` and ``dpsgd_vs_dpgd.png``.

Run:  python validation/dpsgd_vs_dpgd.py --reps 400 --out validation/results
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

N, P, MU, CLIP, X_BOUND, GD_LR = 1000, 3, 2.0, 6.0, 4.0, 0.5
KAPPAS = (1.5, 1.6, 1.7, 1.8, 1.9, 2.0)
T2S = (5, 10, 15, 20, 25, 30)
Z975 = 1.959963984540054


def clipped_minimizer(X, y, gamma, lr=GD_LR, tol=1e-13):
    """Empirical minimizer of the clipped objective (noiseless clipped GD to convergence)."""
    theta = np.zeros(X.shape[1])
    xn = np.linalg.norm(X, axis=1)
    for _ in range(1_000_000):
        r = X @ theta - y
        step = lr * (X.T @ (r * np.minimum(1.0, gamma / np.maximum(np.abs(r) * xn, 1e-300))))
        step /= X.shape[0]
        theta -= step
        if np.max(np.abs(step)) < tol:
            return theta
    raise RuntimeError("noiseless clipped GD did not converge")


def _row(method, iters, est, lo, hi, truth, kappa=np.nan, target=None):
    out = dict(method=method, iterations=iters, kappa=kappa,
               cover=np.mean((lo <= truth) & (truth <= hi)), length=np.mean(hi - lo),
               sq_err=np.mean((est - truth) ** 2))
    if target is not None:
        out["cover_target"] = np.mean((lo <= target) & (target <= hi))
    return out


def one_rep(seed):
    warnings.simplefilter("ignore", dpreg.PrivacyLeakWarning)
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0, 1, P)
    X = rng.normal(size=(N, P))
    y = X @ theta + rng.normal(size=N)
    model = DPRegression(y, X)
    X, y = model.design.exog, model.design.endog
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    stat_var = np.sum((y - X @ ols) ** 2) / (N - P) * np.diag(np.linalg.inv(X.T @ X))
    target = clipped_minimizer(X, y, CLIP)
    seeds = iter(np.random.SeedSequence(seed).spawn(len(KAPPAS) + 2 * len(T2S)))
    rows = []
    for kappa in KAPPAS:
        steps = int(round(N ** kappa))
        res = model.fit(mu=MU, steps=steps, x_bound=X_BOUND, clip=CLIP, batch_size=1,
                        condition="none", random_state=next(seeds))  # the paper's DP-SGD
        ci = res.conf_int(0.05, method="plugin").to_numpy()
        rows.append(_row("dpsgd_plugin", steps, res.params.to_numpy(), ci[:, 0], ci[:, 1],
                         theta, kappa))
    gd = dict(engine="dpgd", condition="none", mu=MU, clip=CLIP, lr=GD_LR, x_bound=X_BOUND)
    for t2 in T2S:
        res = model.fit(steps=t2, burn_in=0, n_estimates=5, aggregate="last",
                        random_state=next(seeds), **gd)
        lam = res.settings.value("noise_std")
        est = res.params.to_numpy()
        half = Z975 * np.sqrt(stat_var + (GD_LR * lam) ** 2)
        rows.append(_row("dpgd_last_plugin", t2, est, est - half, est + half, theta,
                         target=target))
        res = model.fit(steps=t2, cov_type="runs", runs=10, aggregate="last",
                        random_state=next(seeds), **gd)
        ci = res.conf_int(0.05).to_numpy()
        rows.append(_row("dpgd_runs", t2, res.params.to_numpy(), ci[:, 0], ci[:, 1], theta,
                         target=target))
    return rows


def run(reps, out_dir, n_jobs=2, entropy=20251123):
    seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(entropy).spawn(reps)]
    t0 = time.perf_counter()
    results = Parallel(n_jobs=n_jobs)(delayed(one_rep)(s) for s in seeds)
    seconds = time.perf_counter() - t0
    frame = pd.DataFrame([r for rep in results for r in rep])
    rows = []
    for (method, iters), g in frame.groupby(["method", "iterations"], sort=False):
        rows.append(dict(
            method=method, iterations=iters, kappa=g["kappa"].iloc[0], n=N, reps=len(g),
            rmse=math.sqrt(g["sq_err"].mean()), coverage=g["cover"].mean(),
            mcse=g["cover"].std(ddof=1) / math.sqrt(len(g)), length=g["length"].mean(),
            coverage_target=g["cover_target"].mean() if "cover_target" in g else np.nan))
    table = pd.DataFrame(rows)
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        table.to_csv(Path(out_dir) / "dpsgd_vs_dpgd.csv", index=False, float_format="%.5g")
        plot(table, Path(out_dir) / "dpsgd_vs_dpgd.png")
    return table, seconds


def plot(table, path):
    """Figure 3 layout: DP-SGD against kappa (top axis), DP-GD against T2 (bottom axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), constrained_layout=True)
    sgd = table[table.method == "dpsgd_plugin"]
    styles = {"dpgd_last_plugin": ("DP-GD last iterate, last-step plug-in", "tab:red", "s"),
              "dpgd_runs": ("DP-GD independent runs (t, m = 10)", "tab:orange", "^")}
    for ax, col, label in zip(axes, ("rmse", "coverage", "length"),
                              ("RMSE", "coverage of theta* (95% nominal)", "CI length"),
                              strict=True):
        for method, (name, color, marker) in styles.items():
            g = table[table.method == method]
            ax.plot(g.iterations, g[col], marker=marker, color=color, label=name)
        ax.set_xlabel("DP-GD iterations T2")
        ax.set_ylabel(label)
        top = ax.twiny()
        top.plot(sgd.kappa, sgd[col], marker="o", color="tab:blue",
                 label="DP-SGD plug-in (T1 = n^kappa)")
        top.set_xlabel("DP-SGD: kappa in T1 = n^kappa")
        if col == "coverage":
            ax.axhline(0.95, color="grey", ls="--", lw=1)
            ax.set_ylim(0, 1.02)
        if col != "coverage":
            ax.set_yscale("log")
        if col == "rmse":
            h1, l1 = ax.get_legend_handles_labels()
            h2, l2 = top.get_legend_handles_labels()
            ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper right")
    fig.suptitle(f"DP-SGD vs DP-GD, linear model, n = {N}, p = {P}, mu = {MU:g} "
                 f"({int(table.reps.iloc[0])} replications)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="validation/results")
    args = ap.parse_args()
    table, seconds = run(args.reps, args.out, args.jobs)
    print(table.round(4).to_string(index=False))
    print(f"\n{args.reps} replications in {seconds / 60:.1f} min on {args.jobs} job(s)")


if __name__ == "__main__":
    main()
