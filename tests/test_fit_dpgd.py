"""DP-GD and AdaSSP through ``DPRegression.fit``: ledger, options, results, coverage."""

import math
import warnings

import dp_accounting
import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

import dpreg
from dpreg.exceptions import ConvergenceWarning, OptionError, PrivacyLeakWarning
from dpreg.fits.dpgd import TARGET_NOTE
from dpreg.frontend.model import DPRegression
from dpreg.inference.iterates import batch_means, checkpoint_estimates

GAMMA = 5 * math.sqrt(3)


def _model(seed, n=1000, p=3, **kw):
    # Figure 5 design of the dpgd paper at p = 3: theta* on the unit sphere, x ~ N(0, I)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    theta = rng.normal(size=p)
    theta /= np.linalg.norm(theta)
    y = X @ theta + rng.normal(size=n)
    return DPRegression(y, X, **kw)


def _fit(model, **kw):
    # the paper's algorithm: the design as given, no private preconditioner
    base = dict(engine="dpgd", rho=0.015, clip=GAMMA, lr=1 / 3, x_bound=5.0, steps=520,
                condition="none",
                random_state=3)
    base.update(kw)
    return model.fit(**base)


@pytest.fixture
def model(seed):
    return _model(seed)


def _clipped_minimizer(model, clip, lr=1 / 3, tol=1e-13):
    # Non-private reference: noiseless clipped GD run to convergence (numpy, not the kernel).
    X, y = model.design.exog, model.design.endog
    theta = np.zeros(X.shape[1])
    xn = np.linalg.norm(X, axis=1)
    for _ in range(100_000):
        g = (X @ theta - y)[:, None] * X
        gn = np.abs(X @ theta - y) * xn
        g *= np.minimum(1.0, clip / np.maximum(gn, 1e-300))[:, None]
        step = lr * g.mean(axis=0)
        theta -= step
        if np.max(np.abs(step)) < tol:
            return theta
    raise AssertionError("did not converge")


# -------------------------------------------------------------------------------- privacy
def test_zcdp_ledger_is_lemma_2_1_and_dp_accounting(model):
    res = _fit(model)
    n, T, rho = 1000, 520, 0.015
    (ev,) = res.ledger.events
    lam = ev.noise_std
    # Lemma 2.1: lambda^2 = 2 T gamma^2 / (rho n^2) meets rho-zCDP exactly
    assert lam ** 2 == pytest.approx(2 * T * GAMMA ** 2 / (rho * n ** 2), rel=1e-9)
    assert ev.sensitivity == pytest.approx(2 * GAMMA / n, rel=1e-15) and ev.count == T
    assert res.ledger.rho_rigorous == pytest.approx(rho, rel=1e-9)
    assert res.settings["noise_std (lambda)"] == lam
    # dp_accounting's RDP accountant: T Gaussian releases with noise multiplier
    # lambda / (2 gamma / n) have RDP rho * alpha at every order, i.e. rho-zCDP
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(lam * n / (2 * GAMMA)), T))
    orders = np.asarray(acc.orders, dtype=float)
    rdp = np.asarray(acc.rdp, dtype=float)
    np.testing.assert_allclose(rdp / orders, rho, rtol=1e-9)
    # (eps, delta): the rigorous ledger value is below the zCDP conversion (Claim A.6) and
    # the RDP accountant's, and close to the exact Gaussian (1-GDP-style) curve
    eps, _ = res.ledger.epsilon_rigorous
    delta = res.ledger.delta
    assert eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert eps <= acc.get_epsilon(delta) + 1e-9
    mu = math.sqrt(2 * rho)
    exact = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    assert exact <= delta and exact == pytest.approx(delta, rel=2e-2)


