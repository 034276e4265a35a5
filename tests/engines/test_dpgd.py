"""The full-batch DP-GD engine: noise-free limits, the clipped objective, the noise, seeds."""

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import optimize

from dpreg.engines.dpgd import GDSettings, default_gd_steps, run_dpgd
from dpreg.exceptions import ConvergenceError
from dpreg.families import Objective, dispatch, get_family, mallows_weights


def _obj(X, family="linear", c=np.inf, mallows=False):
    w = mallows_weights(X) if mallows else np.ones(X.shape[0])
    return Objective(get_family(family), c, 0.5, w, mallows)


def _data(seed, n=500, p=4, outliers=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])
    y = X @ rng.uniform(-1, 1, size=p) + rng.normal(size=n)
    y[:outliers] += 25.0
    return X, y


def _run(X, y, seed=0, obj=None, **kw):
    base = dict(steps=500, clip=np.inf, lr=0.5, noise_std=0.0)
    base.update(kw)
    return run_dpgd(X, y, objective=obj or _obj(X), settings=GDSettings(**base),
                    theta0=np.zeros(X.shape[1]), rng=np.random.default_rng(seed))


def test_noise_free_unclipped_limit_is_ols(seed):
    # No noise, no clipping, run to convergence: plain gradient descent on the squared loss,
    # whose fixed point is OLS. Contraction |1 - lr * eig(X'X/n)| <= 1 - 1/kappa per step;
    # 3000 steps at lr = 1/lambda_max leave (1 - 1/kappa)^3000 < 1e-30 of the start.
    X, y = _data(seed)
    lam = np.linalg.eigvalsh(X.T @ X / X.shape[0])
    assert (1 - lam[0] / lam[-1]) ** 3000 < 1e-30
    out = _run(X, y, steps=3000, lr=1.0 / lam[-1])
    ols = sm.OLS(y, X).fit().params
    np.testing.assert_allclose(out.paths[0, -1], ols, rtol=1e-8, atol=1e-10)
    assert out.clip_count == 0 and out.grad_evals == 3000 * X.shape[0]
    np.testing.assert_array_equal(out.paths[0, 0], np.zeros(X.shape[1]))


def _clipped_loss(theta, X, y, clip):
    # Brown et al. s.2.5: clipping the squared loss's gradient at gamma is the Huber loss
    # with per-row threshold B_i = gamma / ||x_i||, written out here independently.
    r = y - X @ theta
    b = clip / np.linalg.norm(X, axis=1)
    a = np.abs(r)
    return np.mean(np.where(a <= b, 0.5 * r * r, b * (a - 0.5 * b)))


def test_noise_free_clipped_limit_minimizes_the_huberized_loss(seed):
    X, y = _data(seed, outliers=40)
    clip = 3.0
    out = _run(X, y, steps=4000, clip=clip, lr=0.5)
    ref = optimize.minimize(_clipped_loss, np.zeros(X.shape[1]), args=(X, y, clip),
                            method="BFGS", options={"gtol": 1e-12}).x
    np.testing.assert_allclose(out.paths[0, -1], ref, atol=1e-6)
    assert out.clip_count > 0
    ols = sm.OLS(y, X).fit().params
    assert np.max(np.abs(ref - ols)) > 0.1  # the clipped target is not OLS here


@pytest.mark.parametrize("family,c,mallows", [("linear", np.inf, False),
                                              ("huber", 1.345, True),
                                              ("logistic", np.inf, False),
                                              ("expectile", 1.345, True)])
