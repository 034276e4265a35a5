"""LDP-SGD engine: the kernel against a numpy transcription of (2.3), the online
random-scaling recursion against the paper's direct formula, chunk invariance."""

import math

import numpy as np
import pytest

from dpreg.engines.ldp_sgd import NOISE_BLOCK, LDPPath, LDPSettings
from dpreg.families import get_family, mallows_weights
from dpreg.inference.batch_means import batch_ends, batch_means_covariance

HUBER = get_family("huber")


B0 = 1.345 * math.sqrt(2)


def _settings(plugin=True, lr=0.5, clip=B0, noise=2.0, step_offset=0.0):
    return LDPSettings(lr=lr, lr_decay=0.51, clip=clip, noise_scale=noise, plugin=plugin,
                       hess_cap=1.0, x_bound=None, code=HUBER.code, c=1.345, tau=0.5,
                       step_offset=step_offset)


def _data(seed, n=700, p=3):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.standard_normal((n, p - 1))])
    y = X.sum(axis=1) + 0.5 * rng.standard_normal(n)
    return X, y, mallows_weights(X)


def _numpy_path(X, y, w, s: LDPSettings, seed):
    """(2.3) written out in numpy with the same noise blocks: iterates theta_1..theta_n."""
    n, p = X.shape
    rng = np.random.default_rng(seed)
    noise = np.vstack([rng.standard_normal((NOISE_BLOCK, p))
                       for _ in range(-(-n // NOISE_BLOCK))])
    theta = np.zeros(p)
    out = np.empty((n, p))
    A = np.zeros((p, p))
    S = np.zeros((p, p))
    for i in range(n):
        r = y[i] - X[i] @ theta
        psi = -np.clip(r, -s.c, s.c)  # Huber score in the linear index
        g = w[i] * psi * X[i]
        norm = np.linalg.norm(g)
        h = 0.0
        if norm > s.clip:
            g *= s.clip / norm
        else:
            h = w[i] * float(abs(r) <= s.c)
        A += h * np.outer(X[i], X[i])
        S += np.outer(g, g)
        step = s.lr * (i + 1 + s.step_offset) ** (-s.lr_decay)
        theta = theta - step * (g + s.noise_scale * noise[i])
        out[i] = theta
    return out, A, S


def test_kernel_matches_numpy_transcription(seed):
    X, y, w = _data(seed)
    s = _settings(clip=1.0)  # a clip that binds for some rows
    path = LDPPath(X.shape[1], s, np.zeros(3), np.random.default_rng(seed))
    path.update(X, y, w)
    snap = path.snapshot()
    iterates, A, S = _numpy_path(X, y, w, s, seed)
    np.testing.assert_allclose(snap.last, iterates[-1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(snap.params, iterates.mean(axis=0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(snap.a_sum, A, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(snap.s_sum, S, rtol=1e-10, atol=1e-12)


def test_random_scaling_recursion_equals_direct_formula(seed):
    """V_n = n^-2 sum_b D_b D_b' with D_b = sum_{i<=b} (theta_i - theta_bar_n) (s.4.2),
    at the end and, diagonal only, at every recorded mark; across a noise-block end."""
    X, y, w = _data(seed, n=NOISE_BLOCK + 900)
    s = _settings()
    path = LDPPath(3, s, np.zeros(3), np.random.default_rng(seed))
    path.update(X, y, w)
    snap = path.snapshot()
    iterates, _, _ = _numpy_path(X, y, w, s, seed)
    n = len(y)
    D = np.cumsum(iterates - iterates.mean(axis=0), axis=0)
    V = D.T @ D / n ** 2
    np.testing.assert_allclose(snap.rs_q * n, V, rtol=1e-9)
    for t, avg, q in zip(snap.mark_steps[::37], snap.mark_avg[::37], snap.mark_q[::37],
                            strict=True):
        it = iterates[:t]
        Dt = np.cumsum(it - it.mean(axis=0), axis=0)
        np.testing.assert_allclose(avg, it.mean(axis=0), rtol=1e-10)
        np.testing.assert_allclose(q, np.sum(Dt ** 2, axis=0) / t ** 3, rtol=1e-8)


def test_chunking_does_not_change_the_numbers(seed):
    X, y, w = _data(seed, n=2 * NOISE_BLOCK + 333)
    one = LDPPath(3, _settings(), np.zeros(3), np.random.default_rng(seed))
    one.update(X, y, w)
    many = LDPPath(3, _settings(), np.zeros(3), np.random.default_rng(seed))
    cuts = [0, 1, 8, 4095, 4096, 4097, 6000, 8192, len(y)]
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        many.update(X[a:b], y[a:b], w[a:b])
    s1, s2 = one.snapshot(), many.snapshot()
    for field in ("params", "last", "rs_q", "mark_steps", "mark_avg", "mark_q", "a_sum",
                  "s_sum"):
        np.testing.assert_array_equal(getattr(s1, field), getattr(s2, field), err_msg=field)


def test_divergence_restores_the_state(seed):
    X, y, w = _data(seed, n=300)
    path = LDPPath(3, _settings(plugin=False), np.zeros(3), np.random.default_rng(seed))
    path.update(X[:100], y[:100], w[:100])
    before = path.snapshot()
    bad = X[100:200].copy()
    bad[50, 1] = np.inf
    with pytest.raises(Exception, match="diverged"):
        path.update(bad, y[100:200], w[100:200])
    after = path.snapshot()
    assert after.nobs == before.nobs == 100
    np.testing.assert_array_equal(after.params, before.params)
    # and the stream goes on exactly as if the bad chunk had never come
    path.update(X[100:], y[100:], w[100:])
    ref = LDPPath(3, _settings(plugin=False), np.zeros(3), np.random.default_rng(seed))
    ref.update(X[:100], y[:100], w[:100])
    ref.update(X[100:], y[100:], w[100:])
    np.testing.assert_array_equal(path.snapshot().params, ref.snapshot().params)


def test_batch_means_against_direct_formula():
    """Chen et al. (2020) batch means with every step recorded (no rounding of ends)."""
    rng = np.random.default_rng(3)
    n, p, M, alpha = 5000, 2, 8, 0.51
    iterates = np.cumsum(rng.standard_normal((n, p)), axis=0) * 0.01 + rng.standard_normal((n, p))
    steps = np.arange(1, n + 1)
    avgs = np.cumsum(iterates, axis=0) / steps[:, None]
    sigma, used = batch_means_covariance(steps, avgs, M, alpha)
    ends = np.rint(batch_ends(n, M, alpha)).astype(int)
    batches = [iterates[ends[k - 1]:ends[k]] for k in range(1, M + 1)]
    overall = iterates[ends[0]:].mean(axis=0)
    direct = sum(len(b) * np.outer(b.mean(0) - overall, b.mean(0) - overall)
                 for b in batches) / M
    assert used == M
    np.testing.assert_allclose(sigma, direct, rtol=1e-9)
    assert ends[-1] == n and np.all(np.diff(ends) > 0)


def test_step_offset_and_mapped_marks_match_numpy(seed):
    """The step lr (t + t0)^-alpha, and marks that record diag(M^-1 Q_t M^-T) (the
    random-scaling matrix in the user's coordinates, from the full Q_t) when the path
    is given a conditioning map; across a noise-block end."""
    X, y, w = _data(seed, n=NOISE_BLOCK + 700)
    s = _settings(lr=2.0, step_offset=7.3)
    M_inv = np.array([[1.0, -0.5, 2.0], [0.0, 0.25, 0.0], [0.0, 0.3, 0.1]])
    path = LDPPath(3, s, np.zeros(3), np.random.default_rng(seed), qmap=M_inv)
    path.update(X, y, w)
    snap = path.snapshot()
    iterates, _, _ = _numpy_path(X, y, w, s, seed)
    np.testing.assert_allclose(snap.last, iterates[-1], rtol=1e-10, atol=1e-12)
    for t, avg, q in zip(snap.mark_steps[1::29], snap.mark_avg[1::29], snap.mark_q[1::29],
                            strict=True):
        it = iterates[:t]
        Dt = np.cumsum(it - it.mean(axis=0), axis=0)
        Q = Dt.T @ Dt / t ** 3
        np.testing.assert_allclose(avg, it.mean(axis=0), rtol=1e-10)  # engine coordinates
        np.testing.assert_allclose(q, np.diag(M_inv @ Q @ M_inv.T), rtol=1e-7, atol=1e-15)
        # not the map of the diagonal alone
        assert not np.allclose(q, (M_inv ** 2) @ np.diag(Q), rtol=1e-3)
