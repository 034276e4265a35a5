"""SSP (``engine="ssp"``): sensitivities, the non-private limit, the privacy covariance,
the ledger, the parametric bootstrap, the results object and bad input."""

import dataclasses
import inspect
import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from hypothesis import given, settings
from hypothesis import strategies as st

import dpreg
from dpreg.engines.ssp import (
    SSPSettings,
    meat_sum,
    release_sums,
    ssp_events,
    ssp_sensitivities,
    ssp_sums,
)
from dpreg.exceptions import ConvergenceWarning, OptionError
from dpreg.fits.ssp import DEFAULT_SPLIT
from dpreg.inference.bootstrap import bootstrap_inference
from dpreg.inference.ssp_estimator import (
    SSPRelease,
    pboot_replicates,
    privacy_term,
    ssp_covariance,
    ssp_estimate,
)
from dpreg.privacy.accountants import zcdp_rho_upper
from dpreg.privacy.mechanisms import symmetric_gaussian_noise

FORMULA = "y ~ x1 + x2 + C(g)"
BOUNDS = {"y": (-15.0, 20.0), "x1": (0.0, 10.0), "x2": (-3.0, 3.0)}
LEVELS = {"g": ["a", "b", "c"]}
#: Bounds coordinates of FORMULA: intercept 1, z1 and z2 in [-1, 1], at most one dummy.
X_BOUND, Y_BOUND = 2.0, 17.5


def make_frame(seed, n=3000, hetero=False):
    rng = np.random.default_rng(seed)
    x1 = rng.uniform(0, 10, n)
    x2 = rng.uniform(-3, 3, n)
    g = rng.choice(LEVELS["g"], n)
    sd = 0.2 + 0.25 * x1 if hetero else 1.0
    y = 1 + 0.3 * x1 - 0.5 * x2 + 0.4 * (g == "b") + rng.normal(0, 1, n) * sd
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "g": g})


def fit(data, **kw):
    opts = {"bounds": BOUNDS, "levels": LEVELS, "engine": "ssp", "random_state": 1, **kw}
    if not any(k in opts for k in ("mu", "epsilon", "rho")):
        opts["mu"] = 1.0
    return dpreg.dp_ols(FORMULA, data, **opts)


def exact_release(X, y, meat=None):
    """A release without noise (s = 0, no floor): the non-private limit."""
    return SSPRelease(gram=X.T @ X, xty=X.T @ y, yty=float(y @ y), nobs=len(y), s_gram=0.0,
                      s_xty=0.0, s_yty=0.0, floor=0.0, meat=meat)


# ------------------------------------------------------------------ non-private limit
def test_post_processing_without_noise_is_ols_nonrobust_and_hc0(seed):
    # The estimator, classical covariance and sandwich from exact sums are statsmodels'
    # OLS params, nonrobust cov and HC0 cov (same arithmetic up to round-off).
    data = make_frame(seed, n=500, hetero=True)
    ols = smf.ols(FORMULA, data).fit()
    X, y = ols.model.exog, ols.model.endog
    resid = y - X @ ols.params.to_numpy()
    meat = (X * resid[:, None] ** 2).T @ X
    rel = exact_release(X, y, meat)
    est = ssp_estimate(rel)
    np.testing.assert_allclose(est.params, ols.params, rtol=1e-10)
    np.testing.assert_allclose(est.sigma2, ols.scale, rtol=1e-9)
    np.testing.assert_allclose(ssp_covariance(est, rel), ols.cov_params(), rtol=1e-9)
    hc0 = ols.get_robustcov_results("HC0").cov_params()
    np.testing.assert_allclose(ssp_covariance(est, rel, sandwich=True), hc0, rtol=1e-9)
    assert est.n_floored == 0 and not est.sigma2_floored and est.delta_ratio == 0.0