def test_mu_and_epsilon_requests_are_exact(model):
    res = _fit(model, rho=None, mu=0.5)
    (ev,) = res.ledger.events
    assert math.sqrt(520) * (2 * GAMMA / 1000) / ev.noise_std == pytest.approx(0.5, rel=1e-12)
    assert res.ledger.total_mu == pytest.approx(0.5, rel=1e-12)
    res = _fit(model, rho=None, epsilon=1.0, delta=1e-6)
    (ev,) = res.ledger.events
    mu = math.sqrt(520) * (2 * GAMMA / 1000) / ev.noise_std
    # the Gaussian mechanism's exact (eps, delta) curve (Dong, Roth and Su, Cor. 2.13)
    exact = stats.norm.cdf(-1 / mu + mu / 2) - math.e * stats.norm.cdf(-1 / mu - mu / 2)
    assert exact <= 1e-6 and exact == pytest.approx(1e-6, rel=2e-2)
    assert res.ledger.epsilon_rigorous[0] <= 1.0


def test_runs_split_the_budget_and_the_ledger_says_so(model):
    res = _fit(model, cov_type="runs", runs=10, steps=60)
    evs = res.ledger.events
    assert len(evs) == 10 and [e.name for e in evs][:2] == ["DP-GD run 1/10", "DP-GD run 2/10"]
    for e in evs:
        assert e.noise_std ** 2 == pytest.approx(2 * 60 * GAMMA ** 2 / (0.0015 * 1000 ** 2),
                                                 rel=1e-9)
    assert res.ledger.rho_rigorous == pytest.approx(0.015, rel=1e-9)
    assert any("each paid from the budget" in note for note in res.notes)
    assert list(res.inferences) == ["runs"]


def test_clip_share_release_costs_budget(model):
    res = _fit(model, budget_split={"path": 0.9, "clip_share": 0.1})
    path, share = res.ledger.events
    assert share.name == "clip share" and share.sensitivity == pytest.approx(1e-3)
    assert share.mu() == pytest.approx(math.sqrt(0.1 * 2 * 0.015), rel=1e-9)
    assert path.mu() == pytest.approx(math.sqrt(0.9 * 2 * 0.015), rel=1e-9)
    assert res.ledger.rho_rigorous == pytest.approx(0.015, rel=1e-9)
    text = res.summary().as_text()
    assert "clipped" in text and "private: Gaussian mechanism 'clip share'" in text
    assert not hasattr(res, "diagnostics")


def test_clip_share_only_with_diagnostics(model):
    res = _fit(model)
    assert "not released" in res.summary().as_text() and not hasattr(res, "diagnostics")
    with pytest.warns(PrivacyLeakWarning, match="clipped"):
        res = _fit(model, diagnostics=True, clip=1.0)
    assert 0 < res.diagnostics["clip_share"] <= 1
    assert "NON-PRIVATE" in res.summary().as_text()


# -------------------------------------------------------------------------------- results
@pytest.mark.parametrize("kw", [dict(), dict(cov_type="checkpoints"),
                                dict(aggregate="last"), dict(aggregate="ema"),
                                dict(aggregate="upa", upa_k=50),
                                dict(cov_type="runs", runs=10, steps=60),
                                dict(cov_type="runs", runs=10, steps=60, aggregate="ema")])
def test_results_are_complete_and_finite(model, kw):
    res = _fit(model, **kw)
    for value in (res.params, res.bse, res.tvalues, res.pvalues, res.checkpoint_sd):
        assert isinstance(value, pd.Series) and np.all(np.isfinite(value))
    assert np.all(np.isfinite(res.conf_int().to_numpy()))
    assert np.all(np.isfinite(res.cov_params().to_numpy()))
    text = res.summary().as_text()
    assert "DP-GD" in text and "empirical minimizer of the clipped objective" in text
    assert TARGET_NOTE in res.notes and "nan" not in text.lower()
    assert res.engine == "DP-GD" and res.private


