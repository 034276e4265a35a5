"""Building the design: :func:`build_design` turns a Wilkinson formula and a pandas
DataFrame into a :class:`dpreg.design.Design`.

Categorical terms ``C()``, interactions, intercept control (``- 1`` or ``0 +``),
transformations evaluated in the caller's namespace, and missing values handled by the
``missing`` policy. Term names flow to every output.

What the formula reads off the data is recorded for the privacy layer: categories of
categorical variables not declared with ``levels=`` (they show in the output's names;
a pandas Categorical's categories count as declared only through ``levels=``), and
stateful transforms (``standardize``, ``center``, splines), whose constants are
statistics of the data. Terms that read other rows in any other way are refused
(:mod:`dpreg.design.formula.rowwise`). Bounds: :mod:`dpreg.design.formula.term_bounds`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import patsy

from dpreg.design.design import Design, check_finite_full_rank, check_missing
from dpreg.design.formula.frames import (
    check_frame,
    design_matrices,
    owned_arrays,
    plain_dtypes,
    prepare_frame,
    template_matrices,
)
from dpreg.design.formula.namespace import FORMULA_BUILTINS, WORD
from dpreg.design.formula.numeric import numeric_columns, numeric_plan
from dpreg.design.formula.rowwise import check_rowwise_terms
from dpreg.design.formula.term_bounds import (
    bounds_of_columns,
    check_bound_names,
    derived_bounds,
    enforce_term_bounds,
    row_norm_bound,
)
from dpreg.exceptions import DataError, FormulaError

__all__ = ["build_design"]


def _declared_categorical(s: pd.Series, col, levels) -> bool:
    """Categories are public when declared with ``levels=`` or the column is boolean
    (False/True). A pandas Categorical's own categories do not count: ``astype(
    "category")`` reads them off the data."""
    return col in (levels or {}) or pd.api.types.is_bool_dtype(s.dtype)


def _read_off_data(design_infos, data: pd.DataFrame, levels=None):
    """Categorical variables whose categories came from the data, and stateful terms."""
    undeclared, stateful = [], []
    for di in design_infos:
        for factor, info in di.factor_infos.items():
            state = getattr(info, "state", None)
            if isinstance(state, dict) and state.get("transforms"):
                stateful.append(factor.name())
            if info.type == "categorical":
                cols = [c for c in WORD.findall(factor.name()) if c in data.columns]
                if not cols or not all(_declared_categorical(data[c], c, levels)
                                       for c in cols):
                    undeclared.append(factor.name())
    return tuple(dict.fromkeys(undeclared)), tuple(dict.fromkeys(stateful))


def build_design(formula: str, data, *, missing: str = "drop",
                 bounds: Mapping[str, Any] | None = None,
                 levels: Mapping[str, Sequence] | None = None, eval_env: int = 0,
                 binary_outcome: bool = False, check_rowwise: bool = True,
                 template: Design | None = None) -> Design:
    """Build a :class:`~dpreg.design.Design` from a formula and a DataFrame.

    Also the template of a stream, from its first chunk (later chunks go through
    :func:`~dpreg.design.formula.rows.build_chunk`). Identification (``n >= p``, full
    rank) is never checked here: it is a property of the private data, checked for
    oracles only (:func:`dpreg.design.check_identified`).

    Parameters
    ----------
    formula : str
        Patsy formula, e.g. ``"y ~ x1 + C(group) + x1:x2"``.
    data : pandas.DataFrame
        Not modified: declared bounds and levels are applied to a copy.
    missing : {"drop", "raise"}
        Drop rows with a missing value in any variable of the model (the count is
        reported, and public by assumption in central fits; LDP-SGD sends such rows as
        null rows, see :meth:`dpreg.design.Design.device_rows`) or raise
        :class:`~dpreg.exceptions.DataError`.
    bounds : dict, optional
        ``{variable: (lower, upper)}`` public bounds. Data columns are clipped to them
        (columns the formula does not use may be named too); bounds of transformed
        terms (``np.log(w)``, ``I(x1 * x2)``, ...) are derived from them where sound.
        A key may also name a transformed term used as a main effect, e.g.
        ``"np.log(x)"``: its design column is clipped. Other names raise
        :class:`~dpreg.exceptions.OptionError` with the close matches.
    levels : dict, optional
        ``{column: [category, ...]}`` public categories of categorical columns. A value
        outside them is an error.
    eval_env : int or captured environment
        How many frames above the caller to look up names used in the formula, or an
        environment from :func:`~dpreg.design.formula.namespace.capture_env`.
    binary_outcome : bool
        Accept a boolean or two-level categorical outcome and code its second level
        (in patsy's sorted order, ``True`` for booleans) as 1; the outcome's name then
        says which level, e.g. ``"smoker[yes]"``.
    check_rowwise : bool
        Refuse terms not computed row by row (three single-row designs compared with
        the full one). ``False`` only where this formula was already checked on these
        rows (the rebuild with privately learned ranges, which changes only the
        bounds).
    template : Design, optional
        The design of the same formula on the same rows, built before (the rebuild
        with privately learned ranges, which changes only the bounds). When its terms
        are the intercept and products of raw numeric columns, the new design is built
        from its columns with numpy, as a stream's chunks are (equal to patsy's, and
        without patsy's per-column cost); otherwise by patsy from the template's terms
        (no second parse of the formula).

    Raises
    ------
    PrivacyLeakError
        A term is not computed row by row (``I(x - x.mean())``).
    DataError, FormulaError, OptionError
        Bad data, formula or bounds; the message names the column or term.
    """
    if not isinstance(formula, str) or "~" not in formula:
        raise FormulaError(f"formula must be a string 'outcome ~ terms', got {formula!r}")
    missing = check_missing(missing)
    data = plain_dtypes(check_frame(data))
    if len(data) == 0:
        raise DataError("data has no rows")
    if not isinstance(eval_env, patsy.EvalEnvironment):
        eval_env = patsy.EvalEnvironment.capture(eval_env + 1)
    env = eval_env.with_outer_namespace(FORMULA_BUILTINS)
    data, bounds = prepare_frame(formula, data, bounds, levels, missing)
    data = data.reset_index(drop=True)  # patsy's output index = row positions
    infos = _numeric_infos(formula, data, env, missing, template)
    plan = None if infos is None else numeric_plan(*infos[:2], data)
    if plan is not None:  # raw numeric columns: built by numpy, as patsy would
        y_info, design_info, endog_name, exog_names = infos
        y, X, keep = numeric_columns(plan, data)
        kept = np.flatnonzero(keep)
    else:
        if template is not None:
            # the template's terms (same formula, same rows, only the bounds differ):
            # patsy evaluates the factors on the clipped rows, without parsing the
            # formula and sniffing each factor's type and levels again
            y_m, X_m, kept = template_matrices(template, data, missing=missing)
        else:
            y_m, X_m, kept = design_matrices(patsy.dmatrices, formula, data, eval_env=env,
                                              missing=missing, n=len(data))
        y_info, design_info = y_m.design_info, X_m.design_info
        if check_rowwise:
            check_rowwise_terms(y_info, design_info, data, kept, y_m, X_m)
        y_names = list(y_info.column_names)
        if binary_outcome and y_m.shape[1] == 2:
            y_m, y_names = y_m[:, [1]], y_names[1:]
        if y_m.shape[1] != 1:
            lhs = formula.split("~")[0].strip()
            raise DataError(f"the outcome {lhs!r} is not numeric (patsy coded it as "
                            f"{y_m.shape[1]} columns {y_names}); convert it to numbers")
        endog_name = str(y_names[0])
        exog_names = tuple(str(c) for c in design_info.column_names)
        y, X = owned_arrays(y_m, X_m)
    # identification (n >= p, rank) is checked only for oracles: see dpreg.design
    check_finite_full_rank(y, X, endog_name, exog_names, rank=False)
    lhs_factors = [f.name() for t in y_info.terms for f in t.factors]
    check_bound_names(bounds, data, y_info, design_info)
    term_bounds = enforce_term_bounds(bounds, data, y_info, design_info, y, X)
    derived = derived_bounds(bounds, data, [y_info, design_info])
    effective = {**derived, **bounds}
    x_norm, undeclared = row_norm_bound(design_info, effective)
    column_bounds, column_factors = bounds_of_columns(design_info, effective)
    undeclared_levels, stateful = _read_off_data([y_info, design_info], data, levels)
    endog_bounds = effective.get(lhs_factors[0]) if len(lhs_factors) == 1 else None
    missing_rows = np.ones(len(data), dtype=bool)
    missing_rows[kept] = False
    used = {k: v for k, v in derived.items()
            if k not in term_bounds and _uses(k, y_info, design_info)}
    return Design(endog=y, exog=X, endog_name=endog_name, exog_names=exog_names,
                  n_dropped=len(data) - len(y), formula=formula, x_norm_bound=x_norm,
                  endog_bounds=endog_bounds, undeclared=undeclared,
                  undeclared_levels=undeclared_levels, stateful=stateful,
                  design_info=design_info, endog_info=y_info, derived_bounds=used,
                  missing_rows=missing_rows if missing_rows.any() else None,
                  missing=missing, column_bounds=column_bounds,
                  column_factors=column_factors)


#: Rows of the frame from which patsy describes the terms before a numpy build.
_HEAD_ROWS = 32


def _numeric_infos(formula: str, data: pd.DataFrame, env, missing: str,
                   template: Design | None):
    """``(endog_info, design_info, endog_name, exog_names)`` describing the formula's
    terms without building the design: the template's, or patsy's on the frame's first
    rows (whether a term is the intercept or a product of raw numeric columns depends on
    the formula and the columns' dtypes, not on the values). ``None`` where those rows do
    not build (the full build then raises the error that names the problem).

    A design of such terms is then built by numpy (:func:`numeric_columns`): at 10^6 rows
    patsy's evaluation of each factor is most of the formula's cost. Such terms read only
    their own row, so the row-by-row check has nothing to find."""
    if template is not None:
        return (template.endog_info, template.design_info, template.endog_name,
                tuple(template.exog_names))
    head = data.iloc[:_HEAD_ROWS]
    try:
        y_m, X_m, _ = design_matrices(patsy.dmatrices, formula, head,
                                      eval_env=env, missing=missing, n=len(head))
    except (DataError, FormulaError):
        return None
    if y_m.shape[1] != 1:  # a two-level outcome coded by patsy: patsy builds it
        return None
    return (y_m.design_info, X_m.design_info, str(y_m.design_info.column_names[0]),
            tuple(str(c) for c in X_m.design_info.column_names))


def _uses(name: str, *infos) -> bool:
    return any(f.name() == name for info in infos for t in info.terms for f in t.factors)
