"""Coverage of plug-in and random-scaling 95% intervals of DP-SGD (issue 3 validation).

Cells: batch size m in {1, 10, 50} x sampling {uniform, poisson} x mu {0.5, 2} x design
{identity, toeplitz}; linear model of Section 6.1 of the dpsgd-inference paper (p = 3,
x ~ N(0, Sigma), theta ~ U[0, 1]^3 drawn per replication, N(0, 1) errors), T = (n/m)^2
(the default regime c = m sqrt(T)/n = 1). Each replication has its own seed from one
SeedSequence, so a cell is reproducible on its own.

Run:  python validation/dpsgd_coverage.py --reps 500 --n 1000 --out validation/results
Prints a table and writes CSV: per cell and interval (plug-in, random scaling) the
coverage over all fits with its Monte Carlo standard error and the mean length; the share
of fits without a ConvergenceWarning (``unwarned``), and over those fits the coverage and
the mean length over statsmodels' OLS interval on the same rows (``ratio_unwarned``).
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.api as sm
from joblib import Parallel, delayed

import dpreg
from dpreg.exceptions import ConvergenceWarning

X_BOUND, CLIP, Y_BOUND = 4.0, 6.0, 10.0


def one_rep(n, m, sampling, mu, cov, seed):
    sim = dpreg.datasets.simulate_linear(n, p=3, cov=cov, random_state=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dpreg.dp_ols(sim.formula, sim.data, mu=mu, batch_size=m, sampling=sampling,
                           x_bound=X_BOUND, clip=CLIP, bounds={"y": (-Y_BOUND, Y_BOUND)},
                           condition="none", random_state=seed + 1)  # the recorded design
    truth = sim.params.to_numpy()
    ols = sm.OLS(sim.data["y"], sm.add_constant(sim.data.drop(columns="y"), has_constant="skip"))
    ref = ols.fit().conf_int(0.05).to_numpy()
    ref = ref[[list(ols.exog_names).index(name) for name in res.params.index]]
    out = {"warned": any(issubclass(w.category, ConvergenceWarning) for w in caught)}
    for method in ("plugin", "rs"):
        ci = res.conf_int(0.05, method=method).to_numpy()
        out[f"{method}_cover"] = np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1]))
        out[f"{method}_length"] = np.mean(ci[:, 1] - ci[:, 0])
        out[f"{method}_ratio"] = np.mean((ci[:, 1] - ci[:, 0]) / (ref[:, 1] - ref[:, 0]))
    out["sq_error"] = np.mean((res.params.to_numpy() - truth) ** 2)
    return out


def run(reps, n, out_dir, n_jobs=2, ms=(1, 10, 50), samplings=("uniform", "poisson"),
        mus=(0.5, 2.0), covs=("identity", "toeplitz"), entropy=20251122):
    rows = []
    cells = list(itertools.product(ms, samplings, mus, covs))
    root = np.random.SeedSequence(entropy)
    for cell, ss in zip(cells, root.spawn(len(cells)), strict=True):
        m, sampling, mu, cov = cell
        seeds = [int(s.generate_state(1)[0]) for s in ss.spawn(reps)]
        t0 = time.perf_counter()
        res = Parallel(n_jobs=n_jobs)(delayed(one_rep)(n, m, sampling, mu, cov, s) for s in seeds)
        frame = pd.DataFrame(res)
        row = dict(m=m, sampling=sampling, mu=mu, design=cov, n=n, reps=reps,
                   seconds=round(time.perf_counter() - t0, 1))
        quiet = frame[~frame["warned"]]
        row["unwarned"] = len(quiet) / reps
        for method in ("plugin", "rs"):
            c = frame[f"{method}_cover"]
            row[f"{method}_coverage"] = c.mean()
            # per-replication coverage averages 3 coefficients: MC s.e. from its spread
            row[f"{method}_mcse"] = c.std(ddof=1) / np.sqrt(reps)
            row[f"{method}_length"] = frame[f"{method}_length"].mean()
            row[f"{method}_coverage_unwarned"] = quiet[f"{method}_cover"].mean()
            row[f"{method}_ratio_unwarned"] = quiet[f"{method}_ratio"].mean()
        row["rmse"] = np.sqrt(frame["sq_error"].mean())
        rows.append(row)
        print(pd.DataFrame([row]).to_string(index=False, header=len(rows) == 1), flush=True)
    table = pd.DataFrame(rows)
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        table.to_csv(Path(out_dir) / f"dpsgd_coverage_n{n}_r{reps}.csv", index=False)
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="validation/results")
    args = ap.parse_args()
    table = run(args.reps, args.n, args.out, args.jobs)
    print()
    print(table.round(4).to_string(index=False))


if __name__ == "__main__":
    main()
