"""LDP-SGD on the public conditioning: natural units converge at the defaults, the map
back is exact, unconverged paths warn, and the free checks' false-alarm law."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg.exceptions import ConvergenceWarning
from dpreg.inference.batch_means import (
    batch_layout,
    batch_means_critical_value,
    batch_means_inference,
    default_n_batches,
)
from dpreg.inference.diagnostics import (
    BM_CHECK_FACTOR,
    BM_RATIO_LIMIT,
    BM_RATIO_LOWER,
    JOINT_BM_ALARM,
    RS_HALVES_LIMIT,
    joint_bm_critical,
    joint_bm_null,
    one_pass_false_alarm,
    one_pass_null,
)

NATURAL_BOUNDS = {"age": (18, 90), "educ": (0, 20), "y": (0, 30)}


def _natural(seed, n=20_000):
    """Covariates as an economist writes them: ages and years of schooling."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(25, 65, n)
    educ = rng.uniform(8, 18, n)
    y = 5 + 0.05 * age + 0.3 * educ + rng.standard_normal(n)
    return pd.DataFrame({"y": y, "age": age, "educ": educ})


def _loose_box(seed, n=20_000):
    """N(0, 1) covariates declared in [-4, 4]: the conditioned curvature is 1/16."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    y = 1 + x.sum(axis=1) + 0.5 * rng.standard_normal(n)
    d = pd.DataFrame(x, columns=["x1", "x2", "x3"])
    d["y"] = y
    bounds = {f"x{j}": (-4, 4) for j in (1, 2, 3)}
    bounds["y"] = (-9, 11)
    return d, bounds


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_natural_units_ldp_fit_converges_at_the_defaults(seed, offset):
    """OLS on ages and years of schooling in honest boxes, n = 20,000, mu = 5: the
    random-scaling intervals contain the non-private estimates and nothing warns. On
    the design as given (lr = 1/x_bound^2 ~ 1e-4) the path never left its start: the
    intercept came out near 15 against 5 and no interval contained its oracle."""
    d = _natural(seed + offset)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = dpreg.dp_ols("y ~ age + educ", d, engine="ldp_sgd", mu=5,
                           bounds=NATURAL_BOUNDS, random_state=seed + offset)
    oracle = dpreg.oracle("y ~ age + educ", d, bounds=NATURAL_BOUNDS).params.to_numpy()
    ci = res.conf_int(method="rs").to_numpy()
    assert np.all((ci[:, 0] <= oracle) & (oracle <= ci[:, 1])), (ci, oracle)
    assert res.convergence.ok and "rs/batch_means" in res.convergence.checks
    assert "centred and scaled" in res.settings["conditioning"]


def test_map_back_is_exact(seed):
    """Default conditioning of natural-unit columns equals a fit on columns the user
    centred and scaled by the same public constants with condition='none', mapped back:
    estimates, every interval, and the trajectory's random-scaling bands."""
    d = _natural(seed, n=6000)
    res = dpreg.dp_ols("y ~ age + educ", d, engine="ldp_sgd", mu=5, bounds=NATURAL_BOUNDS,
                       random_state=3, cov_type="plugin")
    z = pd.DataFrame({"y": d["y"], "za": (d["age"] - 54) / 36, "ze": (d["educ"] - 10) / 10})
    ref = dpreg.dp_ols("y ~ za + ze", z, engine="ldp_sgd", mu=5, condition="none",
                       bounds={"za": (-1, 1), "ze": (-1, 1), "y": (0, 30)}, random_state=3,
                       cov_type="plugin")
    # theta = M^-1 theta_z: slope / h, intercept - sum c slope / h
    M_inv = np.array([[1, -54 / 36, -10 / 10], [0, 1 / 36, 0], [0, 0, 1 / 10]])
    np.testing.assert_allclose(res.params.to_numpy(), M_inv @ ref.params.to_numpy(),
                               rtol=1e-9)
    # slopes: the map is diagonal there, so the scales map one to one
    for method in ("rs", "batch_means", "plugin"):
        np.testing.assert_allclose(res.inferences[method].scale[1:],
                                   ref.inferences[method].scale[1:] / [36, 10], rtol=1e-8,
                                   err_msg=method)
    # the intercept mixes coordinates: the plug-in's full covariance maps exactly
    cov_z = ref.cov_params().to_numpy()
    np.testing.assert_allclose(res.cov_params().to_numpy(), M_inv @ cov_z @ M_inv.T,
                               rtol=1e-8)
    # the trajectory's RS diagonal at every mark is diag(M^-1 Q_t M^-T), which the
    # engine's own diagonal does not determine: it is recorded from the full Q
    t_res, t_ref = res.trajectory, ref.trajectory
    np.testing.assert_array_equal(t_res["steps"], t_ref["steps"])
    np.testing.assert_allclose(t_res["average"], t_ref["average"] @ M_inv.T, rtol=1e-8,
                               atol=1e-12)
    np.testing.assert_allclose(t_res["rs_q_diag"][:, 1:], t_ref["rs_q_diag"][:, 1:]
                               / np.array([36, 10]) ** 2, rtol=1e-7)
    assert np.all(t_res["rs_q_diag"][1:, 0] > 0)  # one iterate has no spread
    np.testing.assert_allclose(t_res["rs_q_diag"][-1], res.inferences["rs"].scale ** 2,
                               rtol=1e-10)


