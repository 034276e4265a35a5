"""The design: outcome, design matrix, names and declared bounds, checked once.

A :class:`Design` is what every engine and every oracle consumes. It is built either
from a formula (see :mod:`dpreg.formula`, the only module that imports patsy) or from
arrays (:func:`design_from_arrays`). Validation happens here, at the boundary, so that
kernels never see a NaN, an infinity or a rank-deficient matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dpreg.exceptions import DataError, OptionError

__all__ = ["Design", "design_from_arrays", "check_bounds", "MISSING_POLICIES"]

MISSING_POLICIES = ("drop", "raise")


@dataclass(frozen=True, eq=False)
class Design:
    """Outcome, design matrix and metadata of one regression.

    Attributes
    ----------
    endog : ndarray of shape (n,)
        The outcome, float64, C-contiguous, finite, clipped to its declared bounds.
    exog : ndarray of shape (n, p)
        The design matrix, float64, C-contiguous, finite, of full column rank, built
        from data columns clipped to their declared bounds.
    endog_name : str
    exog_names : tuple of str
        Column names of the design matrix (patsy term names for formulas).
    n_dropped : int
        Rows dropped because of missing values (``missing="drop"``).
    formula : str or None
    x_norm_bound : float or None
        Public bound on ``||x_i||_2`` implied by the declared bounds and the structure of
        the design (an intercept is 1; a categorical term contributes the largest squared
        row of its contrast matrix), or ``None`` where a bound is missing.
    endog_bounds : tuple of float or None
        Declared ``(lower, upper)`` bounds of the outcome, or ``None``.
    undeclared : tuple of str
        Variables of the design whose bounds were not declared.
    undeclared_levels : tuple of str
        Categorical variables whose categories were read from the data (they appear in
        the output's names); declare them with ``levels=``.
    stateful : tuple of str
        Terms using stateful transforms (``standardize``, ``center``, splines), whose
        constants are computed from the data.
    column_bounds : tuple
        Public ``(lower, upper)`` of each design column implied by the declared bounds
        and the coding (an intercept is ``(1, 1)``, a treatment dummy ``(0, 1)``), or
        ``None`` for a column with an undeclared variable.
    column_factors : tuple
        For each column, the names of its numerical factors (``("x",)`` for a main
        effect, ``("x", "z")`` for ``x:z``, ``()`` for the intercept), or ``None`` when
        its term has a categorical factor: the engines centre and scale the numeric
        columns (:mod:`dpreg.conditioning`).
    design_info, endog_info : patsy.DesignInfo or None
        How patsy built the columns of ``exog`` and ``endog`` (formulas only): used to
        build the same columns for new data (``predict``, chunks of a stream).
    """

    endog: np.ndarray
    exog: np.ndarray
    endog_name: str
    exog_names: tuple[str, ...]
    n_dropped: int = 0
    formula: str | None = None
    x_norm_bound: float | None = None
    endog_bounds: tuple[float, float] | None = None
    undeclared: tuple[str, ...] = ()
    undeclared_levels: tuple[str, ...] = ()
    stateful: tuple[str, ...] = ()
    design_info: Any = field(default=None, repr=False)
    endog_info: Any = field(default=None, repr=False)
    column_bounds: tuple = ()
    column_factors: tuple = ()

    @property
    def nobs(self) -> int:
        return self.exog.shape[0]

    @property
    def k_exog(self) -> int:
        return self.exog.shape[1]

    @property
    def has_intercept(self) -> bool:
        return any(np.all(self.exog[:, j] == 1.0) and name in ("Intercept", "const")
                   for j, name in enumerate(self.exog_names))

    def row_norm_bound(self) -> float | None:
        """Public bound on ``||x_i||_2`` from the declared bounds, or ``None``."""
        return self.x_norm_bound


def check_bounds(bounds: Mapping[str, Any] | None) -> dict[str, tuple[float, float]]:
    """Validate a ``bounds`` mapping ``{variable: (lower, upper)}``."""
    if bounds is None:
        return {}
    if not isinstance(bounds, Mapping):
        raise OptionError(f"bounds must be a dict {{column: (lower, upper)}}, got {type(bounds).__name__}")
    out = {}
    for key, value in bounds.items():
        try:
            lo, hi = (float(v) for v in value)
        except (TypeError, ValueError):
            raise OptionError(f"bounds[{key!r}] must be a pair (lower, upper) of numbers, got {value!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise OptionError(f"bounds[{key!r}] = ({lo}, {hi}) must be finite with lower < upper")
        out[str(key)] = (lo, hi)
    return out


def check_missing(missing: str) -> str:
    if missing not in MISSING_POLICIES:
        raise OptionError(f"missing must be one of {MISSING_POLICIES}, got {missing!r}")
    return missing


def check_finite_full_rank(endog: np.ndarray, exog: np.ndarray, endog_name: str,
                           exog_names: tuple[str, ...], *, rank: bool = True) -> None:
    """Raise :class:`DataError` for empty data, non-finite values or collinear columns.

    ``rank=False`` skips the identification checks (``n >= p``, full column rank): a
    chunk of a stream may have fewer rows than columns.
    """
    n, p = exog.shape
    if n == 0:
        raise DataError("no rows left after removing rows with missing values; "
                        "check the columns used by the model for missing data")
    if p == 0:
        raise DataError("the design matrix has no columns; the formula must have at least "
                        "one regressor or an intercept")
    if not np.all(np.isfinite(endog)):
        raise DataError(f"outcome {endog_name!r} has non-finite values (inf); "
                        "remove or recode them")
    bad = ~np.all(np.isfinite(exog), axis=0)
    if bad.any():
        names = [exog_names[j] for j in np.flatnonzero(bad)]
        raise DataError(f"design column(s) {names} have non-finite values (inf); "
                        "remove or recode them")
    if not rank:
        return
    if n < p:
        raise DataError(f"more regressors ({p}) than rows ({n}): the model is not identified")
    # Collinearity: a column whose QR diagonal is negligible depends on the others. R is
    # computed by blocks of rows (R of [R_prev; X_block]), so no copy of X is made.
    r = _blocked_r(exog)
    diag = np.abs(np.diag(r))
    scale = np.linalg.norm(exog, axis=0)
    tol = max(n, p) * np.finfo(float).eps * 1e3
    dependent = [exog_names[j] for j in range(p) if diag[j] <= tol * max(scale[j], 1.0)]
    if dependent:
        raise DataError(f"the design matrix is rank deficient: column(s) {dependent} are "
                        "linear combinations of earlier columns (perfect collinearity); "
                        "drop them or change the coding")


def _blocked_r(X: np.ndarray, block: int = 1 << 16) -> np.ndarray:
    """The R factor of ``X = QR`` (up to row signs) from blocks of rows (TSQR)."""
    r = np.zeros((0, X.shape[1]))
    for start in range(0, X.shape[0], block):
        r = np.linalg.qr(np.vstack([r, X[start:start + block]]), mode="r")
    return r


def design_from_arrays(endog, exog, *, missing: str = "drop",
                       bounds: Mapping[str, Any] | None = None) -> Design:
    """Build a :class:`Design` from array-like ``endog`` (n,) and ``exog`` (n, p).

    Names come from a pandas Series/DataFrame if given, else ``y`` and ``x1..xp``
    (``const`` for a column that is identically one, as statsmodels' ``add_constant``).
    """
    missing = check_missing(missing)
    bounds = check_bounds(bounds)
    endog_name = endog.name if isinstance(endog, pd.Series) and endog.name is not None else "y"
    if isinstance(exog, pd.DataFrame):
        names = [str(c) for c in exog.columns]
        if len(set(names)) != len(names):
            dup = sorted({c for c in names if names.count(c) > 1})
            raise DataError(f"duplicate column names in exog: {dup}; rename them")
    try:
        y = np.asarray(endog, dtype=float)
        X = np.asarray(exog, dtype=float)
    except (TypeError, ValueError) as err:
        raise DataError(f"endog and exog must be numeric: {err}") from None
    if X.ndim == 1:
        X = X[:, None]
    if y.ndim != 1 or X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise DataError(f"endog must be 1-D and exog 2-D with the same number of rows; got "
                        f"shapes {np.shape(endog)} and {np.shape(exog)}")
    if not isinstance(exog, pd.DataFrame):
        names = ["const" if np.all(X[:, j] == 1.0) else f"x{j + 1}" for j in range(X.shape[1])]
    nan_rows = np.isnan(y) | np.isnan(X).any(axis=1)
    if nan_rows.any():
        if missing == "raise":
            cols = [endog_name] if np.isnan(y).any() else []
            cols += [names[j] for j in np.flatnonzero(np.isnan(X).any(axis=0))]
            raise DataError(f"missing values in {cols} ({int(nan_rows.sum())} rows) and "
                            "missing='raise'; use missing='drop' to drop those rows")
        y, X = y[~nan_rows], X[~nan_rows]
    y = np.array(y, dtype=float)
    X = np.array(X, dtype=float)
    check_finite_full_rank(y, X, endog_name, tuple(names))
    col_bounds = []
    for name in names:
        if name == "const":
            col_bounds.append(1.0)
        elif name in bounds:
            col_bounds.append(max(abs(v) for v in bounds[name]))
        else:
            col_bounds.append(None)
    undeclared = tuple(n for n, b in zip(names, col_bounds) if b is None)
    unknown = set(bounds) - set(names) - {endog_name}
    if unknown:
        raise OptionError(f"bounds name column(s) {sorted(unknown)} that are not in the model; "
                          f"known: {[endog_name] + names}")
    # declared bounds are enforced by clipping (copies; the caller's arrays are untouched)
    for j, name in enumerate(names):
        if name in bounds:
            X[:, j] = np.clip(X[:, j], *bounds[name])
    if endog_name in bounds:
        y = np.clip(y, *bounds[endog_name])
    x_norm = None if undeclared else math.sqrt(sum(b * b for b in col_bounds))
    column_bounds = tuple((1.0, 1.0) if name == "const" else bounds.get(name)
                          for name in names)
    return Design(endog=np.ascontiguousarray(y), exog=np.ascontiguousarray(X),
                  endog_name=endog_name, exog_names=tuple(names),
                  n_dropped=int(nan_rows.sum()), formula=None, x_norm_bound=x_norm,
                  endog_bounds=bounds.get(endog_name), undeclared=undeclared,
                  column_bounds=column_bounds,
                  column_factors=tuple(() if name == "const" else (name,) for name in names))
