"""Privacy loss distribution of a Gaussian step on a batch drawn without replacement.

DP-SGD's default draws a fixed batch of m of the n rows without replacement
(``sampling="uniform"``, q = m/n) and adds Gaussian noise to the sum of the clipped
gradients; neighbouring data sets differ in one row (replace-one). dp_accounting 0.6 has
no PLD for this scheme (its PLD accountant rejects ``SampledWithoutReplacementDpEvent``,
and its ``REPLACE_ONE`` subsampled Gaussian is the Poisson-sampling pair
``q N(-1/2) + (1-q) N(0)`` against ``q N(1/2) + (1-q) N(0)``, which assumes that the row
left out of the batch is the centre of the gradients' ball: it is not a dominating pair
here, see below). This module builds the PLD from a provably dominating pair with
dp_accounting's primitives.

Notes
-----
Units: ``s`` is the noise multiplier, the noise std over the replace-one L2 sensitivity
(``GaussianMechanismEvent.noise_multiplier``; for a clipped-gradient sum with clip tau,
``s = noise_std / (2 tau)``), so one unsampled step is ``(1/s)``-GDP.

**The pair.** Dong, Roth and Su (2022, "Gaussian differential privacy", JRSS-B 84(1),
Section 4.1, subsampling theorem): if M is f-DP under replace-one adjacency, then M run
on a batch of m of n rows drawn without replacement is ``C_q(f)``-DP, with

    C_q(f) = min{f_q, f_q^{-1}}**,   f_q = q f + (1 - q) Id,   q = m / n,

(``**``: the convex hull, i.e. the double convex conjugate). Here f = G_{1/s}, the
trade-off function of N(0, s^2) against N(1, s^2). ``f_q`` is the trade-off function of
the pair ``(Q, R)`` with ``Q = N(0, s^2)``, ``R = q N(1, s^2) + (1 - q) N(0, s^2)``:
``f_q`` is the "add" pair and ``f_q^{-1}`` the "remove" pair of a Poisson-subsampled
Gaussian with sensitivity 1 (dp_accounting's ``AdjacencyType.ADD`` and ``REMOVE`` with
``sampling_prob=q``, ``sensitivity=1``, ``standard_deviation=s``).

**Its privacy profile.** For a trade-off function g, the hockey-stick divergence at
every real epsilon is ``delta_g(eps) = 1 + g*(-e^eps)`` (g* the convex conjugate; Dong,
Roth and Su 2022, Prop. 2.12). A function and its convex hull have the same conjugate,
and the conjugate of a minimum is the maximum of the conjugates, so

    delta_C(eps) = max(delta_remove(eps), delta_add(eps))   for every real eps,

both in closed form (normal CDFs): ``_delta_remove`` and ``_delta_add`` evaluate
dp_accounting's ``GaussianPrivacyLoss.get_delta_for_epsilon`` formula vectorized (that
method inverts the privacy loss in a Python loop, one epsilon at a time: 0.15 s for the
~1e5 grid points of a calibration step); the tests require agreement with it to 1e-9.
(Checked numerically in the tests: ``delta_remove >= delta_add`` for eps >= 0, so for
eps >= 0 this is the Poisson "remove" profile; the pair differs from the Poisson pair
for eps < 0, which matters once steps are composed.)

**Why not the Poisson replace pair.** In the coupling of a batch that holds the changed
row i with one that holds another row j instead, the three clipped gradients g_i, g_i'
and g_j are only known to be pairwise within 2 tau. With g_j = g_i the two outputs are
``N(g_i)`` and ``q N(g_i') + (1 - q) N(g_i)``: the add pair above, realizable by a data
set in which row j equals row i. dp_accounting's ``REPLACE`` pair has the changed
gradients tau either side of the left-out one, and its epsilon is smaller.

**Discretization.** The PLD is dp_accounting's pessimistic connect-the-dots PMF
(Doroshenko, Ghazi, Kamath, Kumar and Manurangsi 2022, "Connect the dots", Algorithm 1;
``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``) built from ``delta_C`` on the
grid ``k * vdi`` between the two pairs' connect-the-dots bounds. Its hockey-stick curve
is the chord interpolation (in ``e^eps``) of ``delta_C`` between grid points, above the
convex true curve, with mass ``delta_C(eps_max)`` at infinite loss and the mass below
the grid moved up to its lowest point: it dominates the pair for every epsilon, and so
does its composition (Zhu, Dong and Wang 2022, "Optimal accounting of differential
privacy via characteristic function", AISTATS: composition of dominating pairs).
The truncation bound therefore only sets the width of the grid; no mass is dropped.
At q = 1 the pair is N(0, s^2) against N(1, s^2), the unsampled replace-one Gaussian.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld import privacy_loss_mechanism as plm
from scipy.special import log_ndtr, ndtr

from dpreg.exceptions import OptionError

__all__ = ["wor_gaussian_profile", "wor_gaussian_pld"]

_FIRST_STAGE = 1000  # two-stage self-composition, as in accountants._subsampled_pld


def _losses(q: float, s: float, log_trunc: float):
    """dp_accounting's remove and add privacy losses of the Poisson-subsampled Gaussian
    with sensitivity 1 and std ``s`` (the two halves of the pair, module notes)."""
    return tuple(plm.GaussianPrivacyLoss(
        s, sensitivity=1.0, sampling_prob=q, log_mass_truncation_bound=log_trunc,
        adjacency_type=kind) for kind in (plm.AdjacencyType.REMOVE, plm.AdjacencyType.ADD))


def _log_shifted_ratio(eps, q):
    """``log((e^eps - (1 - q)) / q)`` for ``e^eps > 1 - q``, without overflow."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        small = np.log1p(np.expm1(eps) / q)
        large = eps + np.log1p(-(1.0 - q) * np.exp(-eps)) - math.log(q)
    return np.where(eps > 1.0, large, small)


