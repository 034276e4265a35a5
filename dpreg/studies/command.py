"""``python -m dpreg study NAME``: run a shipped study, write CSV, PNG and a run record."""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

__all__ = ["add_study_parser", "study_command", "add_defaults_parser", "defaults_command"]


def add_study_parser(sub) -> None:
    """Add the ``study`` subcommand to an argparse subparsers object.

    Parameters
    ----------
    sub : argparse._SubParsersAction
    """
    from dpreg.studies.catalog import list_studies

    p = sub.add_parser("study", help="run a Monte Carlo study (coverage, length, size)",
                       description="Run a shipped Monte Carlo study and write its summary "
                                   "(CSV), figures (PNG) and a run record (JSON).")
    p.add_argument("name", choices=list_studies() + ["list"],
                   help="the study ('list' prints the available ones)")
    p.add_argument("--reps", type=int, help="replications per cell (default: the study's)")
    p.add_argument("--backend", choices=["local", "dask"], default="local")
    p.add_argument("--jobs", type=int, default=None,
                   help="local processes, or workers of the local Dask cluster "
                        "(default: all cores)")
    p.add_argument("--scheduler", help="address of an existing Dask scheduler "
                                       "(backend dask; default: start a LocalCluster)")
    p.add_argument("--out", default="study-results", help="output folder")
    p.add_argument("--cache", help="cache folder (default OUT/cache)")
    p.add_argument("--no-cache", dest="no_cache", action="store_true")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.set_defaults(func=study_command)


def _print_list() -> int:
    from dpreg.studies.catalog import get_study, list_studies

    for name in list_studies():
        study = get_study(name)
        cells = len(study.cells())
        print(f"{name:14s} {cells:3d} cell(s) x {study.reps} reps  {study.title}")
    return 0


def study_command(args) -> int:
    """Run ``args.name`` and write ``<out>/<name>.csv``, its figures and a run record.

    Parameters
    ----------
    args : argparse.Namespace
        From the parser of :func:`add_study_parser`.

    Returns
    -------
    int
        Exit code.
    """
    from dpreg.studies.catalog import get_study
    from dpreg.studies.defaults import defaults_fingerprint
    from dpreg.studies.runner import run_study
    from dpreg.studies.summaries import AVERAGE, compare_with_reference

    if args.name == "list":
        return _print_list()
    study = get_study(args.name)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = None if args.no_cache else Path(args.cache) if args.cache else out / "cache"
    options = dict(reps=args.reps, backend=args.backend, cache_dir=cache,
                   progress=args.progress)
    cluster = client = None
    t0 = time.perf_counter()
    try:
        if args.backend == "dask":
            from distributed import Client, LocalCluster

            if args.scheduler:
                client = Client(args.scheduler)
            else:
                cluster = LocalCluster(n_workers=args.jobs or os.cpu_count() or 1,
                                       threads_per_worker=1, processes=True,
                                       dashboard_address=None)
                client = Client(cluster)
            options["client"] = client
        else:
            options["n_jobs"] = args.jobs
        table = run_study(study, **options)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    seconds = time.perf_counter() - t0
    csv = out / f"{study.name}.csv"
    table.to_csv(csv, index=False, float_format="%.6g")
    written = [csv]
    for spec in study.figures:
        path = out / f"{study.name}-{spec.name}.png"
        spec.draw(table, path=path, **dict(spec.kwargs))
        written.append(path)
    if study.reference is not None:
        ref = study.reference
        on = [c for c in ref.columns if c in table.columns and c not in ("coverage", "length")]
        parts = []
        for metric in ("coverage", "length"):
            if metric in ref:
                cmp = compare_with_reference(table, ref, on=on, metric=metric,
                                             reference_reps=200)
                parts.append(cmp.assign(metric=metric))
        ref_path = out / f"{study.name}-reference.csv"
        pd.concat(parts, ignore_index=True).to_csv(ref_path, index=False, float_format="%.6g")
        written.append(ref_path)
    record = {
        "study": study.name, "title": study.title,
        "command": _command_line(args),
        "reps": table.attrs.get("reps"), "cells": len(study.cells()),
        "backend": args.backend, "workers": table.attrs.get("workers"),
        "computed_reps": table.attrs.get("computed_reps"),
        "cached_reps": table.attrs.get("cached_reps"),
        "wall_seconds": round(seconds, 1),
        "compute_seconds": round(table.attrs.get("compute_seconds", float("nan")), 1),
        "dpreg": _version(), "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} logical CPU(s)",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        # the defaults these numbers were produced under (dpreg.studies.defaults): the
        # docs build fails once one of them changes, until the study is rerun
        "defaults": defaults_fingerprint(),
    }
    rec_path = out / f"{study.name}-run.json"
    rec_path.write_text(json.dumps(record, indent=2) + "\n")
    written.append(rec_path)
    avg = table[table["coef"] == AVERAGE]
    cols = [c for c in avg.columns if not c.endswith("_mcse") or c == "coverage_mcse"]
    with pd.option_context("display.width", 200, "display.max_rows", 500,
                           "display.max_columns", 30):
        print(f"{study.title}\n")
        print(avg[cols].drop(columns=["coef"]).round(4).to_string(index=False))
    print(f"\n{record['computed_reps']} replications computed, {record['cached_reps']} read "
          f"from the cache, in {seconds:.1f} s ({args.backend}, "
          f"{record['workers']} worker(s)).")
    for path in written:
        print(f"wrote {path}")
    return 0


