"""Tests of the rigorous accountants against dp_accounting called directly.

The events' wiring is checked against dp_accounting events written out by hand here
(noise multiplier = noise std / sensitivity computed in the test), and the example of
the corrections page (docs/user_guide/corrections.rst, "GDP central limit theorem")
against tests/results/privacy_reference.json (made by tests/results/privacy_make_reference.py
without dpreg).
"""

import json
import math
import pathlib

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant, rdp_privacy_accountant

from dpreg.exceptions import BudgetExceededError, OptionError
from dpreg.privacy.accountants import (
    pld_discretization,
    rdp_epsilon,
    rigorous_delta,
    rigorous_epsilon,
    rigorous_rdp_curve,
    zcdp_rho_upper,
)
from dpreg.privacy.events import GaussianMechanismEvent as Event
from dpreg.privacy.gdp import mu_to_epsilon

REF = json.loads((pathlib.Path(__file__).parents[1] / "results" /
                  "privacy_reference.json").read_text())
NR = dp_accounting.NeighboringRelation


def poisson_path(s, q_num, n, steps, clip=1.0):
    # add/remove: the clipped-gradient sum moves by clip; noise std s * clip on the sum
    return Event("DP-SGD path", clip, s * clip, "add/remove", "poisson", q_num, n, steps)


def uniform_path(s, m, n, steps, clip=1.0):
    # replace-one: the clipped-gradient mean moves by 2 clip / m; noise std 2 s clip / m
    return Event("DP-SGD path", 2 * clip / m, 2 * s * clip / m, "replace-one", "uniform",
                 m, n, steps)


class TestCorrectionsPageNumbers:
    """sigma = 1, q = 0.01, T = 1e4, delta = 1e-5, Poisson (the corrections page's example
    of the CLT understating epsilon)."""

    event = poisson_path(1.0, 100, 10_000, 10_000)

    def test_gdp_clt(self):
        eps = mu_to_epsilon(self.event.mu(), 1e-5)
        assert eps == pytest.approx(6.01, abs=0.02)  # corrections page, 2 decimals
        assert eps == pytest.approx(REF["math_md"]["gdp_clt_epsilon"], rel=1e-9)

    def test_pld(self):
        eps, name = rigorous_epsilon([self.event], 1e-5)
        assert name.startswith("PLD")
        assert eps == pytest.approx(6.19, abs=0.02)  # corrections page, 2 decimals
        # rtol 1e-3: our grid is 2^-10 ~ 1e-3, the reference's 1e-4 (both upper bounds)
        assert eps == pytest.approx(REF["math_md"]["pld_epsilon"], rel=1e-3)
        assert eps >= REF["math_md"]["pld_epsilon"] * (1 - 1e-6)

    def test_rdp(self):
        orders, rdp = rigorous_rdp_curve([self.event])
        eps = rdp_privacy_accountant.compute_epsilon(orders, rdp, 1e-5)[0]
        assert eps == pytest.approx(6.71, abs=0.02)  # corrections page, 2 decimals
        assert eps == pytest.approx(REF["math_md"]["rdp_epsilon"], rel=1e-12)

    def test_rigorous_is_above_the_clt_here(self):
        eps_rigorous = rigorous_epsilon([self.event], 1e-5)[0]
        assert eps_rigorous > mu_to_epsilon(self.event.mu(), 1e-5) + 0.1