def test_huge_budget_gives_statsmodels_ols_through_the_whole_fit(seed):
    # Noise ~1e-9 of the sums: the fit (bounds coordinates, centred outcome, map back)
    # gives OLS; plug-in = nonrobust, sandwich (meat clip inactive) = HC0. rtol 1e-6: the
    # noise moves the estimate by ~1e-10 relative.
    data = make_frame(seed, hetero=True)
    assert data.y.between(*BOUNDS["y"]).all()
    ols = smf.ols(FORMULA, data).fit()
    # declared boxes: learned ranges clip the tail rows by design, so the target moves
    res = fit(data, mu=1e9, robust=True, cov_type="plugin", ranges="declared")
    np.testing.assert_allclose(res.params, ols.params, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(res.bse, ols.bse, rtol=1e-6)
    np.testing.assert_allclose(res.cov_params(), ols.cov_params(), rtol=1e-6, atol=1e-12)
    hc0 = ols.get_robustcov_results("HC0")
    sand = res.inferences["sandwich"]
    np.testing.assert_allclose(sand.scale, hc0.bse, rtol=1e-6)
    z = 1.959963984540054  # normal intervals (statsmodels' use t)
    np.testing.assert_allclose(res.conf_int(method="sandwich"),
                               np.column_stack([hc0.params - z * hc0.bse,
                                                hc0.params + z * hc0.bse]),
                               rtol=1e-6, atol=1e-9)
    assert res.settings.value("sigma2") == pytest.approx(ols.scale, rel=1e-6)


def test_huge_budget_without_intercept_and_condition_none(seed):
    # No intercept: no shift of the outcome, y_bound = max |bound|; condition="none":
    # the design as given. Both still give OLS.
    data = make_frame(seed, n=800)
    ols = smf.ols("y ~ x1 + x2 - 1", data).fit()
    for condition in ("bounds", "none"):
        res = dpreg.dp_ols("y ~ x1 + x2 - 1", data, bounds=BOUNDS, engine="ssp", mu=1e9,
                           random_state=2, condition=condition, cov_type="plugin",
                           ranges="declared")
        np.testing.assert_allclose(res.params, ols.params, rtol=1e-6)
        np.testing.assert_allclose(res.bse, ols.bse, rtol=1e-6)
        assert res.settings.value("y_shift") == 0.0
        assert res.settings.value("y_bound") == 20.0


# ------------------------------------------------------------------ sensitivities
def _upper(M):
    return M[np.triu_indices(M.shape[0])]


def _differences(rows, a, b, settings_, theta):
    """L2 changes of (X'X, X'y, y'y, meat) when the last row is ``a`` vs ``b``."""
    out = []
    for last in (a, b):
        Z = np.vstack([rows[0], last[0]])
        y = np.r_[rows[1], last[1]]
        s = ssp_sums(Z, y, settings_)
        out.append((s.gram, s.xty, s.yty, meat_sum(Z, y, settings_, theta)[0]))
    (g1, c1, q1, m1), (g2, c2, q2, m2) = out
    return (np.linalg.norm(_upper(g1 - g2)), np.linalg.norm(c1 - c2), abs(q1 - q2),
            np.linalg.norm(_upper(m1 - m2)))


SETTINGS = SSPSettings(x_bound=2.0, y_bound=5.0, y_shift=1.0, clip=7.0)
_ROWS = (np.random.default_rng(3).uniform(-1, 1, (6, 3)),
         np.random.default_rng(4).uniform(-4, 6, 6))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=3, max_size=3),
       st.lists(st.floats(-5, 5), min_size=3, max_size=3),
       st.floats(-30, 30), st.floats(-30, 30),
       st.lists(st.floats(-4, 4), min_size=3, max_size=3))
def test_no_adjacent_pair_exceeds_the_stated_sensitivity(a, b, ya, yb, theta):
    # Rows and outcomes beyond the bounds included: clipping must enforce them.
    sens = ssp_sensitivities(SETTINGS, 3)
    diffs = _differences(_ROWS, (np.array(a), ya), (np.array(b), yb), SETTINGS,
                         np.array(theta))
    for key, d in zip(("gram", "xty", "yty", "meat"), diffs, strict=True):
        assert d <= sens[key] * (1 + 1e-12), (key, d, sens[key])


