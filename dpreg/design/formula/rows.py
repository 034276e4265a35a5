"""More rows of a model whose design is built: a stream's later chunks, a Dask
frame's partitions, new data to predict on.

Each goes through the checks and public transformations of the first design (column
names and kinds, declared levels and bounds, missing values) and is built with the
template's columns: :func:`build_chunk` for local DP (a row with a missing value becomes
a null row), :func:`build_rows` for sums partition by partition (such a row is left
out), :func:`build_exog` for ``predict``. :func:`column_kinds` records a stream's
column kinds from its first chunk.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import patsy

from dpreg.design.design import Design, check_finite_full_rank, check_missing
from dpreg.design.formula.frames import (
    categoricals_as_values,
    check_frame,
    owned_arrays,
    patsy_call,
    plain_dtypes,
    prepare_frame,
    template_matrices,
)
from dpreg.design.formula.namespace import WORD
from dpreg.design.formula.numeric import numeric_columns, numeric_plan
from dpreg.design.formula.term_bounds import enforce_term_bounds
from dpreg.exceptions import DataError

__all__ = ["build_rows", "build_exog", "build_chunk", "column_kinds"]


def build_rows(template: Design, data, *, missing: str, bounds: Mapping[str, Any] | None,
               levels: Mapping[str, Sequence] | None) -> tuple[np.ndarray, np.ndarray, int]:
    """``(endog, exog, n_dropped)`` of more rows of a model, built as
    :func:`~dpreg.design.formula.build.build_design` builds its own.

    The same checks (column names, infinities, text in numeric columns), declared levels,
    data columns clipped to their declared bounds, transformed terms with declared bounds
    clipped in the design, and rows with a missing value dropped (``missing="drop"``,
    counted in ``n_dropped``) or refused (``"raise"``). For rows that reach the sums of
    a fit partition by partition (a Dask frame); unlike :func:`build_chunk` (local DP),
    a dropped row is left out, not sent as a null row.

    Parameters
    ----------
    template : Design
        The model's design (its ``design_info`` and ``endog_info`` build the columns).
    data : pandas.DataFrame
        The rows (not modified).
    missing : {"drop", "raise"}
    bounds, levels : dict or None
        As given to :func:`~dpreg.design.formula.build.build_design`.

    Returns
    -------
    (ndarray (n,), ndarray (n, p), int)
    """
    data = plain_dtypes(check_frame(data))
    p = len(template.exog_names)
    if len(data) == 0:
        return np.empty(0), np.empty((0, p)), 0
    data, norm = prepare_frame(template.formula, data, bounds, levels, check_missing(missing))
    data = categoricals_as_values(data, keep=tuple(levels or ())).reset_index(drop=True)
    plan = numeric_plan(template.endog_info, template.design_info, data)
    if plan is not None:
        y, X, _ = numeric_columns(plan, data)
    else:
        y, X, _ = _template_rows(template, data, missing)
    enforce_term_bounds(norm, data, template.endog_info, template.design_info, y, X)
    if len(y):
        check_finite_full_rank(y, X, template.endog_name, template.exog_names, rank=False)
    return y, X, len(data) - len(y)


def build_exog(design_info, data) -> np.ndarray:
    """Design matrix for new data with the columns of a fitted model (for ``predict``)."""
    data = categoricals_as_values(plain_dtypes(check_frame(data)))
    (X,) = patsy_call(patsy.build_design_matrices, [design_info], data,
                       NA_action=patsy.NAAction(on_NA="raise"), return_type="matrix")
    return np.asarray(X, dtype=float)


def _template_rows(template: Design, data: pd.DataFrame, missing: str):
    """``(endog, exog, kept row positions)`` of ``data`` built by patsy with the
    template's columns (rows with a missing value left out under ``missing="drop"``)."""
    y_m, X_m, kept = template_matrices(template, data, missing=missing)
    if y_m.shape[1] == 2:  # binary outcome coded as two indicator columns
        y_m = y_m[:, [1]]
    y, X = owned_arrays(y_m, X_m)
    return y, X, kept


def build_chunk(template: Design, data, *, missing: str, bounds: Mapping[str, Any] | None,
                levels: Mapping[str, Sequence] | None,
                dtypes: Mapping[str, str]) -> tuple[np.ndarray, np.ndarray, int]:
    """``(endog, exog, n_null)`` of a later chunk of a stream, with the template's columns.

    The chunk goes through the same checks as the first one (column names, infinities,
    text in numeric columns, declared levels and bounds, missing values), and its
    columns must have the kinds recorded from the first chunk in ``dtypes``
    (``{column: "numeric" | "other"}``): a column that turns from numbers into text
    between chunks is an error, not a silent recoding. The caller's frame is not
    modified.

    With ``missing="drop"`` every row of the chunk is returned in its order: a row with
    a missing value becomes a null row (zeros), whose gradient is zero, so its owner's
    message is pure noise (local DP: nothing about the row leaves the device un-noised).
    ``n_null`` counts them for the device side only; it must not be published.
    """
    data = plain_dtypes(check_frame(data))
    formula = template.formula
    absent = [c for c in dtypes if c not in data.columns]
    if absent:
        raise DataError(f"the chunk lacks column(s) {absent} that the model uses")
    changed = {c: str(data[c].dtype) for c, kind in dtypes.items() if _kind(data[c]) != kind}
    if changed:
        raise DataError(f"column(s) {list(changed)} changed type between chunks (now "
                        f"{changed}, before {[dtypes[c] for c in changed]}); convert them "
                        "before streaming")
    data, norm = prepare_frame(formula, data, bounds, levels, missing)
    data = categoricals_as_values(data, keep=tuple(levels or ())).reset_index(drop=True)
    plan = numeric_plan(template.endog_info, template.design_info, data)
    if plan is not None:
        y, X, keep = numeric_columns(plan, data)
    else:
        y, X, kept = _template_rows(template, data, missing)
        keep = np.zeros(len(data), dtype=bool)
        keep[kept] = True
    # declared bounds of transformed terms are enforced on every chunk (as on the
    # first): the local noise is calibrated to them
    enforce_term_bounds(norm, data, template.endog_info, template.design_info, y, X)
    if len(y):
        check_finite_full_rank(y, X, template.endog_name, template.exog_names, rank=False)
    n_null = int(len(keep) - keep.sum())
    if n_null:
        y_all, X_all = np.zeros(len(keep)), np.zeros((len(keep), X.shape[1]))
        y_all[keep], X_all[keep] = y, X
        y, X = y_all, X_all
    return y, X, n_null


def _kind(s: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(s.dtype):
        return "boolean"
    if pd.api.types.is_numeric_dtype(s.dtype):
        return "numeric"
    return "categorical"


def column_kinds(formula: str, data) -> dict[str, str]:
    """``{column: kind}`` of the data columns a formula uses (kinds: numeric, boolean,
    categorical), recorded from a stream's first chunk."""
    data = plain_dtypes(check_frame(data))
    words = set(WORD.findall(formula))
    return {c: _kind(data[c]) for c in data.columns if str(c) in words}
