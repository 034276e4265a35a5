"""Tests of the seeded simulators of the papers' designs."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from dpreg.datasets import (
    Simulated,
    simulate_ldp_design,
    simulate_linear,
    simulate_logistic,
)
from dpreg.exceptions import OptionError

# Recovery checks allow 4 standard errors: with a fixed seed they are deterministic,
# and for a fresh seed a false failure has probability about 6e-5 per coefficient.
Z = 4.0

SIMULATORS = [
    lambda seed: simulate_linear(50, cov="toeplitz", random_state=seed),
    lambda seed: simulate_logistic(50, p=2, random_state=seed),
    lambda seed: simulate_ldp_design(50, family="huber", random_state=seed),
    lambda seed: simulate_ldp_design(50, family="logistic", random_state=seed),
]


@pytest.fixture
def seed():
    return 20240601


@pytest.mark.parametrize("make", SIMULATORS)
def test_reproducible(make, seed):
    a, b, c = make(seed), make(seed), make(seed + 1)
    pd.testing.assert_frame_equal(a.data, b.data)
    pd.testing.assert_series_equal(a.params, b.params)
    assert not a.data.equals(c.data)


def test_generator_and_int_seed_agree(seed):
    a = simulate_linear(20, random_state=seed)
    b = simulate_linear(20, random_state=np.random.default_rng(seed))
    pd.testing.assert_frame_equal(a.data, b.data)


def test_record_shape(seed):
    sim = simulate_linear(10, p=4, random_state=seed)
    assert isinstance(sim, Simulated)
    assert list(sim.data.columns) == ["y", "x1", "x2", "x3", "x4"]
    assert list(sim.params.index) == ["x1", "x2", "x3", "x4"]
    assert sim.formula == "y ~ x1 + x2 + x3 + x4 - 1"
    assert ((sim.params >= 0) & (sim.params <= 1)).all()
    with pytest.raises(dataclasses.FrozenInstanceError):
        sim.formula = "y ~ x1"
    with_icpt = simulate_linear(10, intercept=True, theta=[2, 1, 1, 1], random_state=seed)
    assert list(with_icpt.params.index) == ["Intercept", "x1", "x2", "x3"]
    assert with_icpt.formula == "y ~ x1 + x2 + x3"


def test_toeplitz_covariance(seed):
    n, rho = 200_000, 0.5
    x = simulate_linear(n, cov="toeplitz", rho=rho, random_state=seed).data[["x1", "x2", "x3"]]
    sigma = rho ** np.abs(np.subtract.outer(np.arange(3), np.arange(3)))
    sample = x.to_numpy().T @ x.to_numpy() / n  # mean is known to be zero
    # Var(x_i x_j) = S_ii S_jj + S_ij^2 for a centred Gaussian vector
    se = np.sqrt((np.outer(np.diag(sigma), np.diag(sigma)) + sigma**2) / n)
    assert np.all(np.abs(sample - sigma) < Z * se)


def test_identity_covariance(seed):
    x = simulate_linear(100_000, p=2, random_state=seed).data[["x1", "x2"]].to_numpy()
    assert abs(np.corrcoef(x.T)[0, 1]) < Z / np.sqrt(100_000)


@pytest.mark.parametrize("cov", ["identity", "toeplitz"])
def test_linear_ols_recovers_theta(cov, seed):
    sim = simulate_linear(20_000, cov=cov, noise_sd=2.0, random_state=seed)
    res = smf.ols(sim.formula, sim.data).fit()
    assert np.all(np.abs(res.params - sim.params) < Z * res.bse)
    assert abs(np.sqrt(res.scale) - 2.0) < 0.05


def test_logistic(seed):
    sim = simulate_logistic(20_000, cov="toeplitz", random_state=seed)
    assert sim.data["y"].dtype == np.int64
    assert set(sim.data["y"].unique()) == {0, 1}
    assert ((sim.params >= 0) & (sim.params <= 0.5)).all()
    res = smf.logit(sim.formula, sim.data).fit(disp=0)
    assert np.all(np.abs(res.params - sim.params) < Z * res.bse)


@pytest.mark.parametrize("family", ["linear", "huber", "expectile"])
def test_ldp_design_linear_families(family, seed):
    sim = simulate_ldp_design(20_000, family=family, random_state=seed)
    assert sim.formula == "y ~ x1 + x2 + x3"
    assert sim.params.to_dict() == {"Intercept": 1.0, "x1": 1.0, "x2": 1.0, "x3": 1.0}
    res = smf.ols(sim.formula, sim.data).fit()
    assert np.all(np.abs(res.params - sim.params) < Z * res.bse)
    assert abs(np.sqrt(res.scale) - 0.5) < 0.01


def test_ldp_design_logistic(seed):
    sim = simulate_ldp_design(
        20_000, family="logistic", theta0=[0.5, 1, -1, 0.25], random_state=seed
    )
    assert set(sim.data["y"].unique()) == {0, 1}
    res = smf.logit(sim.formula, sim.data).fit(disp=0)
    assert np.all(np.abs(res.params - sim.params) < Z * res.bse)


def test_ldp_design_expectile_intercept(seed):
    sim = simulate_ldp_design(50_000, family="expectile", tau=0.8, random_state=seed)
    shift = sim.params["Intercept"] - 1.0
    assert shift > 0 and (sim.params[["x1", "x2", "x3"]] == 1.0).all()
    # first-order condition of the tau-expectile on the simulated errors
    resid = sim.data["y"] - sim.data[["x1", "x2", "x3"]].sum(axis=1) - sim.params["Intercept"]
    foc = np.where(resid > 0, 0.8, 0.2) * resid
    assert abs(foc.mean()) < Z * foc.std() / np.sqrt(len(foc))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n": 0}, "n"),
        ({"n": 2.5}, "n"),
        ({"n": True}, "n"),
        ({"p": 0}, "p"),
        ({"cov": "ar1"}, "cov"),
        ({"cov": "toeplitz", "rho": 1.0}, "rho"),
        ({"rho": -0.1}, "rho"),
        ({"theta": [1.0, 2.0]}, "theta"),
        ({"theta": [1.0, np.nan, 1.0]}, "theta"),
        ({"noise_sd": -1.0}, "noise_sd"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
def test_linear_validation(kwargs, name):
    args = {"n": 10, **kwargs}
    with pytest.raises(OptionError, match=f"^{name} must"):
        simulate_linear(**args)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"family": "poisson"}, "family"),
        ({"noise": "t"}, "noise"),
        ({"tau": 1.0}, "tau"),
        ({"theta0": [1.0, 1.0, 1.0]}, "theta0"),
        ({"p": -1}, "p"),
    ],
)
def test_ldp_design_validation(kwargs, name):
    with pytest.raises(OptionError, match=f"^{name} must"):
        simulate_ldp_design(10, **kwargs)