def test_extreme_pairs_attain_the_sensitivities():
    # The bounds are tight: orthogonal rows at the norm bound (X'X, meat), opposite
    # outcomes (X'y), outcome at the bound against the centre (y'y).
    B, By, C = SETTINGS.x_bound, SETTINGS.y_bound, SETTINGS.clip
    sens = ssp_sensitivities(SETTINGS, 3)
    assert sens == {"gram": pytest.approx(math.sqrt(2) * B ** 2), "xty": 2 * B * By,
                    "yty": By ** 2, "meat": pytest.approx(math.sqrt(2) * C ** 2)}
    e1, e2 = np.eye(3)[0], np.eye(3)[1]
    theta = np.zeros(3)
    d = _differences(_ROWS, (B * e1, 1 + By), (B * e2, 1 + By), SETTINGS, theta)
    assert d[0] == pytest.approx(sens["gram"]) and d[3] == pytest.approx(sens["meat"])
    d = _differences(_ROWS, (B * e1, 1 + By), (B * e1, 1 - By), SETTINGS, theta)
    assert d[1] == pytest.approx(sens["xty"])
    d = _differences(_ROWS, (B * e1, 1 + By), (B * e1, 1.0), SETTINGS, theta)
    assert d[2] == pytest.approx(sens["yty"])
    # p = 1: ||a a' - b b'|| = |a^2 - b^2| <= B^2
    assert ssp_sensitivities(SETTINGS, 1)["gram"] == B ** 2


# ------------------------------------------------------------------ privacy covariance
def test_privacy_term_matches_the_spread_of_symmetric_noise(seed):
    # Cov(E theta) = s^2 (||theta||^2 I + theta theta' - diag(theta^2)), entry by entry,
    # from 40,000 draws (atol: 5 Monte Carlo s.e. of a covariance entry, ~ s^2 ||theta||^2
    # sqrt(2 / 40000)).
    rng = np.random.default_rng(seed)
    theta = np.array([1.0, -2.0, 0.5, 0.0])
    s = 0.7
    draws = np.array([symmetric_gaussian_noise(4, s, rng) @ theta for _ in range(40000)])
    expected = privacy_term(theta, s, 0.0)
    atol = 5 * s ** 2 * (theta @ theta) * math.sqrt(2 / 40000)
    np.testing.assert_allclose(np.cov(draws, rowvar=False), expected, atol=atol)
    np.testing.assert_allclose(expected[0, 1], s ** 2 * theta[0] * theta[1])
    np.testing.assert_allclose(expected[3, 3], s ** 2 * (theta @ theta))


def test_repeated_releases_match_the_delta_method(seed):
    # Fixed data, fresh noise: the spread of beta~ about OLS on the clipped rows is
    # G^-1 (s_c^2 I + s_G^2 C(beta)) G^-1. 3000 releases: the s.d. of a s.d. is ~1.3%;
    # rtol 0.06 also allows the delta method's second-order terms (ratio ~0.02).
    rng = np.random.default_rng(seed)
    n = 4000
    X = np.column_stack([np.ones(n), rng.uniform(-1, 1, (n, 2))])
    y = X @ np.array([0.5, 1.0, -2.0]) + rng.normal(0, 1, n)
    st_ = SSPSettings(x_bound=math.sqrt(3), y_bound=6.0)
    sums = ssp_sums(X, y, st_)
    events = ssp_events(st_, 3, DEFAULT_SPLIT, 1.0)
    G = sums.gram
    beta_hat = np.linalg.solve(G, sums.xty)
    noise = np.random.default_rng(1)
    est = np.array([ssp_estimate(release_sums(sums, events, noise)).params
                    for _ in range(3000)])
    Ginv = np.linalg.inv(G)
    s_g, s_c = events[0].noise_std, events[1].noise_std
    V = Ginv @ privacy_term(beta_hat, s_g, s_c) @ Ginv
    emp = np.cov(est, rowvar=False)
    np.testing.assert_allclose(np.sqrt(np.diag(emp)), np.sqrt(np.diag(V)), rtol=0.06)
    corr = emp / np.sqrt(np.outer(np.diag(emp), np.diag(emp)))
    corr_v = V / np.sqrt(np.outer(np.diag(V), np.diag(V)))
    np.testing.assert_allclose(corr, corr_v, atol=0.06)
    # centred on OLS of the clipped rows: 4 Monte Carlo s.e. plus a bias of 5% of an s.d.
    sd = np.sqrt(np.diag(V))
    assert np.all(np.abs(est.mean(axis=0) - beta_hat) <= 4 * sd / math.sqrt(3000) + 0.05 * sd)


