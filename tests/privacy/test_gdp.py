"""Tests of dpreg.privacy.gdp against independent references.

References: mpmath at 50-60 digits of the formulas as written in Opacus
(``opacus/accountants/analysis/gdp.py``: ``compute_mu_uniform``, ``compute_mu_poisson``,
``delta_eps_mu``), Dong, Roth and Su (2022, Cor. 2.13), and dp_accounting's PLD of a
Gaussian mechanism (which is exactly mu-GDP for noise multiplier 1/mu).
"""

import json
import math
import pathlib
import warnings

import dp_accounting
import mpmath as mp
import numpy as np
import pytest
from dp_accounting.pld import PLDAccountant

from dpreg.exceptions import BudgetExceededError, OptionError
from dpreg.privacy import gdp

REF = json.loads((pathlib.Path(__file__).parents[1] / "results" /
                  "privacy_reference.json").read_text())


# ---- independent reference: Opacus' formulas evaluated by mpmath at 60 digits -------
def opacus_mu_uniform(steps, noise_multiplier, sample_rate):
    """opacus/accountants/analysis/gdp.py::compute_mu_uniform, in mpmath."""
    with mp.workdps(60):
        s = mp.mpf(noise_multiplier)
        c = mp.mpf(sample_rate) * mp.sqrt(steps)
        return mp.sqrt(2) * c * mp.sqrt(mp.exp(s ** -2) * mp.ncdf(mp.mpf(1.5) / s)
                                        + 3 * mp.ncdf(mp.mpf(-0.5) / s) - 2)


def opacus_mu_poisson(steps, noise_multiplier, sample_rate):
    """opacus/accountants/analysis/gdp.py::compute_mu_poisson, in mpmath."""
    with mp.workdps(60):
        s = mp.mpf(noise_multiplier)
        return mp.sqrt(mp.exp(s ** -2) - 1) * mp.sqrt(steps) * mp.mpf(sample_rate)


def mp_delta(mu, eps):
    """delta_eps_mu of the same file (DRS 2022, Cor. 2.13), in mpmath."""
    with mp.workdps(50):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


OPACUS = {"uniform": opacus_mu_uniform, "poisson": opacus_mu_poisson}
GRID = [(n, m, t, s) for n in (1000, 1399, 10 ** 5) for m in (1, 16, 128)
        for t in (n, round(n ** 1.5), n * n) for s in (0.5, 1, 2, 5, 20)]


class TestDpsgdMu:
    @pytest.mark.parametrize("sampling", ["uniform", "poisson"])
    def test_against_opacus_formulas(self, sampling):
        # rtol 1e-9: both sides are the same closed form, ours in float64 with
        # cancellation-free algebra, the reference at 60 digits.
        got = np.array([gdp.dpsgd_mu(n, m, t, s, sampling) for n, m, t, s in GRID])
        ref = np.array([float(OPACUS[sampling](t, s, mp.mpf(m) / n)) for n, m, t, s in GRID])
        np.testing.assert_allclose(got, ref, rtol=1e-9)

    @pytest.mark.parametrize("sampling", ["uniform", "poisson"])
    @pytest.mark.parametrize("s", [30.0, 100.0, 1e3, 1e5])
    def test_large_noise_no_cancellation(self, sampling, s):
        # rtol 1e-12 (the brief's target up to s = 1e3): the naive formula loses
        # about 2 log10(s) digits to cancellation here.
        got = gdp.dpsgd_mu(1399, 16, 1399 ** 2, s, sampling)
        ref = float(OPACUS[sampling](1399 ** 2, s, mp.mpf(16) / 1399))
        assert got == pytest.approx(ref, rel=1e-12, abs=0)

    @pytest.mark.parametrize("sampling", ["uniform", "poisson"])
    def test_tiny_noise_is_inf_or_exact_without_warning(self, sampling):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert gdp.dpsgd_mu(1000, 10, 100, 0.01, sampling) == math.inf
            got = gdp.dpsgd_mu(1000, 10, 100, 0.05, sampling)  # exp(400): finite
        ref = float(OPACUS[sampling](100, 0.05, mp.mpf(10) / 1000))
        assert got == pytest.approx(ref, rel=1e-12)

    def test_full_batch_is_exact(self):
        for sampling in ("uniform", "poisson", "none"):
            assert gdp.dpsgd_mu(500, 500, 400, 2.0, sampling) == pytest.approx(10.0, rel=1e-15)

    def test_vectorized_in_noise_multiplier(self):
        s = np.array([0.5, 1.0, 4.0])
        got = gdp.dpsgd_mu(1000, 16, 5000, s)
        assert got.shape == (3,)
        assert got[1] == gdp.dpsgd_mu(1000, 16, 5000, 1.0)

    @pytest.mark.parametrize("kwargs, name", [
        (dict(n=100, batch_size=200, steps=1, noise_multiplier=1.0), "batch_size"),
        (dict(n=100, batch_size=10, steps=0, noise_multiplier=1.0), "steps"),
        (dict(n=100, batch_size=10, steps=1, noise_multiplier=-1.0), "noise_multiplier"),
        (dict(n=100, batch_size=10, steps=1, noise_multiplier=1.0, sampling="x"), "sampling"),
        (dict(n=100, batch_size=10, steps=1, noise_multiplier=1.0, sampling="none"),
         "batch_size"),
    ])
    def test_errors_name_the_parameter(self, kwargs, name):
        with pytest.raises(OptionError, match=name):
            gdp.dpsgd_mu(**kwargs)