def _delta_remove(q, s, eps):
    """``H_{e^eps}(R || Q)``, R = q N(1, s^2) + (1 - q) N(0, s^2), Q = N(0, s^2).

    The loss ``log(1 - q + q exp((2x - 1) / (2 s^2)))`` is at least eps exactly where
    ``x >= x* = s^2 log((e^eps - 1 + q) / q) + 1/2``; below ``eps = log(1 - q)`` the
    divergence is ``1 - e^eps``.
    """
    eps = np.asarray(eps, dtype=float)
    out = -np.expm1(eps)
    inner = eps > math.log1p(-q) if q < 1 else np.ones(eps.shape, dtype=bool)
    e = eps[inner]
    x = s * s * _log_shifted_ratio(e, q) + 0.5
    upper = q * ndtr((1.0 - x) / s) + (1.0 - q) * ndtr(-x / s)
    out[inner] = upper - np.exp(e + log_ndtr(-x / s))
    return np.clip(out, 0.0, 1.0)


def _delta_add(q, s, eps):
    """``H_{e^eps}(Q || R)`` (see :func:`_delta_remove`): the loss
    ``-log(1 - q + q exp((2x - 1) / (2 s^2)))`` is at least eps where
    ``x <= s^2 log((e^-eps - 1 + q) / q) + 1/2``; 0 from ``eps = -log(1 - q)`` on."""
    eps = np.asarray(eps, dtype=float)
    out = np.zeros(eps.shape)
    inner = eps < -math.log1p(-q) if q < 1 else np.ones(eps.shape, dtype=bool)
    e = eps[inner]
    x = s * s * _log_shifted_ratio(-e, q) + 0.5
    with np.errstate(over="ignore"):
        lower = np.logaddexp(math.log(q) + log_ndtr((x - 1.0) / s),
                             (math.log1p(-q) if q < 1 else -np.inf) + log_ndtr(x / s))
    out[inner] = ndtr(x / s) - np.exp(e + lower)
    return np.clip(out, 0.0, 1.0)


