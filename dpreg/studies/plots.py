"""Figures of a study's summary: coverage and interval length against n (the papers' style).

Each function takes the tidy table of :func:`dpreg.studies.summarize` and returns a
:class:`matplotlib.figure.Figure` (built without pyplot, so it works headless and in
worker processes), saved to ``path`` when one is given.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from dpreg._checks import one_of
from dpreg.exceptions import OptionError
from dpreg.studies.summaries import AVERAGE, MEASURES, nominal_band

__all__ = ["plot_metric", "plot_coverage", "plot_length", "filter_rows"]

_Z = 1.959963984540054
_LABELS = {"coverage": "coverage", "length": "average interval length", "bias": "bias",
           "mse": "MSE", "rmse": "RMSE", "rejection": "rejection rate (true null)"}


def filter_rows(summary: pd.DataFrame, where: Mapping[str, Any] | None) -> pd.DataFrame:
    """Rows whose columns equal ``where``'s values (a list or tuple means "one of").

    Parameters
    ----------
    summary : pandas.DataFrame
    where : dict, optional

    Returns
    -------
    pandas.DataFrame
    """
    if not where:
        return summary
    keep = np.ones(len(summary), dtype=bool)
    for k, v in where.items():
        if k not in summary:
            raise OptionError(f"where names a column not in the summary: {k!r}")
        allowed = list(v) if isinstance(v, (list, tuple, set)) else [v]
        keep &= summary[k].isin(allowed).to_numpy()
    return summary[keep]


def _levels(frame: pd.DataFrame, col: str | None) -> list:
    if col is None:
        return [None]
    return list(dict.fromkeys(frame[col].tolist()))


def _subset(frame, col, value):
    if col is None:
        return frame
    if isinstance(value, float) and np.isnan(value):
        return frame[frame[col].isna()]
    return frame[frame[col] == value]


def plot_metric(summary: pd.DataFrame, metric: str, *, x: str = "n", hue: str = "method",
                row: str | None = None, col: str | None = None, coef: str = AVERAGE,
                where: Mapping[str, Any] | None = None, errorbars: str = "mcse",
                band: bool = False, logx: bool = False, logy: bool = False,
                hue_order: Sequence | None = None, title: str | None = None,
                xlabel: str | None = None, ylabel: str | None = None,
                ylim: tuple[float, float] | None = None, reference: pd.DataFrame | None = None,
                path=None, figsize=None):
    """Plot one measure against ``x``, one line per ``hue``, facets by ``row`` / ``col``.

    Parameters
    ----------
    summary : pandas.DataFrame
        From :func:`dpreg.studies.summarize`.
    metric : {"coverage", "length", "bias", "mse", "rmse", "rejection"}
    x : str
        Column on the horizontal axis (a factor such as ``"n"``, a key such as
        ``"steps"``, or ``"nominal"``). A ``hue`` whose ``x`` is missing (an estimator
        that does not depend on ``x``, such as OLS against the number of steps) is
        drawn as a dashed horizontal line.
    hue : str
        Column giving one line each.
    row, col : str, optional
        Columns giving rows and columns of panels.
    coef : str
        Coefficient to show (default the average over coefficients).
    where : dict, optional
        Keep only matching rows first (see :func:`filter_rows`).
    errorbars : {"mcse", "coef-range", "none"}
        ``"mcse"``: +/- 1.96 Monte Carlo standard errors. ``"coef-range"``: from the
        2.5th to the 97.5th percentile of the measure across coefficients (the dpgd
        paper's error bars).
    band : bool
        Shade where a calibrated coverage falls with probability 95%:
        ``nominal -/+ 1.96 sqrt(nominal (1 - nominal) / reps)`` (see
        :func:`dpreg.studies.nominal_band`); around the diagonal when ``x="nominal"``.
    logx, logy : bool
    hue_order : sequence, optional
    title, xlabel, ylabel : str, optional
    ylim : (float, float), optional
    reference : pandas.DataFrame, optional
        Published numbers in the summary's columns (``x``, ``hue``, facets, ``coef``,
        ``metric``), drawn as open markers on dotted lines, labelled "(paper)".
    path : str or Path, optional
        Save the figure there (PNG, 120 dpi).
    figsize : (float, float), optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    one_of("metric", metric, MEASURES)
    if errorbars not in ("mcse", "coef-range", "none"):
        raise OptionError(f"errorbars must be 'mcse', 'coef-range' or 'none', got "
                          f"{errorbars!r}")
    data = filter_rows(summary, where)
    for name in (x, hue, row, col):
        if name is not None and name not in data:
            raise OptionError(f"column {name!r} is not in the summary")
    main = data[data["coef"] == coef]
    if main.empty:
        raise OptionError(f"no rows to plot for coef={coef!r} and where={where!r}")
    rows_, cols_ = _levels(main, row), _levels(main, col)
    if figsize is None:
        figsize = (4.6 * len(cols_) + 1.2, 3.4 * len(rows_) + 0.6)
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(len(rows_), len(cols_), squeeze=False, sharex=True, sharey="row")
    hues = list(hue_order) if hue_order is not None else _levels(main, hue)
    colors = {h: f"C{i % 10}" for i, h in enumerate(hues)}
    markers = "osD^vP*Xh<>"
    for r, rv in enumerate(rows_):
        for c, cv in enumerate(cols_):
            ax = axes[r, c]
            panel = _subset(_subset(main, row, rv), col, cv)
            spread = _subset(_subset(data[data["coef"] != coef], row, rv), col, cv)
            xs_all = panel[x].dropna().to_numpy(float)
            for k, h in enumerate(hues):
                g = panel[panel[hue] == h]
                if g.empty:
                    continue
                label = str(h)
                if g[x].isna().all():
                    ax.axhline(float(g[metric].mean()), color=colors[h], ls="--", lw=1.3,
                               label=label)
                    continue
                g = g.dropna(subset=[x]).sort_values(x)
                xv, yv = g[x].to_numpy(float), g[metric].to_numpy(float)
                err = None
                if errorbars == "mcse":
                    err = _Z * g[f"{metric}_mcse"].to_numpy(float)
                elif errorbars == "coef-range" and not spread.empty:
                    s = spread[spread[hue] == h]
                    q = s.groupby(x)[metric].quantile([0.025, 0.975]).unstack()
                    q = q.reindex(xv)
                    err = np.vstack([yv - q[0.025].to_numpy(), q[0.975].to_numpy() - yv])
                    err = np.clip(err, 0.0, None)  # the average can sit on an end
                ax.errorbar(xv, yv, yerr=err, color=colors[h], marker=markers[k % 11],
                            ms=4.5, lw=1.4, capsize=2.5, label=label)
            if reference is not None:
                _reference(ax, reference, metric, x, hue, hues, colors, coef,
                           ((row, rv), (col, cv)))
            if band and len(xs_all):
                _band(ax, panel, x)
            if logx:
                ax.set_xscale("log")
            ticks = np.unique(xs_all)
            if 1 < len(ticks) <= 8 and x != "nominal":  # label the design points
                ax.set_xticks(ticks, [f"{t:,g}" for t in ticks])
                ax.xaxis.set_minor_locator(NullLocator())
            if logy:
                ax.set_yscale("log")
            if ylim is not None:
                ax.set_ylim(*ylim)
            heading = [f"{n} = {v}" for n, v in ((row, rv), (col, cv)) if n is not None]
            if heading:
                ax.set_title(", ".join(heading), fontsize=10)
            if r == len(rows_) - 1:
                ax.set_xlabel(xlabel or x)
            if c == 0:
                ax.set_ylabel(ylabel or _LABELS[metric])
            ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    for ax in axes.flat[1:]:
        for hnd, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(hnd)
                labels.append(lab)
    per_row = max(1, min(4, int(figsize[0] / 2.9)))
    fig.legend(handles, labels, loc="outside lower center", ncols=min(per_row, len(labels)),
               fontsize=9, frameon=False)
    if title:
        fig.suptitle(title, fontsize=11)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def _reference(ax, reference, metric, x, hue, hues, colors, coef, facets) -> None:
    """Published numbers as open markers on dotted lines."""
    ref = reference
    if "coef" in ref:
        ref = ref[ref["coef"] == coef]
    for name, value in facets:
        if name is not None and name in ref:
            ref = _subset(ref, name, value)
    for h in hues:
        g = ref[ref[hue] == h].sort_values(x) if hue in ref else ref.iloc[0:0]
        if g.empty or metric not in g:
            continue
        ax.plot(g[x].to_numpy(float), g[metric].to_numpy(float), ls=":", marker="o",
                mfc="none", color=colors[h], lw=1, label=f"{h} (paper)")


