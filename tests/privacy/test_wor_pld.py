"""The PLD of Gaussian steps on batches drawn without replacement (replace-one).

References: dp_accounting's own closed forms and PLDs (independent software), its RDP
accountant (a looser bound the PLD must never exceed), and a Monte Carlo of the privacy
loss of the dominating pair (dpreg.privacy.wor_pld, module notes) with a fixed seed.
"""

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy import stats

import dpreg
from dpreg.privacy.accountants import (
    pld_discretization,
    rdp_epsilon,
    rigorous_delta,
    rigorous_epsilon,
)
from dpreg.privacy.events import GaussianMechanismEvent as Event
from dpreg.privacy.gdp import mu_to_epsilon
from dpreg.privacy.wor_pld import (
    _delta_add,
    _delta_remove,
    _losses,
    wor_gaussian_pld,
    wor_gaussian_profile,
)

QS = [1e-4, 0.005, 0.1, 0.5, 0.9, 1.0]
SS = [0.3, 0.8, 1.5, 5.0, 50.0]


def wor_path(s, m, n, steps, clip=1.0):
    # replace-one: the clipped-gradient mean moves by 2 clip / m; noise std 2 s clip / m
    return Event("DP-SGD path", 2 * clip / m, 2 * s * clip / m, "replace-one", "uniform",
                 m, n, steps)


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("s", SS)
def test_closed_forms_equal_dp_accountings_hockey_stick(q, s):
    remove, add = _losses(q, s, -50.0)
    eps = np.linspace(-20, 30, 1001)
    for ours, theirs in ((_delta_remove(q, s, eps), remove.get_delta_for_epsilon(eps)),
                         (_delta_add(q, s, eps), add.get_delta_for_epsilon(eps))):
        # relative 1e-9 (measured: at most 3e-10 where delta > 1e-12) or absolute 1e-18:
        # in the far tail both are a difference of two nearly equal tail probabilities
        # (at q = 1, eps = 30: 1e-6 relative apart, 4e-20 absolute), far below the
        # deltas dpreg reports
        assert np.allclose(ours, theirs, rtol=1e-9, atol=1e-18)


@pytest.mark.parametrize("q", QS[:-1])
@pytest.mark.parametrize("s", SS)
def test_remove_dominates_add_for_positive_epsilon(q, s):
    # the Monte Carlo sampler below relies on it: for eps >= 0 the pair's profile is the
    # Poisson "remove" profile
    eps = np.linspace(0, 20, 2001)
    # -1e-15: at eps = 0 both are the total variation distance (equal up to round-off)
    assert np.all(_delta_remove(q, s, eps) >= _delta_add(q, s, eps) - 1e-15)


