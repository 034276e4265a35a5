"""Tables of results: one fit's :meth:`~dpreg.DPRegressionResults.summary` and several
fits side by side, :func:`summary_col`.

One fit: a header (dependent variable, family, engine, inference, rows, privacy), the
coefficient table of :func:`coefficient_frame`, the fit's public settings, its notes and
the privacy ledger.

Several fits, two layouts. ``"wide"`` (the default) is statsmodels' ``summary_col`` and
stargazer's: one column per model, each coefficient with its standard error (or interval)
below, models with different regressors side by side, and rows describing each fit (rows
used, engine, budget, inference). ``"long"`` is Table 1 of the dpsgd-inference paper: one
row per variable, model and inference method.
"""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from dpreg._checks import one_of
from dpreg.exceptions import OptionError
from dpreg.inference.base import StudentLaw
from dpreg.inference.methods import method_labels
from dpreg.inference.mixed import MixedInference
from dpreg.results.tables import Summary

if TYPE_CHECKING:
    from dpreg.results.results import DPRegressionResults

__all__ = ["summary_col", "summary_col_wide", "summary_col_long", "fit_summary",
           "coefficient_frame", "METHOD_LABELS"]

LAYOUTS = ("wide", "long")
#: Settings values longer than this are printed as wrapped lines below the settings
#: table (at :data:`WRAP_WIDTH`), not inside it.
LONG_SETTING = 40
WRAP_WIDTH = 88

#: Display names of the inference methods (``Results.inferences`` keys), from the
#: registry of interval methods (:data:`dpreg.inference.methods.METHODS`).
METHOD_LABELS = method_labels()


# ------------------------------------------------------------------------- one fit
def fit_summary(res: DPRegressionResults, alpha: float = 0.05) -> Summary:
    """The summary of one fit (what :meth:`~dpreg.DPRegressionResults.summary` returns).

    Parameters
    ----------
    res : DPRegressionResults
        The fit.
    alpha : float
        Intervals at level ``1 - alpha``.

    Returns
    -------
    dpreg.results.tables.Summary
        A statsmodels ``Summary``: render with ``as_text()``, ``as_latex()`` or
        ``as_html()``.
    """
    smry = Summary()
    kind = "DP regression" if res.private else "Oracle regression (NON-PRIVATE)"
    smry.add_title(f"{kind} results")
    top = {
        "Dep. Variable:": res.endog_name,
        "Family:": res.family_label,
        "Engine:": res.engine,
        "Inference:": METHOD_LABELS.get(res.cov_type, res.cov_type),
        "No. Observations:": _count(res.nobs),
        "Rows dropped (missing):": _count(res.n_dropped),
        "Df Model:": str(res.df_model),
        "Privacy:": res.privacy_description,
    }
    if res.private and res.ledger is not None:
        eps, acct = res.ledger.epsilon_rigorous
        top["(eps, delta):"] = f"({eps:.4g}, {res.ledger.delta:.3g}) [{acct}]"
    smry.add_dict(top, ncols=2)
    frame = coefficient_frame(res, alpha)
    if frame.isna().to_numpy().any():  # a column that does not apply to a row: blank
        frame = frame.map(lambda v: "" if v != v else f"{v:.4f}")
    smry.add_df(frame, float_format="%.4f")
    if res.settings:
        # a long value (the conditioning's description) would stretch every table of
        # the summary to its length: it goes below the settings table, wrapped
        short = {f"{k}:": _fmt(v) for k, v in res.settings.items()
                 if len(_fmt(v)) <= LONG_SETTING}
        smry.add_dict(short, ncols=2)
        for k, v in res.settings.items():
            if len(_fmt(v)) > LONG_SETTING:
                smry.add_text(textwrap.fill(f"{k}: {_fmt(v)}", width=WRAP_WIDTH))
    for note in res.notes:
        smry.add_text(note)
    for inf in res.inferences.values():
        if inf.note:
            smry.add_text(inf.note)
    if res.ledger is not None:
        _add_ledger(smry, res.ledger)
    return smry


def _count(value: int | None) -> str:
    """A count of rows for the summary: ``None`` when it is protected (clusters as the
    privacy unit keep their sizes private)."""
    return "not released" if value is None else str(value)


