"""Formulas to designs. The only module of dpreg that imports patsy.

``build_design(formula, data)`` turns a Wilkinson formula and a pandas DataFrame into a
:class:`dpreg.design.Design`: categorical terms ``C()``, interactions, intercept control
(``- 1`` or ``0 +``), transformations evaluated in the caller's namespace, and missing
values handled by the ``missing`` policy. Term names flow to every output.

What the formula reads off the data is recorded for the privacy layer: categories of
categorical variables not declared with ``levels=`` (they show in the output's names;
a pandas Categorical's categories count as declared only through ``levels=``), and
stateful transforms (``standardize``, ``center``, splines), whose constants are
statistics of the data. Terms that read other rows in any other way (``I(x - x.mean())``,
``I(x / x.max())``) are refused: each design is also built for a few rows alone and
compared with the same rows of the full design (:func:`_check_rowwise`).

Bounds. Declared bounds of data columns are enforced by clipping the columns before
any term is computed; bounds of transformed terms are derived from them where that is
sound (:mod:`dpreg.intervals`), or may be declared on a term used as a main effect,
which is then clipped in the design. A bounds dict may name data columns a formula does
not use, so one dict serves several models.
"""

from __future__ import annotations

import builtins
import difflib
import importlib
import itertools
import math
import re
import types
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import patsy

from dpreg.design import Design, check_bounds, check_finite_full_rank, check_missing
from dpreg.exceptions import DataError, FormulaError, OptionError, PrivacyLeakError
from dpreg.intervals import derive_bounds

__all__ = ["build_design", "build_exog", "build_chunk", "build_rows", "column_kinds",
           "capture_env", "formula_namespace", "namespace_env", "template_prototype",
           "template_from_prototype", "portable_namespace", "restore_namespace",
           "IVFormula", "parse_iv_formula"]

_NAME_ERROR = re.compile(r"name '([^']+)' is not defined")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


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


def _plain_dtypes(data: pd.DataFrame) -> pd.DataFrame:
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
    words = set(_WORD.findall(formula))
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


def _design_matrices(fn, *args, missing: str, n: int, **kwargs):
    """``(y, X, kept)``: patsy's outcome and design matrices (``DesignMatrix``, with their
    ``design_info``) and the positions of the rows kept, for the ``n`` rows of a frame
    with a default index."""
    na = _KeptRows(on_NA=missing)
    y_m, X_m = _patsy_call(fn, *args, NA_action=na, return_type="matrix", **kwargs)
    kept = np.arange(n) if na.kept is None else np.flatnonzero(na.kept)
    if len(kept) != X_m.shape[0]:  # patsy's own row count is the truth
        raise RuntimeError("patsy kept a different number of rows than it reported")
    return y_m, X_m, kept


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
    words = set(_WORD.findall(formula))
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
                cols = [c for c in _WORD.findall(factor.name()) if c in data.columns]
                if not cols or not all(_declared_categorical(data[c], c, levels)
                                       for c in cols):
                    undeclared.append(factor.name())
    return tuple(dict.fromkeys(undeclared)), tuple(dict.fromkeys(stateful))


def _row_norm_bound(design_info, bounds: Mapping[str, tuple[float, float]]):
    """Public bound on ``||x_i||`` from declared bounds, and the undeclared variables.

    A term's columns are Kronecker products of its factors' columns, so its squared norm
    in a row is at most the product, over categorical factors, of the largest squared
    row of the contrast matrix (1 for treatment coding; larger for ``Sum`` or ``Poly``),
    times the product of squared bounds of its numerical factors; terms add up.
    """
    total, undeclared = 0.0, []
    for term, subterms in design_info.term_codings.items():
        numeric = 1.0
        for factor in term.factors:
            info = design_info.factor_infos[factor]
            if info.type == "numerical":
                name = factor.name()
                if name in bounds and info.num_columns == 1:
                    numeric *= max(abs(v) for v in bounds[name]) ** 2
                else:
                    undeclared.append(name)
        for sub in subterms:
            cat = 1.0
            for contrast in sub.contrast_matrices.values():
                cat *= float(np.max(np.sum(np.asarray(contrast.matrix) ** 2, axis=1)))
            total += cat * numeric
    undeclared = tuple(dict.fromkeys(undeclared))
    return (None if undeclared else math.sqrt(total)), undeclared


def _column_bounds(design_info, bounds: Mapping[str, tuple[float, float]]):
    """Public ``(lower, upper)`` of every design column (``None`` where unknown), and
    for each column the names of its numerical factors (``None`` for a column of a
    term with a categorical factor; ``()`` for the intercept).

    Interval arithmetic over the factors of each column: a numerical factor contributes
    its declared bounds, a categorical one the range of its contrast column; a column is
    their product (patsy orders a subterm's columns with the left-most factor varying
    fastest). The public conditioning of the engines (:mod:`dpreg.conditioning`) maps
    each column to ``[-1, 1]`` with these.
    """
    def factor_bounds(factor, sub):
        if factor in sub.contrast_matrices:
            matrix = np.asarray(sub.contrast_matrices[factor].matrix, dtype=float)
            return [(float(col.min()), float(col.max())) for col in matrix.T]
        name = factor.name()
        known = name in bounds and design_info.factor_infos[factor].num_columns == 1
        return [tuple(bounds[name]) if known else None]

    out, numeric = [], []
    for sub, combos in column_combos(design_info, factor_bounds):
        factors = tuple(f.name() for f in sub.factors)
        numeric += [factors if not sub.contrast_matrices else None] * sub.num_columns
        out += [_interval_product(combo) for combo in combos]
    return tuple(out), tuple(numeric)