class TestCalibrateDpsgd:
    @pytest.mark.parametrize("sampling", ["uniform", "poisson"])
    @pytest.mark.parametrize("mu", [1e-4, 0.1, 1.0, 2.0, 10.0, 1e3])
    @pytest.mark.parametrize("n, m, t", [(1399, 1, 1399 ** 2), (1000, 128, 50), (10 ** 5, 16, 10)])
    def test_inverts_dpsgd_mu(self, sampling, mu, n, m, t):
        s = gdp.calibrate_dpsgd(mu, n, m, t, sampling)
        # rtol 1e-10 (the brief's target); the root is solved in log space to ~1e-14.
        assert gdp.dpsgd_mu(n, m, t, s, sampling) == pytest.approx(mu, rel=1e-10)

    def test_full_batch_exact(self):
        assert gdp.calibrate_dpsgd(2.0, 100, 100, 400) == 10.0

    def test_bad_mu(self):
        with pytest.raises(BudgetExceededError, match="mu"):
            gdp.calibrate_dpsgd(0.0, 100, 1, 10)


MU_GRID = [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0]
DELTA_GRID = [1e-3, 1e-5, 1e-10]


class TestMuToEpsilon:
    @pytest.mark.parametrize("mu", MU_GRID)
    @pytest.mark.parametrize("delta", DELTA_GRID)
    def test_against_mpmath(self, mu, delta):
        # Live 50-digit root of delta(eps) = delta by bisection (delta decreases in eps);
        # rtol 1e-9 (the brief's target).
        with mp.workdps(50):
            lo, hi = mp.mpf(0), mp.mpf(mu) ** 2 / 2 + 40 * mu + 1
            for _ in range(200):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if mp_delta(mu, mid) > delta else (lo, mid)
        assert gdp.mu_to_epsilon(mu, delta) == pytest.approx(float(lo), rel=1e-9)

    def test_against_stored_reference(self):
        for row in REF["mu_to_epsilon"]:
            assert gdp.mu_to_epsilon(row["mu"], row["delta"]) == pytest.approx(
                float(row["epsilon"]), rel=1e-9)

    @pytest.mark.parametrize("mu, interval", [(0.1, 1e-4), (1.0, 1e-4), (3.0, 5e-4)])
    def test_against_dp_accounting_pld_of_a_gaussian(self, mu, interval):
        # A Gaussian mechanism with noise multiplier 1/mu is exactly mu-GDP; dp_accounting's
        # PLD is a pessimistic discretization (interval <= mu/1000), so its epsilon is an
        # upper bound within ~1e-6 relative here (rtol 1e-5, one-sided).
        acc = PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
                            value_discretization_interval=interval)
        acc.compose(dp_accounting.GaussianDpEvent(1.0 / mu))
        ours = gdp.mu_to_epsilon(mu, 1e-5)
        pld = acc.get_epsilon(1e-5)
        assert pld >= ours * (1 - 1e-9)
        assert pld == pytest.approx(ours, rel=1e-5)

    @pytest.mark.parametrize("mu", [1e-8, 1e-4, 100.0, 1e3])
    @pytest.mark.parametrize("delta", [1e-3, 1e-12, 1e-100])
    def test_edges_do_not_fail(self, mu, delta):
        eps = gdp.mu_to_epsilon(mu, delta)
        assert eps >= 0 and math.isfinite(eps)
        if eps > 0:
            assert gdp.mu_to_delta(mu, eps) == pytest.approx(delta, rel=1e-8)

    def test_zero_when_delta_at_least_delta0(self):
        mu = 0.01
        delta0 = 2 * float(mp.ncdf(mu / 2)) - 1
        assert gdp.mu_to_epsilon(mu, delta0 * 1.001) == 0.0
        assert gdp.mu_to_epsilon(mu, 0.5) == 0.0
        assert gdp.mu_to_epsilon(mu, delta0 * 0.999) > 0

    def test_infinite_mu(self):
        assert gdp.mu_to_epsilon(math.inf, 1e-5) == math.inf

    @pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, float("nan")])
    def test_bad_delta(self, delta):
        with pytest.raises(BudgetExceededError, match="delta"):
            gdp.mu_to_epsilon(1.0, delta)


