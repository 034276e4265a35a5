"""Families: derivatives, closed forms, bounds, oracles against statsmodels, bad input."""

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from statsmodels.robust.norms import HuberT

import dpreg
from dpreg.exceptions import ConvergenceWarning, DataError, OptionError
from dpreg.families import FAMILIES, dispatch, get_family, mallows_weights

CASES = [("linear", math.inf, 0.5), ("huber", 1.345, 0.5), ("logistic", math.inf, 0.5),
         ("expectile", 1.345, 0.3), ("expectile", 1.345, 0.8), ("expectile", math.inf, 0.8)]


@pytest.mark.parametrize("name, c, tau", CASES)
def test_derivatives_by_finite_differences(name, c, tau):
    # five-point central differences (rtol 1e-6 away from the kinks at |r| = c, r = 0)
    fam = get_family(name)
    rng = np.random.default_rng(1)
    h = 1e-4
    for _ in range(200):
        y = float(rng.integers(0, 2)) if name == "logistic" else rng.normal(0, 2)
        eta = rng.normal(0, 2)
        r = y - eta
        if name != "logistic" and (min(abs(abs(r) - c), abs(r)) < 1e-2):
            continue
        f = [fam.loss(y, eta + k * h, c, tau) for k in (-2, -1, 1, 2)]
        d1 = (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * h)
        assert fam.dloss(y, eta, c, tau) == pytest.approx(d1, rel=1e-6, abs=1e-8)
        g = [fam.dloss(y, eta + k * h, c, tau) for k in (-2, -1, 1, 2)]
        d2 = (g[0] - 8 * g[1] + 8 * g[2] - g[3]) / (12 * h)
        assert fam.d2loss(y, eta, c, tau) == pytest.approx(d2, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("name, c, tau", CASES)
def test_bounds_hold(name, c, tau):
    fam = get_family(name)
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 5000).astype(float) if name == "logistic" else rng.standard_cauchy(5000)
    eta = rng.standard_cauchy(5000) * 10
    psi = np.array([abs(fam.dloss(a, b, c, tau)) for a, b in zip(y, eta, strict=True)])
    hes = np.array([fam.d2loss(a, b, c, tau) for a, b in zip(y, eta, strict=True)])
    bound = fam.psi_bound(c, tau)
    if bound is not None:
        assert psi.max() <= bound + 1e-12
    assert hes.min() >= 0 and hes.max() <= fam.hess_bound(c, tau) + 1e-12


def test_closed_forms():
    huber, logit, expec = get_family("huber"), get_family("logistic"), get_family("expectile")
    assert huber.loss(3.0, 0.0, 1.0, 0.5) == pytest.approx(1.0 * 3 - 0.5)
    assert huber.loss(0.5, 0.0, 1.0, 0.5) == pytest.approx(0.125)
    # statsmodels' HuberT.rho with t = c is the same function of the residual
    r = np.linspace(-5, 5, 41)
    np.testing.assert_allclose([huber.loss(v, 0.0, 1.345, 0.5) for v in r],
                               HuberT(t=1.345).rho(r), rtol=1e-12)
    assert logit.loss(1.0, 800.0, 0, 0) == pytest.approx(0.0, abs=1e-12)  # no overflow
    assert logit.loss(0.0, 800.0, 0, 0) == pytest.approx(800.0)
    assert logit.dloss(1.0, -800.0, 0, 0) == pytest.approx(-1.0)
    assert expec.loss(-2.0, 0.0, math.inf, 0.8) == pytest.approx(0.2 * 2.0)
    assert expec.loss(2.0, 0.0, math.inf, 0.8) == pytest.approx(0.8 * 2.0)


def test_mallows_weights_bound_every_row():
    X = np.random.default_rng(3).standard_cauchy((1000, 4))
    w = mallows_weights(X)
    norms = np.linalg.norm(X, axis=1)
    assert np.all(w * norms <= np.sqrt(2) + 1e-12) and np.all(w * norms ** 2 <= 2 + 1e-12)