def _check(q, s):
    if not 0 < q <= 1:
        raise OptionError(f"q must be in (0, 1]; got {q!r}")
    if not (math.isfinite(s) and s > 0):
        raise OptionError(f"s must be positive and finite; got {s!r}")


def wor_gaussian_profile(q: float, s: float, epsilons) -> np.ndarray:
    """Privacy profile ``delta(eps)`` of one Gaussian step on a batch drawn without
    replacement, replace-one adjacency: ``max(delta_remove, delta_add)``.

    Parameters
    ----------
    q : float
        Sampling proportion m/n in (0, 1].
    s : float
        Noise std over the replace-one L2 sensitivity.
    epsilons : array_like
        Real epsilons (negative ones included).

    Returns
    -------
    numpy.ndarray
        The hockey-stick divergence of the dominating pair at each epsilon (module
        notes), by dp_accounting's closed forms.
    """
    _check(q, s)
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    return np.maximum(_delta_remove(float(q), float(s), eps), _delta_add(float(q), float(s), eps))


@functools.lru_cache(maxsize=16)
def _step_pld(q: float, s: float, vdi: float, log_trunc: float):
    remove, add = _losses(q, s, log_trunc)
    lo = min(b.epsilon_lower for b in (remove.connect_dots_bounds(), add.connect_dots_bounds()))
    hi = max(b.epsilon_upper for b in (remove.connect_dots_bounds(), add.connect_dots_bounds()))
    k_lo, k_hi = math.floor(lo / vdi), math.ceil(hi / vdi)
    eps = np.arange(k_lo, k_hi + 1) * vdi
    deltas = np.maximum(_delta_remove(q, s, eps), _delta_add(q, s, eps))
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(vdi, k_lo, k_hi, deltas)
    return pld_lib.PrivacyLossDistribution(pmf)  # symmetric pair: one PMF for both orders


def wor_gaussian_pld(q: float, s: float, count: int = 1, *,
                     value_discretization_interval: float = 1e-4,
                     log_mass_truncation_bound: float = -50.0
                     ) -> pld_lib.PrivacyLossDistribution:
    """PLD (dp_accounting's class) of ``count`` Gaussian steps, each on a batch drawn
    without replacement, under replace-one adjacency (an upper bound: module notes).

    Parameters
    ----------
    q : float
        Sampling proportion m/n in (0, 1].
    s : float
        Noise std over the replace-one L2 sensitivity.
    count : int, optional
        Number of steps (self-composition).
    value_discretization_interval : float, optional
        Grid of the privacy loss.
    log_mass_truncation_bound : float, optional
        Sets the width of the grid only (the mass outside is kept pessimistically).

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        Use ``get_epsilon_for_delta`` / ``get_delta_for_epsilon``; composes with other
        replace-one PLDs.

    Notes
    -----
    Long compositions are done in two stages (1000 steps, then the rest), because
    dp_accounting's sparse self-composition evaluates ``size ** count`` as a Python
    integer. Results are cached (the calibration root finder asks for the same PLD at
    several budgets).
    """
    _check(q, s)
    count = int(count)
    if count < 1:
        raise OptionError(f"count must be >= 1; got {count!r}")
    return _composed(float(q), float(s), count, float(value_discretization_interval),
                     float(log_mass_truncation_bound))


@functools.lru_cache(maxsize=8)
def _composed(q, s, count, vdi, log_trunc):
    pld = _step_pld(q, s, vdi, log_trunc)
    if count <= _FIRST_STAGE:
        return pld.self_compose(count) if count > 1 else pld
    rounds, rest = divmod(count, _FIRST_STAGE)
    out = pld.self_compose(_FIRST_STAGE).self_compose(rounds)
    return out.compose(pld.self_compose(rest)) if rest else out
