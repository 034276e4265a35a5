"""What a statsmodels user types on a results object, on dpreg results.

Reference numbers for non-private quantities come from statsmodels itself, fitted on
the same data as dpreg's non-private oracle (statsmodels' bundled spector data set).
The comparisons use rtol 1e-8: the oracle runs statsmodels' own OLS and Logit, so the
only differences are floating-point summation order.
"""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

import dpreg
from dpreg.exceptions import DataError, OptionError, PrivateStatisticError

RTOL = 1e-8
FORMULA = "GRADE ~ GPA + TUCE + PSI"
RESTRICTIONS = ["GPA = 0", "GPA = TUCE", "GPA = 0, TUCE = 0", "GPA + PSI = 1",
                np.array([[0.0, 1.0, 0.0, -1.0], [0.0, 0.0, 1.0, 0.0]]),
                (np.array([[0.0, 1.0, 0.0, 0.0]]), np.array([0.5]))]


@pytest.fixture(scope="module")
def spector():
    return sm.datasets.spector.load_pandas().data


class CheckAgainstStatsmodels:
    """Shared checks: a dpreg oracle (``self.res``) against statsmodels (``self.ref``)."""

    @pytest.mark.parametrize("spec", RESTRICTIONS, ids=range(len(RESTRICTIONS)))
    def test_t_test(self, spec):
        a, b = self.res.t_test(spec), self.ref.t_test(spec)
        np.testing.assert_allclose(a.effect, b.effect, rtol=RTOL)
        np.testing.assert_allclose(a.sd, np.ravel(b.sd), rtol=RTOL)
        np.testing.assert_allclose(a.statistic, np.ravel(b.statistic), rtol=RTOL)
        np.testing.assert_allclose(a.pvalue, np.ravel(b.pvalue), rtol=RTOL)
        np.testing.assert_allclose(a.conf_int(0.1), b.conf_int(0.1), rtol=RTOL)
        assert a.distribution == b.distribution
        frame = a.summary_frame()
        np.testing.assert_allclose(frame.to_numpy(), b.summary_frame().to_numpy(), rtol=RTOL)
        assert "Test for Constraints" in a.summary().as_text()

    @pytest.mark.parametrize("spec", RESTRICTIONS, ids=range(len(RESTRICTIONS)))
    def test_f_and_wald_tests(self, spec):
        a, b = self.res.f_test(spec), self.ref.f_test(spec)
        np.testing.assert_allclose(a.statistic, np.squeeze(b.statistic), rtol=RTOL)
        np.testing.assert_allclose(a.pvalue, b.pvalue, rtol=RTOL)
        assert (a.df_num, a.df_denom) == (b.df_num, b.df_denom)
        a, b = self.res.wald_test(spec), self.ref.wald_test(spec, scalar=True)
        np.testing.assert_allclose(a.statistic, b.statistic, rtol=RTOL)
        np.testing.assert_allclose(a.pvalue, b.pvalue, rtol=RTOL)
        assert a.distribution == b.distribution
        assert "test" in str(a)

    def test_get_prediction(self, spector):
        new = spector.iloc[[0, 5, 17]]
        a = self.res.get_prediction(new).summary_frame(alpha=0.1)
        b = self.ref.get_prediction(new).summary_frame(alpha=0.1)
        # the new rows' labels, as statsmodels >= 0.15 (0.14 numbers them 0, 1, 2)
        assert list(a.index) == list(new.index)
        np.testing.assert_allclose(a.to_numpy(), b[a.columns].to_numpy(), rtol=RTOL)

    @pytest.mark.parametrize("which", ["mean", "linear"])
    def test_predict(self, spector, which):
        new = spector.iloc[:4]
        # statsmodels' OLS predict has no `which` (its mean is the linear index)
        kw = {"which": which} if isinstance(self.ref.model, sm.Logit) else {}
        np.testing.assert_allclose(self.res.predict(new, which=which),
                                   self.ref.predict(new, **kw), rtol=RTOL)


class TestOLS(CheckAgainstStatsmodels):
    @pytest.fixture(autouse=True)
    def fits(self, spector):
        self.res = dpreg.oracle(FORMULA, spector)
        self.ref = smf.ols(FORMULA, spector).fit()

    def test_column_names_are_statsmodels(self, spector):
        cols = list(self.res.get_prediction(spector.iloc[:2]).summary_frame().columns)
        assert cols == ["mean", "mean_se", "mean_ci_lower", "mean_ci_upper"]


