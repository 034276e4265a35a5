"""Run the iv study (issue 29) and write its table.

    python validation/iv_study.py --reps 200 --jobs 1 --out validation/results

Writes ``iv-study.csv``: per cell (instrument strength, n, mu) and interval of the
endogenous regressor's coefficient, the share of fits that warned (and in which the
weak-instrument warning fired), the coverage of the unwarned fits' intervals with its
MC s.e., the coverage of all fits and of linearmodels' non-private IV2SLS interval, the
length over that interval, the share containing the non-private estimate, the verdict
(:func:`dpreg.studies.unwarned.passes`), and the design's first-stage F with the
median non-private and private F; and prints it. Finished chunks are cached, so an
interrupted run resumes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from dpreg.studies import get_study
from dpreg.studies.iv import iv_table
from dpreg.studies.runner import run_replicates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default="validation/results")
    parser.add_argument("--cache", default="studies_out/cache")
    args = parser.parse_args()
    start = time.perf_counter()
    raw = run_replicates(get_study("iv"), reps=args.reps, n_jobs=args.jobs,
                         cache_dir=args.cache, progress=True)
    table = iv_table(raw)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "iv-study.csv", index=False, float_format="%.4f")
    minutes = (time.perf_counter() - start) / 60
    with pd.option_context("display.width", 250, "display.max_rows", 1000,
                           "display.max_columns", 50):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\n{len(table)} rows; {minutes:.1f} min, {args.reps} replications per cell; "
          f"{int(table['passes'].sum())} of {len(table)} pass")


if __name__ == "__main__":
    main()
