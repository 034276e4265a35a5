"""Closed forms of Gaussian differential privacy (GDP) and its conversions.

Every function here is a formula from the literature, evaluated so that it stays
accurate (and never warns) from tiny to huge arguments. Root finding uses brackets
that expand until they hold the root, never a fixed interval such as ``[0, 500]``.

Notes
-----
mu-GDP (Dong, Roth and Su 2022) says that telling two neighbouring data sets apart is
at least as hard as telling ``N(0, 1)`` from ``N(mu, 1)``. Compositions add in squares,
``mu_total^2 = sum_i mu_i^2``. A Gaussian mechanism with L2 sensitivity ``Delta``
and noise std ``sigma``, released ``k`` times, is exactly ``sqrt(k) Delta / sigma``-GDP.

For subsampled Gaussian steps (DP-SGD), the central limit theorem of Bu, Dong, Long
and Su (2020) and Dong, Roth and Su (2022, Thm 3.6 / Cor. 5.4) gives an
*approximation* (see ``dpsgd_mu``); the rigorous accountants in
:mod:`dpreg.privacy.accountants` give the headline (epsilon, delta).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from dpreg._checks import number_in, one_of
from dpreg.exceptions import BudgetExceededError, OptionError

__all__ = [
    "dpsgd_mu", "calibrate_dpsgd", "gaussian_mu", "mu_to_delta", "mu_to_epsilon",
    "epsilon_to_mu", "mu_to_rho", "rho_to_mu", "rho_to_epsilon",
]

_SAMPLINGS = ("uniform", "poisson", "none")
_LOG_MAX = 709.0  # exp() of more than this overflows a float64
_SQRT2 = math.sqrt(2.0)
# Gauss-Legendre rule used by the small-mu form of delta(eps); see _log_delta.
_GL_X, _GL_W = np.polynomial.legendre.leggauss(24)


def _positive(name, value, *, allow_inf=False, err=OptionError):
    arr = np.asarray(value, dtype=float)
    ok = (arr > 0) & (np.isfinite(arr) | allow_inf)
    if not np.all(ok):
        rng = "(0, inf]" if allow_inf else "(0, inf) and finite"
        raise err(f"{name} must be in {rng}; got {value!r}")
    return arr


# --------------------------------------------------------------------------- DP-SGD
def _g_series(x):
    """erf(x) - 2x/sqrt(pi), by its Taylor series (|x| <= 1.1: 30 terms are exact)."""
    x = np.asarray(x, dtype=float)
    x2 = x * x
    term = x * x2 * (-1.0)  # (-1)^k x^(2k+1) / k!  at k = 1
    total = term / 3.0
    for k in range(2, 31):
        term = -term * x2 / k
        total = total + term / (2 * k + 1)
    return total * (2.0 / math.sqrt(math.pi))


def _log_uniform_bracket(a):
    """log of B(a) = exp(a^2) Phi(1.5a) + 3 Phi(-0.5a) - 2 with a = 1/s, stably.

    For a <= 1 (cancellation regime) B = [expm1(a^2)(1 + E1) + (E1 - 3 E2)] / 2 with
    E1 = erf(1.5a/sqrt2), E2 = erf(0.5a/sqrt2); the linear terms of E1 - 3 E2 cancel
    exactly, so it is evaluated as g(x1) - 3 g(x2), g(x) = erf(x) - 2x/sqrt(pi).
    For a > 1, log B = a^2 + log Phi(1.5a) + log1p((3 Phi(-0.5a) - 2) e^{-a^2}/Phi(1.5a)).
    """
    a = np.asarray(a, dtype=float)
    small = a <= 1.0
    out = np.empty_like(a)
    if np.any(small):
        s = a[small]
        e1 = special.erf(1.5 * s / _SQRT2)
        diff = _g_series(1.5 * s / _SQRT2) - 3.0 * _g_series(0.5 * s / _SQRT2)
        em = np.expm1(s * s)
        with np.errstate(divide="ignore"):  # B underflows to 0 for s -> 0: log B = -inf
            out[small] = np.log(0.5 * (em * (1.0 + e1) + diff))
    if np.any(~small):
        b = a[~small]
        log_phi = special.log_ndtr(1.5 * b)
        ratio = (3.0 * special.ndtr(-0.5 * b) - 2.0) * np.exp(-b * b - log_phi)
        out[~small] = b * b + log_phi + np.log1p(ratio)
    return out


def _log_expm1(x):
    """log(exp(x) - 1) for x > 0 without overflow."""
    x = np.asarray(x, dtype=float)
    big = x > 1.0
    return np.where(big, x + np.log1p(-np.exp(-np.where(big, x, 1.0))),
                    np.log(np.expm1(np.where(big, 1.0, x))))


def _check_dpsgd(n, batch_size, steps, sampling):
    one_of("sampling", sampling, _SAMPLINGS)
    n = _positive("n", n)
    batch_size = _positive("batch_size", batch_size)
    steps = _positive("steps", steps)
    if np.any(batch_size > n):
        raise OptionError(f"batch_size must be in (0, n]; got batch_size={batch_size}, n={n}")
    if sampling == "none" and np.any(batch_size != n):
        raise OptionError("sampling='none' means full batches: batch_size must equal n")
    return n, batch_size, steps


def _log_dpsgd_mu(n, batch_size, steps, noise_multiplier, sampling):
    """log mu of ``dpsgd_mu`` (inputs validated), finite even where mu overflows."""
    a = 1.0 / np.asarray(noise_multiplier, dtype=float)
    full = np.asarray(batch_size >= n) | (sampling == "none")
    q = batch_size / n
    log_c = np.log(q) + 0.5 * np.log(steps)
    if sampling == "uniform":
        log_mu = 0.5 * math.log(2.0) + log_c + 0.5 * _log_uniform_bracket(a)
    elif sampling == "poisson":
        log_mu = log_c + 0.5 * _log_expm1(a * a)
    else:
        log_mu = np.zeros_like(log_c * a)
    exact = 0.5 * np.log(steps) + np.log(a)  # full batch: sqrt(T)/s exactly
    return np.where(full, exact, log_mu)


def dpsgd_mu(n, batch_size, steps, noise_multiplier, sampling="uniform"):
    r"""GDP parameter mu of T subsampled Gaussian steps (central limit theorem).

    Parameters
    ----------
    n : int
        Number of rows (public).
    batch_size : float
        Batch size m (``"uniform"``: fixed size without replacement) or expected batch
        size q n (``"poisson"``). ``batch_size == n`` is the full batch.
    steps : float
        Number of steps T.
    noise_multiplier : float or array_like
        s = noise std / L2 sensitivity of one step under the scheme's adjacency
        (replace-one for ``"uniform"``, add/remove for ``"poisson"``).
    sampling : {"uniform", "poisson", "none"}

    Returns
    -------
    float or ndarray
        mu; ``inf`` where it exceeds the float range (tiny s), without a warning.

    Notes
    -----
    Uniform sampling without replacement (replace-one), with c = m sqrt(T)/n:
    :math:`\mu = \sqrt{2} c \sqrt{e^{1/s^2}\Phi(1.5/s) + 3\Phi(-0.5/s) - 2}`.
    Poisson sampling with rate q = m/n (add/remove):
    :math:`\mu = q\sqrt{T}\sqrt{e^{1/s^2} - 1}`.
    Full batch (``batch_size == n`` or ``sampling="none"``): exactly
    :math:`\mu = \sqrt{T}/s`. (Bu, Dong, Long and Su 2020, "Deep learning with Gaussian
    differential privacy", Thms 4-5; Dong, Roth and Su 2022, JRSSB 84(1), Cor. 5.4.
    The dpsgd-inference paper prints exp(-sigma^2) for exp(1/sigma^2), a typo: user
    guide, Corrections to the papers.) The bracket is evaluated without cancellation for large s
    (series in 1/s) and in log space for small s, so mu is accurate to about 1e-14
    relative for any s. The result is a CLT approximation: it can understate the
    privacy loss; see :func:`dpreg.privacy.accountants.rigorous_epsilon`.
    """
    n, m, t = _check_dpsgd(n, batch_size, steps, sampling)
    s = _positive("noise_multiplier", noise_multiplier)
    log_mu = _log_dpsgd_mu(n, m, t, s, sampling)
    mu = np.exp(np.minimum(log_mu, _LOG_MAX))
    mu = np.where(log_mu > _LOG_MAX, np.inf, mu)
    return float(mu) if mu.ndim == 0 else mu


def _expanding_root(f, x0, *, grow=4.0, xtol=1e-14):
    """Root of an increasing function f of log x, searching outwards from log x0."""
    lo = hi = math.log(x0)
    f_lo = f_hi = f(lo)
    step = math.log(grow)
    for _ in range(200):
        if f_lo <= 0.0 <= f_hi:
            break
        if f_lo > 0:
            hi, f_hi, lo = lo, f_lo, lo - step
            f_lo = f(lo)
        else:
            lo, f_lo, hi = hi, f_hi, hi + step
            f_hi = f(hi)
        step *= 2.0
    else:
        return None
    if f_lo == 0.0:
        return math.exp(lo)
    if f_hi == 0.0:
        return math.exp(hi)
    return math.exp(optimize.brentq(f, lo, hi, xtol=xtol, rtol=1e-15))


def calibrate_dpsgd(mu, n, batch_size, steps, sampling="uniform"):
    """Noise multiplier s with ``dpsgd_mu(n, batch_size, steps, s, sampling) == mu``.

    Parameters
    ----------
    mu : float
        The target, > 0.
    n : int
        Number of rows (public), as for :func:`dpsgd_mu`.
    batch_size : float
        As for :func:`dpsgd_mu`.
    steps : float
        As for :func:`dpsgd_mu`.
    sampling : {"uniform", "poisson", "none"}
        As for :func:`dpsgd_mu`.

    Returns
    -------
    float
        s, to about 1e-13 relative (exactly ``sqrt(T)/mu`` for full batches).

    Notes
    -----
    mu decreases strictly in s (from inf to 0), so the root exists and is unique; it is
    found by Brent's method on ``log mu(log s) - log mu`` in a bracket that expands
    geometrically from the small-q approximation ``s0 = c / mu``.
    """
    mu = float(_positive("mu", mu, err=BudgetExceededError))
    n_, m_, t_ = _check_dpsgd(n, batch_size, steps, sampling)
    if sampling == "none" or np.all(m_ >= n_):
        return float(math.sqrt(float(t_)) / mu)
    log_target = math.log(mu)

    def f(log_s):  # increasing in log s
        return log_target - float(_log_dpsgd_mu(n_, m_, t_, math.exp(log_s), sampling))

    s0 = float(m_ / n_ * math.sqrt(float(t_)) / mu)
    s = _expanding_root(f, max(s0, 1e-3))
    if s is None:
        raise BudgetExceededError(f"no finite noise multiplier gives mu={mu} for "
                                  f"n={n}, batch_size={batch_size}, steps={steps}")
    return s


def gaussian_mu(sensitivity, noise_std, count=1):
    """Exact GDP of an unsampled Gaussian mechanism: ``sqrt(count) * sensitivity / noise_std``.

    Notes
    -----
    Dong, Roth and Su (2022), Thm 2.7 and Cor. 3.3: one release is (Delta/sigma)-GDP,
    and k independent releases compose to sqrt(k) Delta/sigma.
    """
    sens = _positive("sensitivity", sensitivity)
    std = _positive("noise_std", noise_std)
    cnt = _positive("count", count)
    out = np.sqrt(cnt) * sens / std
    return float(out) if np.ndim(out) == 0 else out


# ---------------------------------------------------------------- mu <-> (eps, delta)
def _log_delta(mu, eps):
    """log delta(eps) of mu-GDP, accurate to ~1e-13 relative for eps >= 0.

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)  (DRS 2022, Cor. 2.13).
    mu > 1: log Phi(a) + log(-expm1(eps + log Phi(a - mu) - log Phi(a))).
    mu <= 1 (where the two terms nearly cancel): with t = eps/mu the difference is
    delta = 2 int_0^{mu/2} e^{2tu} [psi(t+u) + u Phi(-t-u)] du, psi(x) = phi(x) - x Phi(-x)
    (differentiate in u; all terms are positive), by 24-point Gauss-Legendre.
    """
    mu, eps = np.broadcast_arrays(np.asarray(mu, float), np.asarray(eps, float))
    out = np.empty(mu.shape)
    big = mu > 1.0
    if np.any(big):
        m, e = mu[big], eps[big]
        a = -e / m + m / 2
        la = special.log_ndtr(a)
        d = np.minimum(e + special.log_ndtr(a - m) - la, -1e-300)
        out[big] = la + np.log(-np.expm1(d))
    if np.any(~big):
        m, e = mu[~big][:, None], eps[~big][:, None]
        h = m / 2
        u = h * (_GL_X + 1) / 2  # nodes on [0, mu/2]
        t = e / m
        x = t + u
        log_phi = -0.5 * x * x - 0.5 * math.log(2 * math.pi)
        # psi(x) = phi(x) (1 - x R(x)), R the Mills ratio, computed by erfcx
        mills = special.erfcx(x / _SQRT2) * math.sqrt(math.pi / 2)
        log_psi = log_phi + np.log(np.maximum(1 - x * mills, 1e-300))
        log_tail = special.log_ndtr(-x) + np.log(np.maximum(u, 1e-300))
        log_f = math.log(2) + 2 * t * u + np.logaddexp(log_psi, log_tail)
        out[~big] = special.logsumexp(log_f, b=_GL_W * h[:, :1] / 2, axis=1)
    return out


def mu_to_delta(mu, epsilon):
    """delta(epsilon) of a mu-GDP mechanism (Dong, Roth and Su 2022, Cor. 2.13).

    ``Phi(-eps/mu + mu/2) - exp(eps) Phi(-eps/mu - mu/2)`` for mu > 0 and epsilon >= 0
    (floats or arrays), computed without cancellation (see ``_log_delta``), so tiny
    deltas keep their relative accuracy.
    """
    mu = _positive("mu", mu, allow_inf=True)
    eps = np.asarray(epsilon, dtype=float)
    if np.any(~(eps >= 0)):
        raise OptionError(f"epsilon must be in [0, inf); got {epsilon!r}")
    fin = np.isfinite(mu) & np.isfinite(eps)
    out = np.where(np.isinf(mu) & np.isfinite(eps), 1.0, 0.0)
    if np.any(fin):
        mu_b, eps_b = np.broadcast_arrays(mu, eps)
        out = np.broadcast_to(out, mu_b.shape).copy()
        out[fin] = np.exp(_log_delta(mu_b[fin], eps_b[fin]))
    return float(out) if np.ndim(out) == 0 else out


def mu_to_epsilon(mu, delta):
    """Smallest epsilon such that a mu-GDP mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    mu : float
        GDP parameter, > 0 (``inf`` gives ``inf``).
    delta : float
        In (0, 1).

    Returns
    -------
    float
        The epsilon solving ``mu_to_delta(mu, epsilon) == delta``, or 0 when
        ``delta >= 2 Phi(mu/2) - 1``.

    Notes
    -----
    Dong, Roth and Su (2022), Cor. 2.13. delta(eps) decreases strictly in eps and
    ``delta(eps) <= Phi(-eps/mu + mu/2)``, so ``eps_hi = mu^2/2 - mu Phi^{-1}(delta)``
    bounds the root; Brent's method then runs on ``log delta(eps) - log delta``
    (the bracket is doubled if round-off ever leaves it without a sign change).
    """
    mu = float(_positive("mu", mu, allow_inf=True, err=BudgetExceededError))
    delta = number_in("delta", float(delta), 0, 1, error=BudgetExceededError)
    if math.isinf(mu):
        return math.inf
    if delta >= float(mu_to_delta(mu, 0.0)):
        return 0.0
    log_target = math.log(delta)

    def f(eps):  # decreasing
        return float(_log_delta(mu, eps)[()]) - log_target

    hi = max(mu * (mu / 2 - float(special.ndtri(delta))), 1e-300)
    while f(hi) > 0:
        hi *= 2.0
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=1e-15, maxiter=500))


def epsilon_to_mu(epsilon, delta):
    """The mu such that mu-GDP is exactly (epsilon, delta)-DP (inverse of mu_to_epsilon).

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).

    Returns
    -------
    float
        mu solving ``mu_to_delta(mu, epsilon) == delta`` (delta increases in mu), by
        Brent's method on log mu in a bracket expanding from
        ``epsilon / sqrt(2 log(1/delta))``.
    """
    eps = float(_positive("epsilon", epsilon, err=BudgetExceededError))
    delta = number_in("delta", float(delta), 0, 1, error=BudgetExceededError)
    log_target = math.log(delta)

    def f(log_mu):  # increasing
        return float(_log_delta(math.exp(log_mu), eps)[()]) - log_target

    mu0 = eps / math.sqrt(2 * math.log(1 / delta)) + 1e-300
    mu = _expanding_root(f, mu0, grow=2.0)
    if mu is None:  # pragma: no cover - delta(eps; mu) spans (0, 1) in mu
        raise BudgetExceededError(f"no mu gives (epsilon, delta) = ({epsilon}, {delta})")
    return mu


# ------------------------------------------------------------------------- zCDP
def mu_to_rho(mu):
    """zCDP parameter of a Gaussian mechanism that is mu-GDP: ``rho = mu^2 / 2``.

    Notes
    -----
    Exact for (compositions of) *unsampled* Gaussian mechanisms, whose Renyi curve is
    alpha mu^2/2 (Bun and Steinke 2016, Prop. 1.6). It is not a conversion between
    the definitions: a subsampled mechanism's CLT mu says nothing about its zCDP.
    """
    mu = _positive("mu", mu, err=BudgetExceededError)
    out = mu * mu / 2.0
    return float(out) if np.ndim(out) == 0 else out


def rho_to_mu(rho):
    """Inverse of :func:`mu_to_rho`: ``mu = sqrt(2 rho)`` (Gaussian mechanisms only)."""
    rho = _positive("rho", rho, err=BudgetExceededError)
    out = np.sqrt(2.0 * rho)
    return float(out) if np.ndim(out) == 0 else out


def rho_to_epsilon(rho, delta):
    """(epsilon, delta)-DP implied by rho-zCDP: ``rho + 2 sqrt(rho log(1/delta))``.

    Notes
    -----
    Bun and Steinke (2016), "Concentrated differential privacy: simplifications,
    extensions, and lower bounds", Prop. 1.3. (Valid for any rho-zCDP mechanism, not
    tight for Gaussians; for those :func:`mu_to_epsilon` with mu = sqrt(2 rho) is exact.)
    """
    rho = _positive("rho", rho, err=BudgetExceededError)
    delta = number_in("delta", float(delta), 0, 1, error=BudgetExceededError)
    out = rho + 2.0 * np.sqrt(rho * math.log(1.0 / delta))
    return float(out) if np.ndim(out) == 0 else out
