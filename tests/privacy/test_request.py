"""Tests of PrivacyRequest and split_budget."""

import math

import pytest

from dpreg.exceptions import BudgetExceededError, OptionError
from dpreg.privacy.request import PrivacyRequest, split_budget


class TestFromOptions:
    def test_units(self):
        assert PrivacyRequest.from_options(mu=2).unit == "mu"
        r = PrivacyRequest.from_options(epsilon=1, delta=1e-5)
        assert (r.unit, r.epsilon, r.delta, r.mu, r.rho) == ("epsilon-delta", 1.0, 1e-5,
                                                             None, None)
        assert PrivacyRequest.from_options(rho=0.5).value == 0.5

    @pytest.mark.parametrize("kwargs, words", [
        ({}, "nothing"),
        (dict(mu=1, rho=1), "mu=1, rho=1"),
        (dict(mu=1, epsilon=1, delta=1e-5), "mu=1"),
        (dict(epsilon=1), "delta"),
        (dict(delta=1e-5), "delta=1e-05"),
        (dict(mu=1, delta=1e-5), "delta"),
    ])
    def test_exactly_one_budget(self, kwargs, words):
        with pytest.raises(BudgetExceededError, match=words):
            PrivacyRequest.from_options(**kwargs)

    @pytest.mark.parametrize("kwargs, name", [
        (dict(mu=0), "mu"), (dict(mu=math.inf), "mu"), (dict(mu=-1), "mu"),
        (dict(epsilon=0, delta=1e-5), "epsilon"), (dict(epsilon=1, delta=1), "delta"),
        (dict(epsilon=1, delta=0), "delta"), (dict(rho=float("nan")), "rho"),
        (dict(mu="2"), "mu"), (dict(mu=True), "mu"),
    ])
    def test_ranges_name_the_parameter(self, kwargs, name):
        with pytest.raises(BudgetExceededError, match=name):
            PrivacyRequest.from_options(**kwargs)

    def test_direct_construction_is_validated(self):
        with pytest.raises(BudgetExceededError, match="rho"):
            PrivacyRequest("mu", mu=1.0, rho=1.0)
        with pytest.raises(BudgetExceededError, match="unit"):
            PrivacyRequest("gdp", mu=1.0)


@pytest.mark.parametrize("kwargs, text", [
    (dict(mu=2), "mu = 2 (Gaussian DP)"),
    (dict(epsilon=1, delta=1e-5), "(epsilon, delta) = (1, 1e-5)"),
    (dict(epsilon=0.75, delta=1e-10), "(epsilon, delta) = (0.75, 1e-10)"),
    (dict(rho=0.5), "rho = 0.5 (zCDP)"),
])
def test_describe(kwargs, text):
    assert PrivacyRequest.from_options(**kwargs).describe() == text


class TestSplitBudget:
    def test_valid(self):
        out = split_budget({"path": 0.8, "hessian": 0.1, "score": 0.1})
        assert out == pytest.approx({"path": 0.8, "hessian": 0.1, "score": 0.1}, rel=1e-15)
        assert math.fsum(out.values()) == pytest.approx(1.0, abs=1e-15)

    @pytest.mark.parametrize("split, words", [
        ({}, "budget_split"),
        ({"path": 0.5, "score": 0.4}, "sum to 1"),
        ({"path": 1.2, "score": -0.2}, "budget_split\\['path'\\]|budget_split\\['score'\\]"),
        ({"path": 1.0, "score": 0.0}, "budget_split\\['score'\\]"),
        ({"path": 1.0, "": 0.0}, "keys"),
        ([0.5, 0.5], "budget_split"),
    ])
    def test_errors_name_budget_split_and_key(self, split, words):
        with pytest.raises(OptionError, match=words):
            split_budget(split)
