"""Public conditioning: the engines work on covariates mapped into ``[-1, 1]``.

Averaged SGD converges in about ``(lr lambda_min)^-2`` steps, so covariates in natural
units (ages, years, incomes, interactions), whose second-moment matrix has eigenvalues
spread over many orders of magnitude, leave the path in its start-up transient for any
affordable number of steps (the docs' corrections page, "conditioning"). The declared
bounds fix most of this for free: with an intercept, each column ``x_j`` with public
bounds ``[l_j, u_j]`` is replaced by ``z_j = (x_j - c_j) / h_j``, ``c_j = (l_j + u_j) / 2``,
``h_j = (u_j - l_j) / 2``; without one, by ``x_j / max(|l_j|, |u_j|)``.

This is one fixed invertible matrix ``M`` built from public numbers only, with
``X = Z M`` and ``x' theta = z' (M theta)``: the engine estimates ``theta_z = M theta``
and every estimate, path and covariance is mapped back exactly (``theta = M^{-1}
theta_z``, ``Cov(theta) = M^{-1} Cov(theta_z) M^{-T}``). The map is post-processing of
public inputs, so it costs no privacy, and the estimand is unchanged because the model
is linear in the covariates.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["Conditioning", "default_conditioning", "identity_conditioning"]


@dataclass(frozen=True, eq=False)
class Conditioning:
    """A fixed linear change of coordinates ``X = Z M`` (``Z`` is what the engine sees).

    Attributes
    ----------
    M, M_inv : ndarray (p, p)
        The map and its inverse; ``theta_z = M theta``.
    norm_bound : float or None
        Public bound on ``||z_i||_2`` (``None`` where a column has no declared bounds).
    description : str
        One line for the summary.
    """

    M: np.ndarray
    M_inv: np.ndarray
    norm_bound: float | None
    description: str

    @property
    def is_identity(self) -> bool:
        return bool(np.array_equal(self.M, np.eye(self.M.shape[0])))

    def design(self, X: np.ndarray) -> np.ndarray:
        """``Z = X M^{-1}`` as a contiguous float64 copy (the caller's array is untouched)."""
        if self.is_identity:
            return X
        return np.ascontiguousarray(X @ self.M_inv)

    def to_engine(self, theta: np.ndarray) -> np.ndarray:
        """``theta_z = M theta`` (a start value in the engine's coordinates)."""
        return self.M @ np.asarray(theta, dtype=float)

    def params(self, theta_z: np.ndarray) -> np.ndarray:
        """Estimates (one per row of a 2-D array) in the user's coordinates."""
        return np.asarray(theta_z, dtype=float) @ self.M_inv.T

    def covariance(self, cov_z: np.ndarray) -> np.ndarray:
        """``M^{-1} C M^{-T}``, symmetrized."""
        cov = self.M_inv @ cov_z @ self.M_inv.T
        return (cov + cov.T) / 2


#: Spellings of a square of one variable in a formula (patsy's normalized factor code).
_SQUARE = re.compile(r"^(?:I\((\w+) \*\* 2\)|I\((\w+) \* (\w+)\)|np\.square\((\w+)\)"
                     r"|np\.power\((\w+), 2\))$")


def _square_of(factors, main, numeric, bounds) -> str | None:
    """The variable ``x`` if the column is ``x^2`` of a main effect in the model whose
    bounds are the square's derived bounds (so every row's value is exactly ``x^2``; a
    tighter bound declared on the square clips it, and it is then centred by its own
    bounds like any other column), else ``None``."""
    if len(factors) != 1:
        return None
    match = _SQUARE.match(factors[0])
    if match is None:
        return None
    names = {g for g in match.groups() if g}
    if len(names) != 1:
        return None
    (name,) = names
    if name not in main or frozenset((name,)) not in numeric:
        return None
    c, h = main[name]
    lo, hi = c - h, c + h
    low = 0.0 if lo <= 0 <= hi else min(lo * lo, hi * hi)
    high = max(lo * lo, hi * hi)
    tol = 1e-6 * max(high, 1e-300)  # derived bounds are rounded outward by ~1e-9
    if not (abs(bounds[0] - low) <= tol and abs(bounds[1] - high) <= tol):
        return None
    return name


def identity_conditioning(p: int, norm_bound: float | None) -> Conditioning:
    """No change of coordinates (``condition="none"``)."""
    return Conditioning(np.eye(p), np.eye(p), norm_bound, "none (the design as given)")


def default_conditioning(design, partial: bool = False) -> Conditioning:
    """Centre and scale each bounded numeric column into ``[-1, 1]`` (module notes).

    A main effect ``x`` with bounds ``[l, u]`` becomes ``z_x = (x - c) / h``. A product
    ``x:w`` whose main effects are in the model becomes ``z_x z_w`` (expanding
    ``x w = (h_x z_x + c_x)(h_w z_w + c_w)`` keeps the map linear in the columns), which
    is nearly uncorrelated with ``z_x`` and ``z_w`` where the raw product is nearly
    collinear with them. A square ``x^2`` of a main effect (``I(x ** 2)``,
    ``np.square(x)``, ...) becomes the Legendre polynomial ``z_x^2 - 1/3``, orthogonal to
    ``1`` and ``z_x`` on the box. Other numeric columns are centred by their own bounds.
    Columns of categorical terms (dummies, and numeric-by-categorical interactions) are
    left as they are: dummies are in ``[0, 1]`` already, and centring them would make
    every dummy non-zero in every row, inflating the public row-norm bound (and so the
    clipping norm and the noise) by the number of levels. A column without bounds cannot
    be scaled without reading the data: without declared bounds for every column nothing
    is mapped, unless ``partial`` (fits with Mallows weights, whose gradients are bounded
    without a row bound): then the bounded columns are mapped, the others left as given,
    and the map has no norm bound. Without an intercept, columns are scaled, not centred.
    """
    names, bounds, factors = design.exog_names, design.column_bounds, design.column_factors
    p = len(names)
    x_norm = design.row_norm_bound()
    if (x_norm is None and not partial) or len(bounds) != p or len(factors) != p:
        return identity_conditioning(p, x_norm)
    intercept = next((j for j, name in enumerate(names)
                      if name in ("Intercept", "const") and tuple(bounds[j]) == (1.0, 1.0)),
                     None)
    numeric = {frozenset(f): j for j, f in enumerate(factors)
               if f is not None and bounds[j] is not None}
    if intercept is not None:
        numeric[frozenset()] = intercept
    main = {}  # factor -> (centre, half-range) of its main-effect column
    for j, f in enumerate(factors):
        if f is not None and len(f) == 1 and intercept is not None and bounds[j] is not None \
                and bounds[j][1] > bounds[j][0]:
            lo, hi = bounds[j]
            main[f[0]] = ((lo + hi) / 2, (hi - lo) / 2)
    M = np.eye(p)
    norm_sq = x_norm ** 2 if x_norm is not None else math.inf
    moved = []
    for j, f in enumerate(factors):
        if j == intercept or f is None or bounds[j] is None or not f:
            continue
        lo, hi = float(bounds[j][0]), float(bounds[j][1])
        fs = frozenset(f)
        subsets = [frozenset(c) for r in range(len(f)) for c in itertools.combinations(f, r)]
        base = _square_of(f, main, numeric, (lo, hi))
        if base is not None:
            # x_j = x^2 = (h z + c)^2 = h^2 (w + 1/3) + 2 h c z + c^2 with w = z^2 - 1/3,
            # the degree-2 Legendre polynomial: orthogonal to 1 and z on [-1, 1], where
            # the raw square is nearly collinear with x (correlation 0.98 on a uniform
            # box); w lies in [-1/3, 2/3], so its max |w|^2 is 4/9
            c, h = main[base]
            M[j, j] = h * h
            M[numeric[frozenset((base,))], j] = 2 * h * c
            M[intercept, j] = c * c + h * h / 3
            norm_sq += 4.0 / 9.0 - max(abs(lo), abs(hi)) ** 2
            moved.append(names[j])
            continue
        if len(fs) == len(f) and all(g in main for g in f) \
                and all(s in numeric for s in subsets):
            # x_j = prod_g (h_g z_g + c_g) = sum_S prod_{g in S} h_g prod_{g not in S} c_g z_S
            for sub in subsets + [fs]:
                M[numeric[sub], j] = (math.prod(main[g][1] for g in sub)
                                      * math.prod(main[g][0] for g in fs - sub))
        elif intercept is not None and hi > lo:  # x_j = h_j z_j + c_j * 1
            M[j, j] = (hi - lo) / 2
            M[intercept, j] = (lo + hi) / 2
        elif max(abs(lo), abs(hi)) > 0:  # no intercept to absorb a shift: scale only
            M[j, j] = max(abs(lo), abs(hi))
        else:
            continue
        # a numeric column is its own term in the design's norm bound: its max |x_j|^2
        # becomes max |z_j|^2 = 1
        norm_sq += 1.0 - max(abs(lo), abs(hi)) ** 2
        moved.append(names[j])
    if not moved:
        return identity_conditioning(p, x_norm)
    how = "centred and scaled" if intercept is not None else "scaled"
    text = (f"{len(moved)} of {p} columns {how} into [-1, 1] by their declared bounds; "
            "estimates and covariances mapped back exactly")
    unbounded = [name for name, b in zip(names, bounds, strict=True) if b is None]
    if unbounded:
        text += f" ({', '.join(unbounded)}: no bounds declared, left as given)"
    norm_bound = float(np.sqrt(max(norm_sq, 1.0))) if x_norm is not None else None
    return Conditioning(M, np.linalg.inv(M), norm_bound, text)
