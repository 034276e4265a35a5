"""The Results object on its own (dpreg.results.results): built by hand from inference
records and checked against scipy, and built by an oracle fit and checked against
statsmodels (OLS and Logit) attribute by attribute."""

import dataclasses
import math
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

import dpreg
from dpreg.exceptions import OptionError, PrivateStatisticError
from dpreg.families import FAMILIES, get_family
from dpreg.inference.base import Inference, NormalLaw, StudentLaw
from dpreg.inference.pivot import rs_pivot
from dpreg.results import ABSENT, DPRegressionResults, ResultsModel, ResultsRecord

PARAMS = np.array([1.0, -2.0, 0.25])
NAMES = ("Intercept", "x1", "x2")
SE = np.array([0.5, 1.0, 0.2])
RS_SCALE = np.array([0.7, 1.3, 0.4])


def make(inferences, cov_type, *, cov=None, private=True, **kw):
    return DPRegressionResults(ResultsRecord(
        params=PARAMS, names=NAMES, endog_name="y", inferences=inferences,
        cov_type=cov_type, nobs=50, df_model=2, private=private,
        family_label="Linear (squared loss)", engine="dpsgd", settings={"steps": 100},
        cov_matrix=cov, **kw))


@pytest.fixture
def by_hand():
    """Plug-in (normal law) and random scaling (the pivot, no standard error)."""
    return make({"plugin": Inference("plugin", SE, NormalLaw(), True, "plug-in note"),
                 "rs": Inference("rs", RS_SCALE, rs_pivot, False, "rs note")}, "plugin",
                cov=np.diag(SE ** 2))


# -- by hand, against scipy ------------------------------------------------------------
def test_estimates_are_labelled_series(by_hand):
    pd.testing.assert_series_equal(by_hand.params, pd.Series(PARAMS, index=list(NAMES),
                                                              name="params"))
    pd.testing.assert_series_equal(by_hand.bse, pd.Series(SE, index=list(NAMES), name="bse"))
    np.testing.assert_array_equal(by_hand.tvalues, PARAMS / SE)
    assert by_hand.zvalues is by_hand.tvalues
    assert by_hand.nobs == 50 and by_hand.df_model == 2 and by_hand.df_resid == 47


def test_pvalues_and_intervals_follow_the_law(by_hand):
    np.testing.assert_allclose(by_hand.pvalues, 2 * stats.norm.sf(np.abs(PARAMS / SE)),
                               rtol=1e-14)
    for alpha in (0.05, 0.1, 0.01):
        z = stats.norm.isf(alpha / 2)
        ci = by_hand.conf_int(alpha)
        assert list(ci.columns) == [0, 1] and list(ci.index) == list(NAMES)
        np.testing.assert_allclose(ci[0], PARAMS - z * SE, rtol=1e-14)
        np.testing.assert_allclose(ci[1], PARAMS + z * SE, rtol=1e-14)
    # random scaling: the pivot's critical value times its scale, its own p-values
    c = rs_pivot.critical_value(0.05)
    np.testing.assert_allclose(by_hand.conf_int(method="rs")[1], PARAMS + c * RS_SCALE)
    np.testing.assert_allclose(by_hand.pvalues_by("rs"),
                               rs_pivot.two_sided_pvalue(PARAMS / RS_SCALE))


def test_cov_type_decides_the_default_method_and_bse_needs_a_standard_error():
    rs = Inference("rs", RS_SCALE, rs_pivot, False)
    res = make({"plugin": Inference("plugin", SE, NormalLaw(), True), "rs": rs}, "rs")
    np.testing.assert_allclose(res.conf_int(), res.conf_int(method="rs"))
    # bse follows the default, never another method's in its place; bse_by names one
    with pytest.raises(OptionError, match=r"default inference is random scaling.*"
                                          r"bse_by\('plugin'\)"):
        _ = res.bse
    with pytest.raises(OptionError, match="random scaling"):
        _ = res.tvalues
    np.testing.assert_array_equal(res.bse_by("plugin"), SE)
    only_rs = make({"rs": rs}, "rs")
    with pytest.raises(OptionError, match="no budget was spent on the plug-in"):
        _ = only_rs.bse
    with pytest.raises(OptionError, match="no covariance matrix"):
        only_rs.cov_params()
    with pytest.raises(OptionError, match="'plugin' is not available.*\\['rs'\\]"):
        only_rs.conf_int(method="plugin")