class TestLogit(CheckAgainstStatsmodels):
    @pytest.fixture(autouse=True)
    def fits(self, spector):
        self.res = dpreg.oracle(FORMULA, spector, family="logistic")
        self.ref = smf.logit(FORMULA, spector).fit(disp=0)

    def test_predict_default_is_probability(self, spector):
        p = self.res.predict(spector.iloc[:4])
        assert np.all((p > 0) & (p < 1))
        np.testing.assert_allclose(p, self.ref.predict(spector.iloc[:4]), rtol=RTOL)

    def test_margeff_at_zero(self):
        a = self.res.get_margeff(at="zero").summary_frame(alpha=0.1)
        b = self.ref.get_margeff(at="zero").summary_frame(alpha=0.1)
        assert list(a.index) == list(b.index) and list(a.columns) == list(b.columns)
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=RTOL)

    def test_margeff_at_public_rows(self, spector):
        rows = spector.iloc[[1, 8, 20]]
        X = np.asarray(self.ref.model.exog)[[1, 8, 20]]
        a = self.res.get_margeff(at=rows)
        b = self.ref.get_margeff(at="overall", atexog=X)
        np.testing.assert_allclose(a.margeff, b.margeff, rtol=RTOL)
        np.testing.assert_allclose(a.margeff_se, b.margeff_se, rtol=RTOL)
        np.testing.assert_allclose(a.conf_int(), b.conf_int(), rtol=RTOL)
        # a design matrix works the same way
        np.testing.assert_allclose(self.res.get_margeff(at=X).margeff, b.margeff, rtol=RTOL)
        assert "Marginal effects" in a.summary().as_text()

    def test_margeff_atexog_sets_values_after_zero(self, spector):
        a = self.res.get_margeff(at="zero", atexog={"GPA": 3.0, 3: 1.0})
        x = np.array([[1.0, 3.0, 0.0, 1.0]])
        b = self.ref.get_margeff(at="overall", atexog=x)
        np.testing.assert_allclose(a.margeff, b.margeff, rtol=RTOL)


class TestOLSMarginalEffects:
    def test_linear_margeff_is_the_coefficients(self, spector):
        res = dpreg.oracle(FORMULA, spector)
        m = res.get_margeff(at="zero")
        np.testing.assert_allclose(m.margeff, res.params.iloc[1:], rtol=1e-12)
        np.testing.assert_allclose(m.margeff_se, res.bse.iloc[1:], rtol=1e-12)


# -- private fits ------------------------------------------------------------------------
LEVELS = {"g": ["a", "b", "c"]}


@pytest.fixture(scope="module")
def private_ols():
    from tests.conftest import SMALL_BOUNDS, make_small_frame

    frame = make_small_frame(20251122)
    res = dpreg.dp_ols("y ~ x + C(g) + d", frame, mu=2.0, bounds=SMALL_BOUNDS, levels=LEVELS,
                       random_state=5, steps=30000)
    return res, frame


def test_private_t_test_agrees_with_coefficient_inference(private_ols):
    res, _ = private_ols
    for method in ("plugin", "rs"):
        t = res.t_test("x = 0, d = 0", method=method)
        np.testing.assert_allclose(t.pvalue, res.pvalues_by(method)[["x", "d"]], rtol=1e-10)
        np.testing.assert_allclose(t.conf_int(), res.conf_int(method=method).loc[["x", "d"]],
                                   rtol=1e-10)
    assert res.t_test("x = 0").distribution == "norm"
    assert res.t_test("x = 0", method="rs").distribution == "rs"
    assert not res.t_test("x = 0", method="rs").is_standard_error


def test_private_joint_tests(private_ols):
    res, _ = private_ols
    cov = res.cov_params().to_numpy()
    R = np.zeros((2, 5))
    R[0, res.params.index.get_loc("x")] = 1
    R[1, res.params.index.get_loc("d")] = 1
    d = R @ res.params.to_numpy()
    wald = d @ np.linalg.solve(R @ cov @ R.T, d)
    # the statistic is the usual one; its reference law comes from re-releases of the
    # private covariance (tests/test_joint_tests.py), not the chi-square
    w = res.wald_test("x = 0, d = 0")
    assert w.distribution == "boot" and w.statistic == pytest.approx(wald, rel=1e-10)
    f = res.f_test("x = 0, d = 0")
    assert f.statistic == pytest.approx(wald / 2, rel=1e-10) and f.df_num == 2
    B = res.inferences["plugin"].cov_replicates.shape[0]
    assert float(f.pvalue) == float(w.pvalue) and 1 / (B + 1) <= float(w.pvalue) <= 1
    # random scaling: one restriction gives the coefficient's exact RS p-value by the F*
    # law, not chi2 / q; a joint test is the Bonferroni combination of the scalar tests
    one = res.f_test("x = 0", method="rs")
    assert one.pvalue == pytest.approx(res.pvalues_by("rs")["x"], rel=1e-9)
    from dpreg.inference.rs_joint import rs_joint_law

    assert one.distribution == "rs_F" and one.df_num == 1
    assert one.pvalue == pytest.approx(float(rs_joint_law.sf(one.statistic, 1)))
    assert one.pvalue_is_bound == (one.pvalue <= 1e-4)
    joint = res.wald_test("x = 0, d = 0", method="rs")
    assert joint.distribution == "bonferroni" and joint.df_num == 2 and 0 < joint.pvalue <= 1
    far = res.f_test("x = 100", method="rs")
    assert far.pvalue_is_bound and "p<=0.0001" in str(far)
    with pytest.raises(OptionError, match="t tests"):
        joint.conf_int()