def _add_ledger(smry: Summary, led) -> None:
    frame = led.to_frame().set_index("name")
    frame.index.name = "Privacy ledger"
    frame = frame.map(lambda v: f"{v:.4g}" if isinstance(v, float) else str(v))
    smry.add_df(frame.reset_index(), index=False)
    eps, acct = led.epsilon_rigorous
    smry.add_dict({
        "Request:": led.request.describe(),
        "Total mu (GDP; CLT for subsampled steps):": f"{led.total_mu:.4g}",
        "(eps, delta) rigorous [headline]:": f"({eps:.4g}, {led.delta:.3g})",
        "(eps, delta) from GDP-CLT:": f"({led.epsilon_gdp:.4g}, {led.delta:.3g})",
        "Accountant:": acct,
    }, ncols=1)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def coefficient_frame(res: DPRegressionResults, alpha: float) -> pd.DataFrame:
    """The coefficient table of one fit (:meth:`~dpreg.DPRegressionResults.summary_frame`).

    Parameters
    ----------
    res : DPRegressionResults
        The fit.
    alpha : float
        Intervals at level ``1 - alpha``.

    Returns
    -------
    pandas.DataFrame
        ``coef``; where the fit has standard errors, ``std err``, the statistic (``t``
        or ``z``), its p-value and interval; where it has random scaling, the
        random-scaling interval and p-value.
    """
    theta = res.params.to_numpy()
    lo, hi = f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"
    cols = {"coef": theta}

    def standard_error_columns(inf, prefix):
        stat = "t" if isinstance(inf.law, StudentLaw) else "z"
        cols[prefix + "std err"] = inf.scale
        cols[prefix + stat] = inf.statistic(theta)
        cols[prefix + f"P>|{stat}|"] = inf.pvalues(theta)
        ci = inf.conf_int(theta, alpha)
        cols[prefix + lo], cols[prefix + hi] = ci[:, 0], ci[:, 1]

    def rs_columns():
        rs = res.inferences["rs"]
        ci = rs.conf_int(theta, alpha)
        cols[f"RS {lo}"], cols[f"RS {hi}"] = ci[:, 0], ci[:, 1]
        cols["RS P>|R|"] = rs.pvalues(theta)

    # the default inference (the header's, bse's, pvalues' and conf_int()'s) comes
    # first; another method's columns are labelled with its name
    default = res.inference(None)
    if isinstance(default, MixedInference):
        # the plug-in's columns, random scaling's interval and p-value where the floor
        # set the plug-in's standard error (no standard error or z there)
        named = default.law.mask
        stat = "t" if isinstance(default.plugin.law, StudentLaw) else "z"
        cols["std err"] = np.where(named, np.nan, default.plugin.scale)
        cols[stat] = np.where(named, np.nan, default.plugin.statistic(theta))
        cols[f"P>|{stat}|"] = default.pvalues(theta)
        ci = default.conf_int(theta, alpha)
        cols[lo], cols[hi] = ci[:, 0], ci[:, 1]
        rs_columns()
    elif default.is_standard_error:
        standard_error_columns(default, "")
        if "rs" in res.inferences:
            rs_columns()
    else:  # random scaling: no standard error of its own; another method's, labelled
        rs_columns()
        for name, inf in res.inferences.items():
            if inf.is_standard_error:
                cols[METHOD_LABELS.get(name, name) + " s.e."] = inf.scale
                break
    return pd.DataFrame(cols, index=list(res.params.index))