@pytest.mark.parametrize("s", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("count", [1, 40])
def test_full_batch_is_dp_accountings_replace_one_gaussian(s, count):
    # q = 1: N(0, s^2) against N(1, s^2). dp_accounting's REPLACE_ONE puts the outputs
    # 2 * sensitivity apart, so sensitivity 1/2 is the same mechanism.
    vdi = 1e-3
    ours = wor_gaussian_pld(1.0, s, count, value_discretization_interval=vdi)
    theirs = pld_lib.from_gaussian_mechanism(
        s, sensitivity=0.5, value_discretization_interval=vdi,
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    theirs = theirs.self_compose(count) if count > 1 else theirs
    for delta in (1e-3, 1e-6, 1e-9):
        # rtol 1e-7: the same connect-the-dots PMF (our hockey-stick is vectorized; one
        # step agrees to 1e-15), on a grid whose ends differ slightly (the union of the
        # remove and add pairs' ranges), which composition's tail cut-off sees (measured
        # 1.2e-8 at 40 steps)
        assert ours.get_epsilon_for_delta(delta) == pytest.approx(
            theirs.get_epsilon_for_delta(delta), rel=1e-7)
        exact = mu_to_epsilon(math.sqrt(count) / s, delta)
        assert exact * (1 - 1e-9) <= ours.get_epsilon_for_delta(delta) <= exact + 40 * vdi


@pytest.mark.parametrize("m", [1, 10, 100, 500])
@pytest.mark.parametrize("s", [0.7, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("steps", [10, 1000, 10_000])
def test_never_above_rdp(m, s, steps):
    ev = wor_path(s, m, 1000, steps)
    pld, name = rigorous_epsilon([ev], 1e-5)
    assert name.startswith("PLD")
    assert pld <= rdp_epsilon([ev], 1e-5)[0] * (1 + 1e-9)


@pytest.mark.parametrize("m, s, steps", [(1, 1.0, 10_000), (10, 0.8, 1000), (100, 2.0, 300)])
def test_at_least_the_poisson_pld_at_the_same_rate(m, s, steps):
    # The pair dominates both the Poisson remove and add pairs, so its composition is
    # never below theirs (rtol 1e-4: the two grids' connect-the-dots ranges differ).
    n = 1000
    wor = rigorous_epsilon([wor_path(s, m, n, steps)], 1e-5)[0]
    poisson = Event("p", 1.0, s, "add/remove", "poisson", m, n, steps)
    assert wor >= rigorous_epsilon([poisson], 1e-5)[0] * (1 - 1e-4)


def sample_losses(q, s, size, rng):
    """Draws of the privacy loss of one step of the pair, under its first distribution.

    For eps >= 0 the profile is that of the remove pair R = q N(1, s^2) + (1-q) N(0, s^2)
    against Q = N(0, s^2), whose loss l(x) = log(1 - q + q exp((2x - 1)/(2 s^2))) is
    positive exactly for x > 1/2. The symmetric pair with that profile puts the loss
    l(x) of x ~ R | x > 1/2 on its positive side (mass R(x > 1/2)), its mirror -l(x),
    x ~ Q | x > 1/2, on the negative side (mass Q(x > 1/2), the e^-l reweighting), and
    the rest at 0 (the segment of slope -1 of C_q(f)).
    """
    c = 0.5 / s
    w_r1, w_r0, w_q = q * stats.norm.cdf(c), (1 - q) * stats.norm.sf(c), stats.norm.sf(c)
    u = rng.random(size)
    which = np.select([u < w_r1, u < w_r1 + w_r0, u < w_r1 + w_r0 + w_q], [1, 2, 3], 0)
    x = np.full(size, np.nan)
    for k, mean in ((1, 1.0), (2, 0.0), (3, 0.0)):
        idx = which == k
        # x ~ N(mean, s^2) conditioned on x > 1/2, by the inverse CDF
        a = stats.norm.cdf((0.5 - mean) / s)
        x[idx] = mean + s * stats.norm.ppf(a + (1 - a) * rng.random(idx.sum()))
    loss = np.log1p(q * np.expm1((2 * x - 1) / (2 * s * s)))
    return np.where(which == 0, 0.0, np.where(which == 3, -loss, loss))


def mc_delta(losses, eps):
    vals = -np.expm1(np.minimum(eps - losses, 0.0))  # (1 - e^(eps - L))_+
    return vals.mean(), vals.std(ddof=1) / math.sqrt(len(vals))


def test_loss_sampler_has_the_pairs_profile():
    rng = np.random.default_rng(20240530)
    for q, s in ((0.1, 1.0), (0.02, 0.7), (0.5, 2.0)):
        losses = sample_losses(q, s, 400_000, rng)
        for eps in (-0.5, 0.0, 0.2, 1.0):
            est, se = mc_delta(losses, eps)
            assert abs(est - wor_gaussian_profile(q, s, eps)[0]) <= 4 * se


@pytest.mark.parametrize("q, s, steps", [(0.1, 1.0, 10), (0.02, 0.7, 30), (0.5, 2.0, 5)])
def test_pld_bounds_the_monte_carlo_delta(q, s, steps):
    n = 1000
    ev = wor_path(s, int(q * n), n, steps)
    vdi = pld_discretization([ev])
    rng = np.random.default_rng(12345)
    losses = sum(sample_losses(q, s, 400_000, rng) for _ in range(steps))
    for eps in (0.25, 0.5, 1.0, 2.0):
        got = rigorous_delta([ev], eps)[0]
        est, se = mc_delta(losses, eps)
        assert got >= est - 4 * se  # an upper bound
        # and a tight one: pessimistic discretization moves each step's loss up by less
        # than one grid step (connect-the-dots is below rounding up), so the PLD's delta
        # is at most the true delta at eps - T vdi (composition tails: ~1e-15)
        lo, se_lo = mc_delta(losses, eps - steps * vdi)
        assert got <= lo + 4 * se_lo + 1e-12


FAIR_FORMULA = ("rate_marriage ~ np.log(yrs_married) + age + educ + children"
                " + C(religious) + age:educ")
FAIR_BOUNDS = {"rate_marriage": (1, 5), "age": (17.5, 42), "educ": (9, 20),
               "children": (0, 5.5), "yrs_married": (0.5, 23), "np.log(yrs_married)":
               (np.log(0.5), np.log(23))}


@pytest.fixture(scope="module")
def fair():
    sm = pytest.importorskip("statsmodels.api")
    data = sm.datasets.fair.load_pandas().data

    def fit(**budget):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the recorded figures are DP-SGD's path accounting in the declared boxes
            return dpreg.dp_ols(FAIR_FORMULA, data, bounds=FAIR_BOUNDS,
                                levels={"religious": [1, 2, 3, 4]}, ranges="declared",
                                engine="dpsgd", random_state=1, **budget)
    return fit


def test_fair_defaults_headline_and_calibration(fair):
    # statsmodels' fair data, n = 6366, dpreg's default m = 32, T = 200,000.
    # Before the WOR PLD (RDP headline, commit 02c8b8e): epsilon 17.42 at mu = 2; an
    # (10, 1e-5) request calibrated to total mu 1.238, a (3, 1e-5) one to 0.417.
    res = fair(mu=2)
    eps, name = res.ledger.epsilon_rigorous
    assert name.startswith("PLD") and "WOR pair" in name
    assert eps == pytest.approx(9.983, abs=0.002)  # measured 9.9832
    assert eps <= res.ledger.epsilon_gdp * 1.001  # the CLT: 9.997
    assert res.ledger.epsilon_rdp_check[0] == pytest.approx(17.42, abs=0.01)
    assert "Cross-check by RDP" in res.ledger.as_text()
    for epsilon, mu in ((10, 2.003), (3, 0.719)):
        ledger = fair(epsilon=epsilon, delta=1e-5).ledger
        assert ledger.epsilon_rigorous[0] <= epsilon
        assert ledger.total_mu == pytest.approx(mu, abs=0.001)  # 2.0027 and 0.7193