# ------------------------------------------------------------------ the ledger
@pytest.mark.filterwarnings("ignore::dpreg.exceptions.ConvergenceWarning")
def test_ledger_rows_and_total_spend(seed):
    data = make_frame(seed, n=1000)
    res = fit(data, mu=1.5, ranges="declared")  # the sensitivities of the declared boxes
    ev = res.ledger.events
    assert [e.name for e in ev] == ["SSP X'X", "SSP X'y", "SSP y'y"]
    sens = [math.sqrt(2) * X_BOUND ** 2, 2 * X_BOUND * Y_BOUND, Y_BOUND ** 2]
    for e, s, w in zip(ev, sens, DEFAULT_SPLIT.values(), strict=True):
        assert e.sensitivity == pytest.approx(s, rel=1e-12)
        assert e.noise_std == pytest.approx(s / (1.5 * math.sqrt(w)), rel=1e-12)
        assert e.adjacency == "replace-one" and e.count == 1 and e.sampling == "none"
    assert res.ledger.total_mu == pytest.approx(1.5, rel=1e-12)
    robust = fit(data, mu=1.5, robust=True, ranges="declared")
    assert [e.name for e in robust.ledger.events][-1] == "SSP meat sum g g'"
    clip = X_BOUND * (BOUNDS["y"][1] - BOUNDS["y"][0])
    assert robust.ledger.events[3].sensitivity == pytest.approx(math.sqrt(2) * clip ** 2)
    assert robust.ledger.total_mu == pytest.approx(1.5, rel=1e-12)
    rho = fit(data, rho=0.4)
    assert zcdp_rho_upper(rho.ledger.events) == pytest.approx(0.4, rel=1e-9)
    eps = fit(data, epsilon=1.0, delta=1e-6)
    spent, _ = eps.ledger.epsilon_rigorous
    assert 1.0 * (1 - 1e-5) <= spent <= 1.0


def test_budget_split_is_public_and_validated(seed):
    data = make_frame(seed, n=500)
    res = fit(data, mu=1.0, budget_split={"gram": 0.5, "xty": 0.25, "yty": 0.25})
    mus = [e.mu() for e in res.ledger.events]
    np.testing.assert_allclose(np.square(mus), [0.5, 0.25, 0.25], rtol=1e-12)
    for bad, match in [({"gram": 0.5, "xty": 0.5}, "positive share"),
                       ({"gram": 0.3, "xty": 0.3, "yty": 0.2, "meat": 0.2}, "robust=True"),
                       ({"path": 1.0}, "unknown key")]:
        with pytest.raises(OptionError, match=match):
            fit(data, budget_split=bad)


# ------------------------------------------------------------------ bootstrap
def test_bootstrap_takes_released_quantities_only():
    assert list(inspect.signature(pboot_replicates).parameters) == [
        "params", "gram", "sampling_cov", "s_gram", "s_xty", "floor", "n_boot", "rng"]


@pytest.mark.parametrize("floor", [0.05, 2.0])
def test_bootstrap_replicates_are_the_floored_estimator(floor):
    """Each replicate is floor(G~+ + E_b, tau)^{-1} (G~+ beta~ + Z_b + e_b), drawn in the
    documented order, whether the floor binds in no replicate (a plain solve) or in some
    (the eigen-decomposition): the same numbers as the formula, to rounding."""
    p, B = 4, 500
    rng = np.random.default_rng(3)
    A = rng.standard_normal((40, p))
    gram = A.T @ A / 40 + np.eye(p)  # eigenvalues 1.5-2.6: tau = 2 binds, 0.05 never
    beta = rng.standard_normal(p)
    sampling = 0.1 * gram
    got = pboot_replicates(beta, gram, sampling, 0.02, 0.03, floor, B,
                           np.random.default_rng(9))
    draw = np.random.default_rng(9)
    upper = np.triu(draw.standard_normal((B, p, p)) * 0.02)
    E = upper + np.swapaxes(np.triu(upper, 1), -1, -2)
    e = draw.standard_normal((B, p)) * 0.03
    vals, vecs = np.linalg.eigh(sampling)
    Z = draw.standard_normal((B, p)) @ ((vecs * np.sqrt(vals)) @ vecs.T).T
    want = np.empty((B, p))
    for b in range(B):
        w, V = np.linalg.eigh(gram + E[b])
        want[b] = V @ ((V.T @ (gram @ beta + Z[b] + e[b])) / np.maximum(w, floor))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_bootstrap_is_reproducible_and_has_its_own_stream(seed):
    data = make_frame(seed, n=1500)
    a, b = fit(data, random_state=7), fit(data, random_state=7)
    np.testing.assert_array_equal(a.inferences["pboot"].replicates,
                                  b.inferences["pboot"].replicates)
    np.testing.assert_array_equal(a.conf_int(), b.conf_int())
    c = fit(data, random_state=7, n_boot=300)  # fewer replicates: same release
    np.testing.assert_array_equal(a.params, c.params)
    np.testing.assert_array_equal(a.inferences["plugin"].scale, c.inferences["plugin"].scale)
    assert c.inferences["pboot"].replicates.shape == (300, 5)
    d = fit(data, random_state=8)
    assert not np.allclose(a.params, d.params)