def column_combos(design_info, factor_values):
    """Per subterm of a patsy design, in column order: ``(subterm, combos)``, where each
    combo holds one value per factor of one design column (the column is their product).

    ``factor_values(factor, subterm)`` gives a factor's values, one per column it
    contributes (a contrast matrix's columns, or the one column of a numerical factor);
    patsy orders a subterm's columns with the left-most factor varying fastest. Shared by
    the columns' public bounds (:func:`_column_bounds`) and the public reference design
    (:mod:`dpreg.reference_design`).
    """
    for subterms in design_info.term_codings.values():
        for sub in subterms:
            per_factor = [factor_values(factor, sub) for factor in sub.factors]
            yield sub, list(itertools.product(*reversed(per_factor)))


def _interval_product(intervals) -> tuple[float, float] | None:
    lo, hi = 1.0, 1.0
    for iv in intervals:
        if iv is None:
            return None
        ends = [lo * iv[0], lo * iv[1], hi * iv[0], hi * iv[1]]
        lo, hi = min(ends), max(ends)
    return (lo, hi)


def _normalize_bounds(bounds, data: pd.DataFrame,
                      formula: str) -> dict[str, tuple[float, float]]:
    """Keys as patsy spells factors (``np.log(x+1)`` -> ``np.log(x + 1)``). Bounds of
    data columns the formula does not use are kept (they are harmless), so one dict can
    serve several models."""
    words = set(_WORD.findall(formula))
    out = {}
    for key, value in bounds.items():
        try:
            name = key if key in data.columns else patsy.EvalFactor(key).name()
        except (patsy.PatsyError, SyntaxError, ValueError, TypeError):
            raise OptionError(f"bounds[{key!r}]: {key!r} is neither a column of the data "
                              "nor a valid term") from None
        if key in data.columns and key not in words:
            if pd.api.types.is_numeric_dtype(data[key].dtype):
                out[name] = value
            continue
        if key in data.columns and not pd.api.types.is_numeric_dtype(data[key].dtype):
            raise OptionError(f"bounds[{key!r}]: {key!r} is categorical and needs no bounds "
                              "(its dummy columns are bounded by the coding); declare its "
                              "categories with levels= instead")
        out[name] = value
    return out


def _prepare(formula: str, data: pd.DataFrame, bounds, levels, missing: str):
    """Checks and public transformations shared by first and later chunks: column
    checks, declared levels, clipping to declared bounds, the ``missing="raise"``
    check. Returns the transformed copy and the normalized bounds."""
    _check_columns(formula, data, levels)
    bounds = _normalize_bounds(check_bounds(bounds), data, formula)
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