def test_estimates_and_intervals_by_construction(model):
    res = _fit(model)
    it = res.trajectory["iterate"]
    assert it.shape == (520, 3)
    bm, cp = batch_means(it, 20, 10), checkpoint_estimates(it, 20, 10)
    np.testing.assert_allclose(res.params, bm.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(res.bse, stats.sem(bm, axis=0), rtol=1e-12)
    ci = res.conf_int(0.1, method="checkpoints").to_numpy()
    half = stats.t.ppf(0.95, 9) * stats.sem(cp, axis=0)
    np.testing.assert_allclose(ci[:, 0], cp.mean(axis=0) - half, rtol=1e-12)
    np.testing.assert_allclose(res.cov_params(), np.cov(bm, rowvar=False) / 10, rtol=1e-12)
    np.testing.assert_allclose(res.checkpoint_sd, cp.std(axis=0, ddof=1), rtol=1e-12)
    assert res.settings["batch_length"] == 50


def test_aggregates_change_the_estimate_not_the_interval(model):
    mean = _fit(model)
    it = mean.trajectory["iterate"]
    last = _fit(model, aggregate="last")
    upa = _fit(model, aggregate="upa", upa_k=37)
    ema = _fit(model, aggregate="ema", ema_beta=0.9)
    np.testing.assert_array_equal(last.params, it[-1])
    np.testing.assert_allclose(upa.params, it[-37:].mean(axis=0), rtol=1e-13)
    e = it[20].copy()  # EMA over the post-burn-in iterates, warm-up schedule
    for k in range(1, 500):
        b = min(0.9, (1 + k) / (10 + k))
        e = b * e + (1 - b) * it[20 + k]
    np.testing.assert_allclose(ema.params, e, rtol=1e-12)
    for other in (last, upa, ema):
        np.testing.assert_allclose(other.conf_int(), mean.conf_int(), rtol=1e-13)
        assert any("centred at theta_bar" in note for note in other.notes)


def test_runs_estimates(model):
    res = _fit(model, cov_type="runs", runs=10, steps=60, aggregate="last")
    assert res.inferences["runs"].estimates.shape == (10, 3)
    np.testing.assert_allclose(res.params, res.inferences["runs"].estimates.mean(axis=0))
    np.testing.assert_array_equal(res.trajectory["iterate"][-1],
                                  res.inferences["runs"].estimates[0])


def test_same_seed_same_numbers_and_defaults(model):
    a, b = _fit(model, random_state=9), _fit(model, random_state=9)
    np.testing.assert_array_equal(a.params, b.params)
    np.testing.assert_array_equal(a.conf_int(), b.conf_int())
    assert not np.array_equal(a.params, _fit(model, random_state=10).params)
    res = _fit(model, steps=None, lr=None)  # lr = 1/x_bound^2 = 0.04: batches of 2500
    assert res.settings["lr"] == pytest.approx(1 / 25)
    assert res.settings["steps"] == 20 + 10 * 2500
    assert any(note.startswith("lr = 0.04") for note in res.notes)


def test_formula_front_end(seed):
    sim = dpreg.datasets.simulate_linear(400, random_state=seed)
    res = dpreg.dp_ols(sim.formula, sim.data, rho=0.5, engine="dpgd", x_bound=4.0, clip=8.0,
                       lr=0.05, steps=1020, random_state=1)
    assert list(res.params.index) == list(sim.params.index)
    assert res.settings["engine"] == "dpgd"


# -------------------------------------------------------------------------------- options
@pytest.mark.parametrize("kw,match", [
    (dict(cov_type="runs"), "runs = n_estimates.*runs=1"),
    (dict(cov_type="runs", runs=5), "runs = n_estimates"),
    (dict(runs=10), "runs=10 applies to cov_type='runs'"),
    (dict(batch_size=10), "batch_size"),
    (dict(sampling="poisson"), "sampling"),
    (dict(n_batches=5), "n_batches"),
    (dict(steps=25), "steps = 25"),
    (dict(steps=55, burn_in=50), "burn_in = 50"),
    (dict(upa_k=5), "upa_k applies to aggregate='upa'"),
    (dict(aggregate="upa", upa_k=10_000), "upa_k = 10000 exceeds"),
    (dict(budget_split={"path": 0.5, "hessian": 0.5}), "unknown key.*hessian"),
    (dict(budget_split={"clip_share": 1.0}), "'path'"),
    (dict(cov_type="plugin"), "not available with engine"),
    (dict(lr_decay=0.6), "lr_decay"),
    (dict(cov_type="runs", runs=10, steps=20), "no iterate after burn_in"),
])
def test_bad_options_name_the_option(model, kw, match):
    with pytest.raises(OptionError, match=match):
        _fit(model, **kw)


def test_runs_with_last_iterate_need_no_burn_in(model):
    res = _fit(model, cov_type="runs", runs=10, steps=20, aggregate="last")
    assert np.all(np.isfinite(res.conf_int().to_numpy()))


# -------------------------------------------------------------------------------- coverage
def _coverage(model, reps, seed0, **kw):
    target = _clipped_minimizer(model, kw.get("clip", GAMMA))
    hits = {}
    for r in range(reps):
        res = _fit(model, random_state=seed0 + r, **kw)
        for name in res.inferences:
            ci = res.conf_int(0.05, method=name).to_numpy()
            hits.setdefault(name, []).append((ci[:, 0] <= target) & (target <= ci[:, 1]))
    return {k: np.mean(v) for k, v in hits.items()}


def test_coverage_of_the_clipped_minimizer_fast(seed):
    # 150 single runs (T = 20 + 10 x 100) on one data set (n = 3000, p = 3, rho = 0.05):
    # batch means and checkpoints should cover the clipped minimizer at 95%. Coverage is
    # averaged over 450 (run, coefficient) pairs, nearly independent since Sigma ~ I: the
    # binomial s.e. is 0.0103; allow 3.5 s.e. (a correct method fails 1 in 2000 times).
    model = _model(seed, n=3000)
    cov = _coverage(model, 150, 100, rho=0.05, steps=1020)
    se = math.sqrt(0.95 * 0.05 / 450)
    for name in ("batch_means", "checkpoints"):
        assert abs(cov[name] - 0.95) < 3.5 * se, (name, cov)


@pytest.mark.slow
def test_coverage_of_the_clipped_minimizer_slow(seed):
    # Figure 5 design at p = 10 with n = 2000, where about half of the gradients are
    # clipped (measured 50%): all three constructions still target the clipped minimizer.
    # 300 fits x 10 coefficients per construction: binomial s.e. 0.004; 4 s.e.
    model = _model(seed, n=2000, p=10)
    gamma = 5 * math.sqrt(10)
    cov = _coverage(model, 300, 1000, clip=gamma, steps=2020)
    cov.update(_coverage(model, 300, 5000, clip=gamma, steps=220, cov_type="runs", runs=10))
    se = math.sqrt(0.95 * 0.05 / 3000)
    for name in ("batch_means", "checkpoints", "runs"):
        assert abs(cov[name] - 0.95) < 4 * se, (name, cov)


# -------------------------------------------------------------------------------- AdaSSP
def _adassp_model(seed, n=2000):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.uniform(-1, 1, size=(n, 2))])
    y = np.clip(X @ np.array([0.5, 1.0, -0.7]) + rng.normal(0, 0.5, n), -3, 3)
    return DPRegression(y, X, intercept=0,
                        bounds={"y": (-3, 3), "x2": (-1, 1), "x3": (-1, 1)})


