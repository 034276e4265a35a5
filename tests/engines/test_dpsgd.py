"""The DP-SGD engine: non-private limit, random-scaling sums, sampling, reproducibility."""

import numpy as np
import pytest

from dpreg.engines import SGDSettings, default_schedule, run_dpsgd
from dpreg.exceptions import ConvergenceError
from dpreg.families import Objective, get_family


def _LIN(X):
    return Objective(get_family("linear"), np.inf, 0.5, np.ones(X.shape[0]), False)


def _data(seed, n=500, p=4):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])
    y = X @ rng.uniform(size=p) + rng.normal(size=n)
    return np.ascontiguousarray(X), y


def _settings(**kw):
    base = dict(batch_size=1, sampling="uniform", steps=10_000, clip=np.inf, lr=0.2,
                lr_decay=0.501, noise_scale=0.0, noise_multiplier=0.0)
    base.update(kw)
    return SGDSettings(**base)


def _run(X, y, settings, seed=0):
    return run_dpsgd(X, y, objective=_LIN(X), settings=settings,
                     theta0=np.zeros(X.shape[1]), rng=np.random.default_rng(seed))


def test_noise_free_limit_is_ols(seed):
    # No noise, no clipping, T = n^2: the averaged iterate tends to OLS. Its error is the
    # sampling part of Theorem 1, sd ~ sqrt(V_jj / (k m n)) with k = T/n = n; 8 sd bound.
    X, y = _data(seed)
    n = X.shape[0]
    out = _run(X, y, _settings(steps=n * n))
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    resid = y - X @ ols
    V = np.linalg.inv(X.T @ X / n) * resid.var()
    tol = 8 * np.sqrt(np.diag(V) / (n * n))
    assert np.all(np.abs(out.params - ols) < tol)
    assert out.clip_count == 0 and out.grad_evals == n * n


def test_random_scaling_matches_two_pass(seed):
    # Q from the one-pass, re-centred sums equals the two-pass formula on the stored path.
    X, y = _data(seed, n=200)
    T = 3000  # below the trajectory cap, so stride 1 stores every iterate
    out = _run(X, y, _settings(steps=T, noise_scale=0.5), seed=3)
    path = out.trajectory_iter
    assert path.shape == (T, X.shape[1])
    theta_bar = path.mean(axis=0)
    np.testing.assert_allclose(out.params, theta_bar, rtol=1e-12, atol=1e-14)
    D = np.cumsum(path - theta_bar, axis=0)
    Q = D.T @ D / T ** 3
    np.testing.assert_allclose(out.rs_q, Q, rtol=1e-10, atol=1e-16)


def test_recentring_across_blocks_is_exact(seed, monkeypatch):
    # Many blocks (re-centred after each) give the same Q as the two-pass formula.
    import dpreg.engines.dpsgd as drv

    monkeypatch.setattr(drv, "_block_size", lambda m, p: 700)
    X, y = _data(seed, n=100)
    T = 3000
    out = _run(X, y, _settings(steps=T, noise_scale=0.3), seed=5)
    path = out.trajectory_iter
    D = np.cumsum(path - path.mean(axis=0), axis=0)
    np.testing.assert_allclose(out.rs_q, D.T @ D / T ** 3, rtol=1e-10, atol=1e-16)


def test_clipping_counts_and_bounds_the_step(seed):
    X, y = _data(seed, n=200)
    out = _run(X, y, _settings(steps=2000, clip=0.1))
    assert 0 < out.clip_count <= out.grad_evals


def test_partial_fisher_yates_is_uniform():
    # Kernel-level check: frequency of each row in batches of size m is m/n (chi-square).
    from scipy import stats

    n, m, runs = 20, 5, 2000
    X = np.zeros((n, n))
    np.fill_diagonal(X, 1.0)
    y = np.ones(n)
    # With theta = 0, X = I, y = 1 and clip inf, the gradient of row i is -e_i, so the
    # iterate after one step with lr = 1, decay ~ 0 counts the rows drawn.
    rng = np.random.default_rng(7)
    counts = np.zeros(n)
    for _ in range(runs):
        out = run_dpsgd(X, y, objective=_LIN(X),
                        settings=_settings(batch_size=m, steps=1, lr=1.0, lr_decay=0.5000001),
                        theta0=np.zeros(n), rng=rng)
        counts += np.round(out.last * m)
    total = counts.sum()
    assert total == m * runs
    chi2 = ((counts - total / n) ** 2 / (total / n)).sum()
    assert stats.chi2.sf(chi2, n - 1) > 1e-3


