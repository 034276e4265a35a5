"""The data side of a formula: the frame checked, prepared and handed to patsy.

Column names and kinds are checked (infinities, dates, numbers stored as text), declared
levels make columns Categoricals with exactly those categories, data columns are clipped
to their declared bounds before any term is computed, and ``missing="raise"`` is checked.
Patsy's errors become dpreg's documented exceptions, and patsy's matrices become arrays
that the design owns.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import patsy

from dpreg.design.design import check_bounds
from dpreg.design.formula.namespace import WORD
from dpreg.design.formula.term_bounds import normalize_bounds
from dpreg.exceptions import DataError, FormulaError, OptionError

__all__ = ["check_frame", "plain_dtypes", "patsy_call", "design_matrices",
           "template_matrices", "prepare_frame", "owned_arrays"]


_NAME_ERROR = re.compile(r"name '([^']+)' is not defined")


def check_frame(data: Any) -> pd.DataFrame:
    """``data`` as a DataFrame (a dict of columns is converted), with hashable, distinct
    column names; raises :class:`~dpreg.exceptions.DataError` otherwise."""
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


def plain_dtypes(data: pd.DataFrame) -> pd.DataFrame:
    """Nullable numeric and boolean columns (``Int64``, ``Float64``, ``boolean``) as
    float64 with NaN for ``pd.NA``, which patsy's missing-value handling understands."""
    out = {}
    for col in data.columns:
        s = data[col]
        if isinstance(s.dtype, pd.api.extensions.ExtensionDtype) and (
                pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype)):
            out[col] = s.astype("float64")
    return data.assign(**out) if out else data


def _missing_columns(formula: str, data: pd.DataFrame) -> list[str]:
    """Columns named in the formula that have missing values (for error messages)."""
    words = set(WORD.findall(formula))
    return [str(c) for c in data.columns if str(c) in words and data[c].isna().any()]


def patsy_call(fn, *args, **kwargs):
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
        raise FormulaError("cannot build the design from the formula: "
                           f"{msg.splitlines()[0]}") from None
    except (ValueError, TypeError, KeyError, IndexError) as err:  # raised inside patsy
        raise DataError(f"cannot build the design from these data: {type(err).__name__}: "
                        f"{err}") from None


class _KeptRows(patsy.NAAction):
    """patsy's missing-value handling, recording which rows it keeps (``kept``, a boolean
    mask, ``None`` before a build). The design is then built as plain matrices: a
    DataFrame result would copy each matrix once more (pandas >= 3 copies an ndarray
    into a new frame), which costs as much as building it at 10^6 rows."""

    kept = None

    def handle_NA(self, values, is_NAs, origins):
        if is_NAs:
            missing = np.zeros(len(is_NAs[0]), dtype=bool)
            for is_NA in is_NAs:
                missing |= is_NA
            self.kept = ~missing
        return super().handle_NA(values, is_NAs, origins)


def design_matrices(fn, *args, missing: str, n: int, **kwargs):
    """``(y, X, kept)``: patsy's outcome and design matrices (``DesignMatrix``, with their
    ``design_info``) and the positions of the rows kept, for the ``n`` rows of a frame
    with a default index."""
    na = _KeptRows(on_NA=missing)
    y_m, X_m = patsy_call(fn, *args, NA_action=na, return_type="matrix", **kwargs)
    kept = np.arange(n) if na.kept is None else np.flatnonzero(na.kept)
    if len(kept) != X_m.shape[0]:  # patsy's own row count is the truth
        raise RuntimeError("patsy kept a different number of rows than it reported")
    return y_m, X_m, kept


def template_matrices(template, data, *, missing: str):
    """``(y, X, kept)`` as :func:`design_matrices`, built by patsy from the terms of
    ``template`` (a :class:`~dpreg.design.Design` of the same formula) on the rows of
    ``data``: no parse of the formula and no sniffing of the factors' types and levels
    (a stream's later chunks, the rebuild with privately learned ranges)."""
    return design_matrices(patsy.build_design_matrices,
                           [template.endog_info, template.design_info], data,
                           missing=missing, n=len(data))

def _apply_levels(data: pd.DataFrame, levels: Mapping[str, Sequence] | None) -> pd.DataFrame:
    """Declared categories: the column becomes a pandas Categorical with exactly them."""
    if not levels:
        return data
    if not isinstance(levels, Mapping):
        raise OptionError("levels must be a dict {column: [category, ...]}")
    out = {}
    for col, cats in levels.items():
        if col not in data.columns:
            raise OptionError(f"levels names {col!r}, which is not a column of the data")
        cats = list(cats)
        if len(cats) < 2 or len(set(cats)) != len(cats):
            raise OptionError(f"levels[{col!r}] must list at least two distinct categories")
        s = data[col]
        outside = ~s.isna() & ~s.isin(cats)
        if outside.any():
            raise DataError(f"column {col!r} has {int(outside.sum())} value(s) outside the "
                            f"declared levels {cats}; fix the data or the declaration")
        out[col] = pd.Categorical(s, categories=cats)
    return data.assign(**out)


