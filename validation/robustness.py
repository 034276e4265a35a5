"""Run the robustness study (issue 14) and write its table.

    python validation/robustness.py --reps 200 --jobs 2 --out validation/results
    python validation/robustness.py --ranges-cells   # only the cells at ranges="auto"

The first runs the cells in the declared boxes (the study's grid before
``ranges="auto"``) and writes ``robustness.csv``; the second the cells at the default
``ranges="auto"`` and writes ``robustness-ranges.csv``. Each table has one row per cell
and interval method (``default`` is the interval ``conf_int()`` returns): coverage of the
truth over all replications, over those without a warning and over those with one, the
share that warned, mean length, and whether the cell passes. Beside each table,
``robustness-warnings.csv`` (``robustness-ranges-warnings.csv``) gives every check's
firing rate where the default interval covers and where it does not
(:func:`dpreg.studies.warning_rates.check_characteristics`); the run prints the warning's
rates against the targets (at most 0.10 where the interval covers, at least 0.95 where it
does not) and the cells that do not pass.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from dpreg.studies import get_study
from dpreg.studies.robustness import robustness_table
from dpreg.studies.runner import run_replicates
from dpreg.studies.warning_rates import check_characteristics, warning_characteristics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default="validation/results")
    parser.add_argument("--cache", default="studies_out/cache")
    parser.add_argument("--ranges-cells", action="store_true",
                        help="run the cells with a ranges factor (the default "
                             "ranges='auto') and write robustness-ranges.csv, instead of "
                             "the others and robustness.csv")
    args = parser.parse_args()
    study = get_study("robustness")
    start = time.perf_counter()
    where = ((lambda cell: "ranges" in cell) if args.ranges_cells
             else (lambda cell: "ranges" not in cell))
    raw = run_replicates(study, reps=args.reps, n_jobs=args.jobs, cache_dir=args.cache,
                         progress=True, where=where)
    table = robustness_table(raw)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "robustness-ranges.csv" if args.ranges_cells else "robustness.csv"
    table.to_csv(out / name, index=False, float_format="%.4f")
    rates = check_characteristics(raw)
    rates.to_csv(out / name.replace(".csv", "-warnings.csv"), index=False,
                 float_format="%.4f")
    minutes = (time.perf_counter() - start) / 60
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(rates.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print("\nThe warning as a test (default interval):")
        print(warning_characteristics(table, by=["engine"]).to_string(
            index=False, float_format=lambda v: f"{v:.3f}"))
        print(f"\n{len(table)} rows, {int((~table['passes']).sum())} not passing; "
              f"{minutes:.1f} min, {args.reps} replications per cell")


if __name__ == "__main__":
    main()