def test_every_output_follows_the_default_when_it_is_random_scaling():
    # issue: the header said RS while std err, z and P>|z| were the plug-in's
    rs = Inference("rs", RS_SCALE, rs_pivot, False)
    both = {"plugin": Inference("plugin", SE, NormalLaw(), True), "rs": rs}
    res, plug = make(both, "rs"), make(both, "plugin")
    frame = res.summary_frame()
    # the default's columns come first, another method's carry its name
    assert list(frame.columns)[:4] == ["coef", "RS [0.025", "RS 0.975]", "RS P>|R|"]
    assert "std err" not in frame.columns and "Plug-in s.e." in frame.columns
    np.testing.assert_allclose(frame["RS P>|R|"], res.pvalues)
    np.testing.assert_allclose(frame[["RS [0.025", "RS 0.975]"]], res.conf_int())
    np.testing.assert_allclose(frame["Plug-in s.e."], res.bse_by("plugin"))
    header = res.summary().as_text().split("Inference:")[1].split()[0]
    assert header == "RS"
    # and with the plug-in as the default, the unlabelled columns are the plug-in's
    frame = plug.summary_frame()
    assert list(frame.columns)[:4] == ["coef", "std err", "z", "P>|z|"]
    np.testing.assert_allclose(frame["std err"], plug.bse)
    np.testing.assert_allclose(frame["P>|z|"], plug.pvalues)


def test_student_law_gives_t_columns():
    res = make({"runs": Inference("runs", SE, StudentLaw(9), True)}, "runs")
    frame = res.summary_frame()
    assert list(frame.columns) == ["coef", "std err", "t", "P>|t|", "[0.025", "0.975]"]
    np.testing.assert_allclose(frame["P>|t|"], 2 * stats.t.sf(np.abs(PARAMS / SE), 9))
    np.testing.assert_allclose(frame["0.975]"], PARAMS + stats.t.isf(0.025, 9) * SE)


def test_summary_frame_has_the_interval_of_every_method(by_hand):
    frame = by_hand.summary_frame(alpha=0.1)
    assert list(frame.columns) == ["coef", "std err", "z", "P>|z|", "[0.05", "0.95]",
                                   "RS [0.05", "RS 0.95]", "RS P>|R|"]
    np.testing.assert_array_equal(frame["coef"], PARAMS)
    np.testing.assert_allclose(frame[["[0.05", "0.95]"]], by_hand.conf_int(0.1))
    np.testing.assert_allclose(frame[["RS [0.05", "RS 0.95]"]],
                               by_hand.conf_int(0.1, method="rs"))
    np.testing.assert_allclose(frame["RS P>|R|"], by_hand.pvalues_by("rs"))


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1, "0.05", True])
def test_alpha_outside_the_unit_interval_is_refused(by_hand, alpha):
    with pytest.raises(OptionError, match="alpha"):
        by_hand.conf_int(alpha)
    with pytest.raises(OptionError, match="alpha"):
        by_hand.summary_frame(alpha)


def test_covariance_is_labelled(by_hand):
    cov = by_hand.cov_params()
    assert list(cov.index) == list(cov.columns) == list(NAMES)
    np.testing.assert_array_equal(cov.to_numpy(), np.diag(SE ** 2))


@pytest.mark.parametrize("name", ["resid", "rsquared", "llf", "aic", "fittedvalues", "ssr"])
def test_statistics_of_the_private_data_are_refused(by_hand, name):
    with pytest.raises(PrivateStatisticError, match=name):
        getattr(by_hand, name)
    with pytest.raises(AttributeError, match="no attribute 'not_a_statistic'"):
        _ = by_hand.not_a_statistic


def test_public_model_description(by_hand):
    model = by_hand.model
    assert model == ResultsModel(formula=None, exog_names=NAMES, endog_names="y",
                                 family="linear", nobs=50)
    assert model.param_names == list(NAMES)
    assert by_hand.family_name == "linear"


@pytest.mark.parametrize("name, c, tau, weights", [
    ("linear", math.inf, 0.5, None), ("linear", math.inf, 0.5, "mallows"),
    ("huber", 1.345, 0.5, "mallows"), ("logistic", math.inf, 0.5, None),
    ("expectile", 1.345, 0.3, None), ("expectile", math.inf, 0.8, "mallows")])
def test_family_name_is_read_off_every_label_a_family_describes(by_hand, name, c, tau,
                                                                 weights, monkeypatch):
    monkeypatch.setattr(by_hand, "family_label", get_family(name).describe(c, tau, weights))
    assert by_hand.family_name == name


