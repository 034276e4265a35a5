"""Rigorous (epsilon, delta) and zCDP bounds for a set of events, through dp_accounting.

The GDP central limit theorem (:func:`dpreg.privacy.gdp.dpsgd_mu`) is an approximation
that can understate the privacy loss of subsampled steps (user guide, Corrections to the
papers: "GDP central limit theorem"). The
headline (epsilon, delta) of a fit comes from here: Google's ``dp_accounting``
(privacy loss distributions or Renyi DP), never from a home-made accountant.

Notes
-----
Which accountant. All events of one fit share one adjacency (checked).

* Every event set: the PLD accountant (Koskela, Jalko and Honkela 2020; Doroshenko et
  al. 2022, "Connect the dots", pessimistic estimate: an upper bound up to the
  discretization). Poisson sampling (add/remove) and unsampled Gaussians use
  dp_accounting's own PLDs. Uniform sampling without replacement (replace-one) uses
  :func:`dpreg.privacy.wor_pld.wor_gaussian_pld`: dp_accounting 0.6 has no PLD for
  ``SampledWithoutReplacementDpEvent``, so the PLD is built with its connect-the-dots
  primitive from the dominating pair of Dong, Roth and Su's subsampling theorem (see
  that module). Before, these events were accounted by RDP only (Wang, Balle and
  Kasiviswanathan 2019, AISTATS, Thm 27), about twice the CLT epsilon: at n = 1399,
  m = 1, T = n^2, delta = 1e-5 RDP gives epsilon 12.97 (s = 1) and 0.80 (s = 10),
  where the uniform GDP-CLT gives 8.26 and 0.36.
* The RDP bound stays as a cross-check (:func:`rdp_epsilon`, shown in the ledger): the
  smaller of that bound and the bound with every sampled step charged as unsampled
  (see ``_rdp_conversion``); dp_accounting is asked for the first at the one order
  that :mod:`dpreg.privacy.wor_rdp` finds optimal.

Noise multipliers, as read in the dp_accounting 0.6 source:

* RDP accountant: ``GaussianDpEvent(s)`` contributes ``alpha / (2 s^2)`` under every
  neighbouring relation, and ``_compute_rdp_sample_wor_gaussian`` takes "the ratio of
  the standard deviation of the Gaussian noise to the l2-sensitivity" with the base
  Gaussian's RDP ``alpha/(2 s^2)`` on replace-one neighbours. So s is relative to the
  replace-one sensitivity, the L2 distance between the outputs when one row is
  replaced: ``s = noise_std / (2 tau)`` for a clipped-gradient sum with clip tau.
  That is exactly our ``sensitivity`` field, so ``event.to_dp_accounting()`` is
  passed as is.
* PLD accountant under REPLACE_ONE: ``GaussianPrivacyLoss`` with
  ``AdjacencyType.REPLACE`` compares ``mu(x + sensitivity)`` with
  ``mu(x - sensitivity)``: the two outputs are ``2 * sensitivity`` apart, so
  ``GaussianDpEvent(s)`` is (2/s)-GDP there (checked: PLD with REPLACE_ONE and s = 1
  gives the epsilon of 2-GDP, the RDP accountant that of 1-GDP). We therefore build
  replace-one PLDs with ``sensitivity = 1/2`` (distance 1) and std ``s``. Under
  add/remove the PLD convention is the distance, as for RDP.

PLD accuracy and speed. The discretization interval is a power of two at most one
tenth of the smallest per-step GDP scale ``q sqrt(exp(1/s^2) - 1)`` (and at most
mu/100 for the merged unsampled Gaussians): a measured relative accuracy of about
5e-4 (at most ~1e-3) in epsilon for T up to 2e6 (n = 1399, m = 1, s from 0.7 to 30).
If a PLD would then span more than 1e6 grid points the grid is made coarser (still an
upper bound, only looser): dp_accounting's FFT composition loses accuracy on very fine
grids (for T = 1399^2, s = 1, the interval 2^-17 gives epsilon 6.059 where 2^-12 to
2^-16 give 6.06 to 6.021). Unsampled Gaussians are merged into one (exact: their
compositions are Gaussian). Long self-compositions are done in two stages
(1000 steps, then the rest) because ``SparsePLDPmf.self_compose`` evaluates
``size ** num_times`` as a Python integer, which takes seconds for T ~ 2e6. The noise
tail cut per step has mass at most ``exp(log_mass_truncation_bound)``, placed at
infinite loss (pessimistic); the bound (at most exp(-40)) is chosen so that all steps
together add at most 1e-6 delta to delta.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from importlib import metadata

import dp_accounting
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import RdpAccountant

from dpreg._checks import number_in
from dpreg.exceptions import BudgetExceededError, OptionError
from dpreg.privacy.events import GaussianMechanismEvent, is_replace_one
from dpreg.privacy.wor_pld import wor_gaussian_pld
from dpreg.privacy.wor_rdp import best_order

__all__ = ["rigorous_epsilon", "rigorous_delta", "rigorous_rdp_curve", "zcdp_rho_upper",
           "pld_discretization", "rdp_epsilon", "rdp_delta"]

_NR = dp_accounting.NeighboringRelation
_VERSION = metadata.version("dp-accounting")
PLD_NAME = f"PLD (dp_accounting {_VERSION})"
RDP_NAME = f"RDP (dp_accounting {_VERSION})"
#: (short: it is printed in the summary's header; the ledger's notes name the pair)
WOR_PLD_NAME = f"PLD (dp_accounting {_VERSION}; WOR pair)"
_FIRST_STAGE = 1000
_MAX_POINTS = 1e6  # a coarser grid (still an upper bound) beyond this many PLD points


def _check_events(events) -> tuple[GaussianMechanismEvent, ...]:
    if isinstance(events, GaussianMechanismEvent):
        events = (events,)
    events = tuple(events)
    if not events:
        raise OptionError("events must hold at least one GaussianMechanismEvent")
    for e in events:
        if not isinstance(e, GaussianMechanismEvent):
            raise OptionError(f"events must be GaussianMechanismEvent; got {type(e).__name__}")
    adj = {e.adjacency for e in events}
    if len(adj) > 1:
        raise OptionError(f"all events of one fit must share one adjacency; got {sorted(adj)}")
    return events


def _has_wor(events) -> bool:
    return any(e.is_subsampled and e.sampling == "uniform" for e in events)


def _merged_gaussian_mu(events) -> float:
    """mu of all unsampled events together (exact: sqrt of sum of count (Delta/sigma)^2)."""
    return math.sqrt(sum(e.count / e.noise_multiplier ** 2
                         for e in events if not e.is_subsampled))


def _truncation_bound(events, delta) -> float:
    steps = sum(e.count for e in events if e.is_subsampled) + 1
    return min(-40.0, math.log(1e-6 * delta / steps))


def pld_discretization(events) -> float:
    """The PLD ``value_discretization_interval`` used by :func:`rigorous_epsilon`.

    A power of two at most ``min_i min(q_i sqrt(exp(1/s_i^2) - 1), 1/s_i) / 10`` over
    subsampled events and ``mu_g / 100`` for the merged unsampled Gaussians; coarser
    only if a PLD would span more than 1e6 grid points (the estimate stays an upper
    bound, only looser).
    """
    events = _check_events(events)
    scales, spreads = [1e-2], []
    mu_g = _merged_gaussian_mu(events)
    if mu_g > 0:
        scales.append(mu_g / 100.0)
        spreads.append(20.0 * mu_g + mu_g ** 2)
    for e in events:
        if e.is_subsampled:  # a step is never less private than unsampled: 1/s-GDP
            a2 = e.noise_multiplier ** -2
            step = 1.0 / e.noise_multiplier
            if a2 < 700:
                step = min(step, e.sample_rate * math.sqrt(math.expm1(a2)))
            scales.append(step / 10.0)
            total = step * math.sqrt(e.count)
            spreads.append(20.0 * total + total ** 2)
    vdi = 2.0 ** math.floor(math.log2(min(scales)))
    spreads = [x for x in spreads if math.isfinite(x)]
    if spreads and max(spreads) / vdi > _MAX_POINTS:
        vdi = 2.0 ** math.ceil(math.log2(max(spreads) / _MAX_POINTS))
    return vdi


@functools.lru_cache(maxsize=8)
def _subsampled_pld(q, s, count, vdi, log_trunc):
    pld = pld_lib.from_gaussian_mechanism(
        standard_deviation=s, sampling_prob=q, value_discretization_interval=vdi,
        log_mass_truncation_bound=log_trunc, neighboring_relation=_NR.ADD_OR_REMOVE_ONE)
    if count <= _FIRST_STAGE:
        return pld.self_compose(count) if count > 1 else pld
    rounds, rest = divmod(count, _FIRST_STAGE)
    out = pld.self_compose(_FIRST_STAGE).self_compose(rounds)
    return out.compose(pld.self_compose(rest)) if rest else out


@functools.lru_cache(maxsize=8)
def _gaussian_pld(mu, vdi, replace_one):
    if replace_one:  # dp_accounting's REPLACE puts outputs 2*sensitivity apart
        return pld_lib.from_gaussian_mechanism(
            standard_deviation=1.0 / mu, sensitivity=0.5, value_discretization_interval=vdi,
            neighboring_relation=_NR.REPLACE_ONE)
    return pld_lib.from_gaussian_mechanism(
        standard_deviation=1.0 / mu, value_discretization_interval=vdi,
        neighboring_relation=_NR.ADD_OR_REMOVE_ONE)


def _composed_pld(events, delta, vdi):
    log_trunc = _truncation_bound(events, delta)
    parts = []
    mu_g = _merged_gaussian_mu(events)
    if mu_g > 0 and _has_wor(events):
        # the same connect-the-dots PLD as _gaussian_pld (q = 1 of the pair: N(0, 1/mu^2)
        # against N(1, 1/mu^2)), with the hockey-stick divergence vectorized: equal to
        # 1e-15, 3 to 4 times faster, and these sets are rebuilt at every root-finding step
        parts.append(wor_gaussian_pld(1.0, 1.0 / mu_g, 1, value_discretization_interval=vdi))
    elif mu_g > 0:
        parts.append(_gaussian_pld(mu_g, vdi, is_replace_one(events[0].adjacency)))
    for e in events:
        if e.is_subsampled and e.sampling == "uniform":
            parts.append(wor_gaussian_pld(
                float(e.sample_rate), float(e.noise_multiplier), int(e.count),
                value_discretization_interval=vdi, log_mass_truncation_bound=log_trunc))
        elif e.is_subsampled:
            parts.append(_subsampled_pld(float(e.sample_rate), float(e.noise_multiplier),
                                         int(e.count), vdi, log_trunc))
    out = parts[0]
    for p in parts[1:]:
        out = out.compose(p)
    return out


def _rdp_accountant(events, orders=None) -> RdpAccountant:
    relation = (_NR.REPLACE_ONE if is_replace_one(events[0].adjacency)
                else _NR.ADD_OR_REMOVE_ONE)
    acc = RdpAccountant(orders=orders, neighboring_relation=relation)
    for e in events:
        try:
            acc.compose(e.to_dp_accounting())
        except (ValueError, OverflowError):
            # dp-accounting's without-replacement bound evaluates log1p(-exp(-1/s^2)),
            # which fails for huge noise multipliers s. Subsampling never hurts: two
            # replace-one neighbours give subsamples that differ in at most one row, so
            # the unsampled Gaussian's RDP alpha / (2 s^2), self-composed, is an upper
            # bound (and at such s both are ~0).
            acc.compose(dp_accounting.SelfComposedDpEvent(
                dp_accounting.GaussianDpEvent(float(e.noise_multiplier)), int(e.count)))
    return acc


def _as_unsampled(events) -> tuple[GaussianMechanismEvent, ...]:
    """The events with every sampled step charged as if it used every row."""
    return tuple(dataclasses.replace(e, sampling="none", sample_size=None, population=None)
                 if e.is_subsampled else e for e in events)


def _rdp_conversion(events, *, delta=None, epsilon=None) -> float:
    """epsilon at ``delta`` (or delta at ``epsilon``) of replace-one events with
    sampling without replacement, by dp_accounting's RDP accountant: the smaller of

    * the events as they are (WBK19 Thm 27 for the sampled steps), evaluated at the
      order that :mod:`dpreg.privacy.wor_rdp` finds optimal (dp_accounting takes O(alpha^2)
      Python steps per order; the default orders cost ~0.6 s per call), and
    * every sampled step charged as an unsampled Gaussian, ``alpha / (2 s^2)`` (a
      replace-one neighbour changes at most one row of any sample).

    Both are upper bounds, so their minimum is one. The second is the smaller one for
    large sampling rates (q >= 1/2, at any noise: at n = 10, m = 9, s = 1, T = 100,
    delta = 1e-6, epsilon 100.7 against 181.1) and for large noise multipliers, where
    dp_accounting's evaluation of Thm 27 loses its precision at the high orders (the
    forward differences cancel) and its epsilon stops falling with the noise (at
    q = 1/4, T = 300, delta = 1e-6 it stays near 0.14 from s = 1e3 to 1e7).

    Raises
    ------
    OptionError
        If dp_accounting cannot convert either curve (its delta conversion fails when
        the RDP is below ~1e-16 at every order: the events are essentially not private
        to lose).
    """
    def convert(acc):
        return acc.get_epsilon(delta) if epsilon is None else acc.get_delta(epsilon)

    bounds = []
    for accountant in (
            lambda: _rdp_accountant(events, [best_order(events, delta=delta, epsilon=epsilon)]),
            lambda: _rdp_accountant(_as_unsampled(events))):
        try:
            bounds.append(float(convert(accountant())))
        except (ValueError, OverflowError, ZeroDivisionError):  # raised in dp_accounting
            continue
    if not bounds:
        asked = f"delta={delta!r}" if epsilon is None else f"epsilon={epsilon!r}"
        raise OptionError(f"dp_accounting cannot convert these events' RDP curve at {asked}: "
                          "its values are too small (noise multipliers too large)")
    return min(bounds)


def rigorous_epsilon(events: Sequence[GaussianMechanismEvent], delta: float, *,
                     value_discretization_interval: float | None = None) -> tuple[float, str]:
    """Upper bound on epsilon at ``delta`` for all ``events`` composed, by dp_accounting.

    Parameters
    ----------
    events : sequence of GaussianMechanismEvent
        One adjacency for all.
    delta : float
        In (0, 1).
    value_discretization_interval : float, optional
        PLD grid; default :func:`pld_discretization` (pass one to hold it fixed while
        root finding).

    Returns
    -------
    (float, str)
        epsilon and the accountant's name.

    Notes
    -----
    The PLD accountant for every event set; events sampled without replacement use the
    pair of :mod:`dpreg.privacy.wor_pld`. See the module notes for the conventions, and
    :func:`rdp_epsilon` for the RDP cross-check.
    """
    events = _check_events(events)
    delta = number_in("delta", float(delta), 0, 1, error=BudgetExceededError)
    vdi = value_discretization_interval or pld_discretization(events)
    try:
        eps = float(_composed_pld(events, delta, vdi).get_epsilon_for_delta(delta))
    except OverflowError:
        # a budget so large that the privacy loss leaves the floating-point range (mu
        # about 1e6 and beyond: the noise is off in effect); infinity is a true bound
        return math.inf, _pld_name(events) + "; beyond float range"
    return eps, _pld_name(events)


def _pld_name(events) -> str:
    return WOR_PLD_NAME if _has_wor(events) else PLD_NAME


def rdp_epsilon(events: Sequence[GaussianMechanismEvent], delta: float) -> tuple[float, str]:
    """RDP cross-check of :func:`rigorous_epsilon` for replace-one events sampled
    without replacement: epsilon at ``delta`` by dp_accounting's RDP accountant.

    Parameters
    ----------
    events : sequence of GaussianMechanismEvent
        One adjacency for all.
    delta : float
        In (0, 1).

    Returns
    -------
    (float, str)
        epsilon and the accountant's name. For sampling without replacement, the
        smaller of the Wang-Balle-Kasiviswanathan bound and the bound with every sampled
        step charged as unsampled (the figure dpreg reported before the PLD of
        :mod:`dpreg.privacy.wor_pld`); otherwise dp_accounting's RDP accountant as is.
        Both are upper bounds, looser than the PLD.
    """
    events = _check_events(events)
    delta = number_in("delta", float(delta), 0, 1, error=BudgetExceededError)
    if _has_wor(events):
        return _rdp_conversion(events, delta=delta), RDP_NAME
    return float(_rdp_accountant(events).get_epsilon(delta)), RDP_NAME


def rdp_delta(events: Sequence[GaussianMechanismEvent], epsilon: float) -> tuple[float, str]:
    """RDP cross-check of :func:`rigorous_delta`: delta at ``epsilon`` by dp_accounting's
    RDP accountant, with the same bounds as :func:`rdp_epsilon`.

    Parameters
    ----------
    events : sequence of GaussianMechanismEvent
        One adjacency for all.
    epsilon : float
        >= 0.

    Returns
    -------
    (float, str)
        delta and the accountant's name.
    """
    events = _check_events(events)
    eps = float(epsilon)
    if not eps >= 0:
        raise BudgetExceededError(f"epsilon must be in [0, inf); got {epsilon!r}")
    if _has_wor(events):
        return _rdp_conversion(events, epsilon=eps), RDP_NAME
    return float(_rdp_accountant(events).get_delta(eps)), RDP_NAME


def rigorous_delta(events: Sequence[GaussianMechanismEvent], epsilon: float, *,
                   value_discretization_interval: float | None = None) -> tuple[float, str]:
    """Upper bound on delta at ``epsilon`` for all ``events`` composed, by dp_accounting.

    Parameters
    ----------
    events : sequence of GaussianMechanismEvent
        One adjacency for all.
    epsilon : float
        >= 0.
    value_discretization_interval : float, optional
        As for :func:`rigorous_epsilon`.

    Returns
    -------
    (float, str)
        delta and the accountant's name (see :func:`rigorous_epsilon`).
    """
    events = _check_events(events)
    eps = float(epsilon)
    if not eps >= 0:
        raise BudgetExceededError(f"epsilon must be in [0, inf); got {epsilon!r}")
    vdi = value_discretization_interval or pld_discretization(events)
    try:
        pld = _composed_pld(events, 1e-10, vdi)
        return float(pld.get_delta_for_epsilon(eps)), _pld_name(events)
    except OverflowError:  # see rigorous_epsilon: delta = 1 is a true bound
        return 1.0, _pld_name(events) + "; beyond float range"


def rigorous_rdp_curve(events: Sequence[GaussianMechanismEvent]) -> tuple[np.ndarray, np.ndarray]:
    """Composed Renyi-DP curve ``(orders, rdp)`` of ``events`` by dp_accounting's
    ``RdpAccountant`` (default orders, relation from the events' adjacency).

    With sampling without replacement, the curve at each order is the smaller of the
    events' bound and the bound with the sampled steps charged as unsampled, as in
    :func:`rdp_epsilon`.
    """
    events = _check_events(events)
    acc = _rdp_accountant(events)
    if _has_wor(events):
        return acc.orders, np.minimum(acc.rdp, _rdp_accountant(_as_unsampled(events)).rdp)
    return acc.orders, acc.rdp


def zcdp_rho_upper(events: Sequence[GaussianMechanismEvent]) -> float:
    """Smallest rho such that the composed events are rho-zCDP: ``sum_i count_i / (2 s_i^2)``.

    Notes
    -----
    zCDP (Bun and Steinke 2016) asks ``eps(alpha) <= rho alpha`` for *every* alpha > 1,
    so rho = sup_alpha eps(alpha)/alpha. An unsampled Gaussian has eps(alpha) =
    alpha/(2 s^2): rho = 1/(2 s^2) exactly. A subsampled Gaussian step has
    eps(alpha) <= alpha/(2 s^2) at every alpha (joint quasi-convexity of Renyi
    divergence, van Erven and Harremoes 2014, Thm 13), and eps(alpha)/alpha ->
    1/(2 s^2) as alpha -> inf (the q^alpha exp(alpha^2/(2 s^2)) term of the moment
    dominates), so its rho is also 1/(2 s^2): subsampling does not amplify zCDP
    (Bun, Dwork, Rothblum and Steinke 2018, "Composable and versatile privacy via
    truncated CDP"). Composition adds rho. The maximum of ``eps(alpha)/alpha`` over a
    finite set of orders (see :func:`rigorous_rdp_curve`) is smaller for subsampled
    events, but it is not a zCDP guarantee.
    """
    events = _check_events(events)
    return float(sum(e.count / (2.0 * e.noise_multiplier ** 2) for e in events))