def build_design(formula: str, data, *, missing: str = "drop",
                 bounds: Mapping[str, Any] | None = None,
                 levels: Mapping[str, Sequence] | None = None, eval_env: int = 0,
                 binary_outcome: bool = False, check_rowwise: bool = True,
                 template: Design | None = None) -> Design:
    """Build a :class:`~dpreg.design.Design` from a formula and a DataFrame.

    Also the template of a stream, from its first chunk (later chunks go through
    :func:`build_chunk`). Identification (``n >= p``, full rank) is never checked here:
    it is a property of the private data, checked for oracles only
    (:func:`dpreg.design.check_identified`).

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
        environment from :func:`capture_env`.
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
        without patsy's per-column cost); otherwise by patsy.

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
    data = _plain_dtypes(_check_frame(data))
    if len(data) == 0:
        raise DataError("data has no rows")
    if not isinstance(eval_env, patsy.EvalEnvironment):
        eval_env = patsy.EvalEnvironment.capture(eval_env + 1)
    env = eval_env.with_outer_namespace({"np": np})
    data, bounds = _prepare(formula, data, bounds, levels, missing)
    data = data.reset_index(drop=True)  # patsy's output index = row positions
    plan = None if template is None else _numeric_plan(template, data)
    if plan is not None:  # the template's columns, by numpy
        y_info, design_info = template.endog_info, template.design_info
        y, X = _numeric_columns(plan, data)
        kept = np.flatnonzero(_numeric_keep(plan, data))
        endog_name, exog_names = template.endog_name, tuple(template.exog_names)
    else:
        y_m, X_m, kept = _design_matrices(patsy.dmatrices, formula, data, eval_env=env,
                                          missing=missing, n=len(data))
        y_info, design_info = y_m.design_info, X_m.design_info
        if check_rowwise:
            _check_rowwise(y_info, design_info, data, kept, y_m, X_m)
        y_names = list(y_info.column_names)
        if binary_outcome and y_m.shape[1] == 2:
            y_m, y_names = y_m[:, [1]], y_names[1:]
        if y_m.shape[1] != 1:
            lhs = formula.split("~")[0].strip()
            raise DataError(f"the outcome {lhs!r} is not numeric (patsy coded it as "
                            f"{y_m.shape[1]} columns {y_names}); convert it to numbers")
        endog_name = str(y_names[0])
        exog_names = tuple(str(c) for c in design_info.column_names)
        y, X = _owned_arrays(y_m, X_m)
    # identification (n >= p, rank) is checked only for oracles: see dpreg.design
    check_finite_full_rank(y, X, endog_name, exog_names, rank=False)
    lhs_factors = [f.name() for t in y_info.terms for f in t.factors]
    _check_bound_names(bounds, data, y_info, design_info)
    term_bounds = _enforce_term_bounds(bounds, data, y_info, design_info, y, X)
    derived = _derived_bounds(bounds, data, [y_info, design_info])
    effective = {**derived, **bounds}
    x_norm, undeclared = _row_norm_bound(design_info, effective)
    column_bounds, column_factors = _column_bounds(design_info, effective)
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


@dataclass(frozen=True)
class IVFormula:
    """The parts of an instrumental-variables formula ``"y ~ 1 + x + [d ~ z1 + z2]"``.

    Attributes
    ----------
    outcome : str
        The left-hand side (``"y"``).
    exog : str
        Right-hand side of the exogenous regressors, as patsy reads it: ``"1 + x"``, or
        ``"0 + x"`` when the formula has no explicit ``1`` (linearmodels' rule: an
        intercept only where the formula asks for one).
    endog : str
        The endogenous regressors (``"d"``), without an intercept.
    instruments : str
        The excluded instruments (``"z1 + z2"``), without an intercept.
    intercept : bool
        Whether the exogenous part has the intercept.
    exog_terms, endog_terms, instrument_terms : tuple of str
        Patsy's names of the terms of each part (no intercept).
    """

    outcome: str
    exog: str
    endog: str
    instruments: str
    intercept: bool
    exog_terms: tuple[str, ...]
    endog_terms: tuple[str, ...]
    instrument_terms: tuple[str, ...]

    @property
    def structural(self) -> str:
        """``outcome ~ exog + endog``: the design of the regressors ``X``."""
        return f"{self.outcome} ~ {self.exog} + {self.endog}"

    @property
    def instrumental(self) -> str:
        """``outcome ~ exog + instruments``: the design of the instruments ``W``."""
        return f"{self.outcome} ~ {self.exog} + {self.instruments}"

    @property
    def combined(self) -> str:
        """Every variable of the model (which rows are complete)."""
        return f"{self.outcome} ~ {self.exog} + {self.endog} + {self.instruments}"


_IV_EXAMPLE = "e.g. 'y ~ 1 + x + [d ~ z1 + z2]'"


def _iv_terms(rhs: str, what: str, formula: str) -> tuple[list[str], bool]:
    """Patsy's term names of ``rhs`` (intercept excluded) and whether it has one."""
    try:
        desc = patsy.ModelDesc.from_formula("__lhs__ ~ " + rhs)
    except patsy.PatsyError as err:
        raise FormulaError(f"cannot parse the {what} {rhs!r} of the IV formula "
                           f"{formula!r}: {err}") from None
    names = [t.name() for t in desc.rhs_termlist]
    return [n for n in names if n != "Intercept"], "Intercept" in names