def test_poisson_batches_have_expected_size(seed):
    X, y = _data(seed, n=1000)
    out = _run(X, y, _settings(sampling="poisson", batch_size=10, steps=20_000))
    # E = q n T = 10 T; sd sqrt(T n q (1-q))
    sd = np.sqrt(20_000 * 10 * (1 - 0.01))
    assert abs(out.grad_evals - 200_000) < 5 * sd


def test_reproducible_and_seed_dependent(seed):
    X, y = _data(seed, n=100)
    s = _settings(steps=5000, noise_scale=1.0)
    a, b, c = _run(X, y, s, 1), _run(X, y, s, 1), _run(X, y, s, 2)
    np.testing.assert_array_equal(a.params, b.params)
    assert not np.array_equal(a.params, c.params)


def test_divergence_raises_clear_error(seed):
    X, y = _data(seed, n=100)
    with pytest.raises(ConvergenceError, match="lr"):
        _run(X, y, _settings(lr=1e6, steps=2000))


def test_default_schedule_keeps_c_equal_one():
    # small n: one row per step, T = n^2 (the paper's regime), at least 200,000 steps
    assert default_schedule(150) == (1, 200_000)
    assert default_schedule(1000) == (5, 200_000)
    # otherwise batches of about n / 200 rows and T = (n / m)^2 steps: c = m sqrt(T)/n = 1
    for n in (6366, 100_000, 10 ** 6):
        m, T = default_schedule(n)
        assert m == max(int(np.ceil(n / 200)), int(np.ceil(n * n / 5e7)))
        # c = m sqrt(T) / n is 1 where (n / m)^2 is enough steps, more where the
        # 200,000-step floor applies; the work stays bounded
        assert m * np.sqrt(T) / n >= 1 - 0.01
        assert T >= min(200_000, 5e7 // m)
        assert m * T <= 5e7 * 1.01
    assert default_schedule(10 ** 6) == (20_000, 2_500)
    # a user's large batch never gets fewer than 200,000 steps (work permitting)
    assert default_schedule(1000, 50) == (50, 200_000)
    assert default_schedule(1000, 10) == (10, 200_000)
    assert default_schedule(10 ** 6, 10 ** 5) == (10 ** 5, 500)


def test_a_large_batch_is_summed_in_fixed_chunks_on_all_cores(seed):
    # batches of at least PARALLEL_ROWS rows sum their clipped gradients in CHUNKS fixed
    # chunks in parallel: one noiseless step over every row is the mean gradient (to
    # round-off), some gradients clipped and counted, and a rerun gives the same bits
    from dpreg.engines import _kernels

    n = 2 * _kernels.PARALLEL_ROWS + 3
    X, y = _data(seed, n=n, p=3)
    theta0 = np.array([0.5, -0.2, 0.1])
    clip = 1.5
    one = _settings(batch_size=n, steps=1, clip=clip, lr=1.0, lr_decay=0.0)
    out = run_dpsgd(X, y, objective=_LIN(X), settings=one, theta0=theta0,
                    rng=np.random.default_rng(0))
    g = -(y - X @ theta0)[:, None] * X
    norms = np.linalg.norm(g, axis=1)
    g_clipped = g * np.minimum(1.0, clip / norms)[:, None]
    assert np.allclose(theta0 - out.last, g_clipped.mean(axis=0), rtol=1e-12, atol=1e-14)
    assert out.clip_count == int((norms > clip).sum()) > 0
    assert out.grad_evals == n
    many = _settings(batch_size=_kernels.PARALLEL_ROWS, steps=50, clip=clip, lr=0.5,
                     noise_scale=0.01)
    a, b = _run(X, y, many, seed=1), _run(X, y, many, seed=1)
    assert np.array_equal(a.params, b.params) and np.array_equal(a.rs_q, b.rs_q)
