"""Oracle: statsmodels OLS to 1e-10, the paper's Oracle row on STAR."""

import numpy as np
import pytest
import statsmodels.formula.api as smf

import dpreg

STAR_FORMULA = "GPA_year1 ~ ssp + sfp + sfsp + sex + C(hsgroup)"


def test_oracle_equals_statsmodels(small_frame):
    res = dpreg.oracle("y ~ x + C(g) + d", small_frame)
    ref = smf.ols("y ~ x + C(g) + d", small_frame).fit()
    assert not res.private and "NON-PRIVATE" in res.summary().as_text()
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-10)
    np.testing.assert_allclose(res.pvalues, ref.pvalues, rtol=1e-8, atol=1e-14)
    np.testing.assert_allclose(res.conf_int(0.1), ref.conf_int(0.1), rtol=1e-10)
    np.testing.assert_allclose(res.cov_params(), ref.cov_params(), rtol=1e-10)
    assert res.df_model == ref.df_model and res.nobs == ref.nobs
    assert list(res.params.index) == list(ref.params.index)


@pytest.mark.data
def test_star_oracle_row(star_dir):
    data = dpreg.datasets.load_star(star_dir)
    res = dpreg.oracle(STAR_FORMULA, data)
    ref = smf.ols(STAR_FORMULA, data).fit()
    np.testing.assert_allclose(res.params, ref.params, rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=0, atol=1e-10)
    assert res.nobs == 1399
    got = {v: (round(res.params[v], 3), round(res.bse[v], 3)) for v in ("ssp", "sfp", "sfsp")}
    assert got == {"ssp": (0.008, 0.063), "sfp": (-0.041, 0.063), "sfsp": (0.143, 0.081)}
    assert round(res.pvalues["sfsp"], 3) == 0.076