def test_bootstrap_without_noise_is_the_z_interval(seed):
    # s = 0: beta_b ~ N(beta~, sigma~^2 G^-1) exactly, so the percentile interval tends to
    # beta~ -/+ z sd. 40,000 replicates: the s.d. of a 2.5% quantile is ~0.013 sd; atol
    # 0.06 sd.
    rng = np.random.default_rng(seed)
    n = 300
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    y = X @ np.array([1.0, 0.5, -0.2]) + rng.normal(size=n)
    rel = exact_release(X, y)
    est = ssp_estimate(rel)
    reps = pboot_replicates(est.params, est.gram, est.sigma2 * est.gram, 0.0, 0.0, 0.0,
                            40000, np.random.default_rng(1))
    sd = np.sqrt(np.diag(ssp_covariance(est, rel)))
    z = 1.959963984540054
    for kind in ("percentile", "basic"):
        ci = bootstrap_inference("pboot", reps, est.params, kind).conf_int(est.params, 0.05)
        np.testing.assert_allclose(ci[:, 0], est.params - z * sd, atol=0.06 * sd.max())
        np.testing.assert_allclose(ci[:, 1], est.params + z * sd, atol=0.06 * sd.max())


def test_bootstrap_spread_matches_the_analytic_covariance(seed):
    # Where the delta method holds (ratio ~0.03) the replicates' covariance is the
    # analytic V: a wrong noise scale in either breaks it. The split makes the privacy
    # noise 8-25 times the sampling variance. 4000 replicates: the s.d. of an s.d. is
    # ~1.1%; rtol 0.05.
    data = make_frame(seed, n=12000)
    res = fit(data, mu=1.0, n_boot=4000, budget_split={"gram": 0.8, "xty": 0.15,
                                                       "yty": 0.05})
    assert res.settings.value("delta_ratio") < 0.05
    ols = smf.ols(FORMULA, data).fit()
    assert np.all(res.inferences["plugin"].scale ** 2 > 8 * ols.bse ** 2)
    np.testing.assert_allclose(res.inferences["pboot"].scale, res.inferences["plugin"].scale,
                               rtol=0.05)


# ------------------------------------------------------------------ results
def test_results_summary_tests_and_pickling(seed, tmp_path):
    data = make_frame(seed, n=3000)
    res = fit(data, mu=2.0, cov_type="pboot")
    assert res.cov_type == "pboot" and res.engine == "SSP"
    assert fit(data, mu=2.0).cov_type == "plugin"  # the default
    text = res.summary().as_text()
    for needle in ("Parametric bootstrap (percentile)", "population coefficients",
                   "homoskedastic", "2 s_G sqrt(p) / lambda_min", "SSP X'y"):
        assert needle in text, needle
    ci = res.conf_int()
    t = res.t_test("x1 = 0")
    np.testing.assert_allclose(t.conf_int(), ci.loc[["x1"]].to_numpy())
    np.testing.assert_allclose(t.pvalue, res.pvalues["x1"])
    boot = res.inferences["pboot"]
    j = list(res.params.index).index("x1")
    np.testing.assert_allclose(res.t_test("x1 = 0.3").pvalue,
                               boot.pvalues_at(res.params.to_numpy(), 0.3)[j])
    # the plug-in keeps its own covariance when the fit's cov_type is the bootstrap
    tp = res.t_test("x1 = 0", method="plugin")
    np.testing.assert_allclose(tp.sd, res.inferences["plugin"].scale[j])
    w = res.wald_test("x1 = 0, x2 = 0")
    assert 0 <= w.pvalue <= 1
    np.testing.assert_allclose(res.cov_params(), boot.cov)
    pred = res.get_prediction(pd.DataFrame({"x1": [5.0], "x2": [0.0], "g": ["a"]}))
    assert np.isfinite(pred.summary_frame()).all(axis=None)
    path = tmp_path / "ssp.pickle"
    res.save(path)
    back = dpreg.load(path)
    np.testing.assert_array_equal(back.conf_int(), ci)
    pickle.dumps(res)


