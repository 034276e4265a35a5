"""Benchmark: wall time of one full Figure 2 cell, and the speed-up with 2 workers.

The cell is the heaviest of the dpsgd-inference paper's Figure 2 (study ``dpsgd-fig2``):
linear model, identity design, n = 1500, T = n^2 = 2.25e6 DP-SGD steps per fit (plus the
private plug-in matrices and the oracle), 1000 replications. It is run

* with 1 worker (in this process, ``n_jobs=1``),
* with 2 local worker processes (joblib, ``n_jobs=2``),
* on a Dask ``LocalCluster`` with 2 worker processes (``--dask``),

without a cache, and the three runs are checked to give identical numbers. A pilot of a
few replications estimates the time first; if the 1-worker run would exceed ``--budget``
minutes (15 by default), every run uses fewer replications and the full-cell times are
extrapolated linearly (and printed as such).

Run:  python benchmarks/bench_studies.py [--reps 1000] [--dask] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import pandas as pd

import dpreg.studies as ds

CELL = {"family": "linear", "design": "identity", "n": 1500}


def _load() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "n/a"


def _timed(study, reps, **options):
    t0 = time.perf_counter()
    raw = ds.run_replicates(study, reps=reps, where=CELL, progress=False, **options)
    return time.perf_counter() - t0, raw.drop(columns=["rep_seconds"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000, help="replications of the full cell")
    ap.add_argument("--budget", type=float, default=15.0,
                    help="minutes the 1-worker run may take before extrapolating")
    ap.add_argument("--pilot", type=int, default=8, help="replications of the pilot run")
    ap.add_argument("--dask", action="store_true", help="also time a 2-worker LocalCluster")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args(argv)
    study = ds.get_study("dpsgd-fig2")

    load_before = _load()
    pilot_s, _ = _timed(study, args.pilot, n_jobs=1)
    per_rep = pilot_s / args.pilot
    reps = args.reps
    if per_rep * args.reps > 60 * args.budget:
        reps = max(args.pilot, int(60 * args.budget / per_rep))
    extrapolated = reps < args.reps
    print(f"cell {CELL}, T = n^2 = {CELL['n'] ** 2:,} steps per fit; pilot "
          f"{per_rep:.3f} s per replication (1 worker); load average {load_before}")
    if extrapolated:
        print(f"the full cell ({args.reps} reps) would take about "
              f"{per_rep * args.reps / 60:.0f} min on 1 worker: measuring {reps} reps and "
              "EXTRAPOLATING linearly")

    rows = []
    wall1, raw1 = _timed(study, reps, n_jobs=1)
    rows.append(("local", 1, wall1))
    wall2, raw2 = _timed(study, reps, n_jobs=2)
    rows.append(("local (joblib)", 2, wall2))
    pd.testing.assert_frame_equal(raw1, raw2)
    if args.dask:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            wall3, raw3 = _timed(study, reps, backend="dask", client=client)
        rows.append(("dask LocalCluster", 2, wall3))
        pd.testing.assert_frame_equal(raw1, raw3)
    load_after = _load()

    scale = args.reps / reps
    table = pd.DataFrame([{
        "backend": b, "workers": w, "reps_measured": reps, "wall_s": round(s, 1),
        "s_per_rep": round(s / reps, 4),
        f"full_cell_{args.reps}_reps_min": round(s * scale / 60, 2),
        "speed_up": round(wall1 / s, 2)} for b, w, s in rows])
    print(table.to_string(index=False))
    print(f"identical numbers on every backend: yes; load average before {load_before}, "
          f"after {load_after} ({os.cpu_count()} logical CPUs, shared)")
    if args.out:
        record = {"cell": CELL, "steps_per_fit": CELL["n"] ** 2, "reps_full": args.reps,
                  "reps_measured": reps, "extrapolated": extrapolated,
                  "pilot_s_per_rep": per_rep, "runs": table.to_dict(orient="records"),
                  "load_before": load_before, "load_after": load_after,
                  "machine": f"{platform.machine()}, {os.cpu_count()} logical CPU(s)",
                  "python": platform.python_version()}
        with open(args.out, "w") as fh:
            json.dump(record, fh, indent=2)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
