"""Run the engine comparison study (issue 18) and write its tables.

    python validation/engine_comparison.py --reps 200 --jobs 1 --out validation/results
    python validation/engine_comparison.py --reps 50 --n 500 2000 10000   # a subset
    python validation/engine_comparison.py --reps 40 --large-n 100000 --large-reps 10 \
        --large-engines dpsgd ssp adassp --write-choice
    python validation/engine_comparison.py --write-choice \
        --part 500,2000,10000:dpsgd,ssp,adassp:200 --part 500,2000:dpgd:200 \
        --part 10000:dpgd:40 --part 100000:ssp,adassp:200 \
        --part 100000:dpsgd:40                                 # the recorded run

``--part N,..:ENGINE,..:REPS`` (repeatable) runs those n and engines at that many
replications; the parts together make the table.

``--family FAMILY ..`` selects the families (default ``linear``, the cells above). The
other families, Huber, expectile and logistic, compare DP-SGD with DP-GD at n = 2,000
and 10,000, p = 3, mu = 1 and 5 (``FAMILY_GRIDS`` of
:mod:`dpreg.studies.engine_comparison`); every ``--part`` then runs the selected
families' cells among its n and engines::

    python validation/engine_comparison.py --family huber expectile logistic \
        --part 2000,10000:dpsgd:200 --part 2000:dpgd:200 \
        --part 10000:dpgd:40                    # the other families' recorded run

Writes ``engines.csv`` (one row per cell, engine, interval and target: coverage over all
fits and over those without a warning, the share that warned, mean length, mean fit
time, and whether the interval passes) and ``engines-shortest.csv`` (per cell, the
shortest passing interval for the population coefficients and its ratio to the next
best), and prints both; when ``--family`` selects any family but ``linear``, the files
are ``engines-families.csv`` and ``engines-families-shortest.csv``, with a ``family``
column. A subset keeps the study's seeds and cache, so a later full run reuses it.
``--ranges auto`` runs the linear cells again at the default ``ranges="auto"`` for the
engines that learn ranges privately (DP-SGD and SSP; for the others the default is the
declared boxes, so their rows above stand) and writes ``engines-ranges.csv`` and
``engines-ranges-shortest.csv``; ``--write-choice`` reads these cells (``engine="auto"``
reads the linear family's rows at the default ranges only)::

    python validation/engine_comparison.py --ranges auto --write-choice --jobs 2 \
        --part 500,2000,10000,100000:ssp:200 --part 500,2000,10000:dpsgd:200 \
        --part 100000:dpsgd:20                              # the recorded run
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import pandas as pd

from dpreg.studies import get_study
from dpreg.studies.engine_comparison import (
    OTHER_FAMILIES,
    choice_rows,
    comparison_table,
    shortest_valid,
)
from dpreg.studies.runner import run_replicates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--n", type=int, nargs="*", help="only these n")
    parser.add_argument("--engines", nargs="*", help="only these engines")
    parser.add_argument("--large-n", type=int, nargs="*",
                        help="n values run with --large-reps and --large-engines instead")
    parser.add_argument("--large-reps", type=int, default=10)
    parser.add_argument("--large-engines", nargs="*")
    parser.add_argument("--part", action="append", type=_part, default=[],
                        help="N,..:ENGINE,..:REPS, repeatable; replaces the options above")
    parser.add_argument("--family", nargs="+", default=["linear"],
                        choices=("linear",) + OTHER_FAMILIES,
                        help="only these families (default: linear)")
    parser.add_argument("--ranges", nargs="+", default=["declared"],
                        choices=("declared", "auto"),
                        help="only the linear cells fitted with these ranges= (default: "
                             "declared; 'auto' runs the engines that learn ranges at the "
                             "default and writes engines-ranges*.csv)")
    parser.add_argument("--out", default="validation/results")
    parser.add_argument("--cache", default="studies_out/cache")
    parser.add_argument("--write-choice", action="store_true",
                        help="write the rule of engine='auto' (dpreg/fits/"
                             "_engine_choice_table.py) from this run")
    args = parser.parse_args()
    if args.write_choice and "linear" not in args.family:
        parser.error("--write-choice needs --family linear: the rule of engine='auto' is "
                     "read from the linear family's rows")
    if args.write_choice and "auto" not in args.ranges:
        parser.error("--write-choice needs --ranges auto: the rule of engine='auto' is "
                     "read from the cells fitted at the default ranges='auto'")
    study = get_study("engines")
    start = time.perf_counter()
    parts = [(args.n, args.engines, args.reps)]
    if args.part:
        parts = args.part
    elif args.large_n:
        # the largest n at fewer replications (and engines), for the wall time
        parts = [([v for v in (args.n or _all_n(study)) if v not in args.large_n],
                  args.engines, args.reps),
                 (args.large_n, args.large_engines or args.engines, args.large_reps)]
    raws = []
    for n_values, engines, reps in parts:
        grids = []
        for grid in study.grid:
            grid = dict(grid)
            # the linear grids have no family factor (their cache keys predate the others)
            families = [f for f in grid.get("family", ["linear"]) if f in args.family]
            if not families or grid.get("ranges", ["declared"])[0] not in args.ranges:
                continue
            if "family" in grid:
                grid["family"] = families
            if n_values:
                grid["n"] = [v for v in grid["n"] if v in n_values]
            if engines:
                grid["engine"] = [v for v in grid["engine"] if v in engines]
            if grid["n"] and grid["engine"]:
                grids.append(grid)
        if grids:
            raws.append(run_replicates(dataclasses.replace(study, grid=grids), reps=reps,
                                       n_jobs=args.jobs, cache_dir=args.cache,
                                       progress=True))
    if not raws:
        parser.error(f"no cell of the engines study for families {args.family} among the "
                     "n and engines asked for")
    raw = pd.concat(raws, ignore_index=True)
    table = comparison_table(raw)
    best = shortest_valid(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "engines" if args.family == ["linear"] else "engines-families"
    if args.ranges == ["auto"]:
        stem += "-ranges"
    table.to_csv(out / f"{stem}.csv", index=False, float_format="%.6g")
    best.to_csv(out / f"{stem}-shortest.csv", index=False, float_format="%.6g")
    minutes = (time.perf_counter() - start) / 60
    if args.write_choice:
        write_choice(choice_rows(table), args)
    with pd.option_context("display.width", 220, "display.max_rows", 500):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print()
        print(best.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(f"\n{len(table)} rows, {int((~table['passes']).sum())} not passing; "
              f"{minutes:.1f} min, replications per cell: "
              f"{', '.join(str(reps) + ' ' + '/'.join(e or ['all']) for _, e, reps in parts)}"
              f"; families: {', '.join(args.family)}; ranges: {', '.join(args.ranges)}")


def _part(text: str) -> tuple[list[int], list[str], int]:
    """``"500,2000:dpsgd,ssp:200"`` -> ``([500, 2000], ["dpsgd", "ssp"], 200)``."""
    try:
        n_text, engines, reps = text.split(":")
        return [int(v) for v in n_text.split(",")], engines.split(","), int(reps)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"--part {text!r}: expected N,..:ENGINE,..:REPS") from exc


def _all_n(study) -> list[int]:
    return sorted({v for grid in study.grid for v in grid["n"]})


def write_choice(rows: list[dict], args) -> None:
    """Write the generated module of ``engine="auto"``'s rule."""
    import platform

    import numpy as np

    engines = sorted({e for g in get_study("engines").grid if "family" not in g
                      for e in g["engine"]})
    if args.part:
        source = "engines study, replications per cell: " + "; ".join(
            f"{reps} for {','.join(engines)} at n = {','.join(map(str, n))}"
            for n, engines, reps in args.part)
    elif args.large_n:
        source = (f"engines study, {args.reps} replications per cell ({args.large_reps} "
                  f"at n = {args.large_n})")
    else:
        source = f"engines study, {args.reps} replications per cell"
    source += (f", n in "
              f"{sorted(set(r['n'] for r in rows))}, engines {engines}")
    import pprint
    import textwrap

    doc = textwrap.fill(
        f"Made by ``python validation/engine_comparison.py --write-choice`` (numpy "
        f"{np.__version__}, Python {platform.python_version()}): per studied (n, p, "
        "budget), the shortest interval for the population coefficients that covered "
        "under both error laws (:func:`dpreg.studies.engine_comparison.choice_rows`).",
        width=88)
    chunks = textwrap.wrap(source, width=80, drop_whitespace=False)
    lines = ['"""The rule of ``engine="auto"`` (generated file; do not edit by hand).', "",
             doc, '"""', "", "SOURCE = (" + "\n          ".join(repr(c) for c in chunks) + ")",
             "", "RULES = " + pprint.pformat(tuple(rows), width=96, sort_dicts=False)]
    path = Path(__file__).resolve().parents[1] / "dpreg" / "fits" / "_engine_choice_table.py"
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path} ({len(rows)} rules)")


if __name__ == "__main__":
    main()