def test_delta_method_diagnostic_and_its_warning():
    # p = 3 on [-1, 1]^2: lambda_min(G) ~ n/3 and 2 s_G sqrt(p) ~ 24 / mu, so n = 350
    # at mu = 1 gives a diagnostic ~0.2 without reaching the floor: no warning, and the
    # diagnostic is 2 s_G sqrt(p) / lambda_min(G~+) from the ledger's s_G.
    rng = np.random.default_rng(11)
    n = 350
    data = pd.DataFrame({"x1": rng.uniform(-1, 1, n), "x2": rng.uniform(-1, 1, n)})
    data["y"] = 1 + data.x1 - data.x2 + rng.normal(0, 1, n)
    bounds = {"y": (-6.0, 8.0), "x1": (-1.0, 1.0), "x2": (-1.0, 1.0)}
    kw = dict(bounds=bounds, engine="ssp", random_state=3, ranges="declared")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = dpreg.dp_ols("y ~ x1 + x2", data, mu=1.0, **kw)
    s_g = res.ledger.events[0].noise_std
    ratio = res.settings.value("delta_ratio")
    assert ratio == pytest.approx(2 * s_g * math.sqrt(3) / res.settings.value("lambda_min"))
    assert 0.1 < ratio < 0.5 and res.settings.value("n_floored") == 0
    # a tenth of the budget floors X'X: the warning, for the bootstrap as for the plug-in
    for cov_type in ("plugin", "pboot"):
        with pytest.warns(ConvergenceWarning, match="delta method is unreliable"):
            low = dpreg.dp_ols("y ~ x1 + x2", data, mu=0.1, cov_type=cov_type, **kw)
        assert low.settings.value("n_floored") > 0
        cap = 2 / math.sqrt(math.log(2 * 9 / 0.05))
        assert low.settings.value("delta_ratio") <= cap * (1 + 1e-9)
        assert any(n.startswith("WARNING") for n in low.notes)
        assert np.all(np.isfinite(low.conf_int()))


def test_floor_sensitivity_is_the_fit_redone_with_the_floor_doubled():
    # post-processing of one release, computed independently: beta(tau) = G~+^-1 c~ with
    # the eigenvalues of G~ raised to tau, and the plug-in's s.e. with sigma~^2 G~+
    from dpreg.design.conditioning import identity_conditioning
    from dpreg.fits.ssp import floor_sensitivity

    rng = np.random.default_rng(4)
    X = np.column_stack([np.ones(400), rng.uniform(-1, 1, 400)])
    X = np.column_stack([X, X[:, 1] + 1e-3 * rng.normal(size=400)])  # nearly collinear
    y = X @ [1.0, 0.5, -0.5] + rng.normal(0, 1, 400)
    rel = SSPRelease(gram=X.T @ X, xty=X.T @ y, yty=float(y @ y), nobs=400, s_gram=1.0,
                     s_xty=1.0, s_yty=1.0, floor=0.5)
    lam = np.linalg.eigvalsh(rel.gram)
    assert lam[0] < 0.5 and lam[1] > 4 * 0.5  # one eigenvalue below tau, none near 2 tau

    def by_hand(tau):
        w, U = np.linalg.eigh(rel.gram)
        G = U @ np.diag(np.maximum(w, tau)) @ U.T
        beta = np.linalg.solve(G, rel.xty)
        est = ssp_estimate(dataclasses.replace(rel, floor=tau))
        np.testing.assert_allclose(est.params, beta, rtol=1e-10)
        return beta, np.sqrt(np.diag(ssp_covariance(est, dataclasses.replace(rel, floor=tau))))

    settings_ = type("S", (), {"y_shift": 0.0, "max_group_size": None})()
    shift, change = floor_sensitivity(ssp_estimate(rel), rel, "plugin",
                                      identity_conditioning(3, None), settings_, None)
    b1, s1 = by_hand(0.5)
    b2, s2 = by_hand(1.0)
    np.testing.assert_allclose(shift, np.abs(b2 - b1) / s1, rtol=1e-9)
    np.testing.assert_allclose(change, np.abs(s2 / s1 - 1), rtol=1e-9)
    assert change[1] > 0.05 and change[2] > 0.05  # the collinear pair: the floor decides
    assert change[0] < change[1]


