"""Law of the random-scaling pivot ``W(1) / sqrt(int_0^1 (W(r) - r W(1))^2 dr)``.

The limit law of the random-scaling t-statistic of averaged SGD (Lee, Liao, Seo and
Shin 2022), computed to machine precision from an exact one-dimensional integral (see
:class:`RandomScalingPivot`, Notes). Quantiles come from root finding on that tail, so
p-values and critical values are available at any level, not only tabulated ones.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import zeta

from dpreg.exceptions import OptionError

__all__ = ["RandomScalingPivot", "rs_pivot"]

# Trapezoid nodes u_j = j h on [0, 40]; the node actually used is v = s u with the
# scale s = min(1, 3 / sqrt(x)), so that the peak at v = 0 (width ~ 1/sqrt(x)) stays
# resolved for large x. Halving h = 0.1 changes no value by more than 4e-14 relatively.
_H = 0.1
_U = np.arange(401) * _H
_W = np.where(_U == 0.0, _H / 2.0, _H)
_COSH_U = np.cosh(_U)
_LOGCOSH_U = np.log(_COSH_U)
_MARGIN = 100.0  # integrand dropped where x cosh v > x + 100 (relative size < e^-50)
_X_ZERO = 1600.0  # P(|R| > x) < 1e-320 beyond: returned as exactly 0
_X_PDF_MIN = 1e-8  # pdf is even and smooth: pdf(x) = pdf(1e-8) + O(1e-16) below
_LOG2 = math.log(2.0)
# coth a - 1/a = sum_n 2 (-1)^(n+1) zeta(2n) a^(2n-1) / pi^(2n), used for a < 1 (terms
# shrink like (a/pi)^2; written with zeta because scipy.special.bernoulli is inexact)
_LANGEVIN = np.array(
    [2 * (-1) ** (n + 1) * zeta(2.0 * n) / math.pi ** (2 * n) for n in range(18, 0, -1)]
)


def _log_g(a):
    """``log sqrt(a / sinh a)`` for ``a >= 0``, free of overflow and of 0/0."""
    a_pos = np.maximum(a, 1e-300)
    direct = 0.5 * (_LOG2 + np.log(a_pos) - a_pos - np.log(-np.expm1(-2.0 * a_pos)))
    small = a < 0.05
    a2 = np.where(small, a, 0.0) ** 2
    series = a2 * (-1.0 / 12.0 + a2 * (1.0 / 360.0 + a2 * (-1.0 / 5670.0 + a2 / 75600.0)))
    return np.where(small, series, direct)


def _langevin(a):
    """``coth a - 1/a`` for ``a >= 0`` without cancellation near 0."""
    small = a < 1.0
    a_small, a_big = np.where(small, a, 0.0), np.where(small, 1.0, a)
    series = a_small * np.polyval(_LANGEVIN, a_small * a_small)
    return np.where(small, series, 1.0 / np.tanh(a_big) - 1.0 / a_big)


def _quadrature(x, kernel):
    """``s sum_j w_j kernel(x cosh v_j, log cosh v_j)``, ``v_j = s u_j``, for 0 < x < inf.

    The sum stops where ``x cosh v > x + 100`` for all x of the group (or at v = 40):
    beyond, both kernels are below ``e^-50`` times their value at ``v = 0``.
    """
    out = np.empty(x.shape)
    small = x <= 9.0  # s = 1 there: nodes are the cached u_j
    for group in (small, ~small):
        if not np.any(group):
            continue
        xs = x[group]
        s = np.minimum(1.0, 3.0 / np.sqrt(xs))
        u_cut = np.minimum(np.arccosh(1.0 + _MARGIN / np.maximum(xs, 1e-300)) / s, _U[-1])
        n = min(_U.size, int(np.ceil(np.max(u_cut) / _H)) + 2)
        if group is small:
            cosh_v, log_cosh = _COSH_U[:n], _LOGCOSH_U[:n]
        else:
            v = s[:, None] * _U[:n]
            cosh_v, log_cosh = np.cosh(v), v + np.log1p(np.exp(-2.0 * v)) - _LOG2
        out[group] = s * (kernel(xs[:, None] * cosh_v, log_cosh) @ _W[:n])
    return out


def _tail2(x):
    """``P(|R| > x)`` for a 1-d array of finite ``x >= 0``."""
    out = np.zeros(x.shape)
    out[x == 0.0] = 1.0  # exact; the rule would give 1 - 1e-16
    keep = (x > 0.0) & (x < _X_ZERO)
    terms = _quadrature(x[keep], lambda a, log_cosh: np.exp(_log_g(a) - log_cosh))
    out[keep] = np.minimum((2.0 / math.pi) * terms, 1.0)
    return out


def _density(x):
    """Density of R at a 1-d array of finite ``x >= 0``."""
    out = np.zeros(x.shape)
    keep = x < _X_ZERO
    xs = np.maximum(x[keep], _X_PDF_MIN)
    terms = _quadrature(xs, lambda a, log_cosh: np.exp(_log_g(a)) * _langevin(a))
    out[keep] = terms / (2.0 * math.pi)
    return out


def _apply(fun, x):
    """Evaluate ``fun`` on finite ``|x|``; return (values, x array, finite mask)."""
    flat = np.asarray(x, dtype=float).ravel()
    val = np.full(flat.shape, np.nan)
    fin = np.isfinite(flat)
    val[fin] = fun(np.abs(flat[fin]))
    return val, flat, fin


class RandomScalingPivot:
    r"""Law of ``R = W(1) / sqrt(int_0^1 (W(r) - r W(1))^2 dr)``.

    ``W`` is standard Brownian motion. ``R`` is the limit law of the random-scaling
    t-statistic of averaged SGD, symmetric about 0, with tails ``~ exp(-x/2)``.
    The methods follow ``scipy.stats`` naming and are vectorized over arrays.

    Notes
    -----
    ``W(1)`` is independent of the bridge ``B(r) = W(r) - r W(1)``, so
    ``R = Z / sqrt(Q)`` with ``Z ~ N(0, 1)`` independent of
    ``Q = int_0^1 B^2 = sum_k Z_k^2 / (k pi)^2``, whose Laplace transform is
    ``E exp(-sQ) = (sqrt(2s) / sinh sqrt(2s))^{1/2}``. Hence
    ``P(|R| > x) = E[2 Phi(-x sqrt Q)]``. Craig's formula
    ``Phi(-a) = (1/pi) int_0^{pi/2} exp(-a^2 / (2 sin^2 t)) dt`` puts ``Q`` into an
    exponent, the Laplace transform at ``s = x^2 / (2 sin^2 t)`` takes the expectation,
    and ``1 / sin t = cosh v`` (so ``dt = -dv / cosh v``) gives the exact integral

    .. math::

        P(|R| > x) = \frac{2}{\pi} \int_0^\infty \frac{g(x \cosh v)}{\cosh v}\, dv,
        \qquad g(a) = \sqrt{a / \sinh a},

    and, differentiating under the integral sign (``g' = -g L / 2`` with
    ``L(a) = coth a - 1/a``), the density
    ``f(x) = (1 / (2 pi)) int_0^inf g(a) L(a) dv`` with ``a = x cosh |v|``.
    Both integrands are even, analytic in a strip and decay doubly exponentially, so the
    trapezoid rule (step 0.1 in ``v / s``, ``s = min(1, 3 / sqrt x)``) converges
    geometrically; ``g`` is evaluated in log space, ``sf`` is accurate to ~1e-13
    relative for ``|x| < 1000``. The tail is returned as 0 for
    ``x >= 1600`` where it is below the smallest double. Quantiles solve
    ``sf(x) = p`` with ``p = min(q, 1 - q)`` by :func:`scipy.optimize.brentq` inside a
    bracket grown (or shrunk) by factors of 2 until it encloses the root. The
    derivation: ``Q = int_0^1 B(r)^2 dr = sum_k Z_k^2 / (k pi)^2`` (``B`` a Brownian
    bridge) has ``E exp(-s Q) = (sqrt(2s) / sinh sqrt(2s))^(1/2)``, so Craig's formula
    ``Phi(-y) = (1/pi) int_0^(pi/2) exp(-y^2 / (2 sin^2 phi)) dphi`` turns
    ``P(|R| > x) = E[2 Phi(-x sqrt(Q))]`` into ``(2/pi) int_0^(pi/2) g(x / sin phi) dphi``,
    and ``1 / sin phi = cosh v`` gives the integral above.

    References
    ----------
    K. M. Abadir and P. Paruolo (1997), "Two mixed normal densities from cointegration
    analysis", Econometrica 65(3), 671-680.
    S. Lee, Y. Liao, M. H. Seo and Y. Shin (2022), "Fast and robust online inference
    with stochastic gradient descent via random scaling", AAAI 36(7), 7381-7389.

    Examples
    --------
    >>> round(float(rs_pivot.critical_value(0.05)), 3)
    6.747
    """

    name = "random-scaling pivot W(1)/sqrt(int (W(r)-rW(1))^2 dr)"

    def sf(self, x):
        """Survival function ``P(R > x)``; NaN in gives NaN out, ``sf(inf) = 0``.

        Parameters
        ----------
        x : float or array_like
            Points.

        Returns
        -------
        float or ndarray
            ``P(R > x)``, shaped like ``x``.
        """
        val, flat, fin = _apply(_tail2, x)
        val[fin] = np.where(flat[fin] >= 0, 0.5 * val[fin], 1.0 - 0.5 * val[fin])
        val[np.isposinf(flat)], val[np.isneginf(flat)] = 0.0, 1.0
        return val.reshape(np.shape(x))[()]

    def cdf(self, x):
        """Distribution function ``P(R <= x)``.

        Parameters
        ----------
        x : float or array_like
            Points.

        Returns
        -------
        float or ndarray
            ``P(R <= x)``, shaped like ``x``.
        """
        return self.sf(-np.asarray(x, dtype=float))

    def pdf(self, x):
        """Density of R (even, finite at 0, zero at +-inf).

        Parameters
        ----------
        x : float or array_like
            Points.

        Returns
        -------
        float or ndarray
            The density, shaped like ``x``.
        """
        val, flat, _ = _apply(_density, x)
        val[np.isinf(flat)] = 0.0
        return val.reshape(np.shape(x))[()]

    def two_sided_pvalue(self, stat):
        """``P(|R| >= |stat|)``, computed directly (no ``1 - cdf`` cancellation).

        Parameters
        ----------
        stat : float or array_like
            Values of the pivot.

        Returns
        -------
        float or ndarray
            Two-sided p-values, shaped like ``stat``.
        """
        val, flat, _ = _apply(_tail2, stat)
        val[np.isinf(flat)] = 0.0
        return val.reshape(np.shape(stat))[()]

    def ppf(self, q):
        """Quantile function: ``x`` with ``P(R <= x) = q``; ``ppf(0.5) = 0``.

        Parameters
        ----------
        q : float or array_like
            Probabilities in ``[0, 1]``.

        Returns
        -------
        float or ndarray
            The quantiles, shaped like ``q``.

        Raises
        ------
        ValueError
            If some ``q`` lies outside ``[0, 1]`` (``0`` and ``1`` give ``-+inf``).
        """
        q = _check_unit(q, "q", closed=True)
        flat = q.ravel()
        out = np.full(flat.shape, np.nan)
        for i, qi in enumerate(flat):
            if not math.isnan(qi):
                out[i] = math.copysign(_upper_quantile(min(qi, 1.0 - qi)), qi - 0.5)
        return out.reshape(q.shape)[()]

    def isf(self, q):
        """Inverse survival function: ``x`` with ``P(R > x) = q``.

        Parameters
        ----------
        q : float or array_like
            Probabilities in ``[0, 1]``.

        Returns
        -------
        float or ndarray
            ``ppf(1 - q)``, shaped like ``q``.
        """
        return -np.asarray(self.ppf(q))[()]

    def critical_value(self, alpha):
        """Two-sided critical value ``c`` with ``P(|R| > c) = alpha``.

        Parameters
        ----------
        alpha : float or array_like
            Levels in ``(0, 1)``.

        Returns
        -------
        float or ndarray
            ``c``, shaped like ``alpha``.

        Raises
        ------
        ValueError
            If some ``alpha`` is not in the open interval ``(0, 1)``.
        """
        alpha = _check_unit(alpha, "alpha", closed=False)
        flat = alpha.ravel()
        out = np.array([_upper_quantile(a / 2.0) if a == a else np.nan for a in flat])
        return out.reshape(alpha.shape)[()]

    def __repr__(self):
        return f"RandomScalingPivot(name={self.name!r})"


def _check_unit(p, label, closed):
    p = np.asarray(p, dtype=float)
    good = (p >= 0) & (p <= 1) if closed else (p > 0) & (p < 1)
    bad = ~good & ~np.isnan(p)
    if np.any(bad):
        side = "[0, 1]" if closed else "(0, 1)"
        raise OptionError(f"{label} must lie in {side}; got {label}={float(p[bad].ravel()[0])!r}")
    return p


def _upper_quantile(p):
    """``x >= 0`` with ``P(R > x) = p`` for ``0 <= p <= 1/2``."""
    if p >= 0.5:
        return 0.0
    if p <= 0.0:
        return math.inf

    def f(x):
        return 0.5 * float(_tail2(np.array([x]))[0]) - p

    lo, hi = 0.5, 1.0  # bracket [lo, hi] with f(lo) > 0 >= f(hi), grown by factors 2
    while f(hi) > 0:
        lo, hi = hi, 2.0 * hi
    while lo > 1e-300 and f(lo) <= 0:
        lo, hi = lo / 2.0, lo
    return brentq(f, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=300)


rs_pivot = RandomScalingPivot()
