"""Renyi-DP curve of Gaussian events sampled without replacement, vectorized.

Sampling without replacement (``sampling="uniform"``, replace-one neighbours) is
accounted by dp_accounting's RDP accountant, with the bound of Wang, Balle and
Kasiviswanathan (2019, AISTATS, Thm 27). dp_accounting evaluates that bound order by
order in Python and recomputes the forward differences of ``exp(cgf)`` for every
integer order: O(alpha^2) steps per order, about 0.6 s for its default orders. A
calibration evaluates the accountant 6 to 10 times per fit.

This module evaluates the same bound, term by term as dp_accounting 0.6 writes it, with
the forward-difference table built once per noise multiplier (compiled) and all orders
summed at once: one to three milliseconds. It is never the accountant of record:
:func:`dpreg.privacy.accountants.rigorous_epsilon` uses it only to choose the order at
which dp_accounting is asked for the RDP. That figure is dp_accounting's at that order,
an upper bound whatever this module computes, and equal to dp_accounting's epsilon over
its default orders when the two curves agree. The ledger reports the smaller of it and
the unsampled bound (see ``accountants._rdp_conversion``).

How closely the curves agree depends on the conditioning of the forward differences.
Where they do not cancel, the two curves agree to 1e-12 relative (every order for
noise multipliers up to 1 by the tests' error bounds; measured up to 2.1e-15 at every
order for s up to 3). For large noise multipliers the k-th difference is far smaller
than its terms: at s = 7.5 beyond order ~30, at s = 1e4 from order ~4 to 256. Its
float64 value, dp_accounting's and this module's alike, is then rounding noise, and
that noise follows the last bit of ``exp``. numpy's ``exp`` (which dp_accounting calls)
and libm's (numba's) differed in about 5% of arguments on an AVX-512 machine and agreed
on the machine this module was written on, so there the two curves differ by up to
0.4% (s = 7.5) or 17% (s = 1e4) on one machine and not at all on another. Against an
exact mpmath evaluation (1,300 digits; q from 1/1399 to 1/2), both curves overstated
the bound there, by up to 21% at s = 7.5 and by orders of magnitude at s = 1e4, and
were never below it by more than 4e-11 relative at s = 7.5 or 1.1e-9 at s = 1e4 (the
precision of ``1 - exp(-1/s^2)``). At s = 1e4 the unsampled bound is the smaller one
and is what the ledger reports. ``tests/privacy/test_wor_rdp.py`` bounds both curves by
that exact evaluation widened by float64 error bounds, and requires 1e-12 agreement
where those bounds are tight.

Notation (dp_accounting's): ``s`` is the noise multiplier (noise std over the
replace-one sensitivity), ``q = m/n``, ``cgf(x) = x (x + 1) / (2 s^2)`` the cumulant
generating function of the unsampled Gaussian, and ``deltas[k]`` the log of the
(k + 1)-th forward difference at 0 of ``j -> exp(j (j - 1) / (2 s^2))``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numba
import numpy as np
from dp_accounting.rdp import rdp_privacy_accountant as _rdp
from scipy.special import gammaln

from dpreg.exceptions import OptionError

__all__ = ["DEFAULT_ORDERS", "wor_gaussian_rdp", "composed_rdp", "best_order"]

DEFAULT_ORDERS = np.array(_rdp.DEFAULT_RDP_ORDERS, dtype=float)
_EXACT_MAX = 256  # dp_accounting sums Thm 27 exactly up to this order, a cruder form above


def _log_comb(n, k):
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


@functools.lru_cache(maxsize=16)
def _log_comb_table(alphas: tuple) -> np.ndarray:
    """log C(alpha, i) for i = 3..max(alphas), one row per order; -inf for i > alpha."""
    a = np.array(alphas)[:, None]
    i = np.arange(3, int(max(alphas)) + 1, dtype=float)
    with np.errstate(invalid="ignore"):
        table = np.where(i <= a, _log_comb(a, i), -np.inf)
    table.flags.writeable = False
    return table


@numba.njit(cache=True)
def _log_forward_differences(s, count):  # pragma: no cover - compiled
    """``deltas[k]``, k = 0..count-1: log of the (k+1)-th forward difference at 0 of
    ``j -> exp(j (j - 1) / (2 s^2))``, by repeated differences of numbers held as
    (log|v|, v > 0): dp_accounting's ``_get_forward_diffs`` step for step."""
    mag = np.empty(count + 1)
    pos = np.ones(count + 1, dtype=np.bool_)
    mag[0] = 0.0
    for j in range(count):
        mag[j + 1] = j * (j + 1.0) / (2.0 * s * s)  # cgf(j)
    out = np.empty(count)
    for k in range(count):
        for j in range(count - k):  # v[j] <- v[j + 1] - v[j]
            x, y = mag[j], mag[j + 1]
            if pos[j] == pos[j + 1]:
                if y > x:
                    m, p = y + math.log1p(-math.exp(x - y)), True
                elif y < x:
                    m, p = x + math.log1p(-math.exp(y - x)), False
                else:
                    m, p = -math.inf, True
                if not pos[j + 1]:
                    p = not p
            else:
                hi, lo = max(x, y), min(x, y)
                m = hi if lo == -math.inf else hi + math.log1p(math.exp(lo - hi))
                p = pos[j + 1]
            mag[j], pos[j] = m, p
        out[k] = mag[0]
    return out