def test_the_floor_warning_names_the_coefficients_it_decides():
    # a quadratic in natural units in a codebook box, beside a well-conditioned column:
    # the floor decides age and its square, not the other slope, and the warning names
    # exactly the coefficients whose s.e. moves by more than 5% when the floor doubles
    from dpreg.inference.diagnostics import SSP_FLOOR_SENSITIVITY

    rng = np.random.default_rng(8)
    n = 2000
    data = pd.DataFrame({"age": rng.uniform(20, 60, n), "d": rng.integers(0, 2, n)})
    data["y"] = 10 + 0.3 * data.age - 0.003 * data.age ** 2 + 2 * data.d + rng.normal(0, 3, n)
    bounds = {"y": (-20, 60), "age": (16, 100), "d": (0, 1)}
    with pytest.warns(ConvergenceWarning, match="delta method is unreliable for") as rec:
        res = dpreg.dp_ols("y ~ age + I(age ** 2) + d", data, bounds=bounds, mu=5.0,
                           engine="ssp", ranges="declared", random_state=1)
    change = res.floor_sensitivity["se_change"]
    named = list(change.index[change > SSP_FLOOR_SENSITIVITY])  # in the design's order
    warned = next(w for w in rec if "delta method" in str(w.message))
    message = str(warned.message)
    assert message.startswith(f"SSP: the delta method is unreliable for {named}:")
    assert "age" in named and "d" not in named
    # the warning comes from the fit's report (dpreg.fits.common.build_results), as every
    # fit's does: it points at the user's line, is the summary's last note, and the
    # results keep no convergence report (SSP runs no path checks)
    assert warned.filename == __file__
    assert res.notes.count("WARNING: " + message) == 1
    assert res.notes[-1] == "WARNING: " + message
    assert not hasattr(res, "convergence")
    # with the noise nearly off nothing is floored: no change, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        big = dpreg.dp_ols("y ~ age + I(age ** 2) + d", data, bounds=bounds, mu=1e9,
                           engine="ssp", ranges="declared", random_state=1)
    assert (big.floor_sensitivity.to_numpy() == 0).all()


def test_ssp_report_warns_on_the_floor_and_on_sigma2_only_where_they_matter():
    # ssp_report on hand-made estimates: which findings warn and which are notes
    from dpreg.inference.ssp_estimator import ReleaseReport, ssp_report

    rel = SSPRelease(gram=np.eye(2), xty=np.ones(2), yty=10.0, nobs=100, s_gram=0.1,
                     s_xty=0.1, s_yty=0.5, floor=0.3)
    est = ssp_estimate(rel)
    quiet = ssp_report(est, rel, ["a", "b"], np.array([0.5, 0.5]), uses_sigma2=True)
    assert quiet.ok and quiet.messages("SSP") == [] and len(quiet.notes) == 1
    assert quiet.notes[0].startswith("SSP intervals are for the population coefficients")
    floored = dataclasses.replace(est, n_floored=1, sigma2_floored=True, rss=0.1)
    loud = ssp_report(floored, rel, ["a", "b"], np.array([0.5, 0.01]), uses_sigma2=True)
    assert not loud.ok and len(loud.messages("SSP")) == 2
    assert loud.warnings[0].startswith("SSP: the delta method is unreliable for ['a']:")
    assert "sigma~^2 was set from the floor: the interval's" in loud.warnings[1]
    # nothing named, sigma~^2 unused by the interval: two notes, no warning
    calm = ssp_report(floored, rel, ["a", "b"], np.array([0.01, 0.01]), uses_sigma2=False)
    assert calm.ok and len(calm.notes) == 3
    assert "so no warning." in calm.notes[1] and calm.notes[2].endswith("from the floor.")
    assert ReleaseReport().ok


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kw, match", [
    ({"cov_type": "sandwich"}, "robust=True"),
    ({"clip": 3.0}, "robust=True"),
    ({"n_boot": 10}, "n_boot"),
    ({"robust": "yes"}, "robust"),
    ({"steps": 100}, "steps does not apply to engine='ssp'"),
    ({"cov_type": "rs"}, "not available with engine 'ssp'"),
])
def test_bad_options(seed, kw, match):
    with pytest.raises(OptionError, match=match):
        fit(make_frame(seed, n=200), **kw)


