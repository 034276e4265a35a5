"""Numerical robustness (issue 8): heavy-tailed covariates, gross outliers, huge margins."""

import warnings

import numpy as np
import pandas as pd
import pytest

import dpreg


@pytest.fixture
def cauchy_frame(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    x = rng.standard_cauchy((n, 2))  # no mean, no variance; |x| up to ~1e3
    y = 1 + x @ np.array([0.5, -0.5]) + 0.5 * rng.standard_normal(n)
    y[:30] = 1e6  # 1% gross outliers in the outcome
    return pd.DataFrame({"y": y, "x1": x[:, 0], "x2": x[:, 1]})


@pytest.mark.parametrize("engine", ["dpsgd", "ldp_sgd"])
def test_huber_with_mallows_weights_survives_cauchy_covariates(cauchy_frame, engine):
    """Mallows weights bound every gradient by sqrt(2) c whatever the covariates, so no
    gradient is clipped and the fit is finite; the slopes are recovered despite 1% of
    outcomes at 1e6 (Huber), within 5 private standard errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpreg.PrivacyLeakWarning)
        res = dpreg.dp_huber("y ~ x1 + x2", cauchy_frame, mu=5.0, engine=engine,
                             random_state=3, **({"cov_type": "plugin",
                                                 "budget_split": {"path": 0.6,
                                                                  "hessian": 0.3,
                                                                  "score": 0.1}}
                                                if engine == "ldp_sgd" else {}))
    assert np.all(np.isfinite(res.params)) and np.all(np.isfinite(res.bse_by("plugin")))
    ci = res.conf_int(alpha=1e-6).to_numpy()
    assert np.all(np.isfinite(ci))
    slopes = res.params[["x1", "x2"]].to_numpy()
    assert np.all(np.abs(slopes - [0.5, -0.5]) < 5 * res.bse[["x1", "x2"]].to_numpy())


def test_declared_bounds_clip_gross_outliers(cauchy_frame):
    """Outcomes at 1e6 and covariates at 1e3 are clipped to the declared bounds: the
    linear fit is finite and its clip comes from the bounds, not from the data."""
    bounds = {"y": (-20.0, 20.0), "x1": (-10.0, 10.0), "x2": (-10.0, 10.0)}
    res = dpreg.dp_ols("y ~ x1 + x2", cauchy_frame, mu=2.0, bounds=bounds, random_state=4,
                       engine="dpsgd")
    assert np.all(np.isfinite(res.params)) and np.all(np.isfinite(res.bse_by("plugin")))
    # the engine works on the columns mapped into [-1, 1] by their bounds: the row norm
    # bound is sqrt(3) and a residual up to half the outcome's range (20) is not clipped
    assert res.settings["clip"] == pytest.approx(np.sqrt(1 + 1 + 1) * 20)
    assert cauchy_frame["y"].max() == 1e6  # the caller's data are not modified


def test_logistic_with_huge_margins_does_not_overflow(seed):
    rng = np.random.default_rng(seed)
    n = 2000
    x = rng.normal(0, 300, n)  # margins x * theta in the hundreds
    y = (x > 0).astype(float)
    y[:20] = 1 - y[:20]
    data = pd.DataFrame({"y": y, "x": x})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # an overflow in exp would raise
        warnings.simplefilter("ignore", dpreg.PrivacyLeakWarning)
        res = dpreg.dp_logit("y ~ x", data, mu=2.0, bounds={"x": (-1000.0, 1000.0)},
                             random_state=5)
        ldp = dpreg.dp_logit("y ~ x", data, mu=2.0, engine="ldp_sgd", weights="mallows",
                             random_state=5)
    assert np.all(np.isfinite(res.params)) and np.all(np.isfinite(res.bse_by("plugin")))
    assert np.all(np.isfinite(ldp.params))