def _band(ax, panel: pd.DataFrame, x: str) -> None:
    """Shade the nominal -/+ 1.96 MC band (around the diagonal for ``x="nominal"``)."""
    if "nominal" not in panel or panel["nominal"].isna().all():
        return
    g = panel.dropna(subset=[x, "nominal"])
    if x == "nominal":
        by = g.groupby("nominal")["reps"].min().sort_index()
        q = by.index.to_numpy(float)
        lo, hi = nominal_band(q, by.to_numpy(float))
        ax.fill_between(q, lo, np.minimum(hi, 1.0), color="grey", alpha=0.25, lw=0,
                        label="nominal ± 1.96 MC s.e.")
        ax.plot(q, q, color="grey", lw=1, ls=":")
        return
    for q, gq in g.groupby("nominal"):
        by = gq.groupby(x)["reps"].min().sort_index()
        xv = by.index.to_numpy(float)
        lo, hi = nominal_band(float(q), by.to_numpy(float))
        if len(xv) == 1:
            xv = np.array([xv[0] * 0.97, xv[0] * 1.03])
            lo, hi = np.repeat(lo, 2), np.repeat(hi, 2)
        ax.fill_between(xv, lo, np.minimum(hi, 1.0), color="grey", alpha=0.25, lw=0,
                        label="nominal ± 1.96 MC s.e.")
        ax.axhline(float(q), color="grey", lw=1, ls=":")


def plot_coverage(summary: pd.DataFrame, *, x: str = "n", hue: str = "method",
                  **kwargs) -> Any:
    """Coverage against ``x`` with the nominal +/- Monte Carlo band (95% by default).

    Parameters
    ----------
    summary : pandas.DataFrame
        From :func:`dpreg.studies.summarize`.
    x, hue : str
        As in :func:`plot_metric`.
    **kwargs
        Passed to :func:`plot_metric` (``row``, ``col``, ``where``, ``path``, ...).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import dpreg.studies as ds
    >>> table = ds.run_study(ds.get_study("smoke"), reps=4, n_jobs=1, progress=False)
    >>> fig = ds.plot_coverage(table, x="n")
    >>> fig.axes[0].get_ylabel()
    'coverage'
    """
    kwargs.setdefault("band", True)
    return plot_metric(summary, "coverage", x=x, hue=hue, **kwargs)


def plot_length(summary: pd.DataFrame, *, x: str = "n", hue: str = "method",
                **kwargs) -> Any:
    """Average interval length against ``x`` (one line per ``hue``).

    Parameters
    ----------
    summary : pandas.DataFrame
        From :func:`dpreg.studies.summarize`.
    x, hue : str
        As in :func:`plot_metric`.
    **kwargs
        Passed to :func:`plot_metric`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    return plot_metric(summary, "length", x=x, hue=hue, **kwargs)
