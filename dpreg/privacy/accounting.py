"""The accountant interface and the registry of accountants: ``ACCOUNTANTS[name]``.

An accountant answers three questions about a set of
:class:`~dpreg.privacy.events.GaussianMechanismEvent`, in the manner of dp_accounting's
``PrivacyAccountant`` (``supports``, ``compose``, ``get_epsilon``):

* :meth:`Accountant.supports`: can it account this event?
* :meth:`Accountant.compose`: what do the events spend together, in its unit (mu,
  rho or epsilon at a delta)?
* :meth:`Accountant.epsilon_at_delta`: epsilon at a given delta.

Which accountant checks a budget is a property of the request's unit
(:data:`BUDGET_ACCOUNTANTS`): GDP composition for mu, zCDP composition for rho, the PLD
(:mod:`dpreg.privacy.accountants`) for (epsilon, delta). The ledger
(:class:`~dpreg.privacy.ledger.Ledger`) and the calibration
(:func:`~dpreg.privacy.calibration.calibrate_mu_scale`) ask :func:`budget_accountant`
and branch on nothing else; every ledger also reports the rigorous (epsilon, delta) of
:data:`HEADLINE` and, for sampling without replacement, the RDP cross-check.

Adding an accountant: a subclass of :class:`Accountant` (its name, its unit, the three
methods) and one line in :data:`ACCOUNTANTS`; a line in :data:`BUDGET_ACCOUNTANTS`
makes it the one that checks that unit's budgets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from dpreg.exceptions import OptionError
from dpreg.privacy.accountants import (
    PLD_NAME,
    RDP_NAME,
    pld_discretization,
    rdp_epsilon,
    rigorous_epsilon,
    zcdp_rho_upper,
)
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import mu_to_epsilon, rho_to_epsilon

__all__ = ["Accountant", "GDPAccountant", "ZCDPAccountant", "PLDAccountant", "RDPAccountant",
           "ACCOUNTANTS", "BUDGET_ACCOUNTANTS", "HEADLINE", "budget_accountant"]


class Accountant:
    """What an accountant answers about a set of mechanism events.

    Attributes
    ----------
    name : str
        Its name in summaries (a subclass may name the variant it used in what
        :meth:`compose` and :meth:`epsilon_at_delta` return).
    unit : str
        What :meth:`compose` returns: ``"mu"``, ``"rho"`` or ``"epsilon-delta"`` (epsilon
        at a delta), the units of :class:`~dpreg.privacy.request.PrivacyRequest`.
    """

    name: ClassVar[str] = ""
    unit: ClassVar[str] = ""

    def supports(self, event) -> bool:
        """Whether the accountant can account ``event``.

        Parameters
        ----------
        event : object
            A mechanism event.

        Returns
        -------
        bool
            ``True`` for a :class:`~dpreg.privacy.events.GaussianMechanismEvent` (the
            only mechanism dpreg's engines run).
        """
        return isinstance(event, GaussianMechanismEvent)

    def compose(self, events: Sequence[GaussianMechanismEvent], *, delta: float | None = None,
                grid: float | None = None) -> tuple[float, str]:
        """What ``events`` spend together, in :attr:`unit`.

        Parameters
        ----------
        events : sequence of GaussianMechanismEvent
            One adjacency for all.
        delta : float, optional
            The delta of an ``"epsilon-delta"`` unit (ignored by the others).
        grid : float, optional
            A discretization to hold fixed (:meth:`grid`); ``None``: the accountant's own.

        Returns
        -------
        (float, str)
            The total and the accountant's name.
        """
        raise NotImplementedError

    def epsilon_at_delta(self, events: Sequence[GaussianMechanismEvent],
                         delta: float) -> tuple[float, str]:
        """The epsilon of ``events`` composed, at ``delta``.

        Parameters
        ----------
        events : sequence of GaussianMechanismEvent
            One adjacency for all.
        delta : float
            In (0, 1).

        Returns
        -------
        (float, str)
            epsilon and the accountant's name.
        """
        raise NotImplementedError

    def grid(self, events: Sequence[GaussianMechanismEvent]) -> float | None:
        """The discretization :meth:`compose` would choose for ``events`` (the calibration
        holds it fixed while it solves for the noise), or ``None`` if it has none.

        Parameters
        ----------
        events : sequence of GaussianMechanismEvent
            The events.

        Returns
        -------
        float or None
            The grid's step.
        """
        return None


class GDPAccountant(Accountant):
    """Gaussian DP composition ``sqrt(sum mu_i^2)`` (the central limit theorem's mu for
    subsampled events: an approximation, Dong, Roth and Su 2022, Thm 3.5 and s.5)."""

    name = "GDP composition"
    unit = "mu"

    def compose(self, events, *, delta=None, grid=None):
        return math.sqrt(math.fsum(e.mu() ** 2 for e in events)), self.name

    def epsilon_at_delta(self, events, delta):
        return mu_to_epsilon(self.compose(events)[0], delta), "GDP-CLT"


class ZCDPAccountant(Accountant):
    """zCDP composition (:func:`~dpreg.privacy.accountants.zcdp_rho_upper`; rigorous, and
    subsampling does not amplify it)."""

    name = "zCDP composition"
    unit = "rho"

    def compose(self, events, *, delta=None, grid=None):
        return zcdp_rho_upper(events), self.name

    def epsilon_at_delta(self, events, delta):
        return rho_to_epsilon(zcdp_rho_upper(events), delta), self.name


class PLDAccountant(Accountant):
    """dp_accounting's privacy loss distributions, pessimistic
    (:func:`~dpreg.privacy.accountants.rigorous_epsilon`): the rigorous (epsilon, delta)."""

    name = PLD_NAME
    unit = "epsilon-delta"

    def compose(self, events, *, delta=None, grid=None):
        if delta is None:
            raise OptionError("the PLD accountant composes to epsilon at a delta: give delta")
        return rigorous_epsilon(events, delta, value_discretization_interval=grid)

    def epsilon_at_delta(self, events, delta):
        return rigorous_epsilon(events, delta)

    def grid(self, events):
        return pld_discretization(events)


class RDPAccountant(Accountant):
    """dp_accounting's Renyi DP accountant (:func:`~dpreg.privacy.accountants.rdp_epsilon`):
    the ledger's cross-check of the PLD; looser."""

    name = RDP_NAME
    unit = "epsilon-delta"

    def compose(self, events, *, delta=None, grid=None):
        if delta is None:
            raise OptionError("the RDP accountant composes to epsilon at a delta: give delta")
        return rdp_epsilon(events, delta)

    def epsilon_at_delta(self, events, delta):
        return rdp_epsilon(events, delta)


#: The accountants by name.
ACCOUNTANTS: dict[str, Accountant] = {
    "gdp": GDPAccountant(),
    "zcdp": ZCDPAccountant(),
    "pld": PLDAccountant(),
    "rdp": RDPAccountant(),
}
#: The accountant that checks a budget in each unit of a request.
BUDGET_ACCOUNTANTS: dict[str, str] = {"mu": "gdp", "rho": "zcdp", "epsilon-delta": "pld"}
#: The accountant of every ledger's rigorous (epsilon, delta).
HEADLINE: Accountant = ACCOUNTANTS["pld"]


def budget_accountant(unit: str) -> Accountant:
    """The accountant that checks budgets in ``unit``.

    Parameters
    ----------
    unit : {"mu", "rho", "epsilon-delta"}
        A request's unit.

    Returns
    -------
    Accountant
        ``ACCOUNTANTS[BUDGET_ACCOUNTANTS[unit]]``; its :attr:`~Accountant.unit` is
        ``unit``.
    """
    try:
        return ACCOUNTANTS[BUDGET_ACCOUNTANTS[unit]]
    except KeyError:
        raise OptionError(f"no accountant checks budgets in {unit!r}; units: "
                          f"{sorted(BUDGET_ACCOUNTANTS)}") from None