def _command_line(args) -> str:
    """The command that reproduces this run (from the parsed options)."""
    parts = ["python", "-m", "dpreg", "study", args.name]
    if args.reps is not None:
        parts += ["--reps", str(args.reps)]
    parts += ["--backend", args.backend]
    if args.jobs is not None:
        parts += ["--jobs", str(args.jobs)]
    if args.scheduler:
        parts += ["--scheduler", args.scheduler]
    parts += ["--out", str(args.out)]
    if args.no_cache:
        parts.append("--no-cache")
    elif args.cache:
        parts += ["--cache", str(args.cache)]
    return " ".join(shlex.quote(p) for p in parts)


def _version() -> str:
    from dpreg import __version__

    return __version__


def add_defaults_parser(sub) -> None:
    """Add the ``defaults`` subcommand (check or stamp recorded runs).

    Parameters
    ----------
    sub : argparse._SubParsersAction
    """
    p = sub.add_parser("defaults", help="check that recorded runs match today's defaults",
                       description="Recorded runs (docs/studies/results/*-run.json, "
                                   "validation/results/) and the defaults they were "
                                   "produced under (dpreg.studies.defaults).")
    p.add_argument("action", choices=["check", "stamp", "show"],
                   help="check: list the stale runs (exit 1 if any); stamp: record that "
                        "FILES of validation/results were just written by --command under "
                        "today's defaults; show: print today's defaults")
    p.add_argument("files", nargs="*", metavar="FILE", help="stamp: the files written")
    p.add_argument("--command", dest="run_command",
                   help="stamp: the command that wrote FILES (to rerun them)")
    p.add_argument("--depends", nargs="*", default=None, metavar="PREFIX",
                   help="stamp: name prefixes of the defaults the files depend on "
                        "(default: all; none given: no default)")
    p.add_argument("--root", default=".", help="the repository (default: this folder)")
    p.add_argument("--all", dest="show_all", action="store_true",
                   help="check: list every changed default (default: the first four)")
    p.set_defaults(func=defaults_command)


def defaults_command(args) -> int:
    """Run ``python -m dpreg defaults ACTION``.

    Parameters
    ----------
    args : argparse.Namespace
        From the parser of :func:`add_defaults_parser`.

    Returns
    -------
    int
        Exit code: 1 when ``check`` finds stale runs or ``stamp`` lacks its inputs.
    """
    from dpreg.studies.defaults import defaults_fingerprint, stale_runs, stamp_validation_results

    if args.action == "show":
        for name, value in defaults_fingerprint().items():
            print(f"{name} = {value}")
        return 0
    if args.action == "stamp":
        if not args.files or not args.run_command:
            print("error: stamp needs the FILES just written and --command", file=sys.stderr)
            return 1
        stamp_validation_results(args.root, args.files, args.run_command, args.depends)
        print(f"stamped {len(args.files)} file(s) with today's defaults")
        return 0
    stale = stale_runs(args.root)
    for run in stale:
        print(run.describe(None if args.show_all else 4))
        if run.acknowledged:
            print(f"    acknowledged: {run.acknowledged}")
    waiting = [run for run in stale if run.acknowledged is None]
    print(f"{len(stale)} stale recorded run(s), {len(waiting)} not acknowledged")
    return 1 if waiting else 0