@pytest.mark.filterwarnings("ignore::dpreg.exceptions.ConvergenceWarning")
def test_other_families_and_missing_bounds_are_refused(seed):
    data = make_frame(seed, n=200)
    data["yb"] = (data.y > 1).astype(float)
    with pytest.raises(OptionError, match=r"engine='ssp'.*'logistic'"):
        dpreg.dp_logit("yb ~ x1", data, bounds={"x1": (0, 10)}, engine="ssp", mu=1)
    with pytest.raises(OptionError, match=r"engine='ssp'.*'huber'"):
        dpreg.dp_huber("y ~ x1", data, bounds=BOUNDS, engine="ssp", mu=1)
    with pytest.raises(OptionError, match="bounds on the outcome 'y'"):
        dpreg.dp_ols("y ~ x1", data, bounds={"x1": (0, 10)}, engine="ssp", mu=1)
    with pytest.raises(OptionError, match=r"\['x2'\].*x_bound"):
        dpreg.dp_ols("y ~ x1 + x2", data, bounds={"y": (-15, 20), "x1": (0, 10)},
                     engine="ssp", mu=1, strict=False)
    # a public row bound instead of column bounds is enough
    res = dpreg.dp_ols("y ~ x1 + x2 - 1", data, bounds={"y": (-15, 20)}, x_bound=11.0,
                       engine="ssp", mu=1, random_state=0)
    assert res.settings.value("x_bound") == 11.0


# ------------------------------------------------------------------ coverage (slow)
@pytest.mark.slow
def test_coverage_of_the_population_coefficients(seed):
    # 400 data sets from a homoskedastic model (plug-in and bootstrap) and a
    # heteroskedastic one (sandwich). The coverage averaged over 5 coefficients has s.d.
    # at most sqrt(0.95 * 0.05 / 400) = 0.011 (perfectly dependent coefficients); 4 s.d.
    reps = 400
    truth = np.array([1.0, 0.4, 0.0, 0.3, -0.5])  # Intercept, g[b], g[c], x1, x2
    cover = {"plugin": [], "pboot": [], "sandwich": []}
    rng = np.random.default_rng(seed)
    for r in range(reps):
        s = int(rng.integers(2 ** 31))
        res = fit(make_frame(s, n=8000), mu=2.0, random_state=r)
        for m in ("plugin", "pboot"):
            ci = res.conf_int(method=m).to_numpy()
            cover[m].append(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
        het = fit(make_frame(s, n=8000, hetero=True), mu=2.0, random_state=r, robust=True,
                  cov_type="sandwich", budget_split={"gram": 0.3, "xty": 0.4, "yty": 0.05,
                                                     "meat": 0.25}, clip=20.0)
        ci = het.conf_int().to_numpy()
        cover["sandwich"].append(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
    tol = 4 * math.sqrt(0.95 * 0.05 / reps)
    for m, c in cover.items():
        assert abs(np.mean(c) - 0.95) < tol, (m, np.mean(c))


def test_statsmodels_design_matches_the_formula_columns(seed):
    # the order of the columns the tests above compare (statsmodels' and dpreg's)
    data = make_frame(seed, n=50)
    res = fit(data, mu=1e9)
    assert list(res.params.index) == list(sm.OLS.from_formula(FORMULA, data).exog_names)
