"""Empirical privacy audit of dpreg's mechanisms (issue 8 validation).

Runs each mechanism many times on two neighbouring data sets (a canary row and its
most distant replacement), picks a threshold test on half of the runs, and turns the
other half's false-positive and false-negative rates into a lower bound on epsilon
(Clopper-Pearson, 95%): see :mod:`dpreg.audit`. The lower bound must stay below the
claimed (rigorous) epsilon; a deliberately broken mechanism (half the noise it claims)
must exceed it. All at delta = 1e-5 and mu = 1.

Run:  python validation/privacy_audit.py --out validation/results
(about 1-2 minutes on 2 cores). Prints a table and writes privacy_audit.csv.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from dpreg import audit
from dpreg.privacy.mechanisms import gaussian_matrix_mechanism

DELTA = 1e-5
MU = 1.0
ENTROPY = 20251122


def cells(runs_gauss, runs_loop, runs_sgd, runs_ldp=1_000_000):
    """(label, audit function, runs, keyword arguments) of every row of the table."""
    sgd = dict(n=50, batch_size=5, steps=100)
    return [
        ("Gaussian vector (sum, add/remove)", audit.audit_gaussian_mechanism, runs_gauss, {}),
        ("Gaussian vector, same runs as DP-SGD (reference)", audit.audit_gaussian_mechanism,
         runs_sgd, {}),
        ("Gaussian vector, BROKEN: half the claimed noise", audit.audit_gaussian_mechanism,
         runs_gauss, dict(noise_scale=0.5)),
        ("Gaussian matrix X'X/n (replace-one, e1 -> e2)", audit.audit_matrix_mechanism,
         runs_gauss, {}),
        ("Gaussian matrix, gaussian_matrix_mechanism called per run",
         audit.audit_matrix_mechanism, runs_loop, dict(mechanism=gaussian_matrix_mechanism)),
        ("DP-SGD uniform n=50 m=5 T=100, averaged iterate", audit.audit_dpsgd, runs_sgd,
         dict(sgd, statistic="average")),
        ("DP-SGD uniform n=50 m=5 T=100, last iterate", audit.audit_dpsgd, runs_sgd,
         dict(sgd, statistic="last")),
        ("DP-SGD Poisson n=50 qn=5 T=100, averaged iterate", audit.audit_dpsgd, runs_sgd,
         dict(sgd, sampling="poisson", statistic="average")),
        ("DP-SGD full batch n=m=50 T=100, averaged iterate", audit.audit_dpsgd, runs_sgd,
         dict(sgd, batch_size=50, statistic="average")),
        ("DP-SGD full batch n=m=50 T=100, last iterate", audit.audit_dpsgd, runs_sgd,
         dict(sgd, batch_size=50, statistic="last")),
        ("LDP-SGD one person's release (Huber, LDPStream)", audit.audit_ldp_step, runs_ldp,
         {}),
        ("LDP-SGD release, BROKEN: half the claimed noise", audit.audit_ldp_step, runs_ldp,
         dict(noise_scale=0.5)),
        ("DP-GD n=20 T=50, last iterate", audit.audit_dpgd, runs_gauss // 5, {}),
        ("DP-GD n=20 T=50, mean iterate", audit.audit_dpgd, runs_gauss // 5,
         dict(statistic="mean")),
        ("DP-GD, BROKEN: half the claimed noise", audit.audit_dpgd, runs_gauss // 5,
         dict(noise_scale=0.5)),
    ]


def one_cell(label, func, runs, kwargs, seed):
    t0 = time.perf_counter()
    rep = func(MU, runs, DELTA, np.random.default_rng(seed), **kwargs)
    row = rep.as_row()
    row["mechanism"] = label
    row["accountant"] = rep.accountant.split()[0]
    row["fpr"] = round(row["fpr"], 6)
    row["fnr"] = round(row["fnr"], 6)
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def run(out_dir, n_jobs=2, runs_gauss=1_000_000, runs_loop=200_000, runs_sgd=20_000,
        runs_ldp=1_000_000):
    todo = cells(runs_gauss, runs_loop, runs_sgd, runs_ldp)
    seeds = np.random.SeedSequence(ENTROPY).spawn(len(todo))
    t0 = time.perf_counter()
    rows = Parallel(n_jobs=n_jobs)(delayed(one_cell)(label, f, r, kw, s)
                                   for (label, f, r, kw), s in zip(todo, seeds, strict=True))
    table = pd.DataFrame(rows)
    cols = ["mechanism", "mu", "delta", "accountant", "eps_claimed_rigorous",
            "eps_claimed_gdp", "eps_pair_exact", "eps_audited_lower", "ratio_to_rigorous",
            "runs_per_dataset", "fpr", "fnr", "seconds"]
    table = table[cols]
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        table.to_csv(Path(out_dir) / "privacy_audit.csv", index=False)
    return table, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs-gaussian", type=int, default=1_000_000,
                    help="runs per data set of the vectorized Gaussian audits")
    ap.add_argument("--runs-loop", type=int, default=200_000,
                    help="runs per data set calling gaussian_matrix_mechanism")
    ap.add_argument("--runs-dpsgd", type=int, default=20_000,
                    help="runs per data set of the DP-SGD audits")
    ap.add_argument("--runs-ldp", type=int, default=1_000_000,
                    help="people per data set of the LDP-SGD audits")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="validation/results")
    args = ap.parse_args()
    table, seconds = run(args.out, args.jobs, args.runs_gaussian, args.runs_loop,
                         args.runs_dpsgd, args.runs_ldp)
    with pd.option_context("display.width", 250, "display.max_colwidth", 60):
        print(table.to_string(index=False))
    print(f"\ntotal {seconds:.0f} s")
    broken = table["mechanism"].str.contains("BROKEN")
    sound = table.loc[~broken, "eps_audited_lower"] <= table.loc[~broken, "eps_claimed_rigorous"]
    print("sound (lower <= claimed) for every correct mechanism:", bool(sound.all()))
    print("broken mechanism detected (lower > claimed):",
          bool((table.loc[broken, "eps_audited_lower"]
                > table.loc[broken, "eps_claimed_rigorous"]).all()))


if __name__ == "__main__":
    main()