def test_private_get_prediction(private_ols):
    res, frame = private_ols
    new = frame.iloc[:3]
    X = dpreg.DPRegression.from_formula("y ~ x + C(g) + d", frame,
                                        levels=LEVELS).design.exog[:3]
    sf = res.get_prediction(new).summary_frame()
    np.testing.assert_allclose(sf["mean"], X @ res.params.to_numpy(), rtol=1e-12)
    se = np.sqrt(np.einsum("ij,jk,ik->i", X, res.cov_params().to_numpy(), X))
    np.testing.assert_allclose(sf["mean_se"], se, rtol=1e-10)
    # random scaling: no standard error; at a unit row the interval is the coefficient's
    rs = res.get_prediction(np.eye(5)[[1]], method="rs").summary_frame()
    assert rs["mean_se"].isna().all()
    np.testing.assert_allclose(rs[["mean_ci_lower", "mean_ci_upper"]].to_numpy()[0],
                               res.conf_int(method="rs").iloc[1].to_numpy(), rtol=1e-10)


def test_predictions_and_margins_follow_the_default_inference(private_ols):
    # one default everywhere: with random scaling as the fit's default, get_prediction
    # and get_margeff give its intervals (no standard error), else the plug-in's
    res, frame = private_ols
    rs_default = dataclasses.replace(res.record, cov_type="rs")
    switched = type(res)(rs_default)
    new = frame.iloc[:4]
    for fit, method in ((res, "plugin"), (switched, "rs")):
        default = fit.get_prediction(new).summary_frame()
        chosen = fit.get_prediction(new, method=method).summary_frame()
        pd.testing.assert_frame_equal(default, chosen)
        other = fit.get_prediction(new, method={"rs": "plugin", "plugin": "rs"}[method])
        assert not np.allclose(other.summary_frame()["mean_ci_upper"],
                               default["mean_ci_upper"])
        margins = fit.get_margeff(at=new).summary_frame()
        pd.testing.assert_frame_equal(margins,
                                      fit.get_margeff(at=new, inference=method).summary_frame())
    assert switched.get_prediction(new).summary_frame()["mean_se"].isna().all()


@pytest.mark.parametrize("at", ["overall", "mean", "median", "all"])
def test_margeff_over_private_rows_is_refused(at, spector):
    res = dpreg.oracle(FORMULA, spector, family="logistic")
    with pytest.raises(PrivateStatisticError, match="public covariate values"):
        res.get_margeff(at=at)


def test_margeff_default_is_statsmodels_overall_and_refused(private_ols):
    res, _ = private_ols
    with pytest.raises(PrivateStatisticError, match="at="):
        res.get_margeff()


@pytest.mark.parametrize("name", ["fittedvalues", "resid", "rsquared", "rsquared_adj", "llf",
                                  "aic", "bic", "ssr", "mse_resid", "scale", "fvalue"])
def test_private_statistics_raise(private_ols, name):
    res, _ = private_ols
    with pytest.raises(PrivateStatisticError, match="private data"):
        getattr(res, name)
    assert getattr(res, name, "absent") == "absent"  # an AttributeError, as tools expect


def test_private_statistic_messages_name_alternatives(private_ols):
    res, _ = private_ols
    with pytest.raises(PrivateStatisticError, match="predict"):
        getattr(res, "fittedvalues")  # noqa: B009 - the attribute access is the test
    with pytest.raises(PrivateStatisticError, match="f_test"):
        getattr(res, "fvalue")  # noqa: B009
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        getattr(res, "nonsense")  # noqa: B009


