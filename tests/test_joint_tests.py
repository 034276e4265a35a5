"""Joint tests at their size (issue 26, item 4). The plug-in's reference law comes from
re-released covariances, not the chi-square, and beyond ``PLUGIN_JOINT_MAX``
restrictions the Bonferroni combination must reject too; random scaling beyond
``RS_JOINT_MAX`` restrictions is the Bonferroni combination of its exact scalar tests."""

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


def _fit(seed, n=1000, mu=5.0, ranges="declared"):
    rng = np.random.default_rng(seed)
    data = pd.DataFrame(rng.uniform(-1, 1, (n, P)), columns=NAMES)
    data["y"] = np.clip(1 + rng.normal(0, 1, n), -4, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the outcome's declared box (-4, 6): with a tighter one (declared, or learned
        # by the default ranges="auto") the 12-slope test over-rejects here (10-12 of 40
        # fits; an open problem, recorded in the inference docs)
        return dpreg.dp_ols("y ~ " + " + ".join(NAMES), data, mu=mu, bounds=BOUNDS,
                            random_state=seed, cov_type="plugin", ranges=ranges)


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


def test_random_scaling_beyond_one_restriction_is_the_bonferroni_combination():
    # the bivariate pivot rejected 0.125 of true nulls at 20 n steps, unwarned
    # (validation/joint_test_size.py), the Bonferroni combination at most 0.065
    from dpreg.results.hypothesis import RS_JOINT_MAX

    res = _fit(2)
    spec = "x0 = 0.1, x1 = 0"
    joint = res.wald_test(spec, method="rs", scalar=True)
    scalar = res.t_test(spec, method="rs")
    assert RS_JOINT_MAX == 1 and joint.distribution == "bonferroni" and joint.df_num == 2
    assert joint.pvalue == pytest.approx(min(1.0, 2 * float(np.min(scalar.pvalue))))
    assert joint.statistic == pytest.approx(float(np.max(np.abs(scalar.tvalue))))
    assert str(joint).startswith("<Bonferroni test (rs)")
    assert not joint.is_standard_error
    f = res.f_test(spec, method="rs")  # no F statistic: fvalue is NaN, the p-value is set
    assert f.distribution == "bonferroni" and np.isnan(f.fvalue) and f.pvalue == joint.pvalue
    one = res.f_test("x0 = 0", method="rs")  # one restriction: the pivot, the scalar test
    assert one.distribution == "rs_F"
    assert float(one.pvalue) == pytest.approx(float(res.t_test("x0 = 0", method="rs").pvalue[0]),
                                              rel=1e-6)


def test_the_plugin_beyond_six_restrictions_also_needs_the_bonferroni_combination():
    from dpreg.results.hypothesis import PLUGIN_JOINT_MAX

    res = _fit(3)
    seven = ", ".join(f"{c} = 0" for c in NAMES[:PLUGIN_JOINT_MAX + 1])
    test = res.wald_test(seven, scalar=True)
    bonferroni = min(1.0, (PLUGIN_JOINT_MAX + 1) * float(np.min(res.t_test(seven).pvalue)))
    assert test.distribution == "boot" and float(test.pvalue) >= bonferroni - 1e-12
    assert "Bonferroni" in test.note
    six = ", ".join(f"{c} = 0" for c in NAMES[:PLUGIN_JOINT_MAX])
    assert PLUGIN_JOINT_MAX == 6 and "Bonferroni" not in res.wald_test(six, scalar=True).note


def test_both_joint_tests_of_twelve_slopes_hold_their_size_in_learned_boxes():
    # the default ranges="auto" learns tight boxes, where the plug-in's reference law
    # alone over-rejects the 12-slope null (0.165 of 200 fits at n = 1,000, mu = 5) and
    # the multivariate random-scaling pivot more (0.455): 60 fits, a size of 0.05 gives at
    # most 8 rejections with probability 0.99 (validation/joint_test_size.py)
    from dpreg.inference.rs_joint import contrast_scale_matrix, rs_joint_law

    plugin = rs = pivot = 0
    R = np.eye(P + 1)[1:]
    for seed in range(60):
        res = _fit(seed, ranges="auto")
        plugin += float(np.squeeze(res.wald_test(ALL, scalar=True).pvalue)) < 0.05
        rs += float(np.squeeze(res.wald_test(ALL, method="rs", scalar=True).pvalue)) < 0.05
        d = R @ res.params.to_numpy()
        G = contrast_scale_matrix(res.inferences["rs"], R)
        pivot += float(rs_joint_law.sf(float(d @ np.linalg.solve(G, d)) / P, P)) < 0.05
    assert plugin <= 8 and rs <= 8, (plugin, rs)
    assert pivot > 8  # the multivariate pivot alone over-rejects on the same fits