def _log_moments(q: float, s: float, alphas: np.ndarray) -> np.ndarray:
    """log A_alpha of Thm 27 for integer orders ``alphas`` >= 2 (dp_accounting's terms:
    exact up to order 256, the crude ``2 exp(cgf)`` bound on every term above)."""
    def cgf(x):
        return x * (x + 1.0) / (2.0 * s ** 2)

    f2 = 1.0 / s ** 2  # the Gaussian's RDP at order 2
    log_f2m1 = f2 + math.log1p(-math.exp(-f2))  # ValueError for huge s, as dp_accounting
    second = 2 * math.log(q) + min(math.log(4) + log_f2m1, f2 + math.log(2))
    top = int(alphas.max())
    i = np.arange(3, top + 1, dtype=float)  # the terms i = 3..alpha
    crude = math.log(2) + cgf(i - 1) + i * math.log(q)
    exact = crude.copy()  # orders <= 256 only use i <= 256, where this is overwritten
    if alphas.min() <= _EXACT_MAX:
        last = min(top, _EXACT_MAX)
        deltas = _log_forward_differences(s, last + 1)
        k = np.arange(3, last + 1)
        lo, hi = deltas[2 * (k // 2) - 1], deltas[2 * ((k + 1) // 2) - 1]
        exact[: last - 2] = (np.minimum(math.log(4) + 0.5 * (lo + hi),
                                        math.log(2) + cgf(k - 1.0)) + k * math.log(q))
    # log A_alpha = log(1 + sum_i exp(term_i + log C(alpha, i))), one row per order;
    # the table's -inf for i > alpha drops the terms an order does not have
    terms = np.where(alphas[:, None] <= _EXACT_MAX, exact, crude)
    body = terms + _log_comb_table(tuple(alphas.tolist()))
    body = np.column_stack((np.zeros(len(alphas)), second + _log_comb(alphas, 2.0), body))
    top_term = body.argmax(axis=1)
    peak = body[np.arange(len(alphas)), top_term]
    rest = np.exp(body - peak[:, None])
    rest[np.arange(len(alphas)), top_term] = 0.0  # log1p keeps log A ~ 1e-12 accurate
    return peak + np.log1p(rest.sum(axis=1))


def wor_gaussian_rdp(q: float, s: float, orders: Sequence[float]) -> np.ndarray:
    """RDP at ``orders`` of one Gaussian step (noise multiplier ``s``) on a sample of
    ``q n`` rows drawn without replacement, as dp_accounting 0.6 bounds it.

    Parameters
    ----------
    q : float
        Sampling proportion m/n in [0, 1].
    s : float
        Noise std over the replace-one L2 sensitivity.
    orders : sequence of float
        RDP orders >= 1 (finite).

    Returns
    -------
    numpy.ndarray
        The RDP bound at each order. Fractional orders interpolate the neighbouring
        integer orders' log moments (WBK19, Cor. 10), as dp_accounting does.

    Raises
    ------
    OptionError
        For q outside [0, 1], s not positive and finite, or orders not finite and >= 1.
    ValueError
        Where dp_accounting's bound cannot be evaluated (noise multipliers above about
        1.5e8, where ``1 - exp(-1/s^2)`` rounds to 0); dp_accounting raises there too.
    """
    orders = np.asarray(orders, dtype=float)
    if not 0 <= q <= 1:
        raise OptionError(f"q must be in [0, 1]; got {q!r}")
    if not (math.isfinite(s) and s > 0):
        raise OptionError(f"s must be positive and finite; got {s!r}")
    if orders.ndim != 1 or not np.all(np.isfinite(orders) & (orders >= 1)):
        raise OptionError("orders must be a sequence of finite numbers >= 1")
    if q == 0:
        return np.zeros_like(orders)
    if q == 1:
        return orders / (2.0 * s ** 2)
    floors, ceils = np.floor(orders), np.ceil(orders)
    ints = np.unique(np.concatenate((floors, ceils)))
    ints = ints[ints >= 2]
    log_a = dict(zip(ints.tolist(), _log_moments(q, s, ints), strict=True)) if len(ints) else {}
    log_a[1.0] = 0.0
    lo = np.array([log_a[a] for a in floors.tolist()])
    hi = np.array([log_a[a] for a in ceils.tolist()])
    t = orders - floors
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(orders == 1, 0.0, ((1 - t) * lo + t * hi) / (orders - 1))


def composed_rdp(events, orders: Sequence[float] = DEFAULT_ORDERS) -> np.ndarray:
    """RDP curve of replace-one events (unsampled or sampled without replacement),
    composed: ``sum_i count_i rdp_i(orders)``.

    Noise multipliers too large for the without-replacement bound are charged as
    unsampled Gaussians, the same upper bound as
    :func:`dpreg.privacy.accountants.rigorous_epsilon` uses there.

    Raises
    ------
    ValueError
        For an event sampled with Poisson sampling (not this bound's scheme).
    """
    orders = np.asarray(orders, dtype=float)
    total = np.zeros_like(orders)
    for e in events:
        s = float(e.noise_multiplier)
        if e.is_subsampled and e.sampling != "uniform":
            raise ValueError(f"event {e.name!r} is not sampled without replacement")
        step = None
        if e.is_subsampled:
            try:
                step = wor_gaussian_rdp(float(e.sample_rate), s, orders)
            except OptionError:
                raise
            except ValueError:  # huge s: the fallback of accountants._rdp_accountant
                step = None
        if step is None:
            step = orders / (2.0 * s ** 2)
        total += int(e.count) * step
    return total


def best_order(events, *, delta: float | None = None, epsilon: float | None = None,
               orders: Sequence[float] = DEFAULT_ORDERS) -> float:
    """The order at which :func:`composed_rdp` gives the smallest epsilon at ``delta``
    (or the smallest delta at ``epsilon``), by dp_accounting's conversions."""
    orders = np.asarray(orders, dtype=float)
    curve = composed_rdp(events, orders)
    if epsilon is None:
        return float(_rdp.compute_epsilon(orders, curve, delta)[1])
    return float(_rdp.compute_delta(orders, curve, epsilon)[1])