# ---------------------------------------------------------------- several fits
def summary_col(results: Sequence[DPRegressionResults], *, layout: str = "wide",
                variables: Sequence[str] | None = None,
                model_names: Sequence[str] | None = None, title: str | None = None,
                float_format: str = "%.3f", stat: str = "se", method: str | None = None,
                stars: bool = False, alpha: float = 0.05) -> Summary:
    """Set several results side by side.

    Parameters
    ----------
    results : sequence of DPRegressionResults
    layout : {"wide", "long"}
        ``"wide"``: one column per model (see :func:`summary_col_wide`); ``"long"``:
        the layout of Table 1 of the dpsgd-inference paper (see :func:`summary_col_long`).
    variables : sequence of str, optional
        Variables to show, in this order (default: all, in order of appearance).
    model_names : sequence of str, optional
        Column headers (wide) or row prefixes (long).
    title : str, optional
    float_format : str
    stat : {"se", "ci"}
        Wide layout: standard errors in parentheses below each coefficient, or the
        ``1 - alpha`` interval in brackets. Methods without standard errors (random
        scaling) always show the interval.
    method : str, optional
        Wide layout: inference method of every column (default: each fit's
        ``cov_type``).
    stars : bool
        Wide layout: ``*``, ``**``, ``***`` for p-values below 0.1, 0.05, 0.01.
    alpha : float
        Level of the intervals.

    Returns
    -------
    statsmodels.iolib.summary2.Summary
        Render with ``as_text()``, ``as_latex()`` or ``as_html()``.

    Examples
    --------
    >>> import dpreg
    >>> sim = dpreg.datasets.simulate_linear(200, random_state=0)
    >>> a = dpreg.oracle(sim.formula, sim.data)
    >>> "Inference" in dpreg.summary_col([a]).as_text()
    True
    """
    one_of("layout", layout, LAYOUTS)
    if layout == "long":
        return summary_col_long(results, variables=variables, model_names=model_names,
                                title=title, float_format=float_format)
    return summary_col_wide(results, variables=variables, model_names=model_names,
                            title=title, float_format=float_format, stat=stat,
                            method=method, stars=stars, alpha=alpha)


def _budget_rows(res: DPRegressionResults) -> tuple[str, str]:
    if not res.private or res.ledger is None:
        return "non-private", "non-private"
    led = res.ledger
    eps, _ = led.epsilon_rigorous
    mu = led.total_mu
    mu_text = f"{mu:.3g}" if math.isfinite(mu) else "-"
    return mu_text, f"({eps:.3g}, {led.delta:.2g})"


def summary_col_wide(results: Sequence[DPRegressionResults], *,
                     variables: Sequence[str] | None = None,
                     model_names: Sequence[str] | None = None, title: str | None = None,
                     float_format: str = "%.3f", stat: str = "se", method: str | None = None,
                     stars: bool = False, alpha: float = 0.05) -> Summary:
    """One column per model, coefficients with standard errors (or intervals) below.

    Rows below the coefficients: ``N`` (rows used), ``Engine``, ``Budget (mu)`` (total
    Gaussian-DP budget of the ledger), ``(eps, delta)`` (rigorous accountant),
    ``Inference`` (the method behind the standard errors or intervals). A variable a
    model does not have is left blank in its column. See :func:`summary_col`.
    """
    results = list(results)
    if not results:
        raise OptionError("summary_col needs at least one result")
    if stat not in ("se", "ci"):
        raise OptionError(f"stat must be 'se' or 'ci', got {stat!r}")
    if model_names is not None and len(model_names) != len(results):
        raise OptionError(f"model_names has {len(model_names)} names for {len(results)} results")
    names = list(model_names) if model_names is not None else _default_names(results)
    all_vars = list(dict.fromkeys(v for r in results for v in r.params.index))
    if variables is not None:
        unknown = [v for v in variables if v not in all_vars]
        if unknown:
            raise OptionError(f"variables {unknown} are in none of the results; they have "
                              f"{all_vars}")
        all_vars = list(variables)
    index, rows = [], []
    columns = []
    for res in results:
        inf = res.inference(method)
        theta = res.params.to_numpy()
        pvals = pd.Series(inf.pvalues(theta), index=res.params.index)
        ci = pd.DataFrame(inf.conf_int(theta, alpha), index=res.params.index)
        se = pd.Series(inf.scale, index=res.params.index) if inf.is_standard_error else None
        col = {}
        for var in all_vars:
            if var not in res.params.index:
                col[(var, 0)], col[(var, 1)] = "", ""
                continue
            est = float_format % res.params[var]
            if stars:
                est += "*" * sum(pvals[var] < c for c in (0.1, 0.05, 0.01))
            col[(var, 0)] = est
            if se is not None and stat == "se":
                col[(var, 1)] = f"({float_format % se[var]})"
            else:
                lo, hi = ci.loc[var]
                col[(var, 1)] = f"[{float_format % lo}, {float_format % hi}]"
        mu_text, eps_text = _budget_rows(res)
        col.update({("N", 0): _count(res.nobs), ("Engine", 0): res.engine,
                    ("Budget (mu)", 0): mu_text, ("(eps, delta)", 0): eps_text,
                    ("Inference", 0): METHOD_LABELS.get(inf.method, inf.method)})
        columns.append(col)
    keys = list(columns[0])
    for key in keys:
        index.append(key[0] if key[1] == 0 else "")
        rows.append([c[key] for c in columns])
    frame = pd.DataFrame(rows, index=index, columns=names)
    smry = Summary()
    if title:
        smry.add_title(title)
    smry.add_df(frame, header=True, align="r")
    below = ("Standard errors in parentheses" if stat == "se" else "")
    if stat == "ci" or any(not r.inference(method).is_standard_error for r in results):
        level = f"{100 * (1 - alpha):g}%"
        below += ("; " if below else "") + f"{level} intervals in brackets"
    smry.add_text(below + ".")
    if stars:
        smry.add_text("* p<.1, ** p<.05, *** p<.01")
    if any(not r.private for r in results):
        smry.add_text("Columns marked non-private are oracle fits on the raw data (NOT "
                      "private).")
    return smry