class TestMuToDelta:
    @pytest.mark.parametrize("mu", [1e-3, 0.05, 0.7, 1.0, 1.3, 4.0, 20.0])
    @pytest.mark.parametrize("eps", [0.0, 0.01, 0.5, 3.0])
    def test_against_mpmath(self, mu, eps):
        ref = mp_delta(mu, eps)
        if ref < 1e-300:
            return
        # rtol 1e-11: relative accuracy is kept even for tiny deltas (no cancellation).
        assert gdp.mu_to_delta(mu, eps) == pytest.approx(float(ref), rel=1e-11)

    def test_vectorized(self):
        got = gdp.mu_to_delta(np.array([0.5, 1.0, 2.0]), 1.0)
        assert got.shape == (3,)
        assert got[1] == pytest.approx(float(mp_delta(1.0, 1.0)), rel=1e-12)


class TestEpsilonToMu:
    @pytest.mark.parametrize("eps", [1e-4, 0.1, 1.0, 8.0, 100.0, 1e3])
    @pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-12])
    def test_round_trip(self, eps, delta):
        mu = gdp.epsilon_to_mu(eps, delta)
        # rtol 1e-10: both directions solve the same equation to ~1e-15.
        assert gdp.mu_to_epsilon(mu, delta) == pytest.approx(eps, rel=1e-10)

    def test_bad_epsilon(self):
        with pytest.raises(BudgetExceededError, match="epsilon"):
            gdp.epsilon_to_mu(0.0, 1e-5)


class TestZcdp:
    def test_rho_to_epsilon_formula(self):
        rho, delta = 0.5, 1e-5
        assert gdp.rho_to_epsilon(rho, delta) == pytest.approx(
            rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-15)

    @pytest.mark.parametrize("rho", [1e-4, 0.015, 0.5, 5.0])
    def test_bun_steinke_is_weaker_than_exact_gaussian_conversion(self, rho):
        exact = gdp.mu_to_epsilon(gdp.rho_to_mu(rho), 1e-5)
        assert gdp.rho_to_epsilon(rho, 1e-5) >= exact

    def test_mu_rho_inverse(self):
        assert gdp.rho_to_mu(gdp.mu_to_rho(1.7)) == pytest.approx(1.7, rel=1e-15)
        assert gdp.mu_to_rho(2.0) == 2.0

    def test_errors(self):
        with pytest.raises(BudgetExceededError, match="rho"):
            gdp.rho_to_mu(-1.0)


def test_gaussian_mu():
    assert gdp.gaussian_mu(2.0, 4.0) == 0.5
    assert gdp.gaussian_mu(2.0, 4.0, count=100) == pytest.approx(5.0, rel=1e-15)
    with pytest.raises(OptionError, match="noise_std"):
        gdp.gaussian_mu(1.0, 0.0)
