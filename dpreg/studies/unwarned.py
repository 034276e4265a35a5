"""An interval judged by its unwarned fits, against a non-private interval on the same data.

The verdict of the ``clusters`` and ``iv`` studies (docs page ``studies/clusters_iv``):
the package promises that an interval it prints without a warning covers, and that where
its intervals do not cover it warns. Per cell, interval and coefficient,
:func:`unwarned_table` gives the share of fits that did not warn, the coverage of the
unwarned fits' intervals with its Monte Carlo standard error, the coverage of all fits,
the private interval's length over the non-private one of the same replication, and
:func:`passes`, the verdict.

A replicate function feeds it rows of :func:`dpreg.studies.result_rows` for the private
intervals (any ``method`` label) and for the non-private interval (``method =
"nonprivate"``), every row with the grouping key ``warned`` (1 when the private fit
warned, the same on the replication's non-private rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpreg.exceptions import OptionError

__all__ = ["NONPRIVATE", "WARNED_ENOUGH", "passes", "unwarned_table", "unwarned_numbers",
           "draw_unwarned", "study_options", "record_study"]

#: The ``method`` label of the non-private interval's rows.
NONPRIVATE = "nonprivate"
#: Share of warned fits at or above which a cell passes by its warnings alone.
WARNED_ENOUGH = 0.95


def unwarned_numbers(cell: pd.DataFrame, pairs_per_fit: int = 1) -> dict:
    """One cell's three numbers from its rows, one per (fit, coefficient).

    Parameters
    ----------
    cell : DataFrame
        Columns ``seed`` (the fit), ``warned`` (bool, the same on a fit's rows),
        ``covers`` (bool: the default interval contains the true coefficient) and
        ``length`` (its length over a reference interval's).
    pairs_per_fit : int
        How many of a fit's (coefficient) pairs the Monte Carlo standard error counts as
        independent: 1 is conservative, the number of coefficients optimistic (a fit's
        coefficients share its noise).

    Returns
    -------
    dict
        ``fits``; ``unwarned`` (the share of fits); over the unwarned fits
        ``coverage_unwarned`` with its ``mcse`` at the nominal 0.95 (NaN when every fit
        warned); ``coverage_all`` over every fit; ``length_unwarned`` over the unwarned.
    """
    quiet = cell[~cell["warned"]]
    reps = quiet["seed"].nunique()
    return dict(
        fits=cell["seed"].nunique(),
        unwarned=1 - cell.groupby("seed")["warned"].first().mean(),
        coverage_unwarned=quiet["covers"].mean() if reps else np.nan,
        mcse=np.sqrt(0.0475 / (reps * pairs_per_fit)) if reps else np.nan,  # 0.95 x 0.05
        coverage_all=cell["covers"].mean(),
        length_unwarned=quiet["length"].mean() if reps else np.nan)


def passes(coverage_unwarned, mcse, warned, *, nominal: float = 0.95,
           warned_enough: float = WARNED_ENOUGH):
    """The verdict: the unwarned fits cover, or the cell warns in (nearly) every fit.

    Parameters
    ----------
    coverage_unwarned : float or array-like
        Coverage ``c`` of the unwarned fits' intervals (NaN when every fit warned).
    mcse : float or array-like
        Its Monte Carlo standard error ``sqrt(c (1 - c) / k)`` over the ``k`` unwarned
        fits.
    warned : float or array-like
        Share of fits that warned.
    nominal : float
        The intervals' nominal coverage.
    warned_enough : float
        Share of warned fits at or above which the cell passes whatever its coverage.

    Returns
    -------
    bool or ndarray of bool
        ``warned >= warned_enough`` or ``c >= nominal - 3 mcse``.

    Notes
    -----
    The test is one-sided: an interval that covers more than the nominal level is valid
    (conservative) and passes; what it costs shows in the length ratio. With ``c``
    below the nominal level ``c (1 - c) > nominal (1 - nominal)``, so the s.e. at the
    observed ``c`` is the more lenient of the two usual choices; at ``c = 0`` it is 0 and
    the cell fails unless it warned.

    Examples
    --------
    >>> passes(0.93, 0.018, 0.1), passes(0.80, 0.028, 0.1), passes(0.5, 0.2, 0.96)
    (True, False, True)
    """
    c = np.asarray(coverage_unwarned, dtype=float)
    se = np.asarray(mcse, dtype=float)
    warned = np.asarray(warned, dtype=float)
    with np.errstate(invalid="ignore"):
        covers = np.isfinite(c) & (c >= nominal - 3 * np.where(np.isfinite(se), se, 0.0))
    out = (warned >= warned_enough) | covers
    return bool(out) if out.ndim == 0 else out


def _pair_with_nonprivate(raw: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    """The private rows with the same replication's non-private estimate, bounds and
    coverage of the truth."""
    keys = factors + ["rep", "coef", "alpha"]
    ref = raw[raw["method"] == NONPRIVATE]
    if ref.empty:
        raise OptionError(f"raw has no rows of method {NONPRIVATE!r} (the non-private "
                          "interval each private one is compared with)")
    ref = ref[keys + ["estimate", "lower", "upper", "truth"]]
    ref = pd.DataFrame({
        **{k: ref[k] for k in keys},
        "np_estimate": ref["estimate"], "np_length": ref["upper"] - ref["lower"],
        "np_covered": (ref["lower"] <= ref["truth"]) & (ref["truth"] <= ref["upper"])})
    private = raw[(raw["method"] != NONPRIVATE) & raw["lower"].notna()]
    return private.merge(ref, on=keys, how="left", validate="many_to_one")


def unwarned_table(raw: pd.DataFrame, factors, *, nominal: float = 0.95,
                   warned_enough: float = WARNED_ENOUGH) -> pd.DataFrame:
    """Per cell, interval and coefficient: the unwarned fits' coverage and the verdict.

    Parameters
    ----------
    raw : pandas.DataFrame
        :func:`dpreg.studies.run_replicates` of a study whose replicate records private
        intervals and the non-private one (``method = "nonprivate"``) with the key
        ``warned``. Rows without an interval (``lower`` NaN) other than these are
        ignored.
    factors : sequence of str
        The columns that name a cell.
    nominal : float
        Nominal coverage of the intervals.
    warned_enough : float
        See :func:`passes`.

    Returns
    -------
    pandas.DataFrame
        One row per cell, ``method`` (the private interval) and ``coef``: ``reps``;
        ``unwarned`` (share of fits without a warning); ``coverage_unwarned`` (of the
        truth by the unwarned fits' intervals, NaN when none) and ``mcse`` (its Monte
        Carlo s.e. ``sqrt(c (1 - c) / k)``, ``k`` the unwarned fits); ``coverage`` (all
        fits); ``coverage_nonprivate`` (the non-private interval, all fits);
        ``length_ratio`` (mean over all fits of the private interval's length over the
        non-private one's) and ``length_ratio_unwarned`` (over the unwarned fits);
        ``contains_np`` (share of all fits whose interval contains the non-private
        estimate); ``passes`` (:func:`passes`).
    """
    factors = list(factors)
    missing = [c for c in factors + ["warned", "method", "rep", "coef"] if c not in raw]
    if missing:
        raise OptionError(f"raw lacks the column(s) {missing}")
    rows = _pair_with_nonprivate(raw, factors)
    rows = rows.assign(
        covered=(rows["lower"] <= rows["truth"]) & (rows["truth"] <= rows["upper"]),
        ratio=(rows["upper"] - rows["lower"]) / rows["np_length"],
        contains_np=(rows["lower"] <= rows["np_estimate"])
        & (rows["np_estimate"] <= rows["upper"]))
    out = []
    for key, g in rows.groupby(factors + ["method", "coef"], sort=False):
        quiet = g[g["warned"] == 0]
        k = len(quiet)
        c = float(quiet["covered"].mean()) if k else np.nan
        mcse = float(np.sqrt(c * (1 - c) / k)) if k else np.nan
        warned = float(g["warned"].mean())
        out.append(dict(zip(factors + ["method", "coef"], key, strict=True)) | dict(
            reps=len(g), unwarned=1.0 - warned, coverage_unwarned=c, mcse=mcse,
            coverage=float(g["covered"].mean()),
            coverage_nonprivate=float(g["np_covered"].mean()),
            length_ratio=float(g["ratio"].mean()),
            length_ratio_unwarned=float(quiet["ratio"].mean()) if k else np.nan,
            contains_np=float(g["contains_np"].mean()),
            passes=passes(c, mcse, warned, nominal=nominal, warned_enough=warned_enough)))
    return pd.DataFrame(out)


def draw_unwarned(summary: pd.DataFrame, path=None, *, factors, coef: str | None = None):
    """Coverage of the unwarned intervals per cell (bars: 1.96 MC s.e.), each cell's share
    of warned fits beside it, one panel per private interval.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`dpreg.studies.summarize` of the study (grouped by ``warned`` among
        others).
    path : str or Path, optional
    factors : sequence of str
        The columns that name a cell.
    coef : str, optional
        The coefficient drawn (default the per-replication average).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    from dpreg.studies.summaries import AVERAGE

    factors = [c for c in factors if c in summary]
    data = summary[(summary["coef"] == (coef or AVERAGE))
                   & (summary["method"] != NONPRIVATE) & summary["coverage"].notna()]
    methods = sorted(data["method"].unique())
    cells = data[factors].drop_duplicates().reset_index(drop=True)
    labels = [" ".join(f"{k}={v}" for k, v in row.items()) for _, row in cells.iterrows()]
    fig = Figure(figsize=(6 * len(methods), 0.3 * len(cells) + 1.5), layout="constrained")
    axes = fig.subplots(1, len(methods), squeeze=False)[0]
    for ax, method in zip(axes, methods, strict=True):
        sub = data[data["method"] == method]
        for i, (_, cell) in enumerate(cells.iterrows()):
            mask = np.logical_and.reduce([sub[k] == cell[k] for k in factors])
            part = sub[mask]
            quiet = part.groupby("warned")["reps"].sum()
            total = max(int(quiet.sum()), 1)
            q = part[part["warned"] == 0]
            if len(q):
                cov = np.average(q["coverage"], weights=q["reps"])
                se = np.sqrt(cov * (1 - cov) / q["reps"].sum())
                ax.errorbar([cov], [i], xerr=[1.96 * se], fmt="o", color="C0", capsize=2)
            if len(part):
                ax.text(1.005, i, f"warned {quiet.get(1, 0) / total:.0%}", va="center",
                        fontsize=7, transform=ax.get_yaxis_transform())
        ax.axvline(0.95, color="grey", lw=1)
        ax.set_yticks(range(len(cells)), labels if ax is axes[0] else [""] * len(cells),
                      fontsize=7)
        ax.set_xlim(0.5, 1.0)
        ax.set_xlabel(f"{method}: coverage of unwarned 95% intervals")
        ax.set_ylim(len(cells) - 0.5, -0.5)
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def study_options(parser):
    """Add the options of a study's command line to an ``argparse`` parser: ``--reps``
    (200), ``--jobs`` (1), ``--out`` (``validation/results``), ``--cache``
    (``studies_out/cache``).

    Parameters
    ----------
    parser : argparse.ArgumentParser

    Returns
    -------
    argparse.ArgumentParser
        ``parser``.
    """
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default="validation/results")
    parser.add_argument("--cache", default="studies_out/cache")
    return parser


def record_study(study, table, csv_name: str, args):
    """Run ``study`` (its cached chunks are reused), write ``table(raw)`` to
    ``args.out/csv_name`` and print it with the run's time and how many rows pass.

    Parameters
    ----------
    study : dpreg.studies.Study
        The study (:func:`dpreg.studies.get_study`).
    table : callable
        ``table(raw) -> DataFrame`` with a ``passes`` column.
    csv_name : str
        File name of the recorded table.
    args : argparse.Namespace
        The options of :func:`study_options`.

    Returns
    -------
    pandas.DataFrame
        The table.
    """
    import time
    from pathlib import Path

    from dpreg.studies.runner import run_replicates

    start = time.perf_counter()
    raw = run_replicates(study, reps=args.reps, n_jobs=args.jobs,
                         cache_dir=args.cache, progress=True)
    out_table = table(raw)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    out_table.to_csv(out / csv_name, index=False, float_format="%.4f")
    minutes = (time.perf_counter() - start) / 60
    with pd.option_context("display.width", 250, "display.max_rows", 1000,
                           "display.max_columns", 50):
        print(out_table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\n{len(out_table)} rows; {minutes:.1f} min, {args.reps} replications per cell; "
          f"{int(out_table['passes'].sum())} of {len(out_table)} pass")
    return out_table
