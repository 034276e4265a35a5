"""Noise from budget: calibrate every mechanism of a fit to the user's request.

A fit describes its mechanisms with a *builder*, ``builder(mu_scale) -> events``: for a
scalar GDP scale ``mu_scale`` it returns all Gaussian mechanisms of the fit (the DP-SGD
path calibrated by the CLT to its share ``mu_scale sqrt(w_path)``, matrices exactly to
``mu_scale sqrt(w_i)``), so that their GDP composition is ``mu_scale``. Calibration
then picks ``mu_scale`` so that the request holds *under the accountant in the
request's unit*.

Notes
-----
* mu request: ``mu_scale = mu`` (GDP composition ``mu_total = sqrt(sum mu_i^2)``).
* (epsilon, delta) request: ``mu_scale`` solves ``rigorous_epsilon(builder(mu_scale),
  delta) = epsilon``; the promise holds under the rigorous accountant (PLD or RDP of
  dp_accounting), not under the CLT.
* rho request: ``mu_scale`` solves ``zcdp_rho_upper(builder(mu_scale)) = rho``.
  Subsampling does not amplify zCDP (see :func:`zcdp_rho_upper`): a rho request
  charges each subsampled step as an unsampled one, so for DP-SGD it needs far more
  noise than a mu or (epsilon, delta) request of similar strength.

Roots are found on ``log mu_scale`` by regula falsi (Illinois) inside a bracket that
expands geometrically from the GDP guess (within a factor 1e8 either way). The PLD grid is held
fixed while solving (so that the function is smooth) and re-checked at the root; the
returned events never exceed the request (the scale is nudged down by 1e-10 relative
steps if round-off lands just above it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dpreg._checks import positive_number
from dpreg.exceptions import BudgetExceededError, DPRegError, OptionError
from dpreg.privacy.accounting import budget_accountant
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import epsilon_to_mu, rho_to_mu
from dpreg.privacy.request import PrivacyRequest

__all__ = ["calibrate_gaussian_noise", "calibrate_to_budget", "calibrate_mu_scale",
           "Calibration"]

Builder = Callable[[float], Sequence[GaussianMechanismEvent]]
_RANGE = math.log(1e8)  # search mu_scale within a factor 1e8 of the GDP guess
# accepted window below the request, in log units (i.e. relative): see _solve
_FTOL = {"epsilon-delta": 1e-6, "rho": 1e-10}


def calibrate_gaussian_noise(sensitivity: float, mu: float) -> float:
    """Noise std that makes one Gaussian release exactly mu-GDP: ``sensitivity / mu``.

    Notes
    -----
    Dong, Roth and Su (2022), Thm 2.7: adding N(0, sigma^2) to a statistic of L2
    sensitivity Delta is (Delta/sigma)-GDP.
    """
    positive_number("sensitivity", sensitivity)
    positive_number("mu", mu, error=BudgetExceededError)
    return float(sensitivity) / float(mu)


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate_mu_scale`: the scale, the events, and what they spend
    in the request's unit (``achieved <= request value``) under ``accountant``."""

    mu_scale: float
    events: tuple
    achieved: float
    accountant: str


def _build(builder, scale, request) -> tuple:
    try:
        events = tuple(builder(scale))
    except DPRegError as exc:
        raise BudgetExceededError(
            f"the budget {request.describe()} cannot be met: building the mechanisms at "
            f"GDP scale mu_scale={scale:.6g} failed ({exc})") from exc
    if not events or not all(isinstance(e, GaussianMechanismEvent) for e in events):
        raise OptionError("builder must return a non-empty list of GaussianMechanismEvent")
    return events


def _spend(request, events, vdi):
    """Cost of events in the request's unit, and the accountant's name (the unit's
    budget accountant, :func:`dpreg.privacy.accounting.budget_accountant`)."""
    return budget_accountant(request.unit).compose(events, delta=request.delta, grid=vdi)


