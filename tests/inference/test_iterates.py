"""Iterate-based intervals and checkpoint aggregation against hand formulas and scipy."""

import numpy as np
import pytest
from scipy import stats

from dpreg.exceptions import OptionError
from dpreg.inference.iterates import (
    aggregate,
    batch_layout,
    batch_means,
    checkpoint_estimates,
    ema,
    t_inference,
    upa,
)


@pytest.fixture
def path(seed):
    return np.random.default_rng(seed).normal(size=(137, 3)).cumsum(axis=0)


def _ema_loop(it, beta):
    # recycling-scraps s.2.1.1 with the TensorFlow convention: beta_k weighs the old average
    e = it[0].copy()
    for k in range(1, it.shape[0]):
        b = min(beta, (1 + k) / (10 + k))
        e = b * e + (1 - b) * it[k]
    return e


@pytest.mark.parametrize("beta", [0.5, 0.9, 0.999])
@pytest.mark.parametrize("length", [1, 2, 12, 137])
def test_ema_matches_the_recursion(path, beta, length):
    # the closed-form weights equal the step-by-step recursion (round-off only)
    np.testing.assert_allclose(ema(path[:length], beta), _ema_loop(path[:length], beta),
                               rtol=1e-12, atol=1e-12)


def test_ema_warm_up_weights_by_hand():
    # three iterates, beta large: beta_1 = 2/11, beta_2 = 3/12
    it = np.array([[1.0], [2.0], [4.0]])
    b1, b2 = 2 / 11, 3 / 12
    want = b2 * (b1 * 1.0 + (1 - b1) * 2.0) + (1 - b2) * 4.0
    assert ema(it, 0.999)[0] == pytest.approx(want, rel=1e-15)
    # once (1+k)/(10+k) exceeds beta, the coefficient is beta: a plain EMA
    it = np.arange(200.0)[:, None]
    e = ema(it, 0.5)[0]
    assert e == pytest.approx(_ema_loop(it, 0.5)[0], rel=1e-13)
    assert 197 < e < 199  # about one iterate of lag at beta = 0.5


@pytest.mark.parametrize("k", [1, 5, 137])
def test_upa_is_the_mean_of_the_last_k(path, k):
    np.testing.assert_allclose(upa(path, k), path[len(path) - k:].mean(axis=0), rtol=1e-14)


def test_aggregate_dispatch(path):
    np.testing.assert_array_equal(aggregate(path, "last"), path[-1])
    np.testing.assert_allclose(aggregate(path, "mean"), path.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(aggregate(path, "ema", beta=0.9), _ema_loop(path, 0.9),
                               rtol=1e-12)
    np.testing.assert_allclose(aggregate(path, "upa", k=7), path[-7:].mean(axis=0))
    with pytest.raises(OptionError, match="upa_k"):
        aggregate(path, "upa")
    with pytest.raises(OptionError, match="upa_k"):
        upa(path, 138)
    with pytest.raises(OptionError, match="aggregate"):
        aggregate(path, "median")
    with pytest.raises(OptionError, match="ema_beta"):
        ema(path, 1.0)


def test_batch_layout_and_estimates(path):
    # 137 iterates, burn-in 20: 117 left, m = 10 -> L = 11, 7 more dropped at the front
    start, length = batch_layout(137, 20, 10)
    assert (start, length) == (27, 11)
    bm = batch_means(path, 20, 10)
    want = np.array([path[27 + 11 * b: 27 + 11 * (b + 1)].mean(axis=0) for b in range(10)])
    np.testing.assert_allclose(bm, want, rtol=1e-14)
    cp = checkpoint_estimates(path, 20, 10)
    np.testing.assert_array_equal(cp, path[[27 + 11 * (b + 1) - 1 for b in range(10)]])
    np.testing.assert_array_equal(cp[-1], path[-1])  # the last checkpoint is the final iterate
    # the checkpoint interval's scale: their sample sd over sqrt(m) (what a fit reports)
    np.testing.assert_allclose(t_inference(cp, "checkpoints").scale,
                               cp.std(axis=0, ddof=1) / np.sqrt(10), rtol=1e-14)


def test_batch_layout_refuses_too_few_iterates():
    with pytest.raises(OptionError, match="steps = 25.*burn_in = 20.*n_estimates = 10"):
        batch_layout(25, 20, 10)
    assert batch_layout(30, 20, 10) == (20, 1)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.32])
def test_t_interval_matches_scipy(seed, alpha):
    est = np.random.default_rng(seed).normal([1.0, -2.0, 0.0], [0.1, 1.0, 3.0], size=(10, 3))
    inf = t_inference(est, "batch_means")
    ci = inf.conf_int(np.zeros(3), alpha)  # the interval ignores the reported estimate
    for j in range(3):
        lo, hi = stats.t.interval(1 - alpha, 9, loc=est[:, j].mean(), scale=stats.sem(est[:, j]))
        assert ci[j, 0] == pytest.approx(lo, rel=1e-12, abs=1e-13)
        assert ci[j, 1] == pytest.approx(hi, rel=1e-12, abs=1e-13)
    np.testing.assert_allclose(inf.scale, stats.sem(est, axis=0), rtol=1e-13)
    # p-value of H0: theta_j = 0 is scipy's one-sample t test on the estimates
    np.testing.assert_allclose(inf.pvalues(np.full(3, 99.0)),
                               stats.ttest_1samp(est, 0.0).pvalue, rtol=1e-10)
    assert inf.law.name == "t(9)" and inf.is_standard_error


def test_t_inference_needs_two_estimates():
    with pytest.raises(OptionError, match="at least 2"):
        t_inference(np.ones((1, 3)), "runs")


def test_t_interval_covers_iid_normal_means(seed):
    # exact t law: m = 10 iid normal estimates; 4000 intervals, coverage 0.95 +/- 4 s.e.
    rng = np.random.default_rng(seed)
    est = rng.normal(0.3, 2.0, size=(4000, 10, 1))
    cover = [np.all((ci := t_inference(e, "runs").conf_int(None, 0.05))[:, 0] <= 0.3)
             and ci[0, 1] >= 0.3 for e in est]
    se = np.sqrt(0.95 * 0.05 / 4000)
    assert abs(np.mean(cover) - 0.95) < 4 * se
