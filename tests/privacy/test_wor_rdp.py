"""The numpy evaluation of the without-replacement RDP bound against dp_accounting.

dpreg.privacy.wor_rdp only chooses the order at which dp_accounting is asked for the
bound (and what the calibration searches over), so it must agree with dp_accounting's
own curve; the references here are dp_accounting's RdpAccountant called directly.
"""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant
from scipy.optimize import brentq

import dpreg
from dpreg.exceptions import OptionError
from dpreg.privacy.accountants import rigorous_delta, rigorous_epsilon, rigorous_rdp_curve
from dpreg.privacy.events import GaussianMechanismEvent as Event
from dpreg.privacy.wor_rdp import DEFAULT_ORDERS, best_order, composed_rdp, wor_gaussian_rdp

NR = dp_accounting.NeighboringRelation


def library_curve(n, m, s, steps=1):
    acc = RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
    acc.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.SampledWithoutReplacementDpEvent(n, m, dp_accounting.GaussianDpEvent(s)),
        steps))
    return acc


def uniform_path(s, m, n, steps):
    return Event("DP-SGD path", 2.0 / m, 2.0 * s / m, "replace-one", "uniform", m, n, steps)


@pytest.mark.parametrize("n, m", [(1399, 1), (40, 10), (60, 59), (1000, 500)])
@pytest.mark.parametrize("s", [0.3, 1.0, 7.5, 1e4])
def test_curve_equals_dp_accounting(n, m, s):
    expected = library_curve(n, m, s).rdp
    got = wor_gaussian_rdp(m / n, s, DEFAULT_ORDERS)
    finite = np.isfinite(expected)
    assert np.array_equal(np.isfinite(got), finite)
    # 1e-12: the same terms, summed with one log-sum-exp instead of pairwise log-adds
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-12, atol=0)


def test_composition_and_unsampled_events():
    path = uniform_path(1.5, 4, 200, 700)
    matrix = Event("Hessian A", 0.01, 0.03, "replace-one")
    acc = library_curve(200, 4, 1.5, 700)
    acc.compose(dp_accounting.GaussianDpEvent(3.0))
    np.testing.assert_allclose(composed_rdp([path, matrix]), acc.rdp, rtol=1e-12)


def test_poisson_events_are_refused():
    ev = Event("p", 1.0, 1.0, "add/remove", "poisson", 10, 100, 5)
    with pytest.raises(ValueError, match="not sampled without replacement"):
        composed_rdp([ev])


@pytest.mark.parametrize("s, m, n, steps", [(0.9, 1, 1399, 20_000), (3.0, 32, 1000, 500),
                                            (1.2, 5, 50, 300)])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_epsilon_at_the_chosen_order_is_dp_accountings_best(s, m, n, steps, delta):
    ev = uniform_path(s, m, n, steps)
    expected, order = library_curve(n, m, s, steps).get_epsilon_and_optimal_order(delta)
    assert best_order([ev], delta=delta) == order
    assert rigorous_epsilon([ev], delta)[0] == pytest.approx(expected, rel=1e-12)


def test_delta_at_the_chosen_order_is_dp_accountings_best():
    ev = uniform_path(1.1, 8, 500, 2000)
    acc = library_curve(500, 8, 1.1, 2000)
    for eps in (0.5, 2.0, 8.0):
        assert rigorous_delta([ev], eps)[0] == pytest.approx(acc.get_delta(eps), rel=1e-12)


def test_large_noise_is_charged_no_more_than_an_unsampled_gaussian():
    # At q = 1/4, T = 300 dp_accounting's Thm 27 evaluation loses precision at high
    # orders and its epsilon stays near 0.14 as the noise grows; every step charged as
    # an unsampled Gaussian is also a valid bound, and far smaller here.
    s, delta = 1e5, 1e-6
    ev = uniform_path(s, 10, 40, 300)
    stuck = library_curve(40, 10, s, 300).get_epsilon(delta)
    gauss = RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
    gauss.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s), 300))
    assert stuck > 0.1
    assert rigorous_epsilon([ev], delta)[0] == pytest.approx(gauss.get_epsilon(delta),
                                                             rel=1e-12)
    # ~0.006: the floor of the RDP-to-(epsilon, delta) conversion at order 1024
    assert rigorous_epsilon([ev], delta)[0] < 0.01
    orders, curve = rigorous_rdp_curve([ev])
    np.testing.assert_allclose(curve, np.minimum(gauss.rdp, library_curve(40, 10, s, 300).rdp))
    assert curve[orders == 256][0] < library_curve(40, 10, s, 300).rdp[orders == 256][0] / 100


def test_large_sampling_rates_are_charged_no_more_than_an_unsampled_gaussian():
    # At q >= 1/2 Thm 27 is looser than the unsampled bound at every noise level.
    ev = uniform_path(1.0, 9, 10, 100)
    gauss = RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
    gauss.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(1.0), 100))
    assert library_curve(10, 9, 1.0, 100).get_epsilon(1e-6) > 180
    assert rigorous_epsilon([ev], 1e-6)[0] == pytest.approx(gauss.get_epsilon(1e-6), rel=1e-12)


def test_delta_where_dp_accounting_cannot_convert_the_sampled_curve():
    # dp_accounting's delta conversion takes log1p(-exp(-r)), a math domain error once
    # the RDP r is below ~1e-16; the unsampled bound still converts.
    ev = uniform_path(1e7, 1, 1000, 300)
    with pytest.raises(ValueError):
        library_curve(1000, 1, 1e7, 300).get_delta(0.5)
    got = rigorous_delta([ev], 0.5)[0]
    assert 0 <= got < 1e-100


@pytest.mark.parametrize("q, s, orders, match", [
    (1.5, 1.0, [2.0], "q must"), (0.1, 0.0, [2.0], "s must"),
    (0.1, 1.0, [0.5], "orders"), (0.1, 1.0, [np.inf], "orders")])
def test_bad_arguments_are_named(q, s, orders, match):
    with pytest.raises(OptionError, match=match):
        wor_gaussian_rdp(q, s, orders)


def test_order_one_alone_is_zero():
    assert wor_gaussian_rdp(0.1, 1.0, [1.0]).tolist() == [0.0]


def test_small_epsilon_request_with_uniform_sampling_gets_bounded_noise():
    # Before the unsampled bound was taken into account, epsilon = 0.05 here was met
    # only by a noise multiplier of ~1e7 (where dp_accounting's bound drops to 0).
    rng = np.random.default_rng(0)
    data = {"y": rng.normal(size=40), "x": rng.uniform(-1, 1, 40)}
    res = dpreg.dp_ols("y ~ x", data, epsilon=0.05, delta=1e-6, sampling="uniform",
                       batch_size=10, steps=300, cov_type="rs", budget_split={"path": 1.0},
                       bounds={"y": (-5, 5), "x": (-1, 1)}, random_state=0)
    (path,) = res.ledger.events

    def gauss_epsilon(s):
        acc = RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
        acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s), 300))
        return acc.get_epsilon(1e-6) - 0.05

    s_gauss = brentq(gauss_epsilon, 10.0, 1e6, rtol=1e-12)
    assert res.ledger.epsilon_rigorous[0] <= 0.05
    assert path.noise_multiplier <= s_gauss * (1 + 1e-5)
    assert math.isfinite(res.params.iloc[1])
