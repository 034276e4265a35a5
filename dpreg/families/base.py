"""The declarative description of a regression family (loss in the linear index).

A family is a frozen record of jitted scalar functions of ``(y, eta, c, tau)`` where
``eta`` is the linear index ``x'theta``, ``c`` a truncation constant and ``tau`` a
location (expectiles), plus the bounds that privacy needs. Kernels do not receive these
functions (that would defeat numba's on-disk cache, numba issue #2956); they dispatch on
the integer ``code`` in :mod:`dpreg.families.dispatch`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from dpreg.exceptions import OptionError

__all__ = ["Family", "Objective", "mallows_weights", "family_constants", "C_RANGE_FLOOR",
           "check_c_scale"]


@dataclass(frozen=True)
class Family:
    """A regression family.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"huber"``.
    code : int
        Integer the numba kernels dispatch on.
    label : str
        Human-readable name for summaries.
    loss, dloss, d2loss : callable
        Per-observation loss ``l(y, eta, c, tau)`` and its first and second derivatives
        in ``eta`` (jitted scalar functions).
    psi_bound : callable
        ``(c, tau) -> float or None``: bound on ``|dloss|``; ``None`` when unbounded
        (gradients are then clipped at a norm derived from declared bounds).
    hess_bound : callable
        ``(c, tau) -> float``: bound on ``d2loss`` (sensitivity of the private Hessian).
    check_y : callable
        ``(y, name) -> None``; raises :class:`~dpreg.exceptions.DataError`.
    default_c : float or None
        Default truncation constant (``None``: the family has none).
    uses_tau : bool
        Whether ``tau`` is a parameter of the family.
    mallows_default : bool
        Whether Mallows weights are on by default (as in the paper that uses the family).
    lr_scale : float
        Default step size as a multiple of ``1 / kappa``, ``kappa`` the public bound on a
        row's curvature ``hess_bound * w(x) ||x||^2``. A score that is not linear in theta
        makes the average of noisy iterates biased by about
        ``A^{-1} G'' Var(theta_t) / 2``, which shrinks with the step size (measured:
        expectile tau = 0.8, intercept bias 2 s.e. at 1/kappa, 0.2 s.e. at 1/(4 kappa)).
    ldp_lr_scale : float
        The same for LDP-SGD (one pass): 1 where the score is linear or symmetric at the
        target (linear, Huber), which forgets the start fastest; 1/4 for logistic and
        expectile, whose noise-driven bias grows with the step (validation/ldp_families.py;
        expectile tau = 0.2, n = 1e5, mu = 1: intercept bias 1.7 s.d. at 1/kappa, 1.2 at
        1/(4 kappa)).
    binary_outcome : bool
        Whether the outcome is 0/1: the design codes a boolean or two-level outcome as
        0/1, predictions and intervals are probabilities (statsmodels' ``Logit`` column
        names), and the outcome has no declared box or transform of its own.
    location : bool
        Whether the linear index is on the outcome's scale (a location family): a fit
        then starts with the intercept at the midpoint of the outcome's declared bounds.
    squared_loss : bool
        Whether the loss is the squared loss, whose score is linear in theta: the
        engines built on sufficient statistics (``"ssp"``, ``"adassp"``) fit it only,
        ``engine="auto"`` chooses among engines from the engines study measured on it,
        and the oracle is statsmodels' OLS (without Mallows weights).
    inverse_link : callable or None
        ``eta -> (mean, dmean, d2mean)`` on arrays: the mean ``E[y | x]`` as a function
        of the linear index and its first two derivatives in ``eta`` (predictions,
        their delta-method standard errors, marginal effects). ``None``: the identity
        link (the linear index is the mean).
    statsmodels_model : str or None
        The statsmodels model whose unweighted fit is the family's M-estimator, which
        the oracle then uses (``"OLS"``, ``"Logit"``); ``None``: the oracle's own
        trust-region Newton.
    checks_curvature_bias : bool
        Whether DP-SGD and DP-GD add the curvature-bias check of the averaged iterate to
        their convergence report (:func:`dpreg.inference.diagnostics.curvature_bias`:
        a smooth score curved everywhere; measured for logistic).
    ldp_offset_step : {"always", "boxed", None}
        When LDP-SGD's default step is the offset step of
        :func:`dpreg.fits.ldp_sgd.ldp_step`: ``"always"`` (a score linear in theta, no
        step-size bias), ``"boxed"`` (when declared boxes condition the rows: a score
        piecewise linear in theta, measured for Huber) or ``None`` (the ldp-sgd paper's
        step ``ldp_lr_scale / kappa``).
    cli_name : str or None
        Its spelling for ``python -m dpreg fit --family`` where statsmodels' name of the
        model differs from the registry name (``"ols"``, ``"logit"``); ``None``: the
        registry name.
    """

    name: str
    code: int
    label: str
    loss: Callable
    dloss: Callable
    d2loss: Callable
    psi_bound: Callable[[float, float], float | None]
    hess_bound: Callable[[float, float], float]
    check_y: Callable[[np.ndarray, str], None]
    default_c: float | None = None
    uses_tau: bool = False
    mallows_default: bool = False
    lr_scale: float = 0.25
    ldp_lr_scale: float = 0.25
    binary_outcome: bool = False
    location: bool = True
    squared_loss: bool = False
    inverse_link: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]] | None \
        = None
    statsmodels_model: str | None = None
    checks_curvature_bias: bool = False
    ldp_offset_step: str | None = None
    cli_name: str | None = None

    def __post_init__(self):
        if self.ldp_offset_step not in ("always", "boxed", None):
            raise ValueError(f"ldp_offset_step must be 'always', 'boxed' or None, got "
                             f"{self.ldp_offset_step!r}")

    def __reduce__(self):
        # a family pickles by its registry name (its bounds are lambdas and its losses
        # jitted functions, neither of which pickles): loading returns the registry's
        # record, so a pickled model, result or stream checkpoint holds no code
        return (_registered_family, (self.name,))

    def describe(self, c: float, tau: float, weights: str | None) -> str:
        """Label with the tuning constants, e.g. ``"Huber (c = 1.345), Mallows weights"``."""
        parts = []
        if self.default_c is not None and math.isfinite(c):
            parts.append(f"c = {c:g}")
        if self.uses_tau:
            parts.append(f"tau = {tau:g}")
        text = self.label + (f" ({', '.join(parts)})" if parts else "")
        return text + (", Mallows weights" if weights == "mallows" else "")


#: The registered families by name (filled by :mod:`dpreg.families`), which a pickled
#: :class:`Family` is loaded from.
REGISTRY: dict[str, Family] = {}


def _registered_family(name: str) -> Family:
    return REGISTRY[name]


def mallows_weights(X: np.ndarray) -> np.ndarray:
    """Mallows weights ``w(x) = min(1, 2 / ||x||^2)`` (ldp-sgd paper, Examples 1-3).

    They make ``w(x) ||x|| <= sqrt(2)`` and ``w(x) ||x||^2 <= 2`` for every row, so a
    bounded score ``psi`` gives a bounded gradient without any bound on the covariates.
    The weight is a fixed public function of the row; it assumes covariates on a scale
    where ``||x||^2 ~ 2`` is typical (the paper standardizes).
    """
    sq = np.einsum("ij,ij->i", X, X)
    return np.minimum(1.0, 2.0 / np.maximum(sq, np.finfo(float).tiny))


@dataclass(frozen=True, eq=False)
class Objective:
    """The loss a fit minimizes: ``sum_i w_i l(y_i, x_i' theta; c, tau)``.

    Attributes
    ----------
    family : Family
    c : float
        Truncation constant (``inf`` where the family has none).
    tau : float
        Expectile location (0.5 where unused).
    weights : ndarray (n,)
        Row weights: Mallows weights or ones. A public function of each row.
    mallows : bool
    """

    family: Family
    c: float
    tau: float
    weights: np.ndarray
    mallows: bool

    @property
    def psi_bound(self) -> float | None:
        return self.family.psi_bound(self.c, self.tau)

    @property
    def hess_bound(self) -> float:
        return self.family.hess_bound(self.c, self.tau)

    def label(self) -> str:
        return self.family.describe(self.c, self.tau, "mallows" if self.mallows else None)


def family_constants(family: Family, c, tau, weights) -> tuple[float, float, bool]:
    """Validate ``c``, ``tau`` and ``weights`` for ``family``; fill the family's defaults."""
    if family.default_c is None:
        c_val = math.inf
    else:
        c_val = family.default_c if c is None else c
        if isinstance(c_val, bool) or not isinstance(c_val, numbers.Real) or not c_val > 0:
            raise OptionError(f"c must be a positive number (inf allowed for expectiles), "
                              f"got {c!r}")
        if not math.isfinite(c_val) and family.name != "expectile":
            raise OptionError(f"c must be finite for the {family.name} family, got {c!r}")
    if family.uses_tau:
        if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or not 0 < tau < 1:
            raise OptionError(f"tau must be in (0, 1), got {tau!r}")
    elif tau != 0.5:
        raise OptionError(f"tau applies to the expectile family only, not {family.name!r}")
    if weights == "default":
        mallows = family.mallows_default
    elif weights in ("mallows", None):
        mallows = weights == "mallows"
    else:
        raise OptionError(f"weights must be 'mallows' or None, got {weights!r}")
    return float(c_val), float(tau), mallows


#: The smallest truncation constant ``c`` accepted, as a share of the outcome's declared
#: range. Below it the loss is a median regression's on the outcome's scale: a step moves
#: an estimate by at most ``lr c`` per unit of ``x``, and the Hessian counts only the
#: residuals within ``c`` of zero (a few rows or none), so no private fit can either
#: reach or estimate the coefficients (measured: ``validation/huber_natural_units.py``).
C_RANGE_FLOOR = 1e-4


def check_c_scale(family: Family, c: float, outcome: str,
                  bounds: tuple[float, float] | None) -> None:
    """Refuse a truncation constant ``c`` under :data:`C_RANGE_FLOOR` of the outcome's
    declared range, before anything is released.

    ``c`` is in the outcome's units (the loss is not rescaled), where statsmodels'
    ``HuberT(t)`` is in units of an estimated residual scale: 1.345, right for a log
    wage, is a hundred-thousandth of a residual on earnings in dollars. Public inputs
    only (``c`` and the declared bounds); nothing is checked without bounds, or for a
    box known only by its scale (:class:`dpreg.ScaleBox`, whose range says nothing of
    the data's), which the caller passes as ``None``.

    Raises
    ------
    OptionError
        Naming ``c``, the outcome and its range, and what to pass instead.
    """
    if family.default_c is None or not math.isfinite(c) or bounds is None:
        return
    lo, hi = (float(b) for b in bounds)
    if c >= C_RANGE_FLOOR * (hi - lo):
        return
    raise OptionError(
        f"c = {c:g} is under 1/{1 / C_RANGE_FLOOR:,.0f} of the declared range "
        f"({lo:g}, {hi:g}) of the outcome {outcome!r}. The {family.name} loss's c is in "
        f"the outcome's units, not in units of a residual scale as statsmodels' HuberT(t) "
        f"is: at this c the fit is a median regression in the units of {outcome!r}, which "
        f"no private fit can reach or estimate (a step moves by at most c, and the "
        f"Hessian sees only the residuals within c of zero). Pass c in the units of "
        f"{outcome!r}, e.g. 1.345 times the residual standard deviation you expect, or "
        f"rescale {outcome!r} by a public constant (I({outcome} / 1000)) so that c is "
        f"about one residual standard deviation.")
