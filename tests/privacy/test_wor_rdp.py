"""The numpy evaluation of the without-replacement RDP bound against dp_accounting.

dpreg.privacy.wor_rdp only chooses the order at which dp_accounting is asked for the
bound (and what the calibration searches over), so it must agree with dp_accounting's
own curve; the references here are dp_accounting's RdpAccountant called directly.
"""

import functools
import math

import dp_accounting
import mpmath
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp import rdp_privacy_accountant as _rdp
from scipy.optimize import brentq
from scipy.special import gammaln

import dpreg
from dpreg.exceptions import OptionError
from dpreg.privacy.accountants import rdp_delta, rdp_epsilon, rigorous_rdp_curve
from dpreg.privacy.events import GaussianMechanismEvent as Event
from dpreg.privacy.wor_rdp import (
    DEFAULT_ORDERS,
    _log_forward_differences,
    best_order,
    composed_rdp,
    wor_gaussian_rdp,
)

NR = dp_accounting.NeighboringRelation


def library_curve(n, m, s, steps=1):
    acc = RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
    acc.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.SampledWithoutReplacementDpEvent(n, m, dp_accounting.GaussianDpEvent(s)),
        steps))
    return acc


def uniform_path(s, m, n, steps):
    return Event("DP-SGD path", 2.0 / m, 2.0 * s / m, "replace-one", "uniform", m, n, steps)


# --- an exact reference: Thm 27 as dp_accounting 0.6 writes it, evaluated in mpmath ---
#
# For large noise multipliers the forward differences of j -> exp(j (j - 1) / (2 s^2))
# cancel: the k-th difference is far smaller than the terms it is made of, so its float64
# value (dp_accounting's and ours alike) is rounding noise there. That noise depends on
# the last bit of exp: numpy's exp (which dp_accounting calls) and libm's (which numba
# calls) agree on some CPUs and differ on others (AVX-512 machines), so the two curves
# agree to the last bits only where the difference table is well conditioned. The tests
# below compare both with an exact evaluation, with float64 error bounds derived from the
# table's conditioning, and require 1e-12 agreement exactly where those bounds are tight.

U = 2.0 ** -53
TOP = 257  # dp_accounting's exact form uses differences up to order 256 (+ 1)
LOST = 25  # digits of cancellation past which a float64 difference is pure noise


@functools.lru_cache(maxsize=None)
def exact_differences(s):
    """(log|Delta^k f(0)|, r_k) for k = 0..TOP, f(j) = exp(j (j - 1) / (2 s^2)).

    r_k bounds the relative error of a float64 evaluation by repeated differences in
    (log|v|, sign) form: each step adds at most (3 M + 3) u (|a| + |b|) to the value of
    a - b (u = 2^-53; one rounding of exp, one of log1p, one of the log-domain sum, each
    on a log-magnitude at most M), so by induction the error of Delta^k f(0) is at most
    (3 k + 1)(M_k + 1) u T_k, with T_k = sum_j C(k, j) f(j) and M_k the largest
    |log|v|| of the table entries it depends on. Where the differences cancel more than
    LOST digits, float64 has none left (r_k = inf) and the exact value is not needed;
    elsewhere 60-digit arithmetic gives it to ~1e-30.
    """
    with mpmath.workdps(60):
        c = 1 / (2 * mpmath.mpf(s) ** 2)
        diff = [mpmath.exp(c * j * (j - 1)) for j in range(TOP + 1)]
        total = list(diff)
        log_d, log_t = [0.0], [0.0]
        diag = [float(c * j * (j - 1)) for j in range(TOP + 1)]  # max |log|v|| per i + j
        for k in range(1, TOP + 1):
            diff = [diff[j + 1] - diff[j] for j in range(len(diff) - 1)]
            total = [total[j + 1] + total[j] for j in range(len(total) - 1)]
            for i, v in enumerate(diff):  # mag: an integer bound on log2|v|
                if v != 0:
                    diag[i + k] = max(diag[i + k], (abs(mpmath.mag(v)) + 1) * math.log(2))
            log_d.append(float(mpmath.log(abs(diff[0]))) if diff[0] != 0 else -math.inf)
            log_t.append(float(mpmath.log(total[0])))
    log_d, log_t, m = np.array(log_d), np.array(log_t), np.maximum.accumulate(diag)
    k = np.arange(TOP + 1)
    with np.errstate(invalid="ignore", over="ignore"):
        r = (3 * k + 1) * (m + 1) * U * np.exp(log_t - log_d)
    r[log_d == -math.inf] = 0.0  # Delta^1 f(0) = f(1) - f(0) = 1 - 1 = 0, also in float64
    r[log_t - log_d > LOST * math.log(10)] = math.inf
    return log_d, r


