"""Formulas to designs. The only module of dpreg that imports patsy.

``build_design(formula, data)`` turns a Wilkinson formula and a pandas DataFrame into a
:class:`dpreg.design.Design`: categorical terms ``C()``, interactions, intercept control
(``- 1`` or ``0 +``), transformations evaluated in the caller's namespace, and missing
values handled by the ``missing`` policy. Term names flow to every output.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np
import pandas as pd
import patsy

from dpreg.design import Design, check_bounds, check_finite_full_rank, check_missing
from dpreg.exceptions import DataError, FormulaError, OptionError

__all__ = ["build_design", "build_exog"]

_NAME_ERROR = re.compile(r"name '([^']+)' is not defined")


def _check_frame(data: Any) -> pd.DataFrame:
    if not isinstance(data, pd.DataFrame):
        if isinstance(data, Mapping):
            data = pd.DataFrame(data)
        else:
            raise DataError(f"data must be a pandas DataFrame (or a dict of columns), "
                            f"got {type(data).__name__}")
    cols = list(data.columns)
    try:
        seen = set(cols)
    except TypeError:
        raise DataError("column names must be hashable strings") from None
    if len(seen) != len(cols):
        dup = sorted({str(c) for c in cols if cols.count(c) > 1})
        raise DataError(f"duplicate column names in data: {dup}; rename them so each "
                        "column has one name")
    return data


def _missing_columns(formula: str, data: pd.DataFrame) -> list[str]:
    """Columns named in the formula that have missing values (for error messages)."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", formula))
    return [str(c) for c in data.columns if str(c) in words and data[c].isna().any()]


def _patsy_call(fn, *args, **kwargs):
    """Call patsy and translate its errors into dpreg's documented classes."""
    try:
        return fn(*args, **kwargs)
    except patsy.PatsyError as err:
        msg = str(err)
        match = _NAME_ERROR.search(msg)
        if match:
            raise FormulaError(f"the formula refers to {match.group(1)!r}, which is not a "
                               "column of the data (nor a function in scope); check the "
                               "spelling or add the column") from None
        if "missing values" in msg or "NA" in msg.split("\n")[0]:
            raise DataError(f"missing values and missing='raise': {msg.splitlines()[0]}; "
                            "use missing='drop' to drop incomplete rows") from None
        raise FormulaError(f"cannot build the design from the formula: {msg.splitlines()[0]}") from None


def _column_bounds(design_info, bounds: Mapping[str, tuple[float, float]]):
    """Per-column bound on |x_j| and the term grouping, from declared variable bounds."""
    col_bounds: list[float | None] = [None] * len(design_info.column_names)
    groups = []
    undeclared = []
    for term, coding in design_info.term_codings.items():
        sl = design_info.term_slices[term]
        cols = tuple(range(sl.start, sl.stop))
        has_categorical = any(design_info.factor_infos[f].type == "categorical"
                              for f in term.factors)
        groups.append(cols if has_categorical else tuple((c,) for c in cols))
        bound = 1.0
        for factor in term.factors:
            info = design_info.factor_infos[factor]
            if info.type == "categorical":
                mats = [sub.contrast_matrices[factor].matrix for sub in coding
                        if factor in sub.contrast_matrices]
                bound *= max((float(np.max(np.abs(m))) for m in mats), default=1.0)
            else:
                name = factor.name()
                if name in bounds and info.num_columns == 1:
                    bound *= max(abs(v) for v in bounds[name])
                else:
                    bound = None
                    undeclared.append(name)
                    break
        for c in cols:
            col_bounds[c] = bound
    flat_groups = []
    for g in groups:
        if g and isinstance(g[0], tuple):
            flat_groups.extend(g)
        else:
            flat_groups.append(g)
    return tuple(col_bounds), tuple(flat_groups), tuple(dict.fromkeys(undeclared))


def build_design(formula: str, data, *, missing: str = "drop",
                 bounds: Mapping[str, Any] | None = None, eval_env: int = 0) -> Design:
    """Build a :class:`~dpreg.design.Design` from a formula and a DataFrame.

    Parameters
    ----------
    formula : str
        Patsy formula, e.g. ``"y ~ x1 + C(group) + x1:x2"``.
    data : pandas.DataFrame
    missing : {"drop", "raise"}
        Drop rows with a missing value in any variable of the model (the count is
        reported) or raise :class:`~dpreg.exceptions.DataError`.
    bounds : dict, optional
        ``{variable: (lower, upper)}`` public bounds of data columns.
    eval_env : int
        How many frames above the caller to look up names used in the formula.
    """
    if not isinstance(formula, str) or "~" not in formula:
        raise FormulaError(f"formula must be a string 'outcome ~ terms', got {formula!r}")
    missing = check_missing(missing)
    bounds = check_bounds(bounds)
    data = _check_frame(data)
    env = patsy.EvalEnvironment.capture(eval_env + 1)
    env = env.with_outer_namespace({"np": np})
    na_action = patsy.NAAction(on_NA=missing)
    if missing == "raise":
        cols = _missing_columns(formula, data)
        if cols:
            counts = {c: int(data[c].isna().sum()) for c in cols}
            raise DataError(f"missing values in column(s) {counts} and missing='raise'; use "
                            "missing='drop' to drop incomplete rows, or fill them")
    y_df, X_df = _patsy_call(patsy.dmatrices, formula, data, eval_env=env,
                             NA_action=na_action, return_type="dataframe")
    if y_df.shape[1] != 1:
        lhs = formula.split("~")[0].strip()
        raise DataError(f"the outcome {lhs!r} is not numeric (patsy coded it as "
                        f"{y_df.shape[1]} columns {list(y_df.columns)}); convert it to numbers")
    endog_name = str(y_df.columns[0])
    exog_names = tuple(str(c) for c in X_df.columns)
    y = np.ascontiguousarray(y_df.iloc[:, 0].to_numpy(dtype=float))
    X = np.ascontiguousarray(X_df.to_numpy(dtype=float))
    check_finite_full_rank(y, X, endog_name, exog_names)
    design_info = X_df.design_info
    col_bounds, groups, undeclared = _column_bounds(design_info, bounds)
    lhs_factors = [f.name() for t in y_df.design_info.terms for f in t.factors]
    variables = set(lhs_factors) | {f.name() for t in design_info.terms for f in t.factors}
    unknown = [k for k in bounds if k not in variables]
    if unknown:
        raise OptionError(f"bounds name {unknown}, which the formula does not use as a "
                          f"variable; variables in the model: {sorted(variables)}")
    return Design(endog=y, exog=X, endog_name=endog_name, exog_names=exog_names,
                  n_dropped=len(data) - len(y), formula=formula, column_bounds=col_bounds,
                  term_groups=groups, endog_bounds=bounds.get(endog_name),
                  undeclared=undeclared, design_info=design_info)


def build_exog(design_info, data) -> np.ndarray:
    """Design matrix for new data with the columns of a fitted model (for ``predict``)."""
    data = _check_frame(data)
    (X,) = _patsy_call(patsy.build_design_matrices, [design_info], data,
                       NA_action=patsy.NAAction(on_NA="raise"), return_type="matrix")
    return np.asarray(X, dtype=float)
