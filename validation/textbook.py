"""Run the textbook study (issues 25, 26 and 30) and write its tables.

    python validation/textbook.py --reps 200 --jobs 2 --out validation/results

Writes ``textbook.csv`` (per cell and interval: the share of fits that do not warn, the
coverage of the unwarned fits' intervals with its MC s.e., their length relative to the
non-private interval, how often they contain or far miss the non-private estimate, and
whether the cell meets issue 25's target), ``textbook-default.csv`` (the default
interval's rows, for the docs) and ``textbook-warnings.csv`` (each diagnostic's
false-alarm rate where the default interval covers and its power where it does not, per
cell and per coefficient), and
prints them with the warning's targets per engine and range choice
(:func:`dpreg.studies.warning_rates.warning_characteristics`), over all cells and at
n >= 2,000, mu >= 5. Finished chunks are cached, so an interrupted run resumes.

    python validation/textbook.py --from-table validation/results/textbook.csv

prints the warning's targets from a recorded table without running anything.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from dpreg.studies import get_study
from dpreg.studies.runner import run_replicates
from dpreg.studies.textbook import textbook_table
from dpreg.studies.warning_rates import check_characteristics, warning_characteristics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default="validation/results")
    parser.add_argument("--cache", default="studies_out/cache")
    parser.add_argument("--from-table", metavar="CSV",
                        help="print the warning's targets from a recorded textbook.csv "
                             "and stop")
    args = parser.parse_args()
    if args.from_table:
        print_targets(pd.read_csv(args.from_table))
        return
    study = get_study("textbook")
    start = time.perf_counter()
    raw = run_replicates(study, reps=args.reps, n_jobs=args.jobs, cache_dir=args.cache,
                         progress=True)
    table = textbook_table(raw)
    oc = check_characteristics(raw)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "textbook.csv", index=False, float_format="%.4f")
    # the docs' table: the default interval of each cell, three numbers and the verdict
    brief = table[table["method"] == "default"][
        ["design", "family", "engine", "ranges", "n", "mu", "unwarned",
         "coverage_unwarned", "length_ratio", "meets"]]
    brief.to_csv(out / "textbook-default.csv", index=False, float_format="%.3g")
    oc.to_csv(out / "textbook-warnings.csv", index=False, float_format="%.4f")
    minutes = (time.perf_counter() - start) / 60
    with pd.option_context("display.width", 250, "display.max_rows", 1000):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(oc.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print_targets(table)
    print(f"\n{len(table)} rows; {minutes:.1f} min, {args.reps} replications per cell")


def print_targets(table: pd.DataFrame) -> None:
    """The warning as a test per engine and range choice: over all cells, and where the
    issue sets its target (n >= 2,000, mu >= 5)."""
    target = table[(table["n"] >= 2000) & (table["mu"] >= 5)]
    with pd.option_context("display.width", 250):
        for label, part in (("all cells", table), ("n >= 2,000, mu >= 5", target)):
            print(f"\nThe warning as a test ({label}):")
            print(warning_characteristics(part, by=["engine", "ranges"]).to_string(
                index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
