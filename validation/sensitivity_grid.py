"""The sensitivity audit over the whole option grid (dpreg.audit.sensitivity).

Prints, for each engine, conditioning and weighting, the worst ratio of the largest
change found between neighbouring data sets to the ledger's sensitivity, over the
families and bounds forms; writes every row to ``validation/results/sensitivity_grid.csv``.
Every ratio must be at most 1. About a minute on one core:

    python validation/sensitivity_grid.py
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from dpreg.audit.sensitivity import audit_cell, grid_cells, ranges_cells, rate_cells


def main() -> None:
    t0 = time.perf_counter()
    table = pd.concat([audit_cell(*cell) for cell in grid_cells()]
                      + [audit_cell(*cell, ranges=True) for cell in ranges_cells()]
                      + [audit_cell(*cell, ranges=True, outcome_rate=True).assign(
                          release="ranges with the outcome's rate")
                         for cell in rate_cells()],
                      ignore_index=True)
    out = Path(__file__).with_name("results") / "sensitivity_grid.csv"
    out.parent.mkdir(exist_ok=True)
    table.to_csv(out, index=False)
    matrix = (table.assign(engine=table["engine"] + table["sampling"].map(
                  lambda s: f" ({s})" if s else ""))
              .pivot_table(index=["engine", "release"], columns=["condition", "weights"],
                           values="ratio", aggfunc="max"))
    with pd.option_context("display.width", 160, "display.float_format", "{:.3f}".format):
        print(matrix.to_string(na_rep="-"))
    cells = len(grid_cells()) + len(ranges_cells()) + len(rate_cells())
    print(f"\n{cells} cells, {len(table)} releases; worst ratio "
          f"{table['ratio'].max():.3f} (must be <= 1); {time.perf_counter() - t0:.0f} s; "
          f"rows in {out}")


if __name__ == "__main__":
    main()