def test_statsmodels_summary_col_reads_dpreg_results(private_ols, spector):
    from statsmodels.iolib.summary2 import summary_col

    res, _ = private_ols
    orc = dpreg.oracle(FORMULA, spector)
    assert res.model.exog_names == tuple(res.params.index)
    assert res.model.endog_names == "y" and res.model.formula == "y ~ x + C(g) + d"
    text = summary_col([res, orc], stars=True).as_text()
    assert "C(g)[T.b]" in text and "TUCE" in text and "GRADE" in text
    assert f"{res.params['x']:.4f}" in text and f"({orc.bse['GPA']:.4f})" in text
    assert "R-squared" not in text  # dpreg has none: getattr's default is used


def test_bad_restrictions_and_options(private_ols):
    res, _ = private_ols
    with pytest.raises(OptionError, match="r_matrix"):
        res.t_test("nonexistent = 0")
    with pytest.raises(OptionError, match="r_matrix"):
        res.f_test(np.ones((1, 3)))
    with pytest.raises(OptionError, match="cov_p"):
        res.t_test("x = 0", cov_p=np.eye(5))
    with pytest.raises(OptionError, match="alpha"):
        res.t_test("x = 0").conf_int(alpha=2)
    with pytest.raises(OptionError, match="which"):
        res.predict(np.ones((1, 5)), which="probability")
    with pytest.raises(OptionError, match="linearly independent"):
        res.f_test("x = 0, 2 * x = 0")
    with pytest.raises(OptionError, match="method"):
        res.t_test("x = 0", method="batch_means")
    with pytest.raises(DataError, match="at has 0 columns"):
        res.get_margeff(at=123)
    with pytest.raises(OptionError, match="at must be"):
        res.get_margeff(at="middle")
    with pytest.raises(OptionError, match="atexog"):
        res.get_margeff(at="zero", atexog={"nope": 1.0})
    with pytest.raises(OptionError, match="dydx"):
        res.get_margeff(at="zero", method="eyex")
    with pytest.raises(DataError, match="exog has 2 columns"):
        res.get_prediction(np.ones((1, 2)))


def test_rs_only_fit_has_joint_tests_without_covariance(spector):
    res = dpreg.dp_ols("GRADE ~ GPA + PSI", spector, mu=2.0, random_state=1, steps=5000,
                       budget_split={"path": 1.0}, cov_type="rs",
                       bounds={"GRADE": (0, 1), "GPA": (2, 4), "PSI": (0, 1)})
    assert res.f_test("GPA = 0, PSI = 0").distribution == "bonferroni"
    assert res.f_test("GPA = 0").distribution == "rs_F"
    assert res.t_test("GPA = 0").pvalue[0] == pytest.approx(res.pvalues["GPA"], rel=1e-10)
    with pytest.raises(OptionError, match="method"):
        res.t_test("GPA = 0", method="plugin")


def test_dpgd_tests_use_the_m_estimates(private_ols):
    from scipy import stats

    from tests.conftest import SMALL_BOUNDS

    _, frame = private_ols
    res = dpreg.dp_ols("y ~ x + d", frame, mu=2.0, bounds=SMALL_BOUNDS, engine="dpgd",
                       steps=220, random_state=3)
    inf = res.inferences[res.cov_type]
    est = np.asarray(inf.estimates)
    m = est.shape[0]
    t = res.t_test("x = 0")
    assert t.distribution == "t" and t.df_denom == m - 1
    assert t.pvalue[0] == pytest.approx(res.pvalues["x"], rel=1e-10)
    np.testing.assert_allclose(t.conf_int(), res.conf_int().loc[["x"]], rtol=1e-10)
    # Hotelling's T^2 of the m estimates, written out
    R = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    dev = R @ est.mean(axis=0)
    S = np.cov(est @ R.T, rowvar=False) / m
    T2 = dev @ np.linalg.solve(S, dev)
    F = (m - 2) / (2 * (m - 1)) * T2
    f = res.f_test("x = 0, d = 0")
    assert (f.df_num, f.df_denom) == (2, m - 2)
    assert f.statistic == pytest.approx(F, rel=1e-10)
    assert f.pvalue == pytest.approx(stats.f.sf(F, 2, m - 2), rel=1e-10)


def test_ldp_stream_results_support_tests(private_ols):
    _, frame = private_ols
    stream = dpreg.LDPStream("y ~ x + d", mu=2.0, bounds={"y": (-3, 5), "x": (-1, 1),
                                                         "d": (0, 1)}, random_state=1)
    stream.partial_fit(frame)
    res = stream.results()
    assert res.t_test("x = 0", method="rs").pvalue[0] == pytest.approx(
        res.pvalues_by("rs")["x"], rel=1e-10)
    assert res.f_test("x = 0, d = 0", method="rs").distribution == "bonferroni"
    with pytest.raises(OptionError, match="covariance matrix"):
        res.f_test("x = 0, d = 0", method="batch_means")
