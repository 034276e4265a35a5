"""Run the clusters study (issue 29) and write its table.

    python validation/clusters_study.py --reps 200 --jobs 1 --out validation/results

Writes ``clusters.csv``: per cell (engine, G clusters, mu), interval and slope, the share
of fits that do not warn, the coverage of the unwarned fits' intervals with its MC s.e.,
the coverage of all fits and of statsmodels' non-private CR1 interval, the length over
that interval (all fits and unwarned fits), the share containing the non-private
estimate, and the verdict (:func:`dpreg.studies.unwarned.passes`); and prints it.
Finished chunks are cached, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from dpreg.studies import get_study
from dpreg.studies.clusters import clusters_table
from dpreg.studies.runner import run_replicates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default="validation/results")
    parser.add_argument("--cache", default="studies_out/cache")
    args = parser.parse_args()
    start = time.perf_counter()
    raw = run_replicates(get_study("clusters"), reps=args.reps, n_jobs=args.jobs,
                         cache_dir=args.cache, progress=True)
    table = clusters_table(raw)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "clusters.csv", index=False, float_format="%.4f")
    minutes = (time.perf_counter() - start) / 60
    with pd.option_context("display.width", 250, "display.max_rows", 1000,
                           "display.max_columns", 50):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\n{len(table)} rows; {minutes:.1f} min, {args.reps} replications per cell; "
          f"{int(table['passes'].sum())} of {len(table)} pass")


if __name__ == "__main__":
    main()