def test_adassp_fit_ledger_and_results(seed):
    model = _adassp_model(seed)
    res = model.fit(engine="adassp", mu=1.0, random_state=2)
    assert res.engine == "AdaSSP" and res.cov_type == "plugin"
    assert [e.name for e in res.ledger.events] == ["AdaSSP lambda_min(X'X)", "AdaSSP X'X",
                                                   "AdaSSP X'y"]
    for e in res.ledger.events:
        assert e.mu() == pytest.approx(1 / math.sqrt(3), rel=1e-12)
    assert res.ledger.total_mu == pytest.approx(1.0, rel=1e-12)
    assert res.settings["x_bound"] == pytest.approx(math.sqrt(3))
    assert res.settings["y_bound"] == 3.0
    for value in (res.params, res.bse, res.pvalues):
        assert np.all(np.isfinite(value))
    assert np.all(np.isfinite(res.conf_int().to_numpy()))
    assert "not the population parameter" in res.summary().as_text()
    ols = np.linalg.lstsq(model.design.exog, model.design.endog, rcond=None)[0]
    assert np.all(np.abs(res.params - ols) < 5 * res.bse)
    r2 = model.fit(engine="adassp", rho=0.5, random_state=2)
    assert r2.ledger.rho_rigorous == pytest.approx(0.5, rel=1e-9)
    again = model.fit(engine="adassp", mu=1.0, random_state=2)
    np.testing.assert_array_equal(again.params, res.params)