def test_registry_and_codes_are_unique():
    assert len({f.code for f in FAMILIES.values()}) == len(FAMILIES)
    with pytest.raises(OptionError, match="unknown family"):
        get_family("poisson")


def test_capabilities_are_consistent():
    """A family's capability attributes agree with its loss: a 0/1 outcome has an inverse
    link and no location start; the squared loss is the one whose d2loss is 1 and
    whose LDP step is the offset step always."""
    for fam in FAMILIES.values():
        assert fam.binary_outcome == (fam.inverse_link is not None) == (not fam.location)
        assert fam.squared_loss == (fam.ldp_offset_step == "always") == (fam.name == "linear")
        if fam.squared_loss:
            assert fam.d2loss(3.0, -1.0, math.inf, 0.5) == 1.0
    with pytest.raises(ValueError, match="ldp_offset_step"):
        dataclasses.replace(FAMILIES["linear"], ldp_offset_step="sometimes")


def test_logistic_inverse_link_and_its_derivatives():
    # against the closed forms in e = exp(-eta): p = 1/(1+e), p' = e/(1+e)^2,
    # p'' = e(e-1)/(1+e)^3 (rtol 1e-6: the link computes 1 - p, whose relative error is
    # about 1e-16 / (1 - p) < 1e-7 for eta <= 20), and
    # p' against central differences of p for |eta| <= 5 (rtol 1e-6: h = 1e-4, error
    # O(h^2); further out the difference of two p near 1 cancels)
    eta = np.linspace(-20, 20, 81)
    mean, d1, d2 = get_family("logistic").inverse_link(eta)
    e = np.exp(-eta)
    np.testing.assert_allclose(mean, 1 / (1 + e), rtol=1e-12, atol=0)
    np.testing.assert_allclose(d1, e / (1 + e) ** 2, rtol=1e-6, atol=0)
    np.testing.assert_allclose(d2, e * (e - 1) / (1 + e) ** 3, rtol=1e-6, atol=0)
    h = 1e-4
    m = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    near = np.abs(eta) <= 5
    np.testing.assert_allclose(d1[near], (m(eta + h) - m(eta - h))[near] / (2 * h),
                               rtol=1e-6, atol=0)


class _UnitScale(sm.robust.scale.HuberScale):
    """RLM's scale fixed at 1 (statsmodels 0.14 takes no callable ``scale_est``; both
    0.14 and 0.15 call a ``HuberScale`` instance for the scale)."""

    def __call__(self, df_resid, nobs, resid):
        return 1.0


def _sim(n=3000, seed=0):
    return dpreg.datasets.simulate_ldp_design(n, family="huber", random_state=seed)


def test_logit_oracle_equals_statsmodels():
    sim = dpreg.datasets.simulate_logistic(2000, p=3, intercept=True, random_state=4)
    orc = dpreg.oracle(sim.formula, sim.data, family="logistic")
    ref = sm.Logit.from_formula(sim.formula, sim.data).fit(disp=0)
    np.testing.assert_allclose(orc.params, ref.params, rtol=1e-7)
    np.testing.assert_allclose(orc.bse, ref.bse, rtol=1e-6)
    # the generic solver (Mallows weights off, through m_estimate) agrees too
    from dpreg.fits.oracle import m_estimate

    model = dpreg.DPRegression.from_formula(sim.formula, sim.data, family="logistic")
    theta, _, ok = m_estimate(model.design.exog, model.design.endog, model.objective)
    assert ok
    np.testing.assert_allclose(theta, ref.params, rtol=1e-7)


def test_huber_oracle_equals_rlm_with_unit_scale():
    sim = _sim()
    orc = dpreg.oracle(sim.formula, sim.data, family="huber", weights=None)
    rlm = sm.RLM.from_formula(sim.formula, sim.data, M=HuberT(t=1.345))
    ref = rlm.fit(scale_est=_UnitScale(), update_scale=False, conv="coefs",
                  tol=1e-12, maxiter=500)
    np.testing.assert_allclose(orc.params, ref.params, rtol=1e-8)


