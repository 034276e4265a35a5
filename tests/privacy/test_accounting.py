"""The accountant interface (dpreg.privacy.accounting): each accountant against an
independent computation (closed forms, dp_accounting called directly), and the seam: an
accountant registered for a unit is the one the ledger and the calibration ask."""

import math

import dp_accounting
import pytest
from dp_accounting.rdp import RdpAccountant

from dpreg.exceptions import BudgetExceededError, OptionError
from dpreg.privacy import accounting
from dpreg.privacy.accounting import (
    ACCOUNTANTS,
    BUDGET_ACCOUNTANTS,
    HEADLINE,
    Accountant,
    budget_accountant,
)
from dpreg.privacy.calibration import calibrate_mu_scale, calibrate_to_budget
from dpreg.privacy.events import GaussianMechanismEvent as Event
from dpreg.privacy.gdp import mu_to_epsilon
from dpreg.privacy.ledger import Ledger
from dpreg.privacy.request import PrivacyRequest

# two unsampled Gaussians, mu = 0.6 and 0.8: together exactly 1-GDP (add/remove)
A = Event("A", 1.0, 1.0 / 0.6, "add/remove")
B = Event("B", 2.0, 2.0 / 0.8, "add/remove")
PATH = Event("DP-SGD path", 1.0, 1.2, "add/remove", "poisson", 10, 1000, 200)


def test_every_budget_unit_has_its_accountant():
    assert set(BUDGET_ACCOUNTANTS) == {"mu", "rho", "epsilon-delta"}
    for unit in BUDGET_ACCOUNTANTS:
        assert budget_accountant(unit).unit == unit
    assert HEADLINE is ACCOUNTANTS["pld"]
    with pytest.raises(OptionError, match="no accountant checks budgets in 'nats'"):
        budget_accountant("nats")


def test_every_accountant_supports_gaussian_events_only():
    for accountant in ACCOUNTANTS.values():
        assert isinstance(accountant, Accountant) and accountant.name and accountant.unit
        assert accountant.supports(A) and not accountant.supports("A")


def test_gdp_composes_in_squares():
    total, name = ACCOUNTANTS["gdp"].compose([A, B])
    assert total == pytest.approx(1.0, rel=1e-14) and name == "GDP composition"
    # 1-GDP at delta = 1e-5: Dong, Roth and Su (2022), Cor. 2.13, by hand
    assert ACCOUNTANTS["gdp"].epsilon_at_delta([A, B], 1e-5)[0] == pytest.approx(
        mu_to_epsilon(1.0, 1e-5), rel=1e-12)


def test_zcdp_adds_rho():
    # rho of a Gaussian with noise multiplier s is 1/(2 s^2); 200 sampled steps as unsampled
    rho = 0.6 ** 2 / 2 + 0.8 ** 2 / 2 + 200 / (2 * 1.2 ** 2)
    assert ACCOUNTANTS["zcdp"].compose([A, B, PATH])[0] == pytest.approx(rho, rel=1e-14)
    eps = rho + 2 * math.sqrt(rho * math.log(1e5))  # Bun and Steinke (2016), Prop. 1.3
    assert ACCOUNTANTS["zcdp"].epsilon_at_delta([A, B, PATH], 1e-5)[0] == pytest.approx(
        eps, rel=1e-12)


def test_pld_of_gaussians_is_the_gdp_epsilon():
    # unsampled Gaussians compose exactly: the PLD's epsilon is the 1-GDP epsilon (rtol
    # 1e-3: the PLD's pessimistic discretization)
    eps, _ = ACCOUNTANTS["pld"].compose([A, B], delta=1e-5)
    assert mu_to_epsilon(1.0, 1e-5) <= eps <= mu_to_epsilon(1.0, 1e-5) * (1 + 1e-3)
    assert ACCOUNTANTS["pld"].epsilon_at_delta([A, B], 1e-5)[0] == eps
    assert ACCOUNTANTS["pld"].grid([A, B]) > 0 and ACCOUNTANTS["gdp"].grid([A, B]) is None
    with pytest.raises(OptionError, match="give delta"):
        ACCOUNTANTS["pld"].compose([A, B])


def test_rdp_is_dp_accountings_rdp_accountant():
    acc = RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(dp_accounting.GaussianDpEvent(1 / 0.6))
    acc.compose(dp_accounting.GaussianDpEvent(1 / 0.8))
    acc.compose(dp_accounting.PoissonSampledDpEvent(
        0.01, dp_accounting.GaussianDpEvent(1.2)), 200)
    # rtol 1e-9: the same accountant on the same events written out by hand
    assert ACCOUNTANTS["rdp"].epsilon_at_delta([A, B, PATH], 1e-5)[0] == pytest.approx(
        acc.get_epsilon(1e-5), rel=1e-9)


class Doubled(Accountant):
    """A toy accountant for mu budgets that charges twice the GDP total."""

    name = "doubled GDP"
    unit = "mu"

    def compose(self, events, *, delta=None, grid=None):
        return 2 * ACCOUNTANTS["gdp"].compose(events)[0], self.name

    def epsilon_at_delta(self, events, delta):
        return mu_to_epsilon(self.compose(events)[0], delta), self.name


class NoB(Doubled):
    """A toy accountant that does not support the event named B."""

    def supports(self, event):
        return super().supports(event) and event.name != "B"


def test_an_accountant_registered_for_a_unit_checks_its_budgets(monkeypatch):
    monkeypatch.setitem(ACCOUNTANTS, "doubled", Doubled())
    monkeypatch.setitem(BUDGET_ACCOUNTANTS, "mu", "doubled")
    assert accounting.budget_accountant("mu").name == "doubled GDP"
    ledger = Ledger(PrivacyRequest.from_options(mu=1.5))
    ledger.record(A)  # charged 1.2
    with pytest.raises(BudgetExceededError, match="mu = 2 in total"):
        ledger.record(B)  # 2.0 > 1.5, though the GDP total is 1
    assert ledger.events == (A,)
    # the calibration checks the request under it too
    cal = calibrate_mu_scale(PrivacyRequest.from_options(mu=3.0), lambda m: [A, B])
    assert cal.accountant == "doubled GDP" and cal.achieved == pytest.approx(2.0, rel=1e-14)
    with pytest.raises(BudgetExceededError, match="spend mu = 2"):
        calibrate_to_budget(PrivacyRequest.from_options(mu=1.5), lambda m: [A, B])


def test_the_ledger_refuses_an_event_its_accountant_does_not_support(monkeypatch):
    monkeypatch.setitem(ACCOUNTANTS, "nob", NoB())
    monkeypatch.setitem(BUDGET_ACCOUNTANTS, "mu", "nob")
    ledger = Ledger(PrivacyRequest.from_options(mu=10))
    ledger.record(A)
    with pytest.raises(OptionError, match="does not support event 'B'"):
        ledger.record(B)
    assert ledger.events == (A,)