def _solve(f, x0, ftol):
    """x with -ftol <= f(log x) <= 0 for an increasing f.

    A bracket from log x0 and a step of -f(log x0) (the log-log slope of every
    budget unit in the scale is between 1 and 2), doubled until the sign changes;
    then the Illinois variant of regula falsi aimed at -ftol/2. It stops as soon as f
    lands in the window, or when the bracket is narrower than 1e-10, returning its
    lower end (f < 0: under budget): the PLD epsilon is smooth only to ~1e-7 and jumps
    by up to ~1e-6 (relative) where the grid's support moves, so a root to machine
    precision may not exist.
    """
    def g(log_x):
        return f(log_x) + ftol / 2

    x_start = math.log(x0)
    a, ga = x_start, g(x_start)
    if abs(ga) <= ftol / 2:
        return x0
    step = -ga if abs(ga) > 1e-3 else math.copysign(1e-3, -ga)  # log-log slope ~1 to 2
    b, gb = a + step, g(a + step)
    while (ga > 0) == (gb > 0):
        if abs(gb) <= ftol / 2:
            return math.exp(b)
        a, ga, step = b, gb, 2.0 * step
        if abs(a + step - x_start) > _RANGE:
            return None
        b, gb = a + step, g(a + step)
    if a > b:
        a, ga, b, gb = b, gb, a, ga
    side = 0
    for _ in range(200):
        if abs(ga) <= ftol / 2:
            return math.exp(a)
        if abs(gb) <= ftol / 2 or b - a < 1e-10:
            return math.exp(b if abs(gb) <= ftol / 2 else a)
        c = (a * gb - b * ga) / (gb - ga)
        gc = g(c)
        if gc <= 0.0:
            a, ga = c, gc
            if side == -1:
                gb /= 2.0
            side = -1
        else:
            b, gb = c, gc
            if side == 1:
                ga /= 2.0
            side = 1
    return math.exp(a)  # pragma: no cover


def calibrate_mu_scale(request: PrivacyRequest, builder: Builder) -> Calibration:
    """Find the GDP scale at which ``builder``'s events spend exactly ``request``.

    Parameters
    ----------
    request : PrivacyRequest
    builder : callable
        ``builder(mu_scale) -> list[GaussianMechanismEvent]``, increasing in privacy
        cost as ``mu_scale`` grows, with GDP composition ``mu_scale``.

    Returns
    -------
    Calibration

    Raises
    ------
    BudgetExceededError
        If no scale within a factor 1e8 of the GDP guess meets the request, if the
        builder cannot build the mechanisms that a budget this small needs, or (mu
        requests) if the builder's events spend more than mu.
    """
    if not isinstance(request, PrivacyRequest):
        raise OptionError(f"request must be a PrivacyRequest; got {type(request).__name__}")
    target = request.value
    if request.unit == "mu":
        events = _build(builder, target, request)
        total, name = _spend(request, events, None)
        if total > target * (1 + 1e-9):
            raise BudgetExceededError(f"the mechanisms spend mu = {total:.10g} > "
                                      f"{request.describe()}: check the budget split")
        return Calibration(target, events, total, name)
    guess = (rho_to_mu(target) if request.unit == "rho"
             else epsilon_to_mu(target, request.delta))
    memo = {}  # scale -> ((spent, accountant), grid) of every evaluation

    def grid(events):  # the grid the accountant would choose (None: it has none)
        return budget_accountant(request.unit).grid(events)

    scale = guess
    for _ in range(4):  # PLD grid fixed while solving, then re-checked at the root
        vdi = grid(_build(builder, scale, request))

        def f(log_m, vdi=vdi):
            m = math.exp(log_m)
            memo[m] = (_spend(request, _build(builder, m, request), vdi), vdi)
            return math.log(max(memo[m][0][0], 1e-300)) - math.log(target)

        scale = _solve(f, scale, _FTOL[request.unit])
        if scale is None:
            raise BudgetExceededError(
                f"no GDP scale within a factor 1e8 of {guess:.6g} meets "
                f"{request.describe()}: the budget is too small (or too large) to run")
        events = _build(builder, scale, request)
        if grid(events) == vdi:
            break
    for k in range(60):  # never above the request, whatever the round-off
        hit = memo.get(scale)
        if hit is not None and hit[1] == grid(events):
            spent, name = hit[0]
        else:
            spent, name = _spend(request, events, None)
        if spent <= target:
            return Calibration(scale, events, spent, name)
        scale *= 1.0 - 1e-10 * 2 ** k
        events = _build(builder, scale, request)
    raise BudgetExceededError(f"could not meet {request.describe()}; "  # pragma: no cover
                              f"the accountant gives {spent!r}")


def calibrate_to_budget(request: PrivacyRequest, builder: Builder) -> list[GaussianMechanismEvent]:
    """Events of the fit calibrated to ``request``: ``calibrate_mu_scale(...).events``.

    See :func:`calibrate_mu_scale` (and the module notes) for the rule in each unit.
    """
    return list(calibrate_mu_scale(request, builder).events)