def _default_names(results) -> list[str]:
    names = [f"({k + 1}) {r.endog_name}" for k, r in enumerate(results)]
    return names


def summary_col_long(results: Sequence[DPRegressionResults], *,
                     variables: Sequence[str] | None = None,
                     model_names: Sequence[str] | None = None, title: str | None = None,
                     float_format: str = "%.3f") -> Summary:
    """Set several results side by side in the layout of Table 1 of the dpsgd-inference paper.

    For each variable there is one row per (result, inference method): the oracle's
    row, then each private result's plug-in and random-scaling rows, with columns
    Estimate, Standard Error (``x`` where the method gives none, as for random
    scaling) and p-value.

    Parameters
    ----------
    results : sequence of DPRegressionResults
    variables : sequence of str, optional
        Variables to show (default: all of the first result's).
    model_names : sequence of str, optional
        Prefix for each result's rows (useful with several private fits).
    title : str, optional
    float_format : str

    Returns
    -------
    statsmodels.iolib.summary2.Summary
        Render with ``as_text()``, ``as_latex()`` or ``as_html()``.
    """
    results = list(results)
    if not results:
        raise OptionError("summary_col needs at least one result")
    if model_names is not None and len(model_names) != len(results):
        raise OptionError(f"model_names has {len(model_names)} names for {len(results)} results")
    variables = list(variables) if variables is not None else list(results[0].params.index)
    rows, index = [], []
    for var in variables:
        for k, res in enumerate(results):
            if var not in res.params.index:
                raise OptionError(f"variable {var!r} is not in result {k}; it has "
                                  f"{list(res.params.index)}")
            prefix = f"{model_names[k]} " if model_names is not None else ""
            for method, inf in res.inferences.items():
                est = res.params[var]
                j = res.params.index.get_loc(var)
                se = inf.scale[j] if inf.is_standard_error else "x"
                pval = inf.pvalues(res.params.to_numpy())[j]
                rows.append([est, se, pval])
                index.append((var, prefix + METHOD_LABELS.get(method, method)))
    frame = pd.DataFrame(rows, columns=["Estimate", "Standard Error", "p-value"],
                         index=pd.MultiIndex.from_tuples(index, names=["Variable", "Method"]))
    frame = frame.map(lambda v: v if isinstance(v, str) else float_format % v)
    flat = frame.reset_index()
    flat.loc[flat["Variable"].duplicated(), "Variable"] = ""
    smry = Summary()
    if title:
        smry.add_title(title)
    smry.add_df(flat, index=False)
    privacy = {r.ledger.request.describe() for r in results if r.private and r.ledger}
    if privacy:
        smry.add_text("Private rows: " + "; ".join(sorted(privacy)) + ". Oracle rows are "
                      "NON-PRIVATE.")
    return smry
