"""The warnings as statistical tests: which checks fired on a fit, and their rates.

A warning is a test of whether a fit's interval can be trusted. Its *false-alarm rate* is
how often it fires in cells whose interval covers (within 3 Monte Carlo standard errors
of the nominal 95% or above), its *power* how often it fires in the others; the target is
at most 0.10 and at least 0.95 (issue 26). :func:`fired_checks` reads which diagnostics
fired on one fit and the coefficients they name; :func:`check_characteristics` gives each
check's rates from a study's replication rows (the textbook and robustness studies
record ``checks`` and ``flagged``); :func:`warning_characteristics` gives the warning's
rates from a study's per-cell table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dpreg.inference.diagnostics import SSP_FLOOR_SENSITIVITY
from dpreg.studies.records import result_rows

__all__ = ["CELL_FACTORS", "REPORT_CHECKS", "fired_checks", "fit_rows",
           "warning_characteristics", "check_characteristics"]

#: The columns that name a cell in the studies' replication rows (those present are used).
CELL_FACTORS = ("design", "family", "engine", "sampling", "ranges", "n", "p", "mu", "budget",
                "batch", "steps_per_n", "errors", "tau")

#: Each check's field of :class:`~dpreg.inference.diagnostics.ConvergenceReport`.
REPORT_CHECKS = ("unconverged", "floor_decided", "plugin_too_long", "curvature_biased")


def fired_checks(res, messages: list[str]) -> tuple[list[str], set[str]]:
    """Which diagnostics fired on a fit, and the coefficients they name.

    DP-SGD's checks come from its convergence report (each names coefficients; a public
    finding names none); SSP's from its warnings: the floor's names the coefficients
    whose standard errors it decides (``res.floor_sensitivity``), the residual
    variance's every coefficient. A warning of neither kind counts as ``"other"``.
    """
    names = set(res.params.index)
    checks, flagged = [], set()
    report = getattr(res, "convergence", None)
    if report is not None:
        for check in REPORT_CHECKS:
            if getattr(report, check):
                checks.append(check)
                flagged |= set(getattr(report, check))
        if report.public:
            checks.append("public")
            flagged |= names
    for message in messages:
        if message.startswith("SSP: the delta method"):
            checks.append("ssp_floor")  # names the coefficients the floor decides
            sensitivity = res.floor_sensitivity["se_change"]
            flagged |= set(sensitivity.index[sensitivity > SSP_FLOOR_SENSITIVITY])
        elif message.startswith("SSP: the private residual"):
            checks.append("ssp_sigma2")
            flagged |= names
    if messages and not checks:
        checks.append("other")
        flagged |= names
    return checks, flagged


def fit_rows(res, truth, messages: list[str], *, alpha: float, oracle=None) -> list[dict]:
    """A study's rows for one private fit: every interval it offers, its default interval
    again as ``method="default"`` (what ``conf_int()`` returns), and the non-private
    fit's default interval as ``"nonprivate"`` when ``oracle`` is given.

    Every row carries ``warned`` (1 when ``messages``, the fit's
    :class:`~dpreg.exceptions.ConvergenceWarning` messages, is not empty), ``checks``
    (the checks that fired, joined by ``+``) and ``flagged`` (1 when they named the row's
    coefficient), as :func:`fired_checks` reads them.
    """
    checks, flagged = fired_checks(res, messages)
    keys = dict(alpha=alpha, warned=int(bool(messages)), checks="+".join(checks))
    rows = (result_rows(res, truth, **keys)
            + result_rows(res, truth, methods=[res.cov_type],
                          labels={res.cov_type: "default"}, **keys))
    if oracle is not None:
        rows += result_rows(oracle, truth, methods=[oracle.cov_type],
                            labels={oracle.cov_type: "nonprivate"}, **keys)
    for row in rows:
        row["flagged"] = int(row["coef"] in flagged)
    return rows


def warning_characteristics(table: pd.DataFrame, *, method: str = "default",
                            by: Sequence[str] = ()) -> pd.DataFrame:
    """The warning as a test, from a :func:`dpreg.studies.textbook.textbook_table` or a
    :func:`dpreg.studies.robustness.robustness_table` (whose ``warned`` column is the
    share of fits warned).

    A cell's interval *covers* when its coverage over all fits is within 3 MC s.e. of
    0.95 or above. The warning's false-alarm rate is its firing rate in covering cells,
    its power the rate in the others; the issue's targets are at most 0.10 and at least
    0.95. A warning can fall short of that power and still protect the user: what it
    must do in a cell that does not cover is leave unwarned only fits whose intervals
    cover. ``separates`` counts those cells (the unwarned fits' coverage within 3 of its
    MC s.e. of 0.95, or every fit warned).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per cell and method, with ``method``, ``reps``, ``coverage``,
        ``coverage_unwarned``, ``mcse`` and ``unwarned`` or ``warned``.
    method : str
        The interval judged (the rows of ``table`` with this ``method``; both studies
        record each fit's default interval as ``"default"``).
    by : sequence of str
        Columns of ``table`` to report separately (e.g. ``["engine", "ranges"]``).

    Returns
    -------
    pandas.DataFrame
        Per group of ``by`` and ``covers`` (True or False): ``cells``, ``warned_mean``
        and ``warned_worst`` (the largest share of fits warned in covering cells, the
        smallest in the others), ``meets_target`` (share of cells at most 0.10 warned
        where the interval covers, at least 0.95 where it does not) and ``separates``
        (share of the cells that do not cover whose unwarned fits do; NaN for covering
        cells).
    """
    t = table[table["method"] == method].copy()
    if t.empty:
        raise ValueError(f"no rows with method {method!r}; the table has "
                         f"{sorted(table['method'].unique())}")
    t["covers"] = t["coverage"] >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / t["reps"])
    if "warned" not in t:
        t["warned"] = 1.0 - t["unwarned"]
    quiet_covers = (t["coverage_unwarned"] >= 0.95 - 3 * t["mcse"]) | (t["warned"] >= 1.0)
    t["separates"] = quiet_covers.astype(float)
    rows = []
    for key, g in t.groupby([*by, "covers"], sort=True):
        covers = bool(key[-1])
        rows.append(dict(zip([*by, "covers"], key, strict=True), cells=len(g),
                         warned_mean=g["warned"].mean(),
                         warned_worst=g["warned"].max() if covers else g["warned"].min(),
                         meets_target=float((g["warned"] <= 0.10).mean() if covers
                                            else (g["warned"] >= 0.95).mean()),
                         separates=np.nan if covers else g["separates"].mean()))
    return pd.DataFrame(rows)


def check_characteristics(raw: pd.DataFrame, *, method: str = "default") -> pd.DataFrame:
    """Each diagnostic as a test, from the study's replication rows.

    Per cell, the ``method`` interval *covers* when its coverage of the truth over all
    fits is within 3 MC s.e. of 0.95 or above (the fits, not the coefficients, are the
    unit). Each check's firing rate is a false alarm in covering cells and power in the
    others. ``level="coefficient"`` rows do the same per (cell, coefficient) with the
    coefficient's own coverage and the share of fits whose warnings named it.

    Returns
    -------
    pandas.DataFrame
        Columns ``level`` (``"cell"`` or ``"coefficient"``), ``engine``, ``check`` (a
        check's name, or
        ``"any"`` for the warning as a whole), ``covers``, ``units`` (cells or
        (cell, coefficient) pairs), ``rate_mean``, ``rate_worst`` (the largest rate where
        the interval covers, the smallest where it does not) and ``meets_target`` (share
        of units at most 0.10 where it covers, at least 0.95 where it does not).
    """
    factors = [c for c in CELL_FACTORS if c in raw]
    rows = raw[raw["method"] == method]
    rows = rows.assign(covered=(rows["lower"] <= rows["truth"])
                       & (rows["truth"] <= rows["upper"]))
    per_rep = rows.groupby(factors + ["rep"], sort=False, dropna=False).agg(
        covered=("covered", "mean"), checks=("checks", "first"),
        warned=("warned", "max")).reset_index()
    # rows read back from a CSV cache carry NaN where no check fired
    per_rep["checks"] = per_rep["checks"].fillna("").astype(str)
    names = sorted({c for s in per_rep["checks"] for c in s.split("+") if c})
    out = []

    def add(level, units: pd.DataFrame, rate_columns: list[str]):
        units = units.assign(covers=units["coverage"]
                             >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / units["reps"]))
        for check in rate_columns:
            for (engine, covers), g in units.groupby(["engine", "covers"]):
                rate = g[check]
                if not units.loc[units["engine"] == engine, check].any():
                    continue  # a check this engine does not run (or never fired)
                out.append(dict(level=level, engine=engine,
                                check=check.removeprefix("rate_"),
                                covers=bool(covers), units=len(g),
                                rate_mean=float(rate.mean()),
                                rate_worst=float(rate.max() if covers else rate.min()),
                                meets_target=float((rate <= 0.10).mean() if covers
                                                   else (rate >= 0.95).mean())))

    fired = {f"rate_{c}": per_rep["checks"].str.split("+").map(
        lambda s, c=c: c in s) for c in names}
    per_rep = per_rep.assign(rate_any=per_rep["warned"].astype(float), **fired)
    rate_cols = ["rate_any"] + list(fired)
    cells = per_rep.groupby(factors, sort=False, dropna=False).agg(
        reps=("rep", "size"), coverage=("covered", "mean"),
        **{c: (c, "mean") for c in rate_cols}).reset_index()
    add("cell", cells, rate_cols)
    coefs = rows.groupby(factors + ["coef"], sort=False, dropna=False).agg(
        reps=("rep", "size"), coverage=("covered", "mean"),
        rate_any=("flagged", "mean")).reset_index()
    add("coefficient", coefs, ["rate_any"])
    return pd.DataFrame(out)
