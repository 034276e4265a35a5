"""SSP with absorbed fixed effects (``absorb=``): the non-private limit against
statsmodels' OLS with the factor's dummies and linearmodels' ``AbsorbingLS``, the
ledger and its sensitivities against the engine's own function, the output, and bad
options."""

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpreg
from dpreg.engines.ssp import SSPSettings, ssp_sensitivities
from dpreg.exceptions import OptionError

FORMULA = "y ~ x1 + x2"
BOUNDS = {"y": (-10.0, 10.0), "x1": (-3.0, 3.0), "x2": (0.0, 2.0)}
STATES = [f"s{k:02d}" for k in range(12)]
LEVELS = {"state": STATES}


def make_panel(seed, n=4000):
    """Rows in 12 states with state effects correlated with x1 (so that pooled OLS is
    biased and the within slopes differ from it), inside the declared bounds."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, len(STATES), n)
    effect = rng.normal(0, 2, len(STATES))
    x1 = np.clip(0.5 * effect[k] + rng.normal(0, 1, n), -3, 3)
    x2 = rng.uniform(0, 2, n)
    y = np.clip(effect[k] + 0.7 * x1 - 0.4 * x2 + rng.normal(0, 1, n), -10, 10)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2,
                         "state": np.array(STATES, dtype=object)[k]})


def fit(data, **kw):
    opts = {"bounds": BOUNDS, "engine": "ssp", "absorb": "state", "levels": LEVELS,
            "random_state": 1, "mu": 1.0, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpreg.exceptions.SeedReuseWarning)
        # small n at mu = 1-2 floors an eigenvalue of the 14-column Gram (warned)
        warnings.simplefilter("ignore", dpreg.exceptions.ConvergenceWarning)
        return dpreg.dp_ols(FORMULA, data, **opts)


# ------------------------------------------------------------------ non-private limit
def test_noise_off_matches_ols_with_state_dummies(seed):
    # mu = 1e12 (noise ~1e-12 of the sums) and bounds that clip nothing: the slopes are
    # OLS with C(state), the plug-in s.e. its non-robust s.e.
    data = make_panel(seed)
    res = fit(data, mu=1e12)
    ols = smf.ols(FORMULA + " + C(state)", data).fit()
    assert list(res.params.index) == ["x1", "x2"]
    # 1e-6: the noise at mu = 1e12 moves the sums by ~1e-10 relative
    np.testing.assert_allclose(res.params, ols.params[["x1", "x2"]], rtol=1e-6)
    # 1e-3: the plug-in adds the (here ~1e-20) privacy variance; sigma~^2 = RSS/(n-p) as OLS
    np.testing.assert_allclose(res.bse, ols.bse[["x1", "x2"]], rtol=1e-3)
    assert res.df_model == ols.df_model
    assert res.df_resid == ols.df_resid
    assert list(res.conf_int().index) == ["x1", "x2"]
    assert list(res.pvalues.index) == ["x1", "x2"]
    assert res.cov_params().shape == (2, 2)
    # the pooled slopes differ: the test can fail if the dummies were not in the design
    pooled = smf.ols(FORMULA, data).fit()
    assert abs(pooled.params["x1"] - ols.params["x1"]) > 0.05
    boot = res.conf_int(method="pboot")
    assert boot.shape == (2, 2)
    # 1e-2: the bootstrap's half-width is 1.96 s.e. up to its Monte Carlo error (B = 2000)
    np.testing.assert_allclose((boot[1] - boot[0]).to_numpy(),
                               2 * 1.959964 * ols.bse[["x1", "x2"]].to_numpy(), rtol=0.1)


def test_noise_off_matches_linearmodels_absorbing_ls(seed):
    lm = pytest.importorskip("linearmodels")
    data = make_panel(seed)
    res = fit(data, mu=1e12)
    absorbed = lm.AbsorbingLS(data["y"], data[["x1", "x2"]],
                              absorb=pd.DataFrame({"state": pd.Categorical(data["state"])})
                              ).fit(cov_type="unadjusted", debiased=True)
    # 1e-6 and 1e-3 as above; debiased=True: AbsorbingLS then divides the RSS by n - p with
    # the absorbed levels counted, as the plug-in does (its default divides by n)
    np.testing.assert_allclose(res.params, absorbed.params[["x1", "x2"]], rtol=1e-6)
    np.testing.assert_allclose(res.bse, absorbed.std_errors[["x1", "x2"]], rtol=1e-3)


def test_without_intercept_all_levels_are_dummies(seed):
    data = make_panel(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpreg.exceptions.SeedReuseWarning)
        res = dpreg.dp_ols("y ~ x1 + x2 - 1", data, bounds=BOUNDS, engine="ssp",
                           absorb="state", levels=LEVELS, mu=1e12, random_state=1)
    ols = smf.ols(FORMULA + " + C(state)", data).fit()
    # 1e-6: as above (the same column space: all 12 dummies span the intercept)
    np.testing.assert_allclose(res.params, ols.params[["x1", "x2"]], rtol=1e-6)
    assert res.df_resid == ols.df_resid


# ------------------------------------------------------------------ ledger
def test_ledger_meets_request_and_sensitivity_counts_one_dummy(seed):
    data = make_panel(seed, n=1500)
    res = fit(data, mu=1.5)
    events = res.ledger.events
    assert [e.name for e in events] == ["SSP X'X", "SSP X'y", "SSP y'y"]
    # bounds coordinates: intercept 1, one dummy 1, x1 and x2 in [-1, 1] -> x_bound = 2
    # whatever the number of levels; y centred at 0 with half-range 10
    p = 2 + len(STATES)
    settings = SSPSettings(x_bound=2.0, y_bound=10.0)
    want = ssp_sensitivities(settings, p)
    np.testing.assert_allclose([e.sensitivity for e in events],
                               [want["gram"], want["xty"], want["yty"]], rtol=1e-12)
    assert res.settings.value("x_bound") == pytest.approx(2.0, rel=1e-12)
    mu_total = math.sqrt(sum((e.sensitivity / e.noise_std) ** 2 for e in events))
    assert mu_total == pytest.approx(1.5, rel=1e-9)
    assert res.ledger.total_mu == pytest.approx(1.5, rel=1e-9)


def test_replacing_a_row_by_another_level_stays_within_sensitivity():
    # Every pair of design rows (intercept, treatment dummies of 4 levels, two covariates
    # at the corners of [-1, 1]^2): the change of X'X (upper triangle with the diagonal)
    # and of X'y is within the sensitivities from x_bound = 2, the row bound with one dummy.
    L = 4
    settings = SSPSettings(x_bound=2.0, y_bound=1.0)
    sens = ssp_sensitivities(settings, 1 + (L - 1) + 2)
    rows = []
    for level, x in itertools.product(range(L), itertools.product((-1.0, 1.0), repeat=2)):
        dummies = np.zeros(L - 1)
        if level:
            dummies[level - 1] = 1.0
        rows.append(np.concatenate([[1.0], dummies, x]))
    iu = np.triu_indices(len(rows[0]))
    worst_gram = worst_xty = 0.0
    for a, b in itertools.product(rows, repeat=2):
        assert np.linalg.norm(a) <= 2.0 + 1e-12
        worst_gram = max(worst_gram, np.linalg.norm((np.outer(a, a) - np.outer(b, b))[iu]))
        worst_xty = max(worst_xty, np.linalg.norm(a * 1.0 - b * -1.0))
    assert worst_gram <= sens["gram"] + 1e-12
    assert worst_xty <= sens["xty"] + 1e-12


# ------------------------------------------------------------------ output
def test_summary_names_the_absorbed_factor(seed):
    res = fit(make_panel(seed, n=1500), mu=2.0)
    text = res.summary().as_text()
    assert "absorbed effects" in text
    assert f"state ({len(STATES)} levels)" in text
    assert "Absorbed fixed effects: 'state'" in text
    assert "C(state)" not in text and "Intercept" not in text


# ------------------------------------------------------------------ bad options
def test_undeclared_levels_are_refused(seed):
    data = make_panel(seed, n=500)
    with pytest.raises(OptionError, match="absorb='state'.*levels"):
        fit(data, levels=None)


def test_absorb_with_another_engine_is_refused(seed):
    data = make_panel(seed, n=500)
    with pytest.raises(OptionError, match="absorb"):
        fit(data, engine="dpsgd")


def test_absorb_of_a_missing_column_is_refused(seed):
    data = make_panel(seed, n=500)
    with pytest.raises(OptionError, match="absorb='county' is not a column"):
        fit(data, absorb="county")


def test_absorb_of_a_column_in_the_formula_is_refused(seed):
    data = make_panel(seed, n=500)
    with pytest.raises(OptionError, match="already in the formula"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dpreg.exceptions.SeedReuseWarning)
            dpreg.dp_ols(FORMULA + " + C(state)", data, bounds=BOUNDS, engine="ssp",
                         absorb="state", levels=LEVELS, mu=1.0, random_state=1)


def test_absorb_must_be_one_column_and_declared_ranges(seed):
    data = make_panel(seed, n=500)
    with pytest.raises(OptionError, match="absorb must name one categorical column"):
        fit(data, absorb=["state"])
    with pytest.raises(OptionError, match="ranges='private'"):
        fit(data, ranges="private")


def test_pickled_results_keep_the_degrees_of_freedom(seed):
    import pickle

    res = fit(make_panel(seed, n=1500), mu=2.0)
    back = pickle.loads(pickle.dumps(res))
    assert back.df_resid == res.df_resid == 1500 - 2 - len(STATES)
    assert list(back.params.index) == ["x1", "x2"]


def test_predictions_need_the_absorbed_effects_and_are_refused():
    # the fit reports the slopes only: a prediction from them alone would drop the
    # level effects silently
    rng = np.random.default_rng(5)
    n = 800
    data = pd.DataFrame({"x1": rng.uniform(-1, 1, n), "state": rng.choice(list("abcd"), n)})
    data["y"] = data["x1"] + (data["state"] == "b") + rng.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_ols("y ~ x1", data, engine="ssp", absorb="state",
                           levels={"state": list("abcd")}, mu=2.0,
                           bounds={"y": (-10, 10), "x1": (-1, 1)}, random_state=1)
    with pytest.raises(OptionError, match="absorbed fixed effects"):
        res.predict(data.head(3))
    with pytest.raises(OptionError, match="absorbed fixed effects"):
        res.get_prediction(data.head(3))


# ------------------------------------------------------------------ pyfixest's syntax
def test_a_bar_in_the_formula_absorbs_the_column_as_absorb_does():
    # "y ~ x1 + x2 | state" is absorb="state": the same fit, bit for bit (same seed)
    data = make_panel(5)
    opts = {"bounds": BOUNDS, "engine": "ssp", "levels": LEVELS, "random_state": 1,
            "mu": 1.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bar = dpreg.dp_ols("y ~ x1 + x2 | state", data, **opts)
        given = dpreg.dp_ols(FORMULA, data, absorb="state", **opts)
    assert bar.params.index.tolist() == ["x1", "x2"]
    np.testing.assert_array_equal(bar.params, given.params)
    np.testing.assert_array_equal(bar.conf_int(), given.conf_int())
    assert bar.settings["absorbed effects"] == "state (12 levels)"


@pytest.mark.parametrize("formula, options, match", [
    ("y ~ x1 | state | x2", {}, "one '|'"),
    ("y ~ x1 + x2 | state + x2", {}, "one categorical column"),
    ("y ~ x1 + x2 | state", {"absorb": "state"}, "use one of them"),
])
def test_bad_fixed_effects_syntax_is_refused_with_a_clear_message(formula, options, match):
    with pytest.raises((OptionError, dpreg.exceptions.FormulaError), match=match):
        dpreg.dp_ols(formula, make_panel(6, n=200), bounds=BOUNDS, engine="ssp",
                     levels=LEVELS, mu=1.0, **options)


def test_split_fixed_effects_leaves_a_bar_inside_an_expression_alone():
    from dpreg.design.formula import split_fixed_effects

    assert split_fixed_effects("y ~ I(a | b) + x") == ("y ~ I(a | b) + x", None)
    assert split_fixed_effects("y ~ I(a | b) + x | g") == ("y ~ I(a | b) + x", "g")
    with pytest.raises(dpreg.exceptions.FormulaError, match=r"\.fit\(absorb='state'\)"):
        dpreg.DPRegression.from_formula("y ~ x1 | state", make_panel(6, n=200))
