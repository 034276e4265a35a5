"""AdaSSP (Wang 2018, Algorithm 2) in Gaussian form: sensitivities, limits, noise, covariance."""

import math

import numpy as np
import pytest
import statsmodels.api as sm

from dpreg.engines.adassp import (
    MECHANISMS,
    AdaSSPSettings,
    adassp_covariance,
    adassp_estimate,
    adassp_events,
    adassp_sensitivities,
)
from dpreg.privacy.accountants import zcdp_rho_upper


def _data(seed, n=2000, p=3):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.uniform(-1, 1, size=(n, p - 1))])
    y = np.clip(X @ np.array([0.5, 1.0, -0.7])[:p] + rng.normal(0, 0.5, n), -3, 3)
    return X, y


def test_sensitivities_bound_random_replacements(seed):
    # Replace one row of a Gram matrix by another of norm <= B, many times at random and at
    # the worst case (orthogonal rows): lambda_min moves by <= B^2, X'X (upper triangle
    # with diagonal) by <= sqrt(2) B^2, X'y by <= 2 B |y|max.
    rng = np.random.default_rng(seed)
    B, By, p = 2.0, 3.0, 4
    s_eig, s_gram, s_xy = adassp_sensitivities(B, By)
    assert (s_eig, s_gram, s_xy) == (4.0, pytest.approx(math.sqrt(2) * 4.0), 12.0)
    iu = np.triu_indices(p)
    worst = [0.0, 0.0, 0.0]
    for _ in range(2000):
        Z = rng.normal(size=(6, p))
        Z *= B * rng.uniform(0.5, 1, 6)[:, None] / np.linalg.norm(Z, axis=1)[:, None]
        a, b = Z[0], Z[1]
        G = Z[1:].T @ Z[1:]  # contains b
        G2 = G - np.outer(b, b) + np.outer(a, a)
        worst[0] = max(worst[0], abs(np.linalg.eigvalsh(G2)[0] - np.linalg.eigvalsh(G)[0]))
        worst[1] = max(worst[1], np.linalg.norm((G2 - G)[iu]))
        ya, yb = rng.uniform(-By, By, 2)
        worst[2] = max(worst[2], np.linalg.norm(a * ya - b * yb))
    assert worst[0] <= s_eig and worst[1] <= s_gram + 1e-12 and worst[2] <= s_xy
    a, b = B * np.eye(p)[0], B * np.eye(p)[1]  # attained by orthogonal rows
    assert np.linalg.norm((np.outer(a, a) - np.outer(b, b))[iu]) == pytest.approx(s_gram)


def test_events_split_the_budget_equally():
    st = AdaSSPSettings(x_bound=2.0, y_bound=3.0)
    ev = adassp_events(st, 1.5)
    assert [e.name for e in ev] == list(MECHANISMS)
    for e, s in zip(ev, adassp_sensitivities(2.0, 3.0), strict=True):
        assert e.sensitivity == s and e.mu() == pytest.approx(1.5 / math.sqrt(3), rel=1e-12)
        assert e.adjacency == "replace-one" and e.count == 1
    assert math.sqrt(sum(e.mu() ** 2 for e in ev)) == pytest.approx(1.5, rel=1e-12)
    assert zcdp_rho_upper(ev) == pytest.approx(1.5 ** 2 / 2, rel=1e-12)


def test_huge_budget_gives_ols_on_the_clipped_data(seed):
    # Noise ~ 1e-9: no ridge, the estimate is OLS (statsmodels) on rows clipped to x_bound.
    X, y = _data(seed)
    st = AdaSSPSettings(x_bound=1.2, y_bound=3.0)
    out = adassp_estimate(X, y, st, adassp_events(st, 1e10), np.random.default_rng(1))
    norms = np.linalg.norm(X, axis=1)
    Xc = X * np.minimum(1, 1.2 / norms)[:, None]
    assert np.any(norms > 1.2)
    np.testing.assert_allclose(out.params, sm.OLS(y, Xc).fit().params, rtol=1e-7, atol=1e-9)
    assert out.ridge == 0.0
    assert out.lambda_min == pytest.approx(np.linalg.eigvalsh(Xc.T @ Xc)[0], rel=1e-6)


def test_private_eigenvalue_is_a_lower_bound_and_ridge_rule(seed):
    # lambda~ <= lambda_min except with probability beta/3 = 1/60; at a small budget the
    # ridge s2 sqrt(p log(2 p^2 / beta)) - lambda~ turns on (Algorithm 2, steps 2-3).
    X, y = _data(seed, n=200)
    st = AdaSSPSettings(x_bound=math.sqrt(3), y_bound=3.0)
    lam = np.linalg.eigvalsh(X.T @ X)[0]
    ev = adassp_events(st, 0.5)
    rng = np.random.default_rng(2)
    outs = [adassp_estimate(X, y, st, ev, rng) for _ in range(600)]
    over = np.mean([o.lambda_min > lam for o in outs])
    assert over < 1 / 60 + 4 * math.sqrt(1 / 60 / 600)
    s2 = ev[1].noise_std
    for o in outs[:20]:
        assert o.ridge == pytest.approx(max(0.0, s2 * math.sqrt(3 * math.log(18 / 0.05))
                                            - o.lambda_min), rel=1e-12, abs=1e-12)
    assert max(o.ridge for o in outs) > 0


def test_noise_scales_match_the_events(seed):
    # At a fixed data set, the spread of the released X'y equals s3 and of X'X's entries s2.
    X, y = _data(seed, n=300)
    st = AdaSSPSettings(x_bound=math.sqrt(3), y_bound=3.0)
    ev = adassp_events(st, 2.0)
    rng = np.random.default_rng(3)
    outs = [adassp_estimate(X, y, st, ev, rng) for _ in range(3000)]
    xty = np.array([o.xty for o in outs])
    gram = np.array([o.gram for o in outs])
    np.testing.assert_allclose(xty.std(axis=0), ev[2].noise_std, rtol=0.06)
    np.testing.assert_allclose(xty.mean(axis=0), X.T @ y, atol=5 * ev[2].noise_std / 50)
    np.testing.assert_allclose(gram[:, 0, 1].std(), ev[1].noise_std, rtol=0.06)
    np.testing.assert_allclose(gram[:, 2, 2].std(), ev[1].noise_std, rtol=0.06)
    np.testing.assert_array_equal(gram[:, 0, 1], gram[:, 1, 0])


def test_plugin_covariance_and_coverage_of_ols(seed):
    # Fixed data, fresh noise: the delta-method covariance matches the spread of the
    # estimates, and normal intervals cover OLS (their target) at 95%. 2000 draws x 3
    # coefficients; binomial s.e. of the coverage ~0.003 (x sqrt 3 for dependence), 4 s.e.
    X, y = _data(seed, n=1000)
    st = AdaSSPSettings(x_bound=math.sqrt(3), y_bound=3.0)
    ev = adassp_events(st, 1.0)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    rng = np.random.default_rng(4)
    est, cover, sds = [], [], []
    for _ in range(2000):
        out = adassp_estimate(X, y, st, ev, rng)
        cov, _ = adassp_covariance(out, ev)
        sd = np.sqrt(np.diag(cov))
        est.append(out.params)
        sds.append(sd)
        cover.append(np.abs(out.params - ols) <= 1.959964 * sd)
        assert out.ridge == 0.0
    est = np.array(est)
    np.testing.assert_allclose(est.std(axis=0), np.mean(sds, axis=0), rtol=0.08)
    se = math.sqrt(0.95 * 0.05 / 2000 * 3)
    assert abs(np.mean(cover) - 0.95) < 4 * se