def test_tiny_noise_conditioned_and_raw_paths_share_the_estimand(seed):
    """With almost no privacy noise both coordinate systems reach the same point: the
    oracle (the clipped estimand is the OLS fit when no gradient is clipped)."""
    rng = np.random.default_rng(seed)
    n = 20_000
    x = rng.uniform(-2, 2, (n, 2))
    y = 1 + x @ [0.5, -1.0] + 0.3 * rng.standard_normal(n)
    d = pd.DataFrame({"y": y, "a": x[:, 0], "b": x[:, 1]})
    bounds = {"a": (-2, 2), "b": (-2, 2), "y": (-4, 6)}
    oracle = dpreg.oracle("y ~ a + b", d, bounds=bounds).params.to_numpy()
    fits = [dpreg.dp_ols("y ~ a + b", d, engine="ldp_sgd", mu=1e4, bounds=bounds,
                         random_state=1, condition=c).params.to_numpy()
            for c in ("bounds", "none")]
    for est in fits:
        np.testing.assert_allclose(est, oracle, atol=0.02)


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_unconverged_ldp_fit_warns(seed, offset):
    """A step far below the loose box's curvature (lr = 0.01; the old default on these
    rows was 0.02): RS covered 0.16 in 100 replications and the check warned in all
    100 (in 99 at lr = 0.02)."""
    d, bounds = _loose_box(seed + offset)
    with pytest.warns(ConvergenceWarning, match="LDP-SGD path not converged"):
        res = dpreg.dp_ols("y ~ x1 + x2 + x3", d, engine="ldp_sgd", mu=2, bounds=bounds,
                           lr=0.01, random_state=seed + offset)
    assert res.convergence.unconverged
    assert "LDP-SGD path not converged" in res.summary().as_text()
    assert max(res.convergence.bm_ratio.values()) > BM_RATIO_LIMIT


def test_stream_warns_too(seed):
    d, bounds = _loose_box(seed)
    stream = dpreg.LDPStream("y ~ x1 + x2 + x3", family="linear", mu=2, bounds=bounds,
                             lr=0.01, random_state=1)
    stream.consume([d.iloc[i:i + 7000] for i in range(0, len(d), 7000)])
    with pytest.warns(ConvergenceWarning):
        stream.results()


def test_linear_step_is_capped_by_its_offset():
    from dpreg.families import get_family
    from dpreg.families.base import Objective
    from dpreg.fits.ldp_sgd import BOXED_LDP_LR, LINEAR_LDP_LR, ldp_step

    obj = Objective(family=get_family("linear"), c=1.0, tau=0.5, weights=np.ones(1),
                    mallows=False)
    for row_sq in (1.5, 4.0, 21.0):
        lr, t0, why = ldp_step(obj, row_sq, 0.51)
        assert lr == LINEAR_LDP_LR
        assert lr * (1 + t0) ** -0.51 * row_sq == pytest.approx(1.0)  # no step expands
        assert "t0" in why
    huber = Objective(family=get_family("huber"), c=1.345, tau=0.5, weights=np.ones(1),
                      mallows=True)
    assert ldp_step(huber, 2.0, 0.51)[:2] == (0.5, 0.0)  # Table 1's step, unchanged
    # in a declared box linear and Huber take the larger offset step; logistic keeps
    # the paper's
    for family in (obj, huber):
        lr, t0, _ = ldp_step(family, 3.0, 0.51, boxed=True)
        assert lr == BOXED_LDP_LR > LINEAR_LDP_LR
        assert lr * (1 + t0) ** -0.51 * 3.0 == pytest.approx(1.0)
    logistic = Objective(family=get_family("logistic"), c=np.inf, tau=0.5,
                         weights=np.ones(1), mallows=False)
    assert ldp_step(logistic, 3.0, 0.51, boxed=True)[:2] == (1 / 3, 0.0)


