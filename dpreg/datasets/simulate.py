"""Seeded simulators of the simulation designs in the papers behind dpreg.

Every simulator returns a :class:`Simulated` record: a DataFrame with columns ``y``,
``x1``, ..., ``xp``, the true coefficients labelled like the formula terms, and the
formula that fits the model with dpreg or statsmodels.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpreg._checks import integer_at_least, number_in, one_of
from dpreg.exceptions import OptionError

__all__ = ["Simulated", "simulate_linear", "simulate_logistic", "simulate_ldp_design"]

_COVS = ("identity", "toeplitz")
_FAMILIES = ("huber", "linear", "logistic", "expectile")
_NOISES = ("normal",)


@dataclass(frozen=True, eq=False)
class Simulated:
    """A simulated data set with its true parameter.

    Attributes
    ----------
    data : pandas.DataFrame
        Columns ``y``, ``x1``, ..., ``xp``.
    params : pandas.Series
        True coefficients, indexed like the formula terms (``"Intercept"`` first when
        there is one, then ``"x1"``, ..., ``"xp"``).
    formula : str
        The model formula, e.g. ``"y ~ x1 + x2 + x3 - 1"`` without an intercept.
    """

    data: pd.DataFrame
    params: pd.Series
    formula: str


# --------------------------------------------------------------------------- checks
def _rng(random_state) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or (
        isinstance(random_state, numbers.Integral)
        and not isinstance(random_state, bool)
        and random_state >= 0
    ):
        return np.random.default_rng(random_state)
    raise OptionError(
        "random_state must be None, a non-negative int or a numpy.random.Generator, "
        f"got {random_state!r}"
    )


def _covariance(p: int, cov: str, rho) -> np.ndarray:
    one_of("cov", cov, _COVS)
    number_in("rho", rho, 0, 1, low_closed=True)
    if cov == "identity":
        return np.eye(p)
    lags = np.abs(np.subtract.outer(np.arange(p), np.arange(p)))
    return float(rho) ** lags


def _coefficients(theta, k: int, name: str) -> np.ndarray:
    try:
        arr = np.asarray(theta, dtype=float)
    except (TypeError, ValueError):
        arr = np.full(k + 1, np.nan)  # rejected below
    if arr.ndim == 0:
        arr = np.full(k, float(arr))
    if arr.shape != (k,) or not np.all(np.isfinite(arr)):
        raise OptionError(f"{name} must be a finite scalar or vector of length {k}, got {theta!r}")
    return arr


# --------------------------------------------------------------------------- building
def _draw_x(rng: np.random.Generator, n: int, sigma: np.ndarray) -> np.ndarray:
    z = rng.standard_normal((n, sigma.shape[0]))
    return z @ np.linalg.cholesky(sigma).T


def _terms(p: int, intercept: bool) -> list[str]:
    return (["Intercept"] if intercept else []) + [f"x{j}" for j in range(1, p + 1)]


def _build(y: np.ndarray, x: np.ndarray, params: np.ndarray, intercept: bool) -> Simulated:
    p = x.shape[1]
    slopes = _terms(p, False)
    data = pd.DataFrame(x, columns=slopes)
    data.insert(0, "y", y)
    formula = "y ~ " + " + ".join(slopes) + ("" if intercept else " - 1")
    return Simulated(data, pd.Series(params, index=_terms(p, intercept)), formula)


def _index(x: np.ndarray, params: np.ndarray, intercept: bool) -> np.ndarray:
    return x @ params[1:] + params[0] if intercept else x @ params


# --------------------------------------------------------------------------- public
def simulate_linear(
    n, p=3, *, cov="identity", rho=0.5, theta=None, noise_sd=1.0, intercept=False, random_state=None
) -> Simulated:
    r"""Simulate the linear-regression design of the dpsgd-inference paper.

    Parameters
    ----------
    n : int
        Number of observations, >= 1.
    p : int, default 3
        Number of covariates, >= 1.
    cov : {"identity", "toeplitz"}, default "identity"
        Covariance of the covariates: the identity or ``rho ** |i - j|``.
    rho : float, default 0.5
        Toeplitz correlation, in [0, 1); ignored for ``cov="identity"``.
    theta : float or array-like, optional
        True coefficients, of length ``p`` (``p + 1`` with the intercept first when
        `intercept` is true); a scalar is repeated. By default each (the intercept
        too) is drawn from U[0, 1] with the same Generator, before the data.
    noise_sd : float, default 1.0
        Standard deviation of the Gaussian errors, >= 0.
    intercept : bool, default False
        Whether the model has an intercept.
    random_state : int, numpy.random.Generator or None
        Seed or Generator for :func:`numpy.random.default_rng`.

    Returns
    -------
    Simulated
        ``data`` with columns ``y, x1, ..., xp``; ``params``; ``formula``.

    Notes
    -----
    :math:`x_i \sim N(0, \Sigma)` and :math:`y_i = x_i^\top\theta + e_i` with
    :math:`e_i \sim N(0, \sigma^2)`. Section 6.1 of Xia, Zhang and Cai (DP-SGD
    inference) uses p = 3, no intercept, :math:`\theta_j \sim U[0, 1]`,
    :math:`\Sigma = I` or :math:`\Sigma_{ij} = 0.5^{|i-j|}` and :math:`\sigma = 1`,
    which are the defaults here. Draw order: theta (if drawn), x, e.

    Examples
    --------
    >>> sim = simulate_linear(500, cov="toeplitz", random_state=0)
    >>> list(sim.data.columns), sim.formula
    (['y', 'x1', 'x2', 'x3'], 'y ~ x1 + x2 + x3 - 1')
    """
    n, p = integer_at_least("n", n), integer_at_least("p", p)
    sigma = _covariance(p, cov, rho)
    noise_sd = number_in("noise_sd", noise_sd, 0, math.inf, low_closed=True)
    rng = _rng(random_state)
    k = p + bool(intercept)
    params = rng.uniform(0.0, 1.0, k) if theta is None else _coefficients(theta, k, "theta")
    x = _draw_x(rng, n, sigma)
    y = _index(x, params, bool(intercept)) + noise_sd * rng.standard_normal(n)
    return _build(y, x, params, bool(intercept))


def simulate_logistic(
    n, p=3, *, cov="identity", rho=0.5, theta=None, intercept=False, random_state=None
) -> Simulated:
    r"""Simulate the logistic-regression design of the dpsgd-inference paper.

    Parameters
    ----------
    n : int
        Number of observations, >= 1.
    p : int, default 3
        Number of covariates, >= 1.
    cov : {"identity", "toeplitz"}, default "identity"
        As in :func:`simulate_linear`.
    rho : float, default 0.5
        As in :func:`simulate_linear`.
    theta : float or array-like, optional
        True coefficients (length ``p``, or ``p + 1`` with the intercept first). By
        default each is drawn from U[0, 1/2] with the same Generator, before the data.
    intercept : bool, default False
        Whether the model has an intercept.
    random_state : int, numpy.random.Generator or None
        Seed or Generator for :func:`numpy.random.default_rng`.

    Returns
    -------
    Simulated
        ``y`` is int64 in {0, 1}.

    Notes
    -----
    :math:`x_i \sim N(0, \Sigma)` and :math:`y_i \sim \mathrm{Bernoulli}
    (1 / (1 + e^{-x_i^\top\theta}))`, as in Section 6.1 of Xia, Zhang and Cai.
    Draw order: theta (if drawn), x, then one uniform per row for y.

    Examples
    --------
    >>> sim = simulate_logistic(200, random_state=1)
    >>> sorted(sim.data["y"].unique().tolist())
    [0, 1]
    """
    n, p = integer_at_least("n", n), integer_at_least("p", p)
    sigma = _covariance(p, cov, rho)
    rng = _rng(random_state)
    k = p + bool(intercept)
    params = rng.uniform(0.0, 0.5, k) if theta is None else _coefficients(theta, k, "theta")
    x = _draw_x(rng, n, sigma)
    prob = 1.0 / (1.0 + np.exp(-_index(x, params, bool(intercept))))
    y = (rng.uniform(size=n) < prob).astype(np.int64)
    return _build(y, x, params, bool(intercept))


def _normal_expectile(tau: float, sd: float) -> float:
    """The tau-expectile of N(0, sd^2): root of tau E(Z-e)+ = (1-tau) E(e-Z)+."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    def gap(e):
        upper = norm.pdf(e) - e * norm.sf(e)  # E(Z - e)+
        lower = e * norm.cdf(e) + norm.pdf(e)  # E(e - Z)+
        return tau * upper - (1.0 - tau) * lower

    return 0.0 if tau == 0.5 else sd * brentq(gap, -40.0, 40.0, xtol=1e-14)