def test_family_name_is_not_a_prefix_match(by_hand, monkeypatch):
    # a family whose label begins with another's is told apart from it
    longer = dataclasses.replace(get_family("huber"), name="huber_skew",
                                 label="Huber skewed")
    monkeypatch.setitem(FAMILIES, "huber_skew", longer)
    monkeypatch.setattr(by_hand, "family_label", longer.describe(1.0, 0.5, None))
    assert by_hand.family_name == "huber_skew"
    monkeypatch.setattr(by_hand, "family_label", "Huber (c = 1)")
    assert by_hand.family_name == "huber"
    monkeypatch.setattr(by_hand, "family_label", "Hubert")
    with pytest.raises(OptionError, match="unknown family label"):
        _ = by_hand.family_name


def test_pickle_keeps_the_numbers_and_drops_cached_values(by_hand):
    _ = by_hand.bse, by_hand.pvalues  # fill the caches
    state = by_hand.__getstate__()
    assert "bse" not in state and "pvalues" not in state and "_design_info" not in state
    assert state["_record"] is by_hand.record
    back = pickle.loads(pickle.dumps(by_hand))
    pd.testing.assert_series_equal(back.bse, by_hand.bse)
    pd.testing.assert_frame_equal(back.conf_int(method="rs"), by_hand.conf_int(method="rs"))
    assert back.notes == by_hand.notes and back.settings == {"steps": 100}


# -- one record -------------------------------------------------------------------------
def test_built_from_one_record_only(by_hand):
    with pytest.raises(TypeError, match="built from a ResultsRecord"):
        DPRegressionResults(dict(params=PARAMS, names=NAMES))
    record = by_hand.record
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.notes = ("changed",)
    # every public attribute that is a field is the record's
    for name in ("endog_name", "inferences", "cov_type", "nobs", "df_model", "private",
                 "family_label", "engine", "settings", "n_dropped", "formula", "ledger",
                 "trajectory", "notes"):
        assert getattr(by_hand, name) is getattr(record, name), name
    np.testing.assert_array_equal(by_hand.params.to_numpy(), record.params)
    assert by_hand.cov_matrix is record.cov_matrix


def test_assigning_an_attribute_replaces_the_record(by_hand):
    before = by_hand.record
    _ = by_hand.tvalues
    by_hand.notes = by_hand.notes + ("a note",)
    by_hand.params = 2 * PARAMS
    assert by_hand.record is not before and before.params is not by_hand.record.params
    assert by_hand.record.notes == ("a note",) and before.notes == ()
    np.testing.assert_array_equal(by_hand.tvalues, 2 * PARAMS / SE)  # not the cached one
    back = pickle.loads(pickle.dumps(by_hand))
    assert back.notes == ("a note",)
    np.testing.assert_array_equal(back.params, 2 * PARAMS)


def test_optional_parts_are_absent_unless_the_record_has_them(by_hand):
    """A part the record leaves ABSENT is no attribute; None is a value; diagnostics
    are never pickled, the other parts are."""
    for name in ("convergence", "checkpoint_sd", "diagnostics", "floor_sensitivity",
                 "first_stage"):
        assert getattr(by_hand.record, name) is ABSENT
        assert not hasattr(by_hand, name), name
    with pytest.raises(AttributeError, match="optional part"):
        _ = by_hand.convergence
    assert by_hand.record.parts() == {}
    first = pd.Series([12.5], index=["x1"])
    res = make({"plugin": Inference("plugin", SE, NormalLaw(), True)}, "plugin",
               convergence=None, first_stage=first, diagnostics={"clip_count": 3})
    assert res.convergence is None and res.first_stage is first
    assert res.diagnostics == {"clip_count": 3}
    assert sorted(res.record.parts()) == ["convergence", "diagnostics", "first_stage"]
    back, record = pickle.loads(pickle.dumps(res)), pickle.loads(pickle.dumps(res.record))
    assert not hasattr(back, "diagnostics") and record.diagnostics is ABSENT
    for kept in (back, record):
        assert kept.convergence is None
        pd.testing.assert_series_equal(kept.first_stage, first)
    assert pickle.loads(pickle.dumps(ABSENT)) is ABSENT
    del res.first_stage
    assert not hasattr(res, "first_stage") and res.record.first_stage is ABSENT