def test_ldp_fit_that_cannot_mix_warns_from_public_numbers(seed):
    """A logistic LDP-SGD fit in declared boxes at n = 20,000 needs covariates spread
    over all of half their range to mix (more than a uniform fill's 58%): it warns in
    every fit, whatever the data (the robustness study's cell covered 0.17 by RS with
    11% of its fits unwarned). Huber in the same boxes (offset step: 20%) does not get
    this warning."""
    d, bounds = _loose_box(seed)
    d["yb"] = (d["y"] > 1).astype(float)
    with pytest.warns(ConvergenceWarning, match="cannot mix in one pass of 20000 rows"):
        res = dpreg.dp_logit("yb ~ x1 + x2 + x3", d, engine="ldp_sgd", mu=2,
                             bounds=bounds, random_state=seed)
    assert not res.convergence.ok and res.convergence.public
    assert "WARNING: LDP-SGD cannot mix" in res.summary().as_text()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        huber = dpreg.dp_huber("y ~ x1 + x2 + x3", d, engine="ldp_sgd", mu=2,
                               bounds=bounds, random_state=seed)
    assert not any("cannot mix" in str(w.message) for w in caught)
    assert not huber.convergence.public


def test_batch_means_critical_value_covers_with_independent_batches():
    """With independent Gaussian iterates, sqrt(M/(M-1)) t_{M-1} is exact: 4,000 paths
    cover 0.95 within 3 MC s.e. (0.0034); Chen et al.'s normal value covered about 0.88
    here (M = 6)."""
    rng = np.random.default_rng(7)
    n, M, alpha = 3000, 6, 0.51
    steps = np.arange(1, n + 1)
    hits = []
    for _ in range(4000):
        it = rng.standard_normal((n, 1))
        inf = batch_means_inference(steps, np.cumsum(it, axis=0) / steps[:, None], M, alpha)
        crit = inf.law.critical_value(0.05)
        hits.append(abs(it.mean()) <= crit * inf.scale[0])
    assert abs(np.mean(hits) - 0.95) < 3 * math.sqrt(0.95 * 0.05 / 4000)
    assert batch_means_critical_value(12) == pytest.approx(2.2995, abs=1e-3)


@pytest.mark.parametrize(("n_batches", "alpha"), [(8, 0.51), (48, 0.51), (48, 0.75)])
def test_one_pass_checks_false_alarm_below_1e3(n_batches, alpha):
    """Simulated once (20,000 Brownian paths): each check fires on a converged path
    with probability under 1e-3 (observed at most 2e-4 with 60,000 paths, M = 8..126)."""
    rates = one_pass_false_alarm(n_batches, alpha, draws=20_000, grid=1024, seed=1)
    assert rates["ratio_above"] < 1e-3 and rates["ratio_below"] < 1e-3
    assert rates["halves"] < 1e-3
    assert BM_RATIO_LOWER < 1 < BM_RATIO_LIMIT and RS_HALVES_LIMIT > 4


def test_joint_check_of_one_coefficient_has_the_scalar_ratios_law():
    """With p = 1 the joint statistic is the RS / batch-means length ratio: its
    simulated law (batch ends from the layout of a fit at n = 6,366) matches
    :func:`one_pass_null`'s, built independently on another grid (20,000 draws each; the
    quantiles' Monte Carlo s.e. is about 0.01)."""
    steps = np.unique(np.geomspace(1, 6366, 2000).astype(int))
    ends = batch_layout(steps, BM_CHECK_FACTOR * default_n_batches(6366), 0.51)
    joint = joint_bm_null(1, ends / ends[-1], draws=20_000, seed=4)
    scalar, _ = one_pass_null(BM_CHECK_FACTOR * default_n_batches(6366), 0.51,
                              draws=20_000, grid=2048, seed=5)
    for q in (0.5, 0.9, 0.99):
        assert np.quantile(joint, q) == pytest.approx(np.quantile(scalar, q), abs=0.06)


