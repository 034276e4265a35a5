"""Run the engine comparison study (issue 18) and write its tables.

    python validation/engine_comparison.py --reps 200 --jobs 1 --out validation/results
    python validation/engine_comparison.py --reps 50 --n 500 2000 10000   # a subset

Writes ``engines.csv`` (one row per cell, engine, interval and target: coverage over all
fits and over those without a warning, the share that warned, mean length, mean fit
time, and whether the interval passes) and ``engines-shortest.csv`` (per cell, the
shortest passing interval for the population coefficients and its ratio to the next
best), and prints both. A subset keeps the study's seeds and cache, so a later full run
reuses it.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import pandas as pd

from dpreg.studies import get_study
from dpreg.studies.engine_comparison import comparison_table, shortest_valid
from dpreg.studies.runner import run_replicates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--n", type=int, nargs="*", help="only these n")
    parser.add_argument("--engines", nargs="*", help="only these engines")
    parser.add_argument("--out", default="validation/results")
    parser.add_argument("--cache", default="studies_out/cache")
    args = parser.parse_args()
    study = get_study("engines")
    grids = []
    for grid in study.grid:
        grid = dict(grid)
        if args.n:
            grid["n"] = [v for v in grid["n"] if v in args.n]
        if args.engines:
            grid["engine"] = [v for v in grid["engine"] if v in args.engines]
        if grid["n"] and grid["engine"]:
            grids.append(grid)
    study = dataclasses.replace(study, grid=grids)
    start = time.perf_counter()
    raw = run_replicates(study, reps=args.reps, n_jobs=args.jobs, cache_dir=args.cache,
                         progress=True)
    table = comparison_table(raw)
    best = shortest_valid(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "engines.csv", index=False, float_format="%.4f")
    best.to_csv(out / "engines-shortest.csv", index=False, float_format="%.4f")
    minutes = (time.perf_counter() - start) / 60
    with pd.option_context("display.width", 220, "display.max_rows", 500):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print()
        print(best.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(f"\n{len(table)} rows, {int((~table['passes']).sum())} not passing; "
              f"{minutes:.1f} min, {args.reps} replications per cell")


if __name__ == "__main__":
    main()