def test_results_saved_before_the_record_load():
    """tests/results/results_before_record.pickle was written by the code before results
    were built from a record (their attributes pickled one by one, convergence and
    first_stage set by hand): it loads into a record with the same numbers, parts and
    design (predictions through the stored prototype)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.uniform(-1, 1, 40), "g": np.tile(["a", "b"], 20)})
    frame["y"] = 1 + frame["x"] + (frame["g"] == "b") + rng.normal(0, 0.5, 40)
    fresh = dpreg.oracle("y ~ x + C(g)", frame)
    path = Path(__file__).parent / "results" / "results_before_record.pickle"
    for old in (dpreg.load(path), DPRegressionResults.load(path)):
        assert isinstance(old.record, ResultsRecord)
        pd.testing.assert_series_equal(old.params, fresh.params)
        pd.testing.assert_series_equal(old.bse, fresh.bse)
        pd.testing.assert_frame_equal(old.cov_params(), fresh.cov_params())
        assert old.summary().as_text() == fresh.summary().as_text()
        new = pd.DataFrame({"x": [0.5, -0.2], "g": ["b", "a"]})
        # the stored prototype builds the same design as a fresh formula: bit for bit the
        # same predictions from the stored estimates (which a fresh fit reproduces only
        # to round-off: numpy 2.4's least squares differs from the pickling version's in
        # the last bit, which assert_series_equal's default tolerance allows)
        X_fresh, _ = fresh.exog_matrix(new)
        np.testing.assert_array_equal(old.exog_matrix(new)[0], X_fresh)
        np.testing.assert_array_equal(old.predict(new), X_fresh @ old.params.to_numpy())
        np.testing.assert_allclose(old.predict(new), fresh.predict(new), rtol=1e-14, atol=0)
        assert old.convergence is None and list(old.first_stage) == [12.5]
        assert not hasattr(fresh, "first_stage") and "first_stage" not in vars(old)
        assert sorted(old.record.parts()) == ["convergence", "first_stage"]


def test_repr_names_kind_engine_and_privacy():
    orc = make({"oracle": Inference("oracle", SE, StudentLaw(47), True)}, "oracle",
               private=False)
    assert repr(orc) == ("<DPRegressionResults oracle Linear (squared loss) n=50 "
                         "engine=dpsgd privacy='non-private'>")


# -- built by a fit, against statsmodels -----------------------------------------------
@pytest.fixture(scope="module")
def linear_pair():
    sim = dpreg.datasets.simulate_linear(300, 3, intercept=True, random_state=4)
    return dpreg.oracle(sim.formula, sim.data), smf.ols(sim.formula, sim.data).fit()


@pytest.fixture(scope="module")
def logit_pair():
    sim = dpreg.datasets.simulate_logistic(600, 2, intercept=True, random_state=5)
    return (dpreg.oracle(sim.formula, sim.data, family="logistic"),
            smf.logit(sim.formula, sim.data).fit(disp=0))


# rtol 1e-10: both solve the same least-squares problem (QR and pinv differ in the last
# digits); Logit: both run Newton to convergence from different starts, rtol 1e-6.
@pytest.mark.parametrize("pair, rtol", [("linear_pair", 1e-10), ("logit_pair", 1e-6)])
def test_oracle_results_equal_statsmodels(request, pair, rtol):
    res, ref = request.getfixturevalue(pair)
    assert list(res.params.index) == list(ref.params.index)
    np.testing.assert_allclose(res.params, ref.params, rtol=rtol)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=rtol)
    np.testing.assert_allclose(res.tvalues, ref.tvalues, rtol=rtol)
    np.testing.assert_allclose(res.pvalues, ref.pvalues, rtol=100 * rtol, atol=1e-300)
    np.testing.assert_allclose(res.cov_params(), ref.cov_params(), rtol=rtol)
    for alpha in (0.05, 0.2):
        np.testing.assert_allclose(res.conf_int(alpha), ref.conf_int(alpha), rtol=rtol)
    assert (res.nobs, res.df_model, res.df_resid) == (ref.nobs, ref.df_model, ref.df_resid)
    assert not res.private and res.ledger is None


def test_oracle_summary_frame_equals_statsmodels_table(linear_pair):
    res, ref = linear_pair
    frame = res.summary_frame()
    want = ref.summary2().tables[1]
    assert list(frame.columns) == ["coef", "std err", "t", "P>|t|", "[0.025", "0.975]"]
    np.testing.assert_allclose(frame.to_numpy(), want.to_numpy(), rtol=1e-10, atol=1e-300)
    assert list(frame.index) == list(want.index)