def test_joint_check_limit_is_its_alarm_quantile_and_grows_with_p():
    steps = np.unique(np.geomspace(1, 20_000, 2000).astype(int))
    ends = batch_layout(steps, BM_CHECK_FACTOR * default_n_batches(20_000), 0.51)
    key = tuple(np.round(ends / ends[-1], 6).tolist())
    limit3 = joint_bm_critical(3, key)
    fresh = joint_bm_null(3, ends / ends[-1], draws=40_000, seed=9)
    # 40 of 40,000 expected beyond the limit; 4 s.e. of a binomial count either side
    assert abs(np.sum(fresh > limit3) - 40_000 * JOINT_BM_ALARM) < 4 * math.sqrt(40)
    assert limit3 < joint_bm_critical(6, key)


def test_joint_check_statistic_is_invariant_to_the_paths_covariance():
    """The fit-side statistic is the largest generalized eigenvalue of the RS and
    batch-means matrices, so mapping both by one invertible matrix leaves it equal."""
    from types import SimpleNamespace

    from dpreg.inference.diagnostics import _joint_bm

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 4)), rng.standard_normal((40, 4))
    q, sigma = a @ a.T + np.eye(4), b.T @ b / 40
    steps = np.unique(np.geomspace(1, 20_000, 2000).astype(int))
    t = rng.standard_normal((4, 4))
    one = _joint_bm(SimpleNamespace(matrix=q), sigma, 40, 20_000, 6.7, steps, 0.51)
    two = _joint_bm(SimpleNamespace(matrix=t @ q @ t.T), t @ sigma @ t.T, 40, 20_000,
                    6.7, steps, 0.51)
    assert one[0] == pytest.approx(two[0], rel=1e-8) and one[1] == two[1]


def test_fair_main_effects_by_ldp_sgd_warn_through_the_joint_check():
    """statsmodels' fair, main effects of correlated covariates far from their boxes'
    centres (n = 6,366, mu = 5): no coefficient's own RS / batch-means ratio passes
    its limit in most fits, and their intervals contained the non-private estimates for
    0.87 of coefficients (100 seeds); the joint ratio is beyond its limit in every
    seed here and names every coefficient. On N(0, 1) covariates in a tight box
    (n = 20,000, p = 3), where the intervals cover, it stays under the limit."""
    import statsmodels.api as sm

    data = sm.datasets.fair.load_pandas().data
    formula = "rate_marriage ~ np.log(yrs_married) + age + educ + children"
    bounds = {"rate_marriage": (1, 5), "age": (16, 70), "educ": (9, 20),
              "children": (0, 10), "np.log(yrs_married)": (np.log(0.5), np.log(40))}
    for seed in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            res = dpreg.dp_ols(formula, data, mu=5.0, bounds=bounds, engine="ldp_sgd",
                               random_state=seed)
        stat, limit = res.convergence.joint_bm
        assert stat > limit
        # the largest ratio over combinations bounds each coefficient's own ratio
        assert stat >= max(res.convergence.bm_ratio.values()) * (1 - 1e-9)
        assert set(res.convergence.unconverged) == set(res.params.index)
        assert any("along some combination of the coefficients" in str(w.message)
                   for w in caught)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((20_000, 3))
    d = pd.DataFrame(x, columns=["x1", "x2", "x3"])
    d["y"] = 1 + x.sum(axis=1) + 0.5 * rng.standard_normal(20_000)
    tight = {f"x{j}": (-3.5, 3.5) for j in (1, 2, 3)} | {"y": (-9, 11)}
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dpreg.dp_ols("y ~ x1 + x2 + x3", d, mu=5.0, bounds=tight,
                               engine="ldp_sgd", random_state=seed)
        stat, limit = res.convergence.joint_bm
        assert stat < limit