class TestWiring:
    def test_poisson_equals_pld_accountant(self):
        ev = poisson_path(1.3, 50, 5000, 3000, clip=0.7)
        interval = pld_discretization([ev])
        acc = PLDAccountant(NR.ADD_OR_REMOVE_ONE, value_discretization_interval=interval)
        acc.compose(dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.3)), 3000))
        # rtol 1e-6: same grid; we compose in two stages (1000, then the rest) and cut
        # the noise tails at exp(-40) instead of exp(-50).
        assert rigorous_epsilon([ev], 1e-6)[0] == pytest.approx(acc.get_epsilon(1e-6), rel=1e-6)

    @pytest.mark.parametrize("s, m", [(0.8, 1), (4.0, 128)])
    def test_uniform_replace_one_rdp_check_equals_rdp_accountant(self, s, m):
        n, steps, clip = 1399, 20_000, 0.3
        ev = uniform_path(s, m, n, steps, clip)
        acc = RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
        noise_multiplier = (2 * s * clip / m) / (2 * clip / m)  # std / replace-one sensitivity
        acc.compose(dp_accounting.SelfComposedDpEvent(
            dp_accounting.SampledWithoutReplacementDpEvent(
                n, m, dp_accounting.GaussianDpEvent(noise_multiplier)), steps))
        eps, name = rdp_epsilon([ev], 1e-5)  # the cross-check; the headline is the PLD
        assert name.startswith("RDP")
        assert eps == pytest.approx(acc.get_epsilon(1e-5), rel=1e-12)  # same computation
        assert rigorous_epsilon([ev], 1e-5)[1].startswith("PLD")

    def test_mixed_uniform_set_rdp_check_is_one_rdp_accountant(self):
        path = uniform_path(1.0, 4, 1000, 5000)
        hess = Event("Hessian A", 0.002, 0.004, "replace-one")
        acc = RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
        acc.compose(dp_accounting.SelfComposedDpEvent(
            dp_accounting.SampledWithoutReplacementDpEvent(
                1000, 4, dp_accounting.GaussianDpEvent(1.0)), 5000))
        acc.compose(dp_accounting.GaussianDpEvent(2.0))
        assert rdp_epsilon([path, hess], 1e-5)[0] == pytest.approx(acc.get_epsilon(1e-5),
                                                                   rel=1e-12)

    @pytest.mark.parametrize("adjacency", ["replace-one", "add/remove"])
    def test_unsampled_gaussians_are_exact_gdp(self, adjacency):
        # Two releases of sensitivity 1 and noise 1/0.6 and 1/0.8: exactly 1-GDP in total,
        # under either adjacency (the sensitivity field already states the distance).
        # This fails if dp_accounting's REPLACE_ONE PLD convention (outputs 2 *
        # sensitivity apart) were not corrected for. rtol 1e-5: PLD grid mu/1000.
        events = [Event("A", 1.0, 1 / 0.6, adjacency), Event("S", 1.0, 1 / 0.8, adjacency)]
        eps, name = rigorous_epsilon(events, 1e-5)
        assert name.startswith("PLD")
        assert eps == pytest.approx(mu_to_epsilon(1.0, 1e-5), rel=1e-5)
        assert eps >= mu_to_epsilon(1.0, 1e-5) * (1 - 1e-9)

    def test_delta_inverts_epsilon(self):
        ev = [poisson_path(1.0, 100, 10_000, 1000)]
        eps = rigorous_epsilon(ev, 1e-6)[0]
        # rtol 1e-4: epsilon(delta) and delta(epsilon) read the same discrete PLD
        assert rigorous_delta(ev, eps)[0] == pytest.approx(1e-6, rel=1e-4)

    def test_count_one_and_full_batch(self):
        one = poisson_path(2.0, 10, 1000, 1)
        assert rigorous_epsilon([one], 1e-5)[0] > 0
        full = Event("GD", 1.0, 5.0, "replace-one", "uniform", 100, 100, 25)  # q = 1
        assert rigorous_epsilon([full], 1e-5)[0] == pytest.approx(
            mu_to_epsilon(1.0, 1e-5), rel=1e-5)


class TestStarScale:
    """n = 1399, m = 1, T = n^2 = 1,957,201 steps (the dpsgd-inference paper's regime)."""

    n, steps = 1399, 1399 ** 2

    def test_poisson_pld_accuracy(self):
        ev = poisson_path(2.0, 1, self.n, self.steps)
        ref = REF["star"]["poisson"]["2.0"]["pld_epsilon"]  # twice finer grid
        # rtol 1.5e-3: the accuracy the default grid aims at (measured ~5e-4)
        assert rigorous_epsilon([ev], 1e-5)[0] == pytest.approx(ref, rel=1.5e-3)

    def test_uniform_rdp(self):
        ev = uniform_path(2.0, 1, self.n, self.steps)
        rdp = rdp_epsilon([ev], 1e-5)[0]  # the ledger's cross-check
        assert rdp == pytest.approx(REF["star"]["uniform_rdp"]["2.0"], rel=1e-12)
        assert rigorous_epsilon([ev], 1e-5)[0] <= rdp  # the PLD headline is tighter

    @pytest.mark.slow
    @pytest.mark.parametrize("s", ["1.0", "10.0"])
    def test_poisson_pld_accuracy_slow(self, s):
        ev = poisson_path(float(s), 1, self.n, self.steps)
        ref = REF["star"]["poisson"][s]["pld_epsilon"]
        assert rigorous_epsilon([ev], 1e-5)[0] == pytest.approx(ref, rel=1.5e-3)


