"""Private fits end to end: API, options, warnings, ledger, reproducibility."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg.exceptions import (
    BudgetExceededError,
    DataError,
    OptionError,
    PrivacyLeakError,
    PrivacyLeakWarning,
)

FORMULA = "y ~ x + C(g) + d"


LEVELS = {"g": ["a", "b", "c"]}


def fit(frame, bounds, **kw):
    kw.setdefault("mu", 1.0)
    kw.setdefault("random_state", 3)
    kw.setdefault("levels", LEVELS)
    return dpreg.dp_ols(FORMULA, frame, bounds=bounds, **kw)


def test_fit_returns_labelled_private_results(small_frame, small_bounds):
    res = fit(small_frame, small_bounds, cov_type="plugin")  # the default cannot switch
    names = ["Intercept", "C(g)[T.b]", "C(g)[T.c]", "x", "d"]
    assert list(res.params.index) == names
    for attr in ("params", "bse", "tvalues", "zvalues", "pvalues"):
        series = getattr(res, attr)
        assert list(series.index) == names and np.all(np.isfinite(series))
    assert list(res.conf_int().index) == names
    assert list(res.conf_int(method="rs").index) == names
    assert res.cov_params().shape == (5, 5)
    assert res.private and res.nobs == len(small_frame) and res.df_model == 4
    assert np.all(res.bse > 0)
    ci = res.conf_int(0.05)
    assert np.all(ci[0] < res.params) and np.all(res.params < ci[1])


def test_plugin_standard_errors_estimate_theorem2_variance(small_frame, small_bounds):
    # At mu = 500 the private matrices are accurate, so the plug-in standard errors match
    # Theorem 2's variance [V (1 + 1/(k m)) + sigma_1^2 A^-2 / k] / n computed from the
    # NON-private A and S at the estimate (rtol 0.1: matrix noise and the eigen-floor).
    # (At mu = 50 the score matrix's noise is still about 25% of its entries.) Even at
    # mu = 500 the privacy part is not negligible, so the oracle's s.e. is NOT the target.
    # The engine works in the conditioned coordinates, so the variance is computed there.
    from dpreg.inference.plugin import hessian_matrix, score_matrix

    res = fit(small_frame, small_bounds, mu=500.0, engine="dpsgd")
    model = dpreg.DPRegression.from_formula(FORMULA, small_frame, bounds=small_bounds,
                                            levels=LEVELS)
    X, y = model.design.exog, model.design.endog
    n, lin = len(y), model.objective
    A = hessian_matrix(X, y, res.params.to_numpy(), lin, res.settings["x_bound"],
                       res.settings["clip"])
    S = score_matrix(X, y, res.params.to_numpy(), lin, res.settings["clip"])
    Ainv = np.linalg.inv(A)
    V = Ainv @ S @ Ainv
    k, m, sigma1 = res.settings["steps"] / n, res.settings["batch_size"], res.settings["sigma_1"]
    var = (V * (1 + 1 / (k * m)) + sigma1 ** 2 * Ainv @ Ainv / k) / n
    np.testing.assert_allclose(res.bse, np.sqrt(np.diag(var)), rtol=0.1)
    orc = dpreg.oracle(FORMULA, small_frame, bounds=small_bounds)
    assert np.all(np.abs(res.params - orc.params) < 4 * res.bse)


def test_same_seed_same_numbers(small_frame, small_bounds):
    a, b = fit(small_frame, small_bounds), fit(small_frame, small_bounds)
    c = fit(small_frame, small_bounds, random_state=4)
    pd.testing.assert_series_equal(a.params, b.params)
    pd.testing.assert_series_equal(a.bse_by("plugin"), b.bse_by("plugin"))
    assert not a.params.equals(c.params)


def test_seed_is_never_published(small_frame, small_bounds):
    # Whoever knows the seed can regenerate the noise and undo the privacy: a given seed
    # is a secret key and is not stored; without one, fresh OS entropy is used.
    res = fit(small_frame, small_bounds, random_state=987654321)
    assert "987654321" not in res.summary().as_text()
    assert b"987654321" not in pickle.dumps(res)
    a = fit(small_frame, small_bounds, random_state=None)
    b = fit(small_frame, small_bounds, random_state=None)
    assert not a.params.equals(b.params)
    g = np.random.default_rng(5)
    assert not fit(small_frame, small_bounds, random_state=g).params.equals(
        fit(small_frame, small_bounds, random_state=g).params)


def test_ledger_never_exceeds_request(small_frame, small_bounds):
    res = fit(small_frame, small_bounds, mu=0.7)
    assert res.ledger.total_mu <= 0.7 * (1 + 1e-9)
    assert res.ledger.total_mu == pytest.approx(0.7, rel=1e-6)
    names = list(res.ledger.to_frame()["name"])
    assert names == ["ranges (noisy histograms)", "second moment G (preconditioner)",
                     "DP-SGD path", "Hessian A", "score covariance S"]
    res = fit(small_frame, small_bounds, mu=0.7, condition="bounds", ranges="declared")
    assert list(res.ledger.to_frame()["name"]) == ["DP-SGD path", "Hessian A",
                                                    "score covariance S"]
    assert res.ledger.total_mu == pytest.approx(0.7, rel=1e-6)


def test_budget_split_path_only_gives_rs_without_se(small_frame, small_bounds):
    res = fit(small_frame, small_bounds, budget_split={"path": 1.0}, cov_type="rs")
    assert set(res.inferences) == {"rs"}
    assert np.all(np.isfinite(res.pvalues))
    with pytest.raises(OptionError, match="standard error"):
        _ = res.bse
    assert len(res.ledger.events) == 1


def test_epsilon_delta_and_rho_requests(small_frame, small_bounds):
    res = fit(small_frame, small_bounds, mu=None, epsilon=3.0, delta=1e-6)
    eps, _ = res.ledger.epsilon_rigorous
    assert eps == pytest.approx(3.0, rel=1e-3) and eps <= 3.0 * (1 + 1e-3)
    res = fit(small_frame, small_bounds, mu=None, rho=0.5)
    assert np.all(np.isfinite(res.params))


@pytest.mark.parametrize("kw, match", [
    ({"mu": -1}, "mu"),
    ({"mu": 1, "rho": 1}, "one"),
    ({"mu": None, "epsilon": 1.0}, "delta"),
    ({"mu": None, "epsilon": 1.0, "delta": 1.5}, "delta"),
    ({"mu": float("inf")}, "mu"),
])
def test_bad_budgets(small_frame, small_bounds, kw, match):
    with pytest.raises(BudgetExceededError, match=match):
        fit(small_frame, small_bounds, **kw)


@pytest.mark.parametrize("kw, match", [
    ({"engine": "sgd"}, "engine"),
    ({"engine": "dpgd", "cov_type": "rs"}, "not available with engine"),
    ({"cov_type": "hc3"}, "cov_type"),
    ({"sampling": "cyclic"}, "sampling"),
    ({"batch_size": 0}, "batch_size"),
    ({"batch_size": 10_000}, "batch_size"),
    ({"steps": 2.5}, "steps"),
    ({"steps": 1}, "steps"),
    ({"clip": float("inf")}, "clip"),
    ({"clip": -1.0}, "clip"),
    ({"lr": 0.0}, "lr"),
    ({"lr_decay": 1.0}, "lr_decay"),
    ({"budget_split": {"path": 0.5, "hessian": 0.5}}, "score"),
    ({"budget_split": {"path": 0.5, "other": 0.5}}, "other"),
    ({"budget_split": {"path": 0.9, "hessian": 0.2, "score": 0.1}}, "sum"),
    ({"random_state": "abc"}, "random_state"),
    ({"start_params": [1, 2]}, "start_params"),
    ({"bacth_size": 2}, "batch_size"),
])
def test_bad_options_name_the_option(small_frame, small_bounds, kw, match):
    with pytest.raises(OptionError, match=match):
        fit(small_frame, small_bounds, **kw)


def test_missing_bounds_warn_and_strict_raises(small_frame):
    with pytest.warns(PrivacyLeakWarning, match="'x'"):
        fit(small_frame, {"y": (-3, 5)})
    with pytest.warns(PrivacyLeakWarning, match="outcome"):
        fit(small_frame, {"x": (-1, 1), "d": (0, 1)})
    with pytest.raises(PrivacyLeakError, match="strict"):
        fit(small_frame, {"y": (-3, 5)}, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        fit(small_frame, {"y": (-3, 5)}, x_bound=2.0)  # explicit x_bound: no leak warning


def test_declared_outcome_bounds_clip_a_copy(small_frame, small_bounds):
    frame = small_frame.copy()
    frame.loc[0, "y"] = 100.0
    before = frame.copy()
    fit(frame, small_bounds)
    pd.testing.assert_frame_equal(frame, before)  # the user's data is never changed


def test_array_front_end(small_frame):
    X = np.column_stack([np.ones(len(small_frame)), small_frame[["x", "d"]].to_numpy()])
    model = dpreg.DPRegression(small_frame["y"], X, intercept=0,
                               bounds={"y": (-3, 5), "x2": (-1, 1), "x3": (0, 1)})
    res = model.fit(mu=1.0, random_state=0)
    assert list(res.params.index) == ["const", "x2", "x3"]
    np.testing.assert_allclose(res.predict(X[:3]), X[:3] @ res.params.to_numpy())


def test_predict_with_formula_and_after_pickle(small_frame, small_bounds):
    res = fit(small_frame, small_bounds)
    new = small_frame.iloc[:5]
    p1 = res.predict(new)
    back = pickle.loads(pickle.dumps(res))
    pd.testing.assert_series_equal(back.params, res.params)
    pd.testing.assert_frame_equal(back.conf_int(method="rs"), res.conf_int(method="rs"))
    X = dpreg.DPRegression.from_formula(FORMULA, new, levels=LEVELS).design.exog
    np.testing.assert_allclose(back.predict(X), p1)
    with pytest.raises(OptionError, match="exog"):
        res.predict()


def test_private_results_hold_no_raw_data(small_frame, small_bounds):
    # Search the pickled bytes for the data's values (user guide, Privacy: "Threat model").
    res = fit(small_frame, small_bounds)
    blob = pickle.dumps(res)
    for value in small_frame["y"].to_numpy()[:50]:
        assert np.float64(value).tobytes() not in blob
    assert not hasattr(res, "diagnostics")


def test_diagnostics_warn(small_frame, small_bounds):
    with pytest.warns(PrivacyLeakWarning, match="clipped"):
        res = fit(small_frame, small_bounds, diagnostics=True)
    assert 0 <= res.diagnostics["clip_share"] <= 1


@pytest.mark.parametrize("engine", ["dpsgd", "dpgd", "adassp"])
def test_non_private_diagnostics_are_labelled_and_never_saved(small_frame, small_bounds,
                                                              engine, tmp_path):
    kw = {"steps": None} if engine == "adassp" else {}
    with pytest.warns(PrivacyLeakWarning):
        res = fit(small_frame, small_bounds, diagnostics=True, engine=engine, **kw)
    assert res.diagnostics  # the counts are there for the analyst ...
    # ... labelled non-private wherever they show
    assert "NON-PRIVATE" in repr(res.diagnostics)
    assert "NON-PRIVATE" in res.settings.value("diagnostics")
    text = res.summary().as_text()
    assert "Diagnostics NON-PRIVATE" in text
    # ... and never in a saved or pickled result
    path = tmp_path / "res.pkl"
    res.save(path)
    back = dpreg.load(path)
    assert not hasattr(back, "diagnostics")
    assert not hasattr(pickle.loads(pickle.dumps(res)), "diagnostics")
    np.testing.assert_array_equal(back.params, res.params)


def test_summary_renders_everything(small_frame, small_bounds):
    res = fit(small_frame, small_bounds)
    text = res.summary().as_text()
    for needle in ("DP regression", "Linear", "DP-SGD", "mu = 1", "steps", "RS",
                   "DP-SGD path", "Rows dropped", "C(g)[T.b]", "clip", "random_state"):
        assert needle in text, needle
    assert "\\begin{tabular}" in res.summary().as_latex()
    assert "<table" in res.summary().as_html()


def test_summary_col_three_models(small_frame, small_bounds):
    a = fit(small_frame, small_bounds)
    b = fit(small_frame, small_bounds, sampling="poisson", batch_size=5)
    orc = dpreg.oracle(FORMULA, small_frame, bounds=small_bounds)
    table = dpreg.summary_col([orc, a, b], layout="long", variables=["x", "d"],
                              model_names=["", "uniform", "poisson"])
    text = table.as_text()
    assert text.count("Plug-in") == 4 and text.count("RS") >= 4 and "Oracle" in text
    assert "x" in table.as_latex() and "<table" in table.as_html()


def test_undeclared_categories_warn_and_stateful_transforms_refused(small_frame, small_bounds):
    with pytest.warns(PrivacyLeakWarning, match="C\\(g\\)") as rec:
        fit(small_frame, small_bounds, levels=None)
    assert rec[0].filename == __file__  # the warning points at the user's line
    with pytest.raises(PrivacyLeakError, match="standardize"):
        dpreg.dp_ols("y ~ standardize(x)", small_frame, mu=1, bounds={"y": (-3, 5)},
                     x_bound=2.0)
    orc = dpreg.oracle("y ~ standardize(x)", small_frame)  # the oracle is non-private
    assert not orc.private


def test_covariates_clipped_to_declared_bounds(small_frame, small_bounds):
    frame = small_frame.copy()
    frame.loc[:9, "x"] = 50.0  # outside the declared (-1, 1)
    model = dpreg.DPRegression.from_formula(FORMULA, frame, bounds=small_bounds,
                                            levels=LEVELS)
    j = model.exog_names.index("x")
    assert model.design.exog[:, j].max() == 1.0
    assert frame.loc[0, "x"] == 50.0  # the caller's data is untouched


def test_eigenvalues_capped_at_public_bound(small_frame, small_bounds):
    # At a tiny budget the private Hessian is pure noise; its eigenvalues are moved into
    # [floor, hess_bound * x_bound^2], so no standard error comes from an impossible A.
    res = fit(small_frame, small_bounds, mu=1e-3)
    text = " ".join(res.summary().as_text().split())
    assert np.all(np.isfinite(res.bse)) and "public ranges" in text


def test_unknown_column_and_non_numeric_outcome(small_frame):
    with pytest.raises(dpreg.FormulaError, match="nope"):
        dpreg.dp_ols("y ~ nope", small_frame, mu=1)
    with pytest.raises(DataError, match="numeric"):
        dpreg.dp_ols("g ~ x", small_frame, mu=1)