@pytest.mark.parametrize("tau", [0.3, 0.8])
def test_expectile_oracle_equals_rlm_mquantile(tau):
    # statsmodels' MQuantileNorm(q, HuberT(c)) is |q - 1{r < 0}| h_c(r): the robust
    # expectile loss. With the scale fixed at 1 and no weights the estimators coincide.
    from statsmodels.robust.norms import MQuantileNorm

    sim = _sim(seed=7)
    orc = dpreg.oracle(sim.formula, sim.data, family="expectile", tau=tau, weights=None)
    rlm = sm.RLM.from_formula(sim.formula, sim.data, M=MQuantileNorm(tau, HuberT(t=1.345)))
    ref = rlm.fit(scale_est=_UnitScale(), update_scale=False, conv="coefs",
                  tol=1e-12, maxiter=1000)
    np.testing.assert_allclose(orc.params, ref.params, rtol=1e-7)


def test_expectile_oracle_solves_its_estimating_equation():
    sim = _sim(seed=5)
    model = dpreg.DPRegression.from_formula(sim.formula, sim.data, family="expectile",
                                            tau=0.8)
    orc = model.fit_oracle()
    X, y, obj = model.design.exog, model.design.endog, model.objective
    grad, hess = np.empty(X.shape[1]), np.empty((X.shape[1],) * 2)
    dispatch.objective_terms(X, y, obj.weights, obj.family.code, obj.c, obj.tau,
                             orc.params.to_numpy(), grad, hess)
    assert np.abs(grad / len(y)).max() < 1e-9
    # tau = 0.8 shifts only the intercept (symmetric errors, homoscedastic design)
    assert orc.params["Intercept"] > 1.1 and np.all(np.abs(orc.params[1:] - 1) < 0.05)


@pytest.mark.parametrize("family, kw", [("huber", {}), ("expectile", {"tau": 0.3}),
                                         ("logistic", {})])
def test_noise_free_limit_equals_oracle(family, kw):
    # The engine without noise or clipping, T = n^2: its average differs from the
    # family's oracle by the sampling error of Theorem 1, sd ~ se / sqrt(k) with
    # k = T / n = n; the tolerance is 8 of those.
    from dpreg.engines import SGDSettings, run_dpsgd

    if family == "logistic":
        sim = dpreg.datasets.simulate_logistic(1000, p=3, intercept=True, random_state=6)
    else:
        sim = _sim(1000, seed=6)
    model = dpreg.DPRegression.from_formula(sim.formula, sim.data, family=family, **kw)
    n = model.design.nobs
    settings = SGDSettings(batch_size=1, sampling="uniform", steps=n * n, clip=np.inf,
                           lr=0.5, lr_decay=0.501, noise_scale=0.0, noise_multiplier=0.0)
    out = run_dpsgd(model.design.exog, model.design.endog, objective=model.objective,
                    settings=settings, theta0=np.zeros(model.design.k_exog),
                    rng=np.random.default_rng(1))
    orc = model.fit_oracle()
    assert np.all(np.abs(out.params - orc.params.to_numpy()) < 8 * orc.bse.to_numpy() / np.sqrt(n))


def test_logit_outcome_checks():
    df = pd.DataFrame({"y": [0, 1, 2, 1, 0, 1] * 10, "x": np.linspace(-1, 1, 60)})
    with pytest.raises(DataError, match="found values 0, 1, 2"):
        dpreg.dp_logit("y ~ x", df, mu=1)
    df = pd.DataFrame({"y": ["no", "yes"] * 30, "x": np.linspace(-1, 1, 60)})
    res = dpreg.dp_logit("y ~ x", df, mu=1, random_state=0, x_bound=2.0,
                         levels={"y": ["no", "yes"]})
    assert res.endog_name == "y[yes]"
    df = pd.DataFrame({"y": [True, False] * 30, "x": np.linspace(-1, 1, 60)})
    assert dpreg.dp_logit("y ~ x", df, mu=1, random_state=0, x_bound=2.0).endog_name == "y[True]"