def parse_iv_formula(formula: str) -> IVFormula:
    """Split an IV formula in linearmodels' syntax into its parts.

    Parameters
    ----------
    formula : str
        ``"outcome ~ exogenous + [endogenous ~ instruments]"``, e.g.
        ``"y ~ 1 + x + [d ~ z1 + z2]"``. As in linearmodels, the exogenous part has an
        intercept only where it says ``1``.

    Returns
    -------
    IVFormula

    Raises
    ------
    FormulaError
        Not one bracketed ``[endogenous ~ instruments]`` part on the right-hand side,
        an empty part, or a term in two parts; the message names the problem.
    """
    if not isinstance(formula, str) or "~" not in formula:
        raise FormulaError(f"an IV formula must be a string 'outcome ~ exogenous + "
                           f"[endogenous ~ instruments]' ({_IV_EXAMPLE}), got {formula!r}")
    opens, closes = formula.count("["), formula.count("]")
    if opens == 0 and closes == 0:
        raise FormulaError(f"the IV formula {formula!r} has no bracketed part "
                           f"[endogenous ~ instruments] ({_IV_EXAMPLE}); without endogenous "
                           "regressors use dp_ols")
    if opens != 1 or closes != 1:
        raise FormulaError(f"the IV formula {formula!r} must have exactly one bracketed part "
                           f"[endogenous ~ instruments] ({_IV_EXAMPLE}); list several "
                           "endogenous regressors inside it: [d1 + d2 ~ z1 + z2 + z3]")
    start, stop = formula.index("["), formula.index("]")
    if stop < start:
        raise FormulaError(f"the brackets of the IV formula {formula!r} are reversed "
                           f"({_IV_EXAMPLE})")
    inner = formula[start + 1:stop]
    outer = formula[:start] + formula[stop + 1:]
    if outer.count("~") != 1 or outer.index("~") > start:
        raise FormulaError(f"the IV formula {formula!r} needs one '~' before the bracketed "
                           f"part: 'outcome ~ exogenous + [endogenous ~ instruments]' "
                           f"({_IV_EXAMPLE})")
    if inner.count("~") != 1:
        raise FormulaError(f"the bracketed part [{inner}] of the IV formula {formula!r} needs "
                           f"exactly one '~': [endogenous ~ instruments] ({_IV_EXAMPLE})")
    outcome, rest = (part.strip() for part in outer.split("~"))
    endog, instruments = (part.strip() for part in inner.split("~"))
    if not outcome:
        raise FormulaError(f"the IV formula {formula!r} has no outcome before '~' "
                           f"({_IV_EXAMPLE})")
    if not endog:
        raise FormulaError(f"the IV formula {formula!r} names no endogenous regressor "
                           f"before the '~' in its brackets ({_IV_EXAMPLE})")
    if not instruments:
        raise FormulaError(f"the IV formula {formula!r} names no instrument after the '~' "
                           f"in its brackets ({_IV_EXAMPLE})")
    # the exogenous part: what is left of the right-hand side, without stray '+'
    exog = re.sub(r"\+\s*\+", "+", rest).strip().strip("+").strip()
    explicit = bool(re.search(r"(^|[+\s])1(\s*$|\s*\+)", exog))
    if re.search(r"(^|[+\s])(0|-\s*1)(\s*$|\s*[+-])", exog):
        explicit = False
    exog_terms = _iv_terms(exog or "0", "exogenous part", formula)[0] if exog else []
    endog_terms = _iv_terms(endog, "endogenous part", formula)[0]
    instrument_terms = _iv_terms(instruments, "instruments", formula)[0]
    if not endog_terms:
        raise FormulaError(f"the endogenous part {endog!r} of {formula!r} has no variable")
    if not instrument_terms:
        raise FormulaError(f"the instruments {instruments!r} of {formula!r} have no variable")
    for (a, ta), (b, tb) in itertools.combinations(
            [("exogenous regressors", exog_terms), ("endogenous regressors", endog_terms),
             ("instruments", instrument_terms)], 2):
        both = [t for t in ta if t in tb]
        if both:
            raise FormulaError(f"{both} appear among both the {a} and the {b} of "
                               f"{formula!r}: each variable belongs to one part")
    body = " + ".join(exog_terms)
    exog_rhs = ("1" if explicit else "0") + (" + " + body if body else "")
    return IVFormula(outcome=outcome, exog=exog_rhs, endog=" + ".join(endog_terms),
                     instruments=" + ".join(instrument_terms), intercept=explicit,
                     exog_terms=tuple(exog_terms), endog_terms=tuple(endog_terms),
                     instrument_terms=tuple(instrument_terms))


def _uses(name: str, *infos) -> bool:
    return any(f.name() == name for info in infos for t in info.terms for f in t.factors)


# ---------------------------------------------------------------------- row-wise terms
_AGGREGATE = re.compile(
    r"(?:\b(?:np|numpy|pd|math|statistics)\.\w+|[A-Za-z_][\w.]*\."
    r"(?:mean|median|std|var|max|min|sum|quantile|mad|sem|count|nunique|mode|rank|cumsum|"
    r"cumprod|cummax|cummin|shift|diff|pct_change|abs\(\)\.max|prod|idxmax|idxmin))"
    r"\([^()]*\)")
_REDUCERS = ("mean", "median", "std", "var", "max", "min", "sum", "amax", "amin", "ptp",
             "percentile", "quantile", "average", "nanmean", "nanmedian", "nanstd", "nanvar",
             "nanmax", "nanmin", "nansum", "prod", "cumsum", "sort", "argsort", "diff",
             "fmean", "pstdev", "stdev")


def _public_spelling(term: str) -> str:
    """``term`` with its data-wide statistics replaced by public constants c1, c2, ...

    >>> _public_spelling("I((x - np.median(x)) / np.std(x))")
    'I((x - c1) / c2)'
    """
    count = 0

    def sub(match):
        nonlocal count
        text = match.group(0)
        head = text.split("(")[0]
        if re.match(r"(np|numpy|pd|math|statistics)\.", head) and \
                head.split(".")[-1] not in _REDUCERS:
            return text  # a row-wise function such as np.log: keep it
        count += 1
        return f"c{count}"

    out = _AGGREGATE.sub(sub, term)
    return out if count else "I((x - 50) / 10)"


