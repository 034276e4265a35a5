"""Joint tests of the plug-in carry the noise of the private covariance (issue 26,
item 4): their reference law comes from re-released covariances, not the chi-square."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpreg

P = 12
NAMES = [f"x{j}" for j in range(P)]
BOUNDS = {c: (-1, 1) for c in NAMES} | {"y": (-4, 6)}
ALL = ", ".join(f"{c} = 0" for c in NAMES)


def _fit(seed, n=1000, mu=5.0):
    rng = np.random.default_rng(seed)
    data = pd.DataFrame(rng.uniform(-1, 1, (n, P)), columns=NAMES)
    data["y"] = np.clip(1 + rng.normal(0, 1, n), -4, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the outcome's declared box (-4, 6): with a tighter one (declared, or learned
        # by the default ranges="auto") the 12-slope test over-rejects here (10-12 of 40
        # fits; an open problem, recorded in the inference docs)
        return dpreg.dp_ols("y ~ " + " + ".join(NAMES), data, mu=mu, bounds=BOUNDS,
                            random_state=seed, cov_type="plugin", ranges="declared")


def test_the_plugin_keeps_replicates_of_its_covariance():
    res = _fit(0)
    inf = res.inferences["plugin"]
    B = inf.cov_replicates.shape[0]
    assert inf.cov_replicates.shape == (B, P + 1, P + 1) and B >= 100
    # re-released covariances scatter around the released one, on both sides
    diag = np.diagonal(inf.cov_replicates, axis1=1, axis2=2)
    released = np.diag(res.cov_params().to_numpy())
    assert np.all(np.median(diag, axis=0) < 3 * released)
    assert np.all(np.median(diag, axis=0) > released / 3)
    # the fit's numbers are those without the replicates (drawn from a child generator)
    test = res.wald_test(ALL, scalar=True)
    assert test.distribution == "boot" and "re-releases" in test.note
    again = res.wald_test(ALL, scalar=True)
    assert float(np.squeeze(test.pvalue)) == float(np.squeeze(again.pvalue))


def test_joint_test_of_twelve_true_restrictions_holds_its_size():
    # chi-square reference: 0.19 of 200 fits rejected at 0.05 here (0.615 at mu = 0.5);
    # the replicate law: 0.03 (validation/joint_test_size.py). 60 fits: a size of 0.05
    # gives at most 8 rejections with probability 0.99; the chi-square gave ~11
    rejected = chi2 = 0
    for seed in range(60):
        res = _fit(seed)
        test = res.wald_test(ALL, scalar=True)
        rejected += float(np.squeeze(test.pvalue)) < 0.05
        chi2 += stats.chi2.sf(float(np.squeeze(test.statistic)), P) < 0.05
    assert rejected <= 8, rejected
    assert chi2 > rejected  # the old reference over-rejects on the same fits


def test_a_statistic_beyond_every_replicate_reports_a_bound():
    res = _fit(1)
    far = res.f_test("x0 = 5, x1 = -5")
    B = res.inferences["plugin"].cov_replicates.shape[0]
    assert far.pvalue_is_bound and float(far.pvalue) == pytest.approx(1 / (B + 1))
    assert far.fvalue == far.statistic
    assert str(far).startswith("<F test (re-released covariance, plugin)")
    assert f"p<={1 / (B + 1):.4g}" in str(far)
    near = res.wald_test("x0 = 0")
    assert not near.pvalue_is_bound and str(near).startswith("<Wald test")