def test_perfect_separation_warns_in_the_oracle():
    x = np.linspace(-1, 1, 100)
    df = pd.DataFrame({"y": (x > 0).astype(int), "x": x})
    with pytest.warns(ConvergenceWarning, match="separated"):
        dpreg.oracle("y ~ x", df, family="logistic")
    res = dpreg.dp_logit("y ~ x", df, mu=1, random_state=0, x_bound=2.0)
    assert np.all(np.isfinite(res.params)) and np.all(np.isfinite(res.bse))


@pytest.mark.parametrize("kw, match", [({"tau": 1.0}, "tau"), ({"tau": 0.0}, "tau"),
                                        ({"c": 0.0}, "c must"), ({"c": -1.0}, "c must")])
def test_bad_tuning_constants(kw, match):
    sim = _sim(200)
    with pytest.raises(OptionError, match=match):
        dpreg.dp_expectile(sim.formula, sim.data, mu=1, **kw)


def test_constants_are_validated_per_family():
    sim = _sim(200)
    with pytest.raises(OptionError, match="expectile family only"):
        dpreg.DPRegression.from_formula(sim.formula, sim.data, family="huber", tau=0.3)
    with pytest.raises(OptionError, match="finite"):
        dpreg.dp_huber(sim.formula, sim.data, mu=1, c=math.inf)
    with pytest.raises(OptionError, match="weights"):
        dpreg.dp_huber(sim.formula, sim.data, mu=1, weights="tukey")


def test_a_c_far_below_the_outcome_scale_is_refused_before_any_release():
    # c is in the outcome's units: 1.345 dollars on earnings declared in (-1e5, 1e6) is a
    # median regression no private fit can reach or estimate; refused by name when the
    # model is built, before the ranges or the path could spend anything
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"earn": 30_000 + 12_000 * rng.standard_t(3, 300),
                         "educ": rng.uniform(8, 20, 300)})
    bounds = {"earn": (-100_000, 1_000_000), "educ": (0, 25)}
    for fit, kw in [(dpreg.dp_huber, {}), (dpreg.dp_expectile, {"tau": 0.3}),
                    (dpreg.dp_huber, {"c": 100.0, "engine": "ldp_sgd"})]:
        with pytest.raises(OptionError, match=r"c = (1.345|100) is under 1/10,000 of the "
                                              r"declared range \(-100000, 1e\+06\) of the "
                                              r"outcome 'earn'"):
            fit("earn ~ educ", data, mu=2, bounds=bounds, **kw)
    with pytest.raises(OptionError, match="in the units of 'earn'"):
        dpreg.DPRegression.from_formula("earn ~ educ", data, family="huber", bounds=bounds)
    # at the floor it is accepted (and the non-robust expectile has no c to check)
    model = dpreg.DPRegression.from_formula("earn ~ educ", data, family="huber", c=110.0,
                                            bounds=bounds)
    assert model.c == 110.0
    dpreg.DPRegression.from_formula("earn ~ educ", data, family="expectile", c=math.inf,
                                    bounds=bounds)
    # a box known only by its scale says nothing of the data's range: not checked
    dpreg.DPRegression.from_formula("earn ~ educ", data, family="huber", c=1000.0,
                                    bounds={**bounds, "earn": dpreg.ScaleBox(0, 1e9)})


def test_summary_names_family_constants():
    sim = _sim(500)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", dpreg.exceptions.SeedReuseWarning)  # seeded on purpose
        res = dpreg.dp_expectile(sim.formula, sim.data, tau=0.8, mu=1, random_state=0)
    text = res.summary().as_text()
    assert "Expectile (c = 1.345, tau = 0.8), Mallows weights" in text
    assert "none (Mallows weights)" in text  # no covariate bound needed, none warned about
