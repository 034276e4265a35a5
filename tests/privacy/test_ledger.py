"""Tests of the Ledger: append-only, check before spend, picklable, readable."""

import math
import pickle

import pytest

from dpreg.exceptions import BudgetExceededError, OptionError
from dpreg.privacy.accountants import rigorous_epsilon
from dpreg.privacy.events import GaussianMechanismEvent as Event
from dpreg.privacy.gdp import mu_to_epsilon
from dpreg.privacy.ledger import Ledger
from dpreg.privacy.request import PrivacyRequest

PATH = Event("DP-SGD path", 1.0, 1.2, "add/remove", "poisson", 10, 1000, 2000)
HESS = Event("Hessian A", 0.001, 0.001 / 0.5, "add/remove")  # mu = 0.5 exactly
SCORE = Event("score covariance S", 0.001, 0.001 / 0.4, "add/remove")  # mu = 0.4


def mu_ledger(mu=3.0):
    ledger = Ledger(PrivacyRequest.from_options(mu=mu))
    for e in (PATH, HESS, SCORE):
        ledger.record(e)
    return ledger


def test_totals():
    ledger = mu_ledger()
    mu = math.sqrt(PATH.mu() ** 2 + 0.25 + 0.16)
    assert ledger.total_mu == pytest.approx(mu, rel=1e-14)
    assert ledger.delta == 1e-5
    assert ledger.epsilon_gdp == pytest.approx(mu_to_epsilon(mu, 1e-5), rel=1e-14)
    eps, name = ledger.epsilon_rigorous
    assert (eps, name) == rigorous_epsilon([PATH, HESS, SCORE], 1e-5)
    assert ledger.rho_total == pytest.approx(mu ** 2 / 2, rel=1e-14)
    assert ledger.rho_rigorous == pytest.approx(2000 / (2 * 1.2 ** 2) + 0.125 + 0.08, rel=1e-14)


def test_append_only():
    ledger = mu_ledger()
    assert isinstance(ledger.events, tuple)
    assert ledger.events == (PATH, HESS, SCORE)
    assert not hasattr(ledger, "remove") and not hasattr(ledger, "clear")
    with pytest.raises(AttributeError):
        ledger.events.append(PATH)


@pytest.mark.parametrize("request_kwargs", [dict(mu=1.0), dict(epsilon=2.0, delta=1e-5),
                                            dict(rho=0.1)])
def test_refuses_overrun_before_changing_state(request_kwargs):
    ledger = Ledger(PrivacyRequest.from_options(**request_kwargs))
    small = Event("A", 1.0, 10.0, "add/remove")  # mu = 0.1
    ledger.record(small)
    before = (ledger.events, ledger.total_mu, ledger.epsilon_rigorous)
    big = Event("B", 1.0, 0.5, "add/remove")  # mu = 2: over every request above
    with pytest.raises(BudgetExceededError, match="'B'.*nothing was recorded"):
        ledger.record(big)
    assert (ledger.events, ledger.total_mu, ledger.epsilon_rigorous) == before


def test_fills_the_budget_up_to_round_off():
    ledger = Ledger(PrivacyRequest.from_options(mu=1.0))
    ledger.record(Event("A", 1.0, 1 / 0.6, "add/remove"))
    ledger.record(Event("B", 1.0, 1 / 0.8, "add/remove"))  # total exactly 1 (to round-off)
    with pytest.raises(BudgetExceededError):
        ledger.record(Event("C", 1.0, 1e4, "add/remove"))  # mu 1e-4: 5e-9 too much
    ledger.record(Event("D", 1.0, 1e6, "add/remove"))  # mu 1e-6: within the 1e-9 round-off


def test_rejects_mixed_adjacency_and_non_events():
    ledger = mu_ledger()
    with pytest.raises(OptionError, match="adjacency"):
        ledger.record(Event("R", 1.0, 100.0, "replace-one"))
    with pytest.raises(OptionError, match="GaussianMechanismEvent"):
        ledger.record("Hessian")


def test_delta_rules():
    eps_request = PrivacyRequest.from_options(epsilon=1.0, delta=1e-7)
    assert Ledger(eps_request).delta == 1e-7
    assert Ledger(eps_request, delta=1e-7).delta == 1e-7
    with pytest.raises(OptionError, match="delta"):
        Ledger(eps_request, delta=1e-5)
    assert Ledger(PrivacyRequest.from_options(mu=1), delta=1e-8).delta == 1e-8
    with pytest.raises(OptionError, match="delta"):
        Ledger(PrivacyRequest.from_options(mu=1), delta=2.0)


def test_pickles_and_holds_no_data():
    ledger = mu_ledger()
    _ = ledger.epsilon_rigorous
    clone = pickle.loads(pickle.dumps(ledger))
    assert clone.events == ledger.events
    assert clone.total_mu == ledger.total_mu
    assert clone.epsilon_rigorous == ledger.epsilon_rigorous
    assert clone.request == ledger.request
    assert set(vars(ledger)) == {"_request", "_delta", "_events", "_rigorous"}


def test_to_frame():
    frame = mu_ledger().to_frame()
    assert list(frame.columns) == ["name", "scope", "adjacency", "sampling", "sample_rate", "steps",
                                   "sensitivity", "noise_std", "noise_multiplier", "mu"]
    assert list(frame["name"]) == ["DP-SGD path", "Hessian A", "score covariance S"]
    assert set(frame["scope"]) == {"central"}
    assert frame.loc[0, "steps"] == 2000 and frame.loc[0, "sample_rate"] == 0.01
    assert frame.loc[1, "mu"] == pytest.approx(0.5, rel=1e-15)


def test_as_text_has_the_totals():
    ledger = mu_ledger()
    text = ledger.as_text()
    eps, name = ledger.epsilon_rigorous
    for piece in ("mu = 3 (Gaussian DP)", "DP-SGD path", "Hessian A", f"{ledger.total_mu:.4g}",
                  f"({eps:.4g}, 1e-5)", f"GDP-CLT: ({ledger.epsilon_gdp:.4g}, 1e-5)", name,
                  "Accountant"):
        assert piece in text
    assert "(no mechanisms recorded)" in Ledger(PrivacyRequest.from_options(mu=1)).as_text()


def test_epsilon_request_records_with_the_rigorous_accountant():
    request = PrivacyRequest.from_options(epsilon=3.0, delta=1e-5)
    ledger = Ledger(request)
    ledger.record(PATH)
    assert ledger.epsilon_rigorous == rigorous_epsilon([PATH], 1e-5)
    # a mechanism that fits under the CLT but not under the rigorous accountant is refused
    eps_path = ledger.epsilon_rigorous[0]
    assert eps_path < 3.0
    with pytest.raises(BudgetExceededError, match="epsilon"):
        ledger.record(Event("big", 1.0, 0.45, "add/remove"))