def _check_rowwise(y_info, design_info, data: pd.DataFrame, kept: np.ndarray,
                   y_full: np.ndarray, X_full: np.ndarray) -> None:
    """Refuse terms that are not computed row by row.

    The design of a few rows alone (the first, middle and last kept rows, each on its
    own) must equal the same rows of the full design: a term such as
    ``I(x - x.mean())`` or ``I(x / x.max())`` reads other rows of the private data, and
    its coefficient would release that statistic without a mechanism paying for it.
    Raises :class:`~dpreg.exceptions.PrivacyLeakError` naming the term and its spelling
    with public constants. ``kept`` are the positions in ``data`` of the rows of the
    full outcome and design ``y_full`` and ``X_full``.
    """
    if len(kept) == 0:
        return
    ys_full, Xs_full = np.asarray(y_full, dtype=float), np.asarray(X_full, dtype=float)
    for k in sorted({0, len(kept) // 2, len(kept) - 1}):
        row = data.iloc[[int(kept[k])]]
        try:
            ys, Xs = patsy.build_design_matrices([y_info, design_info], row,
                                                 NA_action=patsy.NAAction(NA_types=[]),
                                                 return_type="matrix")
        except Exception as err:  # noqa: BLE001 - any failure on one row is the finding
            raise PrivacyLeakError(
                f"the formula cannot be evaluated on one row alone ({type(err).__name__}: "
                f"{str(err).splitlines()[0]}): some term reads other rows of the data. "
                "Write every transformation with public constants, e.g. "
                "I((x - 50) / 10)") from None
        for info, full, alone in ((y_info, ys_full[k], np.asarray(ys)[0]),
                                  (design_info, Xs_full[k], np.asarray(Xs)[0])):
            same = np.isclose(full, alone, rtol=1e-9, atol=1e-12, equal_nan=True)
            if same.all():
                continue
            bad = np.flatnonzero(~same)
            for term, cols in info.term_slices.items():
                if any(cols.start <= j < cols.stop for j in bad):
                    name = term.name()
                    raise PrivacyLeakError(
                        f"the term {name!r} is not computed row by row: on a row alone it "
                        "differs from the same row of the full design, so it reads other "
                        "rows of the private data (a mean, maximum, scale, ...) and its "
                        "coefficient would release that statistic unpaid. Use public "
                        f"constants instead: {_public_spelling(name)}, with each c a number "
                        "fixed without looking at these data")


# ---------------------------------------------------------------------- bounds of terms
def _check_bound_names(bounds, data: pd.DataFrame, y_info, design_info) -> None:
    """A bound must name a data column or a term of the formula (close matches shown)."""
    variables = {f.name() for info in (y_info, design_info) for t in info.terms
                 for f in t.factors}
    unknown = [k for k in bounds if k not in variables and k not in data.columns]
    if unknown:
        known = sorted(variables | {str(c) for c in data.columns})
        hints = {k: difflib.get_close_matches(k, known, n=3) for k in unknown}
        hint = "; ".join(f"{k!r}: did you mean {m}?" for k, m in hints.items() if m)
        raise OptionError(f"bounds name {unknown}, which is neither a column of the data nor "
                          f"a term of the formula{' (' + hint + ')' if hint else ''}; terms "
                          f"of the model: {sorted(variables)}")


def _enforce_term_bounds(bounds, data, y_info, design_info, y, X) -> dict:
    """Clip the design columns of transformed terms with declared bounds (in place).

    A declared bound on a transformed factor (``bounds={"np.log(w)": (0, 1)}``) is
    enforced on the column of the term that is that factor alone (or on the outcome).
    Where the factor also enters an interaction, its values inside the product cannot be
    clipped from the design: refuse, and point at the raw columns' bounds.
    """
    out = {}
    for info, target in ((y_info, None), (design_info, X)):
        for factor, finfo in info.factor_infos.items():
            name = factor.name()
            if name not in bounds or name in data.columns:
                continue
            terms = [t for t in info.terms if factor in t.factors]
            mixed = [t.name() for t in terms if len(t.factors) > 1]
            raw = [c for c in _WORD.findall(name) if c in data.columns]
            if finfo.type != "numerical" or finfo.num_columns != 1 or mixed:
                where = f"the interaction(s) {mixed}" if mixed else "a multi-column term"
                raise OptionError(
                    f"bounds[{name!r}] is declared on a transformed term used in {where}: it "
                    "cannot be enforced there by clipping. Declare bounds of the raw "
                    f"column(s) {raw} instead (bounds of {name!r} are then derived from "
                    "them where that is sound)")
            lo, hi = bounds[name]
            if target is None:
                np.clip(y, lo, hi, out=y)
            else:
                for term in terms:
                    cols = info.term_slices[term]
                    target[:, cols] = np.clip(target[:, cols], lo, hi)
            out[name] = (lo, hi)
    return out


def _derived_bounds(bounds, data: pd.DataFrame, infos) -> dict[str, tuple[float, float]]:
    """Bounds of numerical factors that are not data columns, derived soundly from the
    declared bounds of the columns they read (:func:`dpreg.intervals.derive_bounds`)."""
    raw = {c: v for c, v in bounds.items() if c in data.columns}
    out = {}
    for info in infos:
        for factor, finfo in info.factor_infos.items():
            name = factor.name()
            if finfo.type != "numerical" or finfo.num_columns != 1 or name in bounds \
                    or name in data.columns:
                continue
            derived = derive_bounds(getattr(factor, "code", name), raw)
            if derived is not None:
                out[name] = derived
    return out


def capture_env(eval_env: int = 0):
    """The namespace ``eval_env`` frames above the caller, for a later :func:`build_design`
    (a stream builds its design when its first chunk arrives, in another frame)."""
    return patsy.EvalEnvironment.capture(eval_env + 1)


def formula_namespace(formula: str, eval_env=0) -> dict[str, Any]:
    """The functions and modules the formula's terms name, from the caller's namespace.

    Parameters
    ----------
    formula : str
    eval_env : int or captured environment
        Frames above the caller (or an environment from :func:`capture_env`).

    Returns
    -------
    dict
        ``{name: function or module}`` (e.g. ``{"np": numpy}``), so that the formula can
        be evaluated elsewhere (:func:`namespace_env`), e.g. on a Dask worker.
    """
    env = eval_env if isinstance(eval_env, patsy.EvalEnvironment) else \
        patsy.EvalEnvironment.capture(eval_env + 1)
    out = {}
    for word in set(_WORD.findall(formula)):
        head = word.split(".")[0]
        for ns in getattr(env, "_namespaces", []):
            if head in ns:
                if callable(ns[head]) or isinstance(ns[head], types.ModuleType):
                    out[head] = ns[head]
                break
    return out


def namespace_env(namespace: Mapping[str, Any]):
    """An evaluation environment for :func:`build_design` from :func:`formula_namespace`."""
    return patsy.EvalEnvironment([dict(namespace)])


def build_rows(template: Design, data, *, missing: str, bounds: Mapping[str, Any] | None,
               levels: Mapping[str, Sequence] | None) -> tuple[np.ndarray, np.ndarray, int]:
    """``(endog, exog, n_dropped)`` of more rows of a model, built as :func:`build_design`
    builds its own.

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
        As given to :func:`build_design`.

    Returns
    -------
    (ndarray (n,), ndarray (n, p), int)
    """
    data = _plain_dtypes(_check_frame(data))
    p = len(template.exog_names)
    if len(data) == 0:
        return np.empty(0), np.empty((0, p)), 0
    data, norm = _prepare(template.formula, data, bounds, levels, check_missing(missing))
    data = data.reset_index(drop=True)
    plan = _numeric_plan(template, data)
    if plan is not None:
        y, X = _numeric_columns(plan, data)
    else:
        y, X, _ = _template_rows(template, data, missing)
    _enforce_term_bounds(norm, data, template.endog_info, template.design_info, y, X)
    if len(y):
        check_finite_full_rank(y, X, template.endog_name, template.exog_names, rank=False)
    return y, X, len(data) - len(y)


def build_exog(design_info, data) -> np.ndarray:
    """Design matrix for new data with the columns of a fitted model (for ``predict``)."""
    data = _plain_dtypes(_check_frame(data))
    (X,) = _patsy_call(patsy.build_design_matrices, [design_info], data,
                       NA_action=patsy.NAAction(on_NA="raise"), return_type="matrix")
    return np.asarray(X, dtype=float)


def _template_rows(template: Design, data: pd.DataFrame, missing: str):
    """``(endog, exog, kept row positions)`` of ``data`` built by patsy with the
    template's columns (rows with a missing value left out under ``missing="drop"``)."""
    y_m, X_m, kept = _design_matrices(patsy.build_design_matrices,
                                      [template.endog_info, template.design_info], data,
                                      missing=missing, n=len(data))
    if y_m.shape[1] == 2:  # binary outcome coded as two indicator columns
        y_m = y_m[:, [1]]
    y, X = _owned_arrays(y_m, X_m)
    return y, X, kept


def _owned_arrays(y_m: np.ndarray, X_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The outcome and design as contiguous, writable float64 arrays that this module
    owns (the term bounds are enforced on them in place): patsy's fresh matrices as plain
    ndarrays, copied only where they are not already C-ordered float64."""
    y = np.array(np.asarray(y_m)[:, 0], dtype=float, order="C", copy=True)
    X = np.asarray(X_m).view(np.ndarray)
    if X.dtype != np.float64 or not X.flags.c_contiguous or not X.flags.writeable:
        X = np.array(X, dtype=float, order="C", copy=True)
    return y, X


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
    data = _plain_dtypes(_check_frame(data))
    formula = template.formula
    absent = [c for c in dtypes if c not in data.columns]
    if absent:
        raise DataError(f"the chunk lacks column(s) {absent} that the model uses")
    changed = {c: str(data[c].dtype) for c, kind in dtypes.items() if _kind(data[c]) != kind}
    if changed:
        raise DataError(f"column(s) {list(changed)} changed type between chunks (now "
                        f"{changed}, before {[dtypes[c] for c in changed]}); convert them "
                        "before streaming")
    data, norm = _prepare(formula, data, bounds, levels, missing)
    data = data.reset_index(drop=True)
    plan = _numeric_plan(template, data)
    if plan is not None:
        y, X = _numeric_columns(plan, data)
        keep = _numeric_keep(plan, data)
    else:
        y, X, kept = _template_rows(template, data, missing)
        keep = np.zeros(len(data), dtype=bool)
        keep[kept] = True
    # declared bounds of transformed terms are enforced on every chunk (as on the
    # first): the local noise is calibrated to them
    _enforce_term_bounds(norm, data, template.endog_info, template.design_info, y, X)
    if len(y):
        check_finite_full_rank(y, X, template.endog_name, template.exog_names, rank=False)
    n_null = int(len(keep) - keep.sum())
    if n_null:
        y_all, X_all = np.zeros(len(keep)), np.zeros((len(keep), X.shape[1]))
        y_all[keep], X_all[keep] = y, X
        y, X = y_all, X_all
    return y, X, n_null


def _numeric_plan(template: Design, data: pd.DataFrame):
    """``(outcome column, [columns of each design term])`` when every term is the
    intercept or a product of raw numeric data columns, else ``None``.

    Such designs are built directly with numpy (patsy evaluates each factor through
    ``eval`` and checks missing values per factor: ten times slower on a stream's
    chunks); the result equals patsy's (tested).
    """
    def column(factor, info):
        code = getattr(factor, "code", None)
        if (info.type != "numerical" or info.num_columns != 1 or code not in data.columns
                or not pd.api.types.is_numeric_dtype(data[code].dtype)
                or pd.api.types.is_bool_dtype(data[code].dtype)):
            return None
        return code

    di, yi = template.design_info, template.endog_info
    if di is None or yi is None or len(yi.terms) != 1 or len(yi.terms[0].factors) != 1:
        return None
    y_factor = yi.terms[0].factors[0]
    y_col = column(y_factor, yi.factor_infos[y_factor])
    if y_col is None:
        return None
    terms = []
    for term in di.terms:
        cols = [column(f, di.factor_infos[f]) for f in term.factors]
        if any(c is None for c in cols):
            return None
        terms.append(cols)
    return y_col, terms


def _numeric_columns(plan, data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Outcome and design matrix by the plan of :func:`_numeric_plan`; rows with a
    missing value in a used column are left out (``missing="raise"`` was checked)."""
    y_col, terms = plan
    used = list(dict.fromkeys([y_col] + [c for cols in terms for c in cols]))
    values = {c: data[c].to_numpy(dtype=float, na_value=np.nan) for c in used}
    keep = ~np.any([np.isnan(v) for v in values.values()], axis=0)
    X = np.empty((int(keep.sum()), len(terms)))
    for j, cols in enumerate(terms):
        col = np.ones(X.shape[0])
        for c in cols:
            col = col * values[c][keep]
        X[:, j] = col
    return np.ascontiguousarray(values[y_col][keep]), X


def _numeric_keep(plan, data: pd.DataFrame) -> np.ndarray:
    """Mask of the rows :func:`_numeric_columns` keeps (no missing value in a used column)."""
    y_col, terms = plan
    used = list(dict.fromkeys([y_col] + [c for cols in terms for c in cols]))
    return ~data[used].isna().to_numpy().any(axis=1)


def _kind(s: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(s.dtype):
        return "boolean"
    if pd.api.types.is_numeric_dtype(s.dtype):
        return "numeric"
    return "categorical"


def column_kinds(formula: str, data) -> dict[str, str]:
    """``{column: kind}`` of the data columns a formula uses (kinds: numeric, boolean,
    categorical), recorded from a stream's first chunk."""
    data = _plain_dtypes(_check_frame(data))
    words = set(_WORD.findall(formula))
    return {c: _kind(data[c]) for c in data.columns if str(c) in words}


# -- For fitted results (issue 16): restrictions in statsmodels' spelling, and the design of
# -- a saved result rebuilt without data. Used by dpreg.results.hypothesis and dpreg.results.

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def linear_constraint(names: Sequence[str], spec) -> tuple[np.ndarray, np.ndarray]:
    """``(R, q)`` of ``H0: R theta = q`` from statsmodels' spellings of a restriction.

    Parameters
    ----------
    names : sequence of str
        Coefficient names.
    spec : str, list of str, dict, array-like or tuple ``(R, q)``
        ``"x1 = 0"``, ``"x1 = x2, x3 = 1"``, ``["x1", "x2 = 2"]``, ``{"x1": 0}``, a
        restriction matrix ``R`` (then ``q = 0``) or a pair ``(R, q)``, parsed by
        patsy's ``DesignInfo.linear_constraint`` as statsmodels does.
    """
    try:
        lc = patsy.DesignInfo(list(names)).linear_constraint(spec)
    except (patsy.PatsyError, ValueError, TypeError, KeyError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise OptionError(f"cannot read the restriction r_matrix={spec!r}: {first}. "
                          f"Coefficients: {list(names)}") from None
    return np.asarray(lc.coefs, dtype=float), np.asarray(lc.constants, dtype=float).ravel()


def design_prototype(design_info) -> dict:
    """A picklable description of a fitted design's right-hand side, with no data.

    For each identifier a factor's code reads that is not a function or module in the
    formula's namespace: ``"numeric"`` or the factor's categories (the declared levels,
    or those read from the data, which the output's names show). The variables' values
    are never recorded. :func:`design_info_from_prototype` rebuilds the design from it.
    """
    columns: dict[str, Any] = {}
    for factor, info in design_info.factor_infos.items():
        for word in _factor_words(factor, info):
            if info.type == "categorical":
                columns[word] = tuple(info.categories)
            else:
                columns.setdefault(word, "numeric")
    return {"columns": columns, "names": tuple(design_info.column_names)}


def _factor_words(factor, info) -> list[str]:
    """The identifiers a factor's code reads that are not functions or modules of the
    formula's namespace (data columns shadow the namespace in patsy, so other values
    may be columns)."""
    env = info.state.get("eval_env") if isinstance(info.state, dict) else None
    known = {k for ns in getattr(env, "_namespaces", []) for k, v in ns.items()
             if callable(v) or isinstance(v, types.ModuleType)}
    return [w for w in _IDENT.findall(getattr(factor, "code", factor.name()))
            if w not in known and not hasattr(builtins, w)]


def numerical_columns(design: Design) -> set[str]:
    """The data columns that some numerical factor of ``design`` reads (outcome or
    covariates): those whose values, not only their categories, enter the model."""
    out: set[str] = set()
    for design_info in (design.endog_info, design.design_info):
        for factor, info in design_info.factor_infos.items():
            if info.type != "categorical":
                out.update(_factor_words(factor, info))
    return out


def design_info_from_prototype(formula: str, prototype: dict, eval_env: int = 0):
    """The patsy ``DesignInfo`` of ``formula``'s right-hand side, rebuilt from a
    :func:`design_prototype` on a one-row frame of placeholders (numeric columns 1.0,
    categorical columns a Categorical with the recorded categories).

    Functions used in the formula are looked up ``eval_env`` frames above the caller
    (and ``np``). Raises :class:`~dpreg.exceptions.DataError` if the rebuilt columns are
    not the fitted ones.
    """
    frame = {}
    for word, kind in prototype["columns"].items():
        if kind == "numeric":
            frame[word] = [1.0]
        else:
            frame[word] = pd.Categorical([kind[0]], categories=list(kind))
    env = patsy.EvalEnvironment.capture(eval_env + 1).with_outer_namespace({"np": np})
    names = list(prototype["names"])
    try:
        rhs = patsy.ModelDesc.from_formula(formula).rhs_termlist
        X = patsy.dmatrix(patsy.ModelDesc([], rhs), pd.DataFrame(frame), eval_env=env,
                          NA_action=patsy.NAAction(NA_types=[]))
        rebuilt = X.design_info
    except Exception as err:  # noqa: BLE001 - any failure means: cannot rebuild
        raise DataError(f"cannot rebuild the design of {formula!r} for new data "
                        f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); "
                        f"pass a design matrix with the columns {names}") from None
    if list(rebuilt.column_names) != names:
        raise DataError(f"the design of {formula!r} rebuilt for new data has columns "
                        f"{list(rebuilt.column_names)}, not the fitted {names}; pass a design "
                        "matrix with the fitted columns instead")
    return rebuilt


def template_prototype(design: Design) -> dict:
    """A picklable description of a stream's template (both sides of its formula), with
    no data: :func:`design_prototype` of the outcome and of the covariates. Rebuilt by
    :func:`template_from_prototype`."""
    lhs, rhs = design_prototype(design.endog_info), design_prototype(design.design_info)
    return {"columns": {**lhs["columns"], **rhs["columns"]}, "names": rhs["names"],
            "endog_name": design.endog_name}


def template_from_prototype(formula: str, prototype: dict, *, missing: str, bounds,
                            levels, eval_env, binary_outcome: bool) -> Design:
    """The template :class:`~dpreg.design.Design` of a stream, rebuilt by
    :func:`build_design` on one row of public placeholders (numeric columns the middle
    of their declared bounds, else 1; categorical columns their first recorded level).

    Only the template's public metadata (names, declared and derived bounds, levels) is
    used after a stream's first chunk; its placeholder row is never fitted. Raises
    :class:`~dpreg.exceptions.DataError` if the rebuilt columns are not the recorded ones.
    """
    declared = check_bounds(bounds)
    frame = {}
    for word, kind in prototype["columns"].items():
        if kind == "numeric":
            lo_hi = declared.get(word)
            frame[word] = [1.0 if lo_hi is None else (lo_hi[0] + lo_hi[1]) / 2]
        elif all(isinstance(level, (bool, np.bool_)) for level in kind):
            frame[word] = np.array([kind[0]], dtype=bool)  # patsy's levels of a bool
        else:
            frame[word] = pd.Categorical([kind[0]], categories=list(kind))
    design = build_design(formula, pd.DataFrame(frame), missing=missing, bounds=bounds,
                          levels=levels, eval_env=eval_env, binary_outcome=binary_outcome)
    if (design.exog_names != tuple(prototype["names"])
            or design.endog_name != prototype["endog_name"]):
        raise DataError(f"the design of {formula!r} rebuilt from a checkpoint has columns "
                        f"{[design.endog_name, *design.exog_names]}, not the recorded "
                        f"{[prototype['endog_name'], *prototype['names']]}")
    return design


def portable_namespace(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`formula_namespace`'s output in a picklable form: modules by name (pickle
    cannot store a module), functions as they are (pickled by reference)."""
    return {k: ("module", v.__name__) if isinstance(v, types.ModuleType) else ("object", v)
            for k, v in namespace.items()}


def restore_namespace(portable: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`portable_namespace` (modules imported by name)."""
    return {k: importlib.import_module(v) if kind == "module" else v
            for k, (kind, v) in portable.items()}