def test_one_step_is_the_mean_clipped_gradient_plus_noise(seed, family, c, mallows):
    # theta_1 = theta_0 - lr (mean of dispatch.clipped_gradients + lambda z_1), with z_1 the
    # first normal draw of the run's spawned generator (the documented noise convention).
    X, y = _data(seed, n=300)
    if family == "logistic":
        y = (y > 0).astype(float)
    obj = _obj(X, family, c, mallows)
    theta0 = np.array([0.3, -0.2, 0.1, 0.05])
    clip, lr, lam = 0.8, 0.7, 0.25
    out = run_dpgd(X, y, objective=obj, settings=GDSettings(1, clip, lr, lam),
                   theta0=theta0, rng=np.random.default_rng(11))
    g = np.empty_like(X)
    xnorm = np.linalg.norm(X, axis=1)
    dispatch.clipped_gradients(X, y, xnorm, obj.weights, obj.family.code, obj.c, obj.tau,
                               theta0, clip, g)
    z = np.random.default_rng(11).spawn(1)[0].standard_normal((1, 4))[0]
    want = theta0 - lr * (g.mean(axis=0) + lam * z)
    np.testing.assert_allclose(out.paths[0, 1], want, rtol=1e-12, atol=1e-14)
    clipped = np.sum(np.linalg.norm(g, axis=1) > clip - 1e-12)
    assert out.clip_count == clipped


def test_reproducible_with_a_seed_and_runs_differ(seed):
    X, y = _data(seed, n=200)
    a = _run(X, y, seed=5, noise_std=0.3, clip=2.0, runs=3, steps=50)
    b = _run(X, y, seed=5, noise_std=0.3, clip=2.0, runs=3, steps=50)
    c = _run(X, y, seed=6, noise_std=0.3, clip=2.0, runs=3, steps=50)
    np.testing.assert_array_equal(a.paths, b.paths)
    assert a.clip_count == b.clip_count
    assert a.paths.shape == (3, 51, 4)
    assert not np.allclose(a.paths, c.paths)
    assert not np.allclose(a.paths[0], a.paths[1])  # each run has its own noise
    # block boundaries do not change the stream: a long run's first steps equal a short one
    d = _run(X, y, seed=5, noise_std=0.3, clip=2.0, runs=1, steps=5000)
    np.testing.assert_array_equal(d.paths[0, :51], a.paths[0])


def test_clip_count_and_share(seed):
    X, y = _data(seed, n=100)
    out = _run(X, y, clip=1e-6, steps=20, runs=2)
    assert out.clip_count == out.grad_evals == 2 * 20 * 100 and out.clip_share == 1.0


def test_divergence_raises(seed):
    X, y = _data(seed, n=100)
    with pytest.raises(ConvergenceError, match="lr=1e\\+06"):
        _run(X, y, lr=1e6, steps=2000)


def test_stationary_variance_matches_the_ar1_formula(seed):
    # Without clipping the iterates are an AR(1) about OLS (Lemma 2.3): with Sigma = X'X/n,
    # Var(theta_t) -> lr^2 lambda^2 sum_k (I - lr Sigma)^{2k} = lr lambda^2 (2 Sigma -
    # lr Sigma^2)^{-1}. Check the empirical variance of a long path (batch-mean error ~5%).
    X, y = _data(seed, n=400, p=3)
    n = X.shape[0]
    S = X.T @ X / n
    lr, lam, T = 0.5, 0.2, 60_000
    out = _run(X, y, seed=3, lr=lr, noise_std=lam, steps=T)
    V = lr * lam ** 2 * np.linalg.inv(2 * S - lr * S @ S)
    emp = np.cov(out.paths[0, 1000:], rowvar=False)
    np.testing.assert_allclose(np.diag(emp), np.diag(V), rtol=0.1)
    ols = sm.OLS(y, X).fit().params
    se_mean = np.sqrt(np.diag(np.linalg.inv(S) @ np.linalg.inv(S)) * lam ** 2 / T)
    assert np.all(np.abs(out.paths[0, 1000:].mean(axis=0) - ols) < 5 * se_mean)


def test_default_steps():
    assert default_gd_steps(10, 20, 1 / 3) == (20 + 10 * 1000, 1000)
    assert default_gd_steps(10, 20, 0.01) == (20 + 10 * 10_000, 10_000)
    assert default_gd_steps(5, 0, 0.05) == (5 * 2000, 2000)