def _check_columns(formula: str, data: pd.DataFrame, levels) -> None:
    """Columns of the formula: infinities are errors (before any clipping could hide
    them), and a text column whose values are mostly numbers is a data error, not a
    category: patsy would silently turn it into one dummy per distinct value."""
    words = set(WORD.findall(formula))
    for col in data.columns:
        s = data[col]
        if str(col) in words and (pd.api.types.is_datetime64_any_dtype(s.dtype)
                                  or pd.api.types.is_timedelta64_dtype(s.dtype)
                                  or isinstance(s.dtype, pd.PeriodDtype)):
            raise DataError(f"column {col!r} has dtype {s.dtype}, which is not a number: "
                            "convert it to numbers with public bounds, e.g. days since a "
                            "fixed date (df[col] - pd.Timestamp('2000-01-01')).dt.days, or "
                            "to a categorical with declared levels=")
        if str(col) in words and pd.api.types.is_numeric_dtype(s.dtype) \
                and not pd.api.types.is_bool_dtype(s.dtype):
            n_inf = int(np.isinf(s.to_numpy(dtype=float, na_value=np.nan)).sum())
            if n_inf:
                raise DataError(f"column {col!r} has {n_inf} infinite value(s); remove or "
                                "recode them")
        if str(col) not in words or col in (levels or {}) or not (
                pd.api.types.is_object_dtype(s.dtype) or pd.api.types.is_string_dtype(s.dtype)):
            continue
        values = s.dropna()
        numeric = pd.to_numeric(values, errors="coerce")
        bad = values[numeric.isna()]
        if len(values) and not len(bad):
            raise DataError(f"column {col!r} has dtype {s.dtype} but holds numbers: used as "
                            "it is, each distinct value would become a dummy column with "
                            "categories read off the data. Convert it with pandas.to_numeric "
                            "(and declare its bounds=), or, if it is categorical, declare "
                            "its categories with levels=")
        if len(values) and len(bad) and numeric.notna().mean() >= 0.9:
            raise DataError(f"column {col!r} mixes numbers and text (e.g. {bad.iloc[0]!r} in row "
                            f"{bad.index[0]!r}); convert it with pandas.to_numeric or, if it "
                            "is categorical, declare its categories with levels=")


def categoricals_as_values(data: pd.DataFrame, keep: Sequence = ()) -> pd.DataFrame:
    """For a later build from a stored design: each pandas Categorical column not in
    ``keep`` becomes its values, which patsy maps to the stored levels. A formula's
    ``C()`` hands patsy a Categorical unboxed
    (:func:`~dpreg.design.formula.namespace.unboxed_categorical`), and patsy then
    requires exactly the stored categories; ``keep`` names the columns whose declared
    levels gave them those categories (:func:`prepare_frame`)."""
    out = {c: data[c].astype(object) for c in data.columns
           if c not in keep and isinstance(data[c].dtype, pd.CategoricalDtype)}
    return data.assign(**out) if out else data


def prepare_frame(formula: str, data: pd.DataFrame, bounds, levels, missing: str):
    """Checks and public transformations shared by first and later chunks: column
    checks, declared levels, clipping to declared bounds, the ``missing="raise"``
    check. Returns the transformed copy and the normalized bounds."""
    _check_columns(formula, data, levels)
    bounds = normalize_bounds(check_bounds(bounds), data, formula)
    data = _apply_levels(data, levels)
    clipped = {c: data[c].clip(*bounds[c]) for c in bounds
               if c in data.columns and pd.api.types.is_numeric_dtype(data[c].dtype)}
    data = data.assign(**clipped) if clipped else data
    if missing == "raise":
        cols = _missing_columns(formula, data)
        if cols:
            counts = {c: int(data[c].isna().sum()) for c in cols}
            raise DataError(f"missing values in column(s) {counts} and missing='raise'; use "
                            "missing='drop' to drop incomplete rows, or fill them")
    return data, bounds


def owned_arrays(y_m: np.ndarray, X_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The outcome and design as contiguous, writable float64 arrays that this module
    owns (the term bounds are enforced on them in place): patsy's fresh matrices as plain
    ndarrays, copied only where they are not already C-ordered float64."""
    y = np.array(np.asarray(y_m)[:, 0], dtype=float, order="C", copy=True)
    X = np.asarray(X_m).view(np.ndarray)
    if X.dtype != np.float64 or not X.flags.c_contiguous or not X.flags.writeable:
        X = np.array(X, dtype=float, order="C", copy=True)
    return y, X