def test_halves_law_against_karhunen_loeve():
    """The simulator's halves statistic -2 B(1/2) / sqrt(int B^2) against an independent
    construction from the bridge's Karhunen-Loeve expansion."""
    _, halves = one_pass_null(12, 0.51, draws=40_000, grid=2048, seed=2)
    rng = np.random.default_rng(3)
    k = np.arange(1, 1001)
    Z = rng.standard_normal((40_000, 1000))
    b_half = Z @ (math.sqrt(2) * np.sin(k * math.pi / 2) / (k * math.pi))
    int_b2 = (Z ** 2) @ (1 / (k * math.pi) ** 2)
    kl = np.abs(-2 * b_half / np.sqrt(int_b2))
    for level in (1.0, 2.0, 4.0):
        p1, p2 = np.mean(np.abs(halves) > level), np.mean(kl > level)
        assert abs(p1 - p2) < 4 * math.sqrt(p2 * (1 - p2) * 2 / 40_000) + 1e-3, level


def test_spread_needed_is_the_public_mixing_condition():
    """The share of half its declared range a covariate must spread over for one pass to
    mix: sqrt(40 (n + t0)^alpha / (lr hess_bound n)), by hand at the paper's Huber
    step at n = 20,000 (lr = 0.5): 0.791."""
    from dpreg.fits.ldp_sgd import spread_needed

    by_hand = math.sqrt(40 * 20_000 ** 0.51 / (0.5 * 1.0 * 20_000))
    assert spread_needed(20_000, 0.5, 0.51, 0.0, 1.0) == pytest.approx(by_hand, rel=1e-12)
    assert 0.79 < by_hand < 0.80
    # more rows or a larger step lower it; an offset raises it
    assert spread_needed(80_000, 0.5, 0.51, 0.0, 1.0) < by_hand
    assert spread_needed(20_000, 2.0, 0.51, 0.0, 1.0) < by_hand
    assert spread_needed(20_000, 0.5, 0.51, 500.0, 1.0) > by_hand


def test_ldp_summary_states_the_spread_its_intervals_assume(seed):
    """A fit in declared boxes says, from public numbers only, how much of each box the
    covariates must fill for its intervals; a fit on Mallows weights (no box) does not."""
    d, bounds = _loose_box(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boxed = dpreg.dp_huber("y ~ x1 + x2 + x3", d, engine="ldp_sgd", mu=2,
                               bounds=bounds, random_state=seed)
        mallows = dpreg.dp_huber("y ~ x1 + x2 + x3", d, engine="ldp_sgd", mu=2,
                                 random_state=seed)
    s = boxed.settings
    from dpreg.fits.ldp_sgd import spread_needed

    share = spread_needed(len(d), float(s.value("lr")), float(s.value("lr_decay")),
                          float(s.value("step_offset")), 1.0)
    assert f"at least {share:.0%} of half its declared range" in boxed.summary().as_text()
    assert "fill their boxes mix at lr=2 too" in " ".join(boxed.summary().as_text().split())
    assert "of half its declared range" not in mallows.summary().as_text()


def test_boxed_step_covers_in_natural_units():
    """The robustness study's natural-units Huber cell (n = 20,000, p = 3, mu = 2,
    heteroskedastic errors), scored as the study scores it (coverage averaged over the
    coefficients): schooling fills a fifth of its declared half-range, and at ``lr = 2``
    batch means covered 0.85 (200 fits; schooling 0.80) and random scaling 0.92. With
    the boxed step (``BOXED_LDP_LR``) both cover within 3 Monte Carlo s.e. of 0.95 over
    80 fits (a 400-fit run: 0.947 and 0.962)."""
    from dpreg.studies.robustness import natural_units_design

    hits = {"rs": [], "batch_means": []}
    for rep in range(80):
        rng = np.random.default_rng(5000 + rep)
        data, formula, bounds, truth = natural_units_design(20_000, 3, rng, family="huber",
                                                            errors="hetero")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dpreg.dp_huber(formula, data, bounds=bounds, mu=2, engine="ldp_sgd",
                                 random_state=rep)
        for method, got in hits.items():
            ci = res.conf_int(method=method).to_numpy()
            got.append(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / 80)  # 0.877
    assert np.mean(hits["rs"]) >= floor, np.mean(hits["rs"])
    assert np.mean(hits["batch_means"]) >= floor, np.mean(hits["batch_means"])