def simulate_ldp_design(
    n,
    *,
    family="huber",
    theta0=1.0,
    p=3,
    noise="normal",
    noise_sd=0.5,
    cov="identity",
    rho=0.5,
    tau=0.5,
    random_state=None,
) -> Simulated:
    r"""Simulate the streaming design of the LDP-SGD paper (Xie, Shi, Jiang, Kong, He).

    Parameters
    ----------
    n : int
        Number of observations, >= 1 (the paper streams up to 200,000).
    family : {"huber", "linear", "logistic", "expectile"}, default "huber"
        The model the data are fitted with; it decides how ``y`` is drawn and what the
        true ``params`` are (see Notes).
    theta0 : float or array-like, default 1.0
        True coefficients, intercept first; a scalar is used for all ``p + 1``.
    p : int, default 3
        Number of covariates besides the intercept.
    noise : {"normal"}, default "normal"
        Error distribution; ignored for ``family="logistic"``.
    noise_sd : float, default 0.5
        Error standard deviation, >= 0; ignored for ``family="logistic"``.
    cov : {"identity", "toeplitz"}, default "identity"
        Covariance of the covariates (the paper also uses Toeplitz 0.5).
    rho : float, default 0.5
        Toeplitz correlation, in [0, 1).
    tau : float, default 0.5
        Expectile level in (0, 1); used only for ``family="expectile"``.
    random_state : int, numpy.random.Generator or None
        Seed or Generator for :func:`numpy.random.default_rng`.

    Returns
    -------
    Simulated
        ``data`` with ``y, x1, ..., xp``; ``params`` indexed ``Intercept, x1, ...``;
        ``formula`` ``"y ~ x1 + ... + xp"``.

    Notes
    -----
    Section 5 of the paper: :math:`x_i = (1, s_i^\top)^\top` with
    :math:`s_i \sim N(0, \Sigma)`, :math:`\Sigma = I_p` or :math:`0.5^{|j-k|}`;
    :math:`y_i = x_i^\top\theta_0 + \varepsilon_i`,
    :math:`\varepsilon_i \sim N(0, 0.5^2)`, :math:`\theta_0 = 1_{p+1}`; Table 1
    reports p = 3 with the identity design and n = 40,000 to 200,000. Those are the
    defaults. The same linear model serves ``"linear"`` and ``"huber"`` (Example 1:
    the errors are symmetric, so the Huber target is :math:`\theta_0`). For
    ``"logistic"`` (Example 2), :math:`y_i \sim \mathrm{Bernoulli}(1/(1 +
    e^{-x_i^\top\theta_0}))`, coded 0/1 (the paper writes {-1, 1} but its loss uses
    0/1). For ``"expectile"`` (Example 3) ``y`` is drawn from the linear model and
    the true tau-expectile coefficients are :math:`\theta_0` with the intercept
    shifted by the tau-expectile of the error (zero at tau = 0.5). The designs of the
    logistic and expectile studies are in the paper's supplement, which we do not
    have; we reuse the main-text design. Draw order: s, then errors (or one uniform
    per row for logistic).

    Examples
    --------
    >>> sim = simulate_ldp_design(1000, random_state=0)
    >>> sim.params.to_dict()
    {'Intercept': 1.0, 'x1': 1.0, 'x2': 1.0, 'x3': 1.0}
    """
    n, p = integer_at_least("n", n), integer_at_least("p", p)
    family = one_of("family", family, _FAMILIES)
    one_of("noise", noise, _NOISES)
    noise_sd = number_in("noise_sd", noise_sd, 0, math.inf, low_closed=True)
    sigma = _covariance(p, cov, rho)
    number_in("tau", tau, 0, 1)
    theta = _coefficients(theta0, p + 1, "theta0")
    rng = _rng(random_state)
    x = _draw_x(rng, n, sigma)
    eta = _index(x, theta, True)
    if family == "logistic":
        y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)
        return _build(y, x, theta, True)
    y = eta + noise_sd * rng.standard_normal(n)
    params = theta.copy()
    if family == "expectile":
        params[0] += _normal_expectile(float(tau), noise_sd)
    return _build(y, x, params, True)