def _log_comb(n, k):
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def _log_one_plus_sum_exp(terms):
    """log(1 + sum exp(terms)) in float64, accurate when the sum is small or huge."""
    terms = np.asarray(terms)
    top = terms.max()
    if top < 0:
        return math.log1p(np.exp(terms).sum())
    return top + math.log(math.exp(-top) + np.exp(terms - top).sum())


def exact_log_moment_bracket(q, s, alpha):
    """(lower, upper) bounds on what a float64 evaluation of dp_accounting's log A_alpha
    (integer alpha >= 2) can give: the exact terms, each widened by its float64 error
    bound; a term whose differences are beyond float64 is anywhere in [0, its crude cap]
    (it is min(difference form, crude form))."""
    log_d, r = exact_differences(s)
    f2 = 1.0 / s ** 2
    second = (2 * math.log(q) + _log_comb(alpha, 2)
              + min(math.log(4) + f2 + math.log(-math.expm1(-f2)), f2 + math.log(2)))
    # dp_accounting takes log1p(-exp(-f2)): 1 - exp(-f2) loses u / f2 for large s
    second_err = 4 * U / -math.expm1(-f2) + 8 * U * (1 + abs(second))
    i = np.arange(3, alpha + 1)
    crude = math.log(2) + (i - 1) * i / (2.0 * s ** 2)
    rest = i * math.log(q) + _log_comb(alpha, i)
    if alpha > 256:  # dp_accounting's Stirling branch: crude terms only
        low = high = crude
    else:
        k_lo, k_hi = 2 * (i // 2), 2 * ((i + 1) // 2)
        with np.errstate(divide="ignore"):
            err = np.where(r < 0.5, -np.log1p(-np.minimum(r, 0.5)), np.inf)
        form = math.log(4) + 0.5 * (np.take(log_d, k_lo) + np.take(log_d, k_hi))
        width = 0.5 * (err[k_lo] + err[k_hi])
        low, high = np.minimum(form - width, crude), np.minimum(form + width, crude)
    return (_log_one_plus_sum_exp(np.append(low + rest, second - second_err)),
            _log_one_plus_sum_exp(np.append(high + rest, second + second_err)))


def exact_rdp_bracket(q, s, orders):
    """Bounds on the RDP curve at ``orders`` (fractional orders interpolate, Cor. 10)."""
    lows, highs = [], []
    for a in orders:
        if a == 1:
            lows.append(0.0)
            highs.append(0.0)
            continue
        lo_a, hi_a = math.floor(a), math.ceil(a)
        lo = exact_log_moment_bracket(q, s, lo_a) if lo_a >= 2 else (0.0, 0.0)
        hi = exact_log_moment_bracket(q, s, hi_a)
        t = a - lo_a
        lows.append(((1 - t) * lo[0] + t * hi[0]) / (a - 1))
        highs.append(((1 - t) * lo[1] + t * hi[1]) / (a - 1))
    return np.array(lows), np.array(highs)


@pytest.mark.parametrize("s", [0.3, 1.0, 3.0, 7.5, 30.0, 1e4])
def test_difference_table_is_within_its_float64_error_bound(s):
    # the bound that sorts orders into well and ill conditioned below is not too tight:
    # the compiled table (and dp_accounting's own) stays inside it, at every difference
    log_d, r = exact_differences(s)
    ours = _log_forward_differences(s, TOP + 1)  # ours[k - 1] is log|Delta^k f(0)|
    library, _ = _rdp._get_forward_diffs(lambda x: x * (x + 1) / (2.0 * s ** 2), TOP)
    ks = [k for k in range(2, TOP + 1) if r[k] < 0.5]
    assert ks, "no well-conditioned difference to compare"
    bound = -np.log1p(-r[ks])
    for table in (ours, library):
        err = np.array([abs(table[k - 1] - log_d[k]) for k in ks])
        assert np.all(err <= bound)


@pytest.mark.parametrize("n, m", [(1399, 1), (40, 10), (60, 59), (1000, 500)])
@pytest.mark.parametrize("s", [0.3, 1.0, 7.5, 1e4])
def test_curve_equals_dp_accounting(n, m, s):
    expected = library_curve(n, m, s).rdp
    got = wor_gaussian_rdp(m / n, s, DEFAULT_ORDERS)
    finite = np.isfinite(expected)
    assert np.array_equal(np.isfinite(got), finite)
    orders = DEFAULT_ORDERS[finite]
    got, expected = got[finite], expected[finite]
    low, high = exact_rdp_bracket(m / n, s, orders)
    # both float64 evaluations lie within the exact curve's float64 error bounds
    # (1e-12: the rounding of the log-sum-exp and of the terms outside the table)
    for curve in (got, expected):
        assert np.all(curve >= low * (1 - 1e-12))
        assert np.all(curve <= high * (1 + 1e-12))
    # where those bounds are tight the two are the same numbers: the same terms, summed
    # with one log-sum-exp instead of pairwise log-adds
    tight = (high - low) <= 1e-13 * low
    # all orders at s <= 1; at s = 7.5 the low orders; at s = 1e4 only orders above
    # 256, where dp_accounting has no difference table
    assert tight.sum() >= {0.3: len(orders), 1.0: len(orders), 7.5: 12, 1e4: 2}[s]
    np.testing.assert_allclose(got[tight], expected[tight], rtol=1e-12, atol=0)


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
    assert rdp_epsilon([ev], delta)[0] == pytest.approx(expected, rel=1e-12)


def test_delta_at_the_chosen_order_is_dp_accountings_best():
    ev = uniform_path(1.1, 8, 500, 2000)
    acc = library_curve(500, 8, 1.1, 2000)
    for eps in (0.5, 2.0, 8.0):
        assert rdp_delta([ev], eps)[0] == pytest.approx(acc.get_delta(eps), rel=1e-12)


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
    assert rdp_epsilon([ev], delta)[0] == pytest.approx(gauss.get_epsilon(delta),
                                                             rel=1e-12)
    # ~0.006: the floor of the RDP-to-(epsilon, delta) conversion at order 1024
    assert rdp_epsilon([ev], delta)[0] < 0.01
    orders, curve = rigorous_rdp_curve([ev])
    np.testing.assert_allclose(curve, np.minimum(gauss.rdp, library_curve(40, 10, s, 300).rdp))
    assert curve[orders == 256][0] < library_curve(40, 10, s, 300).rdp[orders == 256][0] / 100


def test_large_sampling_rates_are_charged_no_more_than_an_unsampled_gaussian():
    # At q >= 1/2 Thm 27 is looser than the unsampled bound at every noise level.
    ev = uniform_path(1.0, 9, 10, 100)
    gauss = RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
    gauss.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(1.0), 100))
    assert library_curve(10, 9, 1.0, 100).get_epsilon(1e-6) > 180
    assert rdp_epsilon([ev], 1e-6)[0] == pytest.approx(gauss.get_epsilon(1e-6), rel=1e-12)


def test_delta_where_dp_accounting_cannot_convert_the_sampled_curve():
    # dp_accounting's delta conversion takes log1p(-exp(-r)), a math domain error once
    # the RDP r is below ~1e-16; the unsampled bound still converts.
    ev = uniform_path(1e7, 1, 1000, 300)
    with pytest.raises(ValueError):
        library_curve(1000, 1, 1e7, 300).get_delta(0.5)
    got = rdp_delta([ev], 0.5)[0]
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
