"""Tests of calibrate_to_budget: the promise holds in the request's unit."""

import math

import pytest

from dpreg.exceptions import BudgetExceededError, OptionError
from dpreg.privacy.accountants import rigorous_epsilon, zcdp_rho_upper
from dpreg.privacy.calibration import (
    calibrate_gaussian_noise,
    calibrate_mu_scale,
    calibrate_to_budget,
)
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import calibrate_dpsgd, mu_to_epsilon
from dpreg.privacy.request import PrivacyRequest

SPLIT = {"path": 0.8, "hessian": 0.1, "score": 0.1}


def make_builder(sampling, n=1000, m=10, steps=2000, clip=1.0):
    """The model's pattern: path by the CLT to its share, two matrices exactly."""
    adjacency = "replace-one" if sampling == "uniform" else "add/remove"
    factor = 2.0 if adjacency == "replace-one" else 1.0

    def builder(mu_scale):
        s = calibrate_dpsgd(mu_scale * math.sqrt(SPLIT["path"]), n, m, steps, sampling)
        sens = factor * clip
        events = [GaussianMechanismEvent("DP-SGD path", sens, s * sens, adjacency, sampling,
                                         m, n, steps)]
        for name in ("hessian", "score"):
            sens_i = factor * clip ** 2 / n
            events.append(GaussianMechanismEvent(
                name, sens_i, calibrate_gaussian_noise(sens_i, mu_scale * math.sqrt(SPLIT[name])),
                adjacency))
        return events
    return builder


def total_mu(events):
    return math.sqrt(sum(e.mu() ** 2 for e in events))


@pytest.mark.parametrize("sampling", ["poisson", "uniform"])
def test_mu_request(sampling):
    events = calibrate_to_budget(PrivacyRequest.from_options(mu=2), make_builder(sampling))
    assert isinstance(events, list) and len(events) == 3
    # rtol 1e-9: CLT path (calibrated to 1e-10) and exact matrices compose in squares
    assert total_mu(events) == pytest.approx(2.0, rel=1e-9)


@pytest.mark.parametrize("sampling, eps", [("poisson", 1.0), ("poisson", 8.0),
                                           ("uniform", 2.0)])
def test_epsilon_delta_request_holds_under_the_rigorous_accountant(sampling, eps):
    request = PrivacyRequest.from_options(epsilon=eps, delta=1e-6)
    cal = calibrate_mu_scale(request, make_builder(sampling))
    got, name = rigorous_epsilon(cal.events, 1e-6)
    assert name == cal.accountant
    assert got <= eps  # never above the promise
    assert got == pytest.approx(eps, rel=1e-6)  # and not wastefully below it
    assert cal.achieved == got
    clt = mu_to_epsilon(total_mu(cal.events), 1e-6)
    if sampling == "poisson":  # the rigorous accountant, not the CLT, is what binds
        assert clt < eps
    else:  # the without-replacement PLD is close to the CLT here (RDP was ~2x)
        assert clt == pytest.approx(eps, rel=0.05)


@pytest.mark.parametrize("sampling", ["poisson", "uniform"])
def test_rho_request(sampling):
    cal = calibrate_mu_scale(PrivacyRequest.from_options(rho=0.5), make_builder(sampling))
    rho = zcdp_rho_upper(cal.events)
    assert rho <= 0.5
    assert rho == pytest.approx(0.5, rel=1e-9)


def test_rho_request_full_batch_is_exact():
    # unsampled (DP-GD): zCDP rho = mu^2 / 2 exactly, so mu_scale = sqrt(2 rho)
    def builder(mu_scale):
        return [GaussianMechanismEvent("gradient", 1.0, math.sqrt(100) / mu_scale,
                                       "replace-one", count=100)]
    cal = calibrate_mu_scale(PrivacyRequest.from_options(rho=0.015), builder)
    assert cal.mu_scale == pytest.approx(math.sqrt(0.03), rel=1e-9)


def test_tiny_and_huge_budgets_work():
    builder = make_builder("poisson", steps=100)
    for eps in (1e-3, 200.0):
        request = PrivacyRequest.from_options(epsilon=eps, delta=1e-5)
        got = rigorous_epsilon(calibrate_to_budget(request, builder), 1e-5)[0]
        assert got == pytest.approx(eps, rel=1e-6)


def test_budget_too_small_to_build_names_the_request():
    def builder(mu_scale):  # e.g. a mechanism that cannot add more than unit noise
        return [GaussianMechanismEvent("A", 1.0, min(1.0 / mu_scale, 1e300 * mu_scale),
                                       "add/remove")] if mu_scale > 1e-3 else [
            GaussianMechanismEvent("A", 1.0, math.inf, "add/remove")]
    with pytest.raises(BudgetExceededError, match=r"epsilon, delta\) = \(1e-6, 1e-5\)"):
        calibrate_to_budget(PrivacyRequest.from_options(epsilon=1e-6, delta=1e-5), builder)


def test_builder_that_overspends_mu_is_refused():
    def builder(mu_scale):
        return [GaussianMechanismEvent("A", 1.0, 1.0 / mu_scale, "add/remove"),
                GaussianMechanismEvent("B", 1.0, 1.0 / mu_scale, "add/remove")]
    with pytest.raises(BudgetExceededError, match="mu = 2.8"):
        calibrate_to_budget(PrivacyRequest.from_options(mu=2), builder)


def test_calibrate_gaussian_noise():
    assert calibrate_gaussian_noise(0.02, 0.5) == 0.04
    with pytest.raises(BudgetExceededError, match="mu"):
        calibrate_gaussian_noise(1.0, 0.0)
    with pytest.raises(OptionError, match="sensitivity"):
        calibrate_gaussian_noise(-1.0, 1.0)