@pytest.mark.parametrize("kw,match", [
    (dict(steps=100), "steps"), (dict(clip=1.0), "clip"), (dict(runs=2), "runs"),
    (dict(aggregate="ema"), "aggregate"), (dict(budget_split={"path": 1.0}), "budget_split"),
    (dict(cov_type="batch_means"), "not available with engine"),
])
def test_adassp_bad_options(seed, kw, match):
    with pytest.raises(OptionError, match=match):
        _adassp_model(seed).fit(engine="adassp", mu=1.0, **kw)


def test_adassp_needs_linear_family_and_outcome_bounds(seed):
    rng = np.random.default_rng(seed)
    X, y = rng.uniform(-1, 1, size=(300, 2)), rng.normal(size=300)
    with pytest.raises(OptionError, match="bounds on the outcome"):
        DPRegression(y, X, bounds={"x1": (-1, 1), "x2": (-1, 1)}).fit(engine="adassp", mu=1)
    with pytest.raises(OptionError, match="linear regression"):
        DPRegression(y, X, family="huber", bounds={"x1": (-1, 1), "x2": (-1, 1)}).fit(
            engine="adassp", mu=1)


def test_adassp_works_in_the_bounds_coordinates_and_warns_on_its_ridge():
    # natural units in codebook boxes: the raw row-norm bound is the largest raw value
    # (age x schooling), and the ridge that scales with its square shrank every
    # coefficient of statsmodels' fair OLS so far that no interval contained OLS
    # (validation/adassp_fair.py); in the bounds' coordinates x_bound is O(sqrt(p))
    rng = np.random.default_rng(4)
    n = 3000
    data = pd.DataFrame({"age": rng.uniform(20, 60, n), "educ": rng.uniform(8, 20, n)})
    data["y"] = np.clip(1 + 0.02 * data["age"] + 0.1 * data["educ"]
                        + rng.normal(0, 1, n), -5, 10)
    bounds = {"y": (-5, 10), "age": (16, 100), "educ": (0, 25)}
    kw = dict(bounds=bounds, engine="adassp", random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = dpreg.dp_ols("y ~ age * educ", data, mu=50.0, **kw)
        raw = dpreg.dp_ols("y ~ age * educ", data, mu=50.0, condition="none", **kw)
    assert res.settings["x_bound"] == pytest.approx(2.0)  # sqrt(1 + 3 * 1)
    assert raw.settings["x_bound"] > 2000
    ols = smf.ols("y ~ age * educ", data).fit()
    ci = res.conf_int().to_numpy()
    inside = (ci[:, 0] <= ols.params.to_numpy()) & (ols.params.to_numpy() <= ci[:, 1])
    assert inside.all() and res.settings.value("ridge") == 0
    # at a small budget the private X'X is poorly conditioned: a ridge, and a warning
    with pytest.warns(ConvergenceWarning, match="AdaSSP added a ridge") as rec:
        small = dpreg.dp_ols("y ~ age * educ", data, mu=0.05, **kw)
    assert small.settings.value("ridge") > 0
    assert any(n.startswith("WARNING: AdaSSP added a ridge") for n in small.notes)
    # through the fit's report (build_results): at the user's line, no convergence report
    assert rec[0].filename == __file__ and not hasattr(small, "convergence")