class TestZcdp:
    def test_unsampled_equals_rdp_slope(self):
        events = [Event("A", 1.0, 2.0, "add/remove", count=3), Event("S", 0.5, 0.5, "add/remove")]
        rho = zcdp_rho_upper(events)
        assert rho == pytest.approx(3 / 8 + 1 / 2, rel=1e-15)
        orders, rdp = rigorous_rdp_curve(events)
        np.testing.assert_allclose(rdp / orders, rho, rtol=1e-12)

    @pytest.mark.parametrize("make", [lambda: poisson_path(1.0, 10, 1000, 5000),
                                      lambda: uniform_path(1.0, 10, 1000, 5000)])
    def test_subsampled_rho_bounds_the_whole_rdp_curve(self, make):
        ev = make()
        rho = zcdp_rho_upper([ev])
        assert rho == pytest.approx(5000 / 2, rel=1e-15)  # no amplification of zCDP
        orders, rdp = rigorous_rdp_curve([ev])
        assert np.all(rdp <= rho * orders * (1 + 1e-12))
        # and it is approached at large orders (so no smaller rho is valid for all alpha)
        assert rdp[-1] / orders[-1] > 0.99 * rho


class TestErrors:
    def test_mixed_adjacency(self):
        with pytest.raises(OptionError, match="adjacency"):
            rigorous_epsilon([Event("A", 1.0, 1.0, "add/remove"),
                              Event("B", 1.0, 1.0, "replace-one")], 1e-5)

    def test_empty_and_wrong_type(self):
        with pytest.raises(OptionError, match="events"):
            rigorous_epsilon([], 1e-5)
        with pytest.raises(OptionError, match="events"):
            zcdp_rho_upper(["not an event"])

    def test_bad_delta(self):
        with pytest.raises(BudgetExceededError, match="delta"):
            rigorous_epsilon([Event("A", 1.0, 1.0, "add/remove")], 0.0)


@pytest.mark.parametrize("s", [0.05, 0.3, 1e4])
@pytest.mark.parametrize("steps", [1, 5000])
def test_extreme_noise_does_not_fail(s, steps):
    ev = poisson_path(s, 10, 1000, steps)
    eps = rigorous_epsilon([ev], 1e-5)[0]
    assert 0 <= eps < math.inf
    # and not above the unsampled bound (each step is at most 1/s-GDP), up to a grid
    # that is coarse here (1% + 1 absolute: only a sanity bound)
    assert eps <= mu_to_epsilon(math.sqrt(steps) / s, 1e-5) * (1 + 1e-2) + 1.0


def test_discretization_is_a_power_of_two_and_bounded():
    ev = poisson_path(30.0, 1, 1399, 1399 ** 2)
    vdi = pld_discretization([ev])
    assert math.log2(vdi) == int(math.log2(vdi))
    big = Event("A", 1.0, 1 / 50.0, "add/remove")  # mu = 50 next to a tiny path step
    vdi = pld_discretization([ev, big])
    assert (20 * 50 + 50 ** 2) / vdi <= 1e6  # grid capped at ~1e6 points


def test_uniform_rdp_with_huge_noise_does_not_crash():
    # dp-accounting's without-replacement RDP bound fails (log of 0) for huge noise
    # multipliers; the fallback is the unsampled Gaussian bound, an upper bound.
    from dpreg.privacy.accountants import rigorous_epsilon
    from dpreg.privacy.events import GaussianMechanismEvent

    e = GaussianMechanismEvent(name="p", sensitivity=2.0, noise_std=2e9,
                               adjacency="replace-one", sampling="uniform",
                               sample_size=4, population=20, count=20)
    eps, _ = rigorous_epsilon([e], 1e-6)
    assert 0 <= eps < 1e-6
