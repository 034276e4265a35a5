"""Tests of GaussianMechanismEvent: validation, mu, and the dp_accounting mapping."""

import dataclasses
import math

import dp_accounting
import numpy as np
import pytest

from dpreg.exceptions import OptionError
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import dpsgd_mu

PATH = dict(name="DP-SGD path", sensitivity=2.0, noise_std=3.0, adjacency="replace-one",
            sampling="uniform", sample_size=4, population=100, count=50)


def test_fields_and_properties():
    e = GaussianMechanismEvent(**PATH)
    assert e.noise_multiplier == 1.5
    assert e.sample_rate == 0.04
    assert e.is_subsampled
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.noise_std = 1.0


def test_mu_uses_clt_for_subsampled_and_exact_otherwise():
    e = GaussianMechanismEvent(**PATH)
    assert e.mu() == dpsgd_mu(100, 4, 50, 1.5, "uniform")
    g = GaussianMechanismEvent("Hessian A", 0.5, 0.25, "replace-one", count=4)
    assert g.mu() == pytest.approx(4.0, rel=1e-15)  # sqrt(4) * 0.5 / 0.25
    full = GaussianMechanismEvent(**{**PATH, "sample_size": 100})
    assert full.mu() == pytest.approx(math.sqrt(50) / 1.5, rel=1e-15)


def test_numpy_scalars_are_accepted():
    e = GaussianMechanismEvent("p", np.float64(1.0), np.float64(2.0), "add/remove", "poisson",
                               np.float64(3.5), np.int64(100), np.int64(10))
    assert e.sample_rate == 0.035


@pytest.mark.parametrize("change, field", [
    (dict(name=""), "name"),
    (dict(sensitivity=0.0), "sensitivity"),
    (dict(sensitivity=math.inf), "sensitivity"),
    (dict(noise_std=-1.0), "noise_std"),
    (dict(noise_std=float("nan")), "noise_std"),
    (dict(adjacency="swap"), "adjacency"),
    (dict(sampling="bernoulli"), "sampling"),
    (dict(count=0), "count"),
    (dict(count=2.5), "count"),
    (dict(sample_size=200), "sample_size"),
    (dict(sample_size=2.5), "sample_size"),
    (dict(population=None), "population"),
    (dict(adjacency="add/remove"), "adjacency"),  # uniform is analysed under replace-one
])
def test_validation_names_the_field(change, field):
    with pytest.raises(OptionError, match=field):
        GaussianMechanismEvent(**{**PATH, **change})


def test_poisson_needs_add_remove():
    with pytest.raises(OptionError, match="adjacency"):
        GaussianMechanismEvent("p", 1.0, 1.0, "replace-one", "poisson", 10, 100, 5)


class TestToDpAccounting:
    def test_uniform(self):
        ev = GaussianMechanismEvent(**PATH).to_dp_accounting()
        assert ev == dp_accounting.SelfComposedDpEvent(
            dp_accounting.SampledWithoutReplacementDpEvent(
                100, 4, dp_accounting.GaussianDpEvent(1.5)), 50)

    def test_poisson(self):
        ev = GaussianMechanismEvent("p", 1.0, 2.0, "add/remove", "poisson", 5, 100,
                                    7).to_dp_accounting()
        assert ev == dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(2.0)), 7)

    def test_plain(self):
        ev = GaussianMechanismEvent("A", 1.0, 2.0, "add/remove").to_dp_accounting()
        assert ev == dp_accounting.GaussianDpEvent(2.0)
        ev = GaussianMechanismEvent("A", 1.0, 2.0, "add/remove", count=3).to_dp_accounting()
        assert ev == dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 3)
