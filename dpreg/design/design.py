"""The design: outcome, design matrix, names and declared bounds, checked once.

A :class:`Design` is what every engine and every oracle consumes. It is built either
from a formula (see :mod:`dpreg.design.formula`, the only package that imports patsy) or
from arrays (:func:`design_from_arrays`). Validation happens here, at the boundary, so that
kernels never see a NaN or an infinity.

Identification (``n >= p``, full column rank) is a property of the private data: a
private fit that refused to run on it would reveal it (a declared level with one row
fits, its neighbour without that row would not). So only the non-private oracle checks
it (:func:`check_identified`); private fits run and their summary says that the design
may be degenerate (:func:`design_notes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dpreg._checks import one_of
from dpreg.exceptions import DataError, OptionError
from dpreg.privacy.scale_box import ScaleBox

__all__ = ["Design", "design_from_arrays", "check_bounds", "check_identified", "design_notes",
           "MISSING_POLICIES", "BOUND_LIMIT", "INTERCEPT_NAMES"]

MISSING_POLICIES = ("drop", "raise")
#: Largest magnitude of a declared bound: sensitivities are products of two bounds,
#: squared (e.g. ``clip^2`` with ``clip = x_bound (upper - lower) / 2``), and must stay
#: representable in float64 (about 1.8e308) with room for p columns.
BOUND_LIMIT = 1e50
#: Column names that declare the intercept (a column of ones): patsy's and statsmodels'.
INTERCEPT_NAMES = ("Intercept", "const")


@dataclass(frozen=True, eq=False)
class Design:
    """Outcome, design matrix and metadata of one regression.

    Attributes
    ----------
    endog : ndarray of shape (n,)
        The outcome, float64, C-contiguous, finite, clipped to its declared bounds.
    exog : ndarray of shape (n, p)
        The design matrix, float64, C-contiguous, finite, built from data columns
        clipped to their declared bounds. Its rank is not checked here (see the module
        notes): :func:`check_identified` does that for oracles.
    endog_name : str
    exog_names : tuple of str
        Column names of the design matrix (patsy term names for formulas).
    n_dropped : int
        Rows dropped because of missing values (``missing="drop"``). For central fits
        this count is public by assumption (see the threat model in the user guide);
        local (LDP-SGD) fits never publish it: see :meth:`device_rows`.
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
        columns (:mod:`dpreg.design.conditioning`).
    design_info, endog_info : patsy.DesignInfo or None
        How patsy built the columns of ``exog`` and ``endog`` (formulas only): used to
        build the same columns for new data (``predict``, chunks of a stream).
    derived_bounds : dict
        ``{term: (lower, upper)}`` bounds derived from declared bounds of raw columns
        (e.g. ``np.log(w)`` from ``w``); listed in private summaries.
    missing_rows : ndarray of bool or None
        Positions (in the data as given) of the rows dropped for missing values, used
        only to rebuild the rows in their order for LDP-SGD (:meth:`device_rows`).
    missing : {"drop", "raise"}
        The missing-value policy the design was built with.
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
    derived_bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    missing_rows: np.ndarray | None = field(default=None, repr=False)
    missing: str = "drop"

    @property
    def nobs(self) -> int:
        return self.exog.shape[0]

    @property
    def k_exog(self) -> int:
        return self.exog.shape[1]

    @property
    def has_intercept(self) -> bool:
        """Whether a column is named as the intercept (``Intercept`` or ``const``).

        Decided from the names alone, never from the values: a value would make the
        output's ``df_model`` a statistic of the private data.
        """
        return any(name in INTERCEPT_NAMES for name in self.exog_names)

    @property
    def df_model(self) -> int:
        """Regressors, not counting the intercept (:attr:`has_intercept`: from the names)."""
        return self.k_exog - int(self.has_intercept)

    def device_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(exog, endog)`` with every row of the data in its order, for LDP-SGD.

        A row dropped for a missing value comes back as a null row (all covariates and
        the outcome zero): its gradient and Hessian are zero for every family, so the
        message its owner sends is pure noise, indistinguishable by the server from any
        other. The server learns neither the count nor the positions of missing rows.
        """
        if self.missing_rows is None or not self.missing_rows.any():
            return self.exog, self.endog
        keep = ~self.missing_rows
        X = np.zeros((len(keep), self.k_exog))
        y = np.zeros(len(keep))
        X[keep], y[keep] = self.exog, self.endog
        return X, y

    def row_norm_bound(self) -> float | None:
        """Public bound on ``||x_i||_2`` from the declared bounds, or ``None``."""
        return self.x_norm_bound


def check_bounds(bounds: Mapping[str, Any] | None) -> dict[str, tuple[float, float]]:
    """Validate a ``bounds`` mapping ``{variable: (lower, upper)}``; a
    :class:`~dpreg.privacy.scale_box.ScaleBox` is kept as given (it is its box, with a
    geometric grid for the private ranges)."""
    if bounds is None:
        return {}
    if not isinstance(bounds, Mapping):
        raise OptionError("bounds must be a dict {column: (lower, upper)}, got "
                          f"{type(bounds).__name__}")
    out = {}
    for key, value in bounds.items():
        try:
            lo, hi = (float(v) for v in value)
        except (TypeError, ValueError):
            raise OptionError(f"bounds[{key!r}] must be a pair (lower, upper) of numbers, "
                              f"got {value!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise OptionError(f"bounds[{key!r}] = ({lo}, {hi}) must be finite with lower < upper")
        if max(abs(lo), abs(hi)) > BOUND_LIMIT:
            raise OptionError(f"bounds[{key!r}] = ({lo:g}, {hi:g}) exceed {BOUND_LIMIT:g} in "
                              "magnitude: sensitivities are products of bounds, squared, and "
                              "would not be representable in float64; rescale the variable "
                              "(e.g. to thousands or millions)")
        out[str(key)] = value if isinstance(value, ScaleBox) else (lo, hi)
    return out


def check_identified(design: "Design") -> None:
    """Raise :class:`DataError` unless ``n >= p`` and the design has full column rank.

    For the non-private oracle only: a private fit must not refuse on a property of the
    private data (see the module notes).
    """
    check_finite_full_rank(design.endog, design.exog, design.endog_name, design.exog_names)


#: The refusal of a central fit with no complete rows (the count of rows dropped for
#: missing values is public by assumption in central fits, never under LDP).
NO_ROWS_LEFT = ("no rows left after removing rows with missing values; check the columns "
                "used by the model for missing data")


def check_public_size(design: "Design", *, local: bool = False,
                      clusters: int | None = None) -> None:
    """Refuse a private fit with fewer rows than columns, from public numbers only.

    ``n`` and ``p`` are public (``n`` counts the rows a central fit uses, whose missing
    count is public by assumption; under LDP every row is sent, a row with a missing
    value as pure noise, so ``n`` counts them all). With ``n < p`` no engine can
    identify the coefficients, and a private fit would print noise. The rank of the
    data is never checked (a refusal would depend on the private values). With
    clusters as the privacy unit ``n`` is protected: ``clusters`` is then the public
    bound ``G K`` on the rows, checked in its place.

    Raises
    ------
    DataError
        Naming ``n`` and ``p``.
    """
    n = design.nobs + (design.n_dropped if local else 0)
    p = design.k_exog
    if n == 0:
        raise DataError(NO_ROWS_LEFT)
    if clusters is not None:
        if clusters < p:
            raise DataError(f"G K = {clusters} rows at most < p = {p} columns "
                            f"({list(design.exog_names)}): clusters as the privacy unit "
                            "need at least as many rows as columns to identify the "
                            "coefficients. Use more clusters or fewer columns")
        return
    if n < p:
        raise DataError(f"n = {n} rows < p = {p} columns ({list(design.exog_names)}): a "
                        "private fit needs at least as many rows as columns to identify "
                        "the coefficients (n and p are public; the data's rank is never "
                        "checked). Use more rows or fewer columns")


def degenerate_note(n: int, p: int) -> str:
    """The summary note of a fit with fewer rows than columns (public numbers)."""
    return (f"The design is degenerate: n = {n} rows < p = {p} columns, so the "
            "coefficients are not identified; the engines' eigenvalue floors keep "
            "the fit finite.")


def design_notes(design: "Design", *, local: bool = False, nobs: int | None = None,
                 n_dropped: int | None = None, counts: bool = True) -> tuple[str, ...]:
    """Summary notes a private fit adds for its design; none depends on the private data
    beyond what is public (n, p, the declared bounds and, for central fits, the count of
    rows dropped for missing values).

    Parameters
    ----------
    design : Design
    local : bool
        LDP-SGD: rows with missing values were sent as pure noise by their owners and
        no count is published.
    nobs, n_dropped : int, optional
        The counts, when the rows are not in ``design`` (a Dask frame's, counted by the
        fit's pass); default the design's.
    counts : bool
        ``False`` when the rows' counts are protected (clusters as the privacy unit):
        no note then depends on ``n`` or on the rows dropped.
    """
    n, p = (design.nobs if nobs is None else nobs), design.k_exog
    dropped = design.n_dropped if n_dropped is None else n_dropped
    notes = []
    # under LDP the count of complete rows is not public (and a stream's n grows): the
    # n < p note is the run's, from the rows sent (dpreg.fits.ldp_sgd.LDPRun.results)
    if n < p and not local and counts:
        notes.append(degenerate_note(n, p))
    else:
        notes.append("The design may be degenerate: its rank is not checked for private fits "
                     "(a refusal would depend on the private data). Coefficients of "
                     "collinear columns (e.g. a declared level with no rows) are not "
                     "identified.")
    if design.derived_bounds:
        parts = ", ".join(f"{k} in [{lo:.4g}, {hi:.4g}]"
                          for k, (lo, hi) in design.derived_bounds.items())
        notes.append(f"Bounds derived from the declared bounds of raw columns: {parts}.")
    if local and design.missing == "drop":
        notes.append("Missing values: a row with one is sent by its owner as a null row "
                     "(pure noise); the server learns neither their count nor their "
                     "positions.")
    elif not local and not counts:  # the same note whatever the data
        notes.append("Rows with missing values, if any, were dropped; their number is "
                     "not released (cluster sizes are protected).")
    elif not local and dropped:
        notes.append(f"{dropped} row(s) with missing values were dropped. This "
                     "count (and so n) is public by assumption: whether a person's values "
                     "are missing is not protected.")
    return tuple(notes)


def check_missing(missing: str) -> str:
    return one_of("missing", missing, MISSING_POLICIES)


def check_finite_full_rank(endog: np.ndarray, exog: np.ndarray, endog_name: str,
                           exog_names: tuple[str, ...], *, rank: bool = True) -> None:
    """Raise :class:`DataError` for empty data, non-finite values or collinear columns.

    ``rank=False`` skips the identification checks (rows left, ``n >= p``, full
    column rank): a chunk of a stream may have fewer complete rows than columns, or
    none (under LDP its rows with missing values are sent as null rows, and refusing
    would tell whoever runs the stream that they are missing).
    """
    n, p = exog.shape
    if n == 0 and rank:
        raise DataError(NO_ROWS_LEFT)
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
    # computed by blocks of rows (R of [R_prev; X_block]). Columns are first divided by
    # their largest magnitude (a power of two: exact), so that values near 1e300 do not
    # overflow a norm and look collinear; rank is unchanged by column scaling.
    colmax = np.max(np.abs(exog), axis=0)
    unit = np.where(colmax > 0, np.exp2(np.ceil(np.log2(np.where(colmax > 0, colmax, 1.0)))),
                    1.0)
    r = _blocked_r(exog, unit)
    diag = np.abs(np.diag(r))
    scale = np.sqrt(np.diag(r.T @ r))  # column norms of the scaled X (R'R = X'X)
    tol = max(n, p) * np.finfo(float).eps * 1e3
    dependent = [exog_names[j] for j in range(p)
                 if colmax[j] == 0 or diag[j] <= tol * max(scale[j], 1.0)]
    if dependent:
        raise DataError(f"the design matrix is rank deficient: column(s) {dependent} are "
                        "linear combinations of earlier columns (perfect collinearity); "
                        "drop them or change the coding")


def _blocked_r(X: np.ndarray, unit: np.ndarray, block: int = 1 << 16) -> np.ndarray:
    """The R factor of ``X / unit = QR`` (up to row signs) from blocks of rows (TSQR);
    no copy of the whole of ``X`` is made."""
    r = np.zeros((0, X.shape[1]))
    for start in range(0, X.shape[0], block):
        r = np.linalg.qr(np.vstack([r, X[start:start + block] / unit]), mode="r")
    return r


def design_from_arrays(endog, exog, *, missing: str = "drop",
                       bounds: Mapping[str, Any] | None = None,
                       intercept: int | None = None) -> Design:
    """Build a :class:`Design` from array-like ``endog`` (n,) and ``exog`` (n, p).

    Parameters
    ----------
    endog : array-like of shape (n,)
    exog : array-like of shape (n, p)
        Names come from a pandas DataFrame's columns, else ``x1..xp``.
    missing : {"drop", "raise"}
    bounds : dict, optional
        ``{name: (lower, upper)}`` public bounds, enforced by clipping.
    intercept : int, optional
        Index of the column that is the intercept: it is named ``const``. A DataFrame
        column named ``const`` or ``Intercept`` (as ``statsmodels.add_constant`` makes)
        is the intercept too. Never decided from the values: a column of ones is not
        an intercept unless named or declared so (the output's names and ``df_model``
        would otherwise depend on the private data). The intercept column is bounded by
        1 (it is clipped to ``[-1, 1]``).
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
        names = [f"x{j + 1}" for j in range(X.shape[1])]
    if intercept is not None:
        if isinstance(intercept, bool) or not isinstance(intercept, (int, np.integer)) \
                or not -X.shape[1] <= intercept < X.shape[1]:
            raise OptionError(f"intercept must be the index of a column of exog (0 to "
                              f"{X.shape[1] - 1}), got {intercept!r}")
        names[intercept] = "const"
        if names.count("const") > 1:
            raise DataError("exog has a column named 'const' besides intercept=; rename it")
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
    check_finite_full_rank(y, X, endog_name, tuple(names), rank=False)
    col_bounds = []
    for name in names:
        if name in INTERCEPT_NAMES:
            col_bounds.append(1.0)
        elif name in bounds:
            col_bounds.append(max(abs(v) for v in bounds[name]))
        else:
            col_bounds.append(None)
    undeclared = tuple(n for n, b in zip(names, col_bounds, strict=True) if b is None)
    unknown = set(bounds) - set(names) - {endog_name}
    if unknown:
        raise OptionError(f"bounds name column(s) {sorted(unknown)} that are not in the model; "
                          f"known: {[endog_name] + names}")
    # declared bounds are enforced by clipping (copies; the caller's arrays are untouched)
    for j, name in enumerate(names):
        if name in INTERCEPT_NAMES:
            X[:, j] = np.clip(X[:, j], -1.0, 1.0)
        elif name in bounds:
            X[:, j] = np.clip(X[:, j], *bounds[name])
    if endog_name in bounds:
        y = np.clip(y, *bounds[endog_name])
    x_norm = None if undeclared else math.sqrt(sum(b * b for b in col_bounds))
    # the declared intercept (by name) is the column the conditioning centres against
    intercept_col = next((j for j, name in enumerate(names) if name in INTERCEPT_NAMES), None)
    column_bounds = tuple((1.0, 1.0) if j == intercept_col else bounds.get(name)
                          for j, name in enumerate(names))
    return Design(endog=np.ascontiguousarray(y), exog=np.ascontiguousarray(X),
                  endog_name=endog_name, exog_names=tuple(names),
                  n_dropped=int(nan_rows.sum()), formula=None, x_norm_bound=x_norm,
                  endog_bounds=bounds.get(endog_name), undeclared=undeclared,
                  column_bounds=column_bounds,
                  column_factors=tuple(() if j == intercept_col else (name,)
                                       for j, name in enumerate(names)),
                  missing_rows=nan_rows if nan_rows.any() else None, missing=missing)
