"""engine="newton": noisy Newton steps for logistic regression (dpreg.engines.newton).

Reference values come from statsmodels' Logit on the same rows; the ledger's numbers
from the package's accountant against the request; coverage from a small Monte Carlo
with a tolerance from its own error.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import special, stats

import dpreg
from dpreg.engines.newton import MECHANISMS, SHARES, STEPS
from dpreg.exceptions import ConvergenceWarning, OptionError

BETA = {"Intercept": -0.5, "x1": 0.8, "x2": -0.6, "x3": 0.3}
BOUNDS = {"y": (0, 1), "x1": (-3, 3), "x2": (-3, 3), "x3": (0, 1)}


def _logit_frame(n, rng):
    x1 = np.clip(rng.normal(0, 1, n), -3, 3)
    x2 = np.clip(0.5 * x1 + rng.normal(0, 1, n), -3, 3)
    x3 = (rng.random(n) < 0.4).astype(float)
    eta = BETA["Intercept"] + BETA["x1"] * x1 + BETA["x2"] * x2 + BETA["x3"] * x3
    y = (rng.random(n) < special.expit(eta)).astype(float)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "x3": x3})


@pytest.fixture(scope="module")
def frame():
    return _logit_frame(4000, np.random.default_rng(11))


def _fit(data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpreg.exceptions.SeedReuseWarning)
        return dpreg.dp_logit("y ~ x1 + x2 + x3", data, bounds=BOUNDS, engine="newton",
                              **kw)


def test_a_large_budget_gives_statsmodels_logit(frame):
    # with negligible noise the steps reach the MLE and the interval is the sandwich of
    # the MLE, which for a correct logit is its usual standard error
    res = _fit(frame, mu=1e6, ranges="declared", random_state=0)
    ref = smf.logit("y ~ x1 + x2 + x3", frame).fit(disp=0)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=0.05)
    assert res.engine == "Noisy Newton" and res.cov_type == "plugin"


def test_the_ledger_spends_the_request_exactly(frame):
    res = _fit(frame, mu=3.0, random_state=1)
    events = res.ledger.events
    names = [e.name for e in events]
    assert names[0] == "ranges (noisy histograms)" and names[1:] == list(MECHANISMS.values())
    assert math.isclose(math.sqrt(sum(e.mu() ** 2 for e in events)), 3.0, rel_tol=1e-9)
    engine = {e.name: e for e in events[1:]}
    # with an intercept: the start's gradient and seven steps' before the last
    assert engine["Newton gradients"].count == STEPS
    assert engine["Hessian A"].count == 2
    left = 3.0 ** 2 - events[0].mu() ** 2
    for key, name in MECHANISMS.items():
        assert engine[name].mu() ** 2 == pytest.approx(SHARES[key] * left, rel=1e-9)
    # the sensitivities are the replace-one bounds of rows of norm x_bound
    B, n = res.settings["x_bound"], len(frame)
    assert engine["Newton last gradient"].sensitivity == pytest.approx(2 * B / n)
    assert engine["Hessian A"].sensitivity == pytest.approx(B ** 2 / (2 * n))
    assert engine["score covariance S"].sensitivity == pytest.approx(2 * B ** 2 / n)


def test_an_epsilon_delta_request_is_met(frame):
    # no subsampling: the releases compose to a Gaussian mechanism of the total mu,
    # whose delta at epsilon is Dong, Roth and Su's (2022) Corollary 2.13, computed here
    # with scipy (independent of the package's accountant)
    res = _fit(frame, epsilon=3.0, delta=1e-6, random_state=2)
    mu = res.ledger.total_mu
    delta = stats.norm.cdf(-3.0 / mu + mu / 2) - math.exp(3.0) * stats.norm.cdf(-3.0 / mu
                                                                                 - mu / 2)
    assert delta <= 1e-6 * (1 + 1e-6) and delta > 0.99e-6


def test_without_an_intercept_the_first_gradient_is_the_first_steps(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_logit("y ~ x1 + x2 + x3 - 1", frame, bounds=BOUNDS, mu=50,
                             engine="newton", ranges="declared", random_state=3)
    events = {e.name: e for e in res.ledger.events}
    assert events["Newton gradients"].count == STEPS - 1
    ref = smf.logit("y ~ x1 + x2 + x3 - 1", frame).fit(disp=0)
    assert np.all(np.abs(res.params - ref.params) < 4 * ref.bse)


def test_same_seed_same_fit_and_a_fresh_seed_another(frame):
    a, b = _fit(frame, mu=2, random_state=5), _fit(frame, mu=2, random_state=5)
    c = _fit(frame, mu=2, random_state=6)
    pd.testing.assert_series_equal(a.params, b.params)
    assert not np.allclose(a.params, c.params)


def test_other_families_options_and_clusters_are_refused_by_name(frame):
    with pytest.raises(OptionError, match="family 'linear' use engine='ssp'"):
        dpreg.dp_ols("x1 ~ x2", frame, bounds=BOUNDS, mu=1, engine="newton")
    with pytest.raises(OptionError, match="steps does not apply to engine='newton'"):
        _fit(frame, mu=1, steps=100)
    with pytest.raises(OptionError, match="groups"):
        _fit(frame.assign(g=np.arange(len(frame)) % 50), mu=1, groups="g",
             max_group_size=100)


def test_a_floored_hessian_warns_and_says_so_in_the_summary(frame):
    # at n mu = 400 the Hessian's noise is far above its smallest eigenvalues
    with pytest.warns(ConvergenceWarning, match="noise floor"):
        res = _fit(frame.iloc[:400], mu=1.0, random_state=4)
    assert res.settings["eigenvalues floored"] > 0
    assert "WARNING: " in str(res.summary())


def test_intervals_cover_where_the_noise_is_small():
    # 80 data sets at n = 5,000, mu = 10 (n mu = 50,000): the pooled coverage of the
    # four coefficients is within 3 MC s.e. of 0.95 (the s.e. counted over fits, the
    # coefficients of one fit being dependent), and no fit warns
    rng = np.random.default_rng(20261127)
    covered, warned = [], 0
    truth = np.array(list(BETA.values()))
    for r in range(80):
        data = _logit_frame(5000, rng)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpreg.dp_logit("y ~ x1 + x2 + x3", data, bounds=BOUNDS, mu=10,
                                 engine="newton", random_state=r)
        warned += any(issubclass(w.category, ConvergenceWarning) for w in caught)
        ci = res.conf_int().to_numpy()
        covered.append(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
    se = math.sqrt(0.05 * 0.95 / len(covered))
    assert abs(np.mean(covered) - 0.95) <= 3 * se, np.mean(covered)
    assert warned == 0


def test_the_interval_is_normal_with_the_reported_covariance(frame):
    res = _fit(frame, mu=5, random_state=7)
    ci = res.conf_int()
    z = stats.norm.ppf(0.975)
    np.testing.assert_allclose(ci[1] - ci[0], 2 * z * res.bse, rtol=1e-12)
    np.testing.assert_allclose(res.bse, np.sqrt(np.diag(res.cov_params())), rtol=1e-12)


def test_huber_and_expectile_reach_the_minimizer_of_their_loss():
    # at a negligible noise the steps reach the Huber minimizer, computed here by scipy's
    # BFGS on the loss itself; the 0.5-expectile with the same c is the same loss (up to
    # a factor of 2); the standard errors are the oracle's sandwich within 1%
    from scipy import optimize

    rng = np.random.default_rng(2)
    n, c = 4000, 1.345
    x1, x2 = rng.uniform(-2, 2, n), rng.uniform(0, 5, n)
    y = np.clip(1 + 0.5 * x1 - 0.3 * x2 + rng.standard_t(3, n), -15, 15)
    data = pd.DataFrame({"y": y, "x1": x1, "x2": x2})
    bounds = {"y": (-15, 15), "x1": (-2, 2), "x2": (0, 5)}
    X = np.column_stack([np.ones(n), x1, x2])

    def loss(b):
        a = np.abs(y - X @ b)
        return np.sum(np.where(a <= c, 0.5 * a * a, c * a - 0.5 * c * c))

    ref = optimize.minimize(loss, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
    oracle = dpreg.oracle("y ~ x1 + x2", data, family="huber", bounds=bounds, weights=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fit in (dpreg.dp_huber, dpreg.dp_expectile):
            res = fit("y ~ x1 + x2", data, bounds=bounds, mu=1e6, c=c, engine="newton",
                      weights=None, ranges="declared", random_state=0)
            np.testing.assert_allclose(res.params, ref, rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(res.bse, oracle.bse, rtol=0.01)
    # the start is the outcome's level (no rate to read): seven gradients before the last
    assert {e.name: e.count for e in res.ledger.events}["Newton gradients"] == STEPS - 1


def test_huber_from_a_far_start_converges_on_the_majorizer():
    # p = 15 covariates in natural units: from the median start most residuals lie
    # beyond c, and Newton steps on the Hessian there ended 36 standard errors from the
    # minimizer even without noise; on the majorizer first they reach it
    from dpreg.frontend.model import DPRegression
    from dpreg.studies.robustness import natural_units_design

    data, formula, bounds, _ = natural_units_design(5000, 15, np.random.default_rng(1),
                                                    family="huber", errors="t3")
    oracle = DPRegression.from_formula(formula, data, family="huber",
                                       bounds=bounds).fit_oracle()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_huber(formula, data, bounds=bounds, mu=1e6, engine="newton",
                             ranges="declared", random_state=1)
    assert np.max(np.abs(res.params - oracle.params) / oracle.bse) < 0.01


def test_huber_standard_errors_on_a_count_are_the_sandwich_at_the_estimate():
    # a count outcome: the Huber Hessian counts the rows whose residual lies within c, a
    # step function of theta; the covariance's Hessian is released at the last step, next
    # to the estimate (the Hessian at step 5 left randhie's intervals 3-20% short)
    from dpreg.engines.newton import LOCATION_HESSIAN_AT

    rng = np.random.default_rng(8)
    n = 6000
    x1, x2 = rng.uniform(0, 4, n), (rng.random(n) < 0.3).astype(float)
    y = np.minimum(rng.negative_binomial(1, 1 / (1 + np.exp(0.2 + 0.4 * x1 + 0.5 * x2))),
                   60).astype(float)
    data = pd.DataFrame({"y": y, "x1": x1, "x2": x2})
    bounds = {"y": (0, 60), "x1": (0, 4), "x2": (0, 1)}
    oracle = dpreg.oracle("y ~ x1 + x2", data, family="huber", bounds=bounds, weights=None)

    def fit(**kw):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpreg.dp_huber("y ~ x1 + x2", data, bounds=bounds, mu=1e6,
                                 engine="newton", weights=None, random_state=0, **kw)
        return res, [str(w.message) for w in caught if w.category is ConvergenceWarning]

    # the default ranges: the path starts at the outcome's private median (2 here); the
    # learned range clips only rows whose residual is beyond c, where psi is flat
    res, warned = fit()
    assert warned == []
    np.testing.assert_allclose(res.params, oracle.params, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res.bse, oracle.bse, rtol=0.005)
    hessians = {e.name: e.count for e in res.ledger.events}["Hessian A"]
    assert hessians == len(LOCATION_HESSIAN_AT) == 3
    assert res.settings.value("hessians_at") == "1, 5, 8"
    # in the declared box the path starts at its midpoint, 30 visits from a level of 2:
    # eight steps fall short, and the fit says so instead of reporting the estimate
    far, warned = fit(ranges="declared")
    assert any("had not converged" in m and "'Intercept'" in m for m in warned)


def test_mallows_weighted_logit_standard_errors_are_the_weighted_sandwich():
    # a rare count covariate (kidslt6 of the textbook approval logit): from the
    # intercept-only start the weighted steps converge slowly on the first Hessian, and the
    # step-5 Hessian left the weighted sandwich 33% short without noise; the last-step
    # Hessian (WEIGHTED_HESSIAN_AT) gives it
    import statsmodels.api as sm

    from dpreg.engines.newton import WEIGHTED_HESSIAN_AT
    from dpreg.frontend.model import DPRegression
    from dpreg.studies.textbook import simulate_design

    data, formula, bounds, _, _ = simulate_design("approval", 20_000,
                                                  np.random.default_rng(5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_logit(formula, data, bounds=bounds, mu=1e7, engine="newton",
                             weights="mallows", ranges="declared", random_state=1)
    model = DPRegression.from_formula(formula, data, family="logistic", bounds=bounds,
                                      weights="mallows")
    # statsmodels' GLM with the same weights as variance weights: the weighted score and
    # Hessian, and HC0 their sandwich
    glm = sm.GLM(model.design.endog, model.design.exog, family=sm.families.Binomial(),
                 var_weights=model.objective.weights).fit(cov_type="HC0")
    assert np.max(np.abs(res.params.to_numpy() - glm.params) / glm.bse) < 0.01
    np.testing.assert_allclose(res.bse, glm.bse, rtol=0.02)
    assert res.settings.value("hessians_at") == ", ".join(map(str, WEIGHTED_HESSIAN_AT))
    hessians = {e.name: e.count for e in res.ledger.events}["Hessian A"]
    assert hessians == len(WEIGHTED_HESSIAN_AT) == 3
    # unweighted logits keep two Hessians
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = dpreg.dp_logit(formula, data, bounds=bounds, mu=1e7, engine="newton",
                               ranges="declared", random_state=1)
    assert plain.settings.value("hessians_at") == "1, 5"
