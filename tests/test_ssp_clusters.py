"""SSP with clusters as the privacy unit (``groups=``, ``max_group_size=``): the
non-private limit against statsmodels' cluster-robust OLS, the ledger's sensitivities,
an adversarial replacement of a whole cluster, coverage, and bad options."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpreg
from dpreg.engines.ssp import (
    SSPSettings,
    cluster_meat_sum,
    first_rows,
    ssp_sensitivities,
    ssp_sums,
)
from dpreg.exceptions import OptionError
from dpreg.privacy.events import GaussianMechanismEvent, cluster_adjacency

FORMULA = "y ~ x1 + x2"
BOUNDS = {"y": (-30.0, 30.0), "x1": (-6.0, 6.0), "x2": (0.0, 1.0)}


def make_clusters(seed, n_groups=100, lo=5, hi=20, beta=(1.0, 0.5, -1.0)):
    """Clusters of unequal sizes in [lo, hi] with a shared random effect in the outcome
    and in x1 (intra-cluster correlation of the scores)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(lo, hi + 1, n_groups)
    g = np.repeat(np.arange(n_groups), sizes)
    n = g.size
    x1 = np.clip(rng.normal(0, 1, n_groups)[g] + rng.normal(0, 1, n), -6, 6)
    x2 = rng.integers(0, 2, n).astype(float)
    u = rng.normal(0, 1, n_groups)[g] * (1 + 0.5 * np.abs(x1))
    y = beta[0] + beta[1] * x1 + beta[2] * x2 + u + rng.normal(0, 1, n)
    return pd.DataFrame({"y": np.clip(y, -30, 30), "x1": x1, "x2": x2,
                         "school": np.array([f"s{k:03d}" for k in g])})


def fit(data, **kw):
    opts = {"bounds": BOUNDS, "engine": "ssp", "groups": "school", "max_group_size": 20,
            "robust": True, "cov_type": "cluster", "random_state": 1, "mu": 1.0, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpreg.exceptions.SeedReuseWarning)
        return dpreg.dp_ols(FORMULA, data, **opts)


def cr1_rescale(n: int, p: int, count: int) -> float:
    """statsmodels' CR1 standard errors count the rows ``n`` in ``(n-1)/(n-p)``; the fit
    counts their public bound ``G K`` (cluster sizes are protected): the ratio of the two
    standard errors."""
    return math.sqrt((count - 1) / (count - p) * (n - p) / (n - 1))


# ------------------------------------------------------------------ non-private limit
def test_noise_off_matches_statsmodels_cluster(seed):
    # mu = 1e12 (noise ~1e-12 of the sums), bounds that clip nothing, K = 20 >= the
    # largest cluster: the params are OLS and the cluster standard errors statsmodels'
    # cov_type="cluster" (its default CR1 factor G/(G-1) (n-1)/(n-k)).
    data = make_clusters(seed)
    res = fit(data, mu=1e12)
    ols = smf.ols(FORMULA, data).fit(cov_type="cluster", cov_kwds={"groups": data["school"]})
    # 1e-8 (issue 29): the noise at mu = 1e12 moves the params by ~1e-11 and the cluster
    # standard errors by ~1e-9 relative
    np.testing.assert_allclose(res.params, ols.params, rtol=1e-8)
    rescale = cr1_rescale(len(data), len(ols.params), 20 * data["school"].nunique())
    np.testing.assert_allclose(res.bse, ols.bse * rescale, rtol=1e-8)
    n_groups = data["school"].nunique()
    assert res.settings["clusters G (public)"] == n_groups
    # the t(G-1) reference law: the interval's half-width is t_{G-1} * bse
    from scipy import stats
    ci = res.conf_int()
    half = (ci.iloc[:, 1] - ci.iloc[:, 0]).to_numpy() / 2
    np.testing.assert_allclose(half, stats.t.isf(0.025, n_groups - 1) * ols.bse * rescale,
                               rtol=1e-8)


def test_truncation_keeps_first_rows_in_data_order():
    codes = np.array([2, 0, 2, 1, 2, 0, 2])
    np.testing.assert_array_equal(first_rows(codes, 2),
                                  [True, True, True, True, False, True, False])
    # statsmodels on the truncated frame is what the fit targets
    data = make_clusters(5, n_groups=60, lo=5, hi=20)
    res = fit(data, mu=1e12, max_group_size=8)
    kept = data.groupby("school", sort=False).head(8)
    ols = smf.ols(FORMULA, kept).fit(cov_type="cluster", cov_kwds={"groups": kept["school"]})
    np.testing.assert_allclose(res.params, ols.params, rtol=1e-8)
    # CR1's (n-1)/(n-p) counts the public G K rows, not the kept n (sizes are protected)
    rescale = cr1_rescale(len(kept), len(ols.params), 60 * 8)
    assert rescale < 1 - 1e-4  # the two factors differ, visibly
    np.testing.assert_allclose(res.bse, ols.bse * rescale, rtol=1e-8)
    assert res.nobs is None and res.n_dropped is None and res.df_resid == 59


# ------------------------------------------------------------------ ledger
def test_ledger_meets_request_and_sensitivities_are_closed_forms(seed):
    data = make_clusters(seed, n_groups=40)
    K = 20
    res = fit(data, mu=2.0, max_group_size=K)
    events = res.ledger.events
    assert [e.name for e in events] == ["SSP X'X", "SSP X'y", "SSP y'y",
                                        "SSP meat sum g g'"]
    assert all(e.adjacency == "replace-one cluster (at most 20 rows)" for e in events)
    # bounds coordinates: intercept 1, x1 and x2 in [-1, 1] -> x_bound = sqrt(3); y
    # centred at 0 with half-range 30
    xb, yb = math.sqrt(3.0), 30.0
    clip = K * xb * 60.0
    want = [math.sqrt(2) * K * xb ** 2, 2 * K * xb * yb, K * yb ** 2, math.sqrt(2) * clip ** 2]
    np.testing.assert_allclose([e.sensitivity for e in events], want, rtol=1e-12)
    mu_total = math.sqrt(sum((e.sensitivity / e.noise_std) ** 2 for e in events))
    assert mu_total == pytest.approx(2.0, rel=1e-9)
    assert res.ledger.total_mu == pytest.approx(2.0, rel=1e-9)


def test_cluster_adjacency_is_validated_and_accounted_as_replace_one():
    adj = cluster_adjacency(7)
    assert adj == "replace-one cluster (at most 7 rows)"
    a = GaussianMechanismEvent("a", sensitivity=1.0, noise_std=1.0, adjacency=adj)
    b = GaussianMechanismEvent("b", sensitivity=1.0, noise_std=1.0, adjacency="replace-one")
    from dpreg.privacy.accountants import rigorous_epsilon
    assert rigorous_epsilon([a], 1e-5)[0] == pytest.approx(rigorous_epsilon([b], 1e-5)[0])
    with pytest.raises(OptionError, match="adjacency"):
        GaussianMechanismEvent("c", sensitivity=1.0, noise_std=1.0,
                               adjacency="replace-one cluster")
    # DP-SGD with clusters samples whole clusters without replacement: accounted as
    # uniform sampling of rows with the cluster as the row (population G)
    d = GaussianMechanismEvent("d", 1.0, 1.0, adj, sampling="uniform", sample_size=2,
                               population=10, count=50)
    e = GaussianMechanismEvent("e", 1.0, 1.0, "replace-one", sampling="uniform",
                               sample_size=2, population=10, count=50)
    assert rigorous_epsilon([d], 1e-5)[0] == pytest.approx(rigorous_epsilon([e], 1e-5)[0])
    with pytest.raises(OptionError, match="sampling"):  # Poisson: add/remove of a row
        GaussianMechanismEvent("f", 1.0, 1.0, adj, sampling="poisson", sample_size=2,
                               population=10)


# ------------------------------------------------------------------ adversarial
@pytest.mark.parametrize("p", [1, 3])
def test_replacing_a_cluster_by_corner_rows_stays_within_sensitivity(seed, p):
    # Data set D; D' replaces cluster 0 (K rows) by K corner rows: orthogonal rows of norm
    # x_bound and outcomes at -y_bound (maximising every change). The sums and the meat
    # (with the engine's own functions) move by at most the recorded sensitivities.
    rng = np.random.default_rng(seed)
    K, G, xb, yb = 6, 12, 1.5, 2.0
    settings = SSPSettings(x_bound=xb, y_bound=yb, clip=K * xb * 2 * yb, max_group_size=K)
    sens = ssp_sensitivities(settings, p)
    codes = np.repeat(np.arange(G), K)
    worst = {k: 0.0 for k in sens}
    for trial in range(20):
        Z = rng.uniform(-1, 1, (G * K, p))
        y = rng.uniform(-yb, yb, G * K)
        Z2, y2 = Z.copy(), y.copy()
        e = np.zeros(p)
        e[trial % p] = xb
        kind = trial % 4
        if kind == 0:  # orthogonal corners: the X'X bound (p >= 2)
            Z[:K], y[:K] = e, yb
            Z2[:K], y2[:K] = (np.roll(e, 1) if p > 1 else 0.0 * e), yb
        elif kind == 1:  # opposite rows, same outcome: the X'y bound
            Z[:K], y[:K] = e, yb
            Z2[:K], y2[:K] = -e, yb
        elif kind == 2:  # outcomes at the bound against 0: the y'y bound
            y[:K], y2[:K] = yb, 0.0
        else:  # far outside the bounds: clipped by the engine
            Z2[:K], y2[:K] = e * 10, -yb * 10
        theta = rng.normal(0, 1, p)
        s1, s2 = ssp_sums(Z, y, settings), ssp_sums(Z2, y2, settings)
        m1 = cluster_meat_sum(Z, y, settings, theta, codes, G)[0]
        m2 = cluster_meat_sum(Z2, y2, settings, theta, codes, G)[0]
        worst["gram"] = max(worst["gram"], np.linalg.norm(np.triu(s1.gram - s2.gram)))
        worst["xty"] = max(worst["xty"], np.linalg.norm(s1.xty - s2.xty))
        worst["yty"] = max(worst["yty"], abs(s1.yty - s2.yty))
        worst["meat"] = max(worst["meat"], np.linalg.norm(np.triu(m1 - m2)))
    for k in sens:
        assert worst[k] <= sens[k] * (1 + 1e-12), (k, worst[k], sens[k])
    # the bounds of the sums are attained by the corner clusters
    for k in ("gram", "xty", "yty"):
        assert worst[k] == pytest.approx(sens[k], rel=1e-12), k


# ------------------------------------------------------------------ coverage
def _coverage(reps, seed, **kw):
    beta = np.array([1.0, 0.5, -1.0])
    hits = np.zeros(3)
    for r in range(reps):
        data = make_clusters(seed + r, n_groups=100, beta=beta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dpreg.exceptions.ConvergenceWarning)
            res = fit(data, mu=5.0, random_state=seed + 10_000 + r, n_boot=100,
                      **kw)
        ci = res.conf_int().to_numpy()
        hits += (ci[:, 0] <= beta) & (beta <= ci[:, 1])
    return hits / reps


def test_cluster_coverage_smoke(seed):
    # 10 data sets: every coefficient covered at least 7 times (P(Bin(10, .95) < 7) ~ 1e-3)
    cov = _coverage(10, seed)
    assert np.all(cov >= 0.7), cov


@pytest.mark.slow
@pytest.mark.parametrize("clip", [None, 100.0])
def test_cluster_coverage(seed, clip):
    # 100 data sets of 100 clusters of 5-20 rows, mu = 5: within 3 binomial s.e. of 0.95
    # (the default clip, K B_x (upper - lower) ~ 2078, makes the meat's noise dominate:
    # 0.99-1.0; clip = 100 covers 0.96-0.975 over 400 data sets)
    reps = 100
    cov = _coverage(reps, seed, clip=clip)
    se = math.sqrt(0.95 * 0.05 / reps)
    assert np.all(np.abs(cov - 0.95) <= 3 * se), cov


# ------------------------------------------------------------------ bad options
def test_bad_options_are_named():
    data = make_clusters(3, n_groups=20)
    with pytest.raises(OptionError, match="groups does not apply to engine='dpgd'"):
        dpreg.dp_ols(FORMULA, data, bounds=BOUNDS, mu=1.0, groups="school",
                     max_group_size=20, engine="dpgd")
    with pytest.raises(OptionError, match="max_group_size"):
        fit(data, max_group_size=None)
    with pytest.raises(OptionError, match="'schol' is not a column"):
        fit(data, groups="schol")
    with pytest.raises(OptionError, match="robust=True"):
        fit(data, robust=False)
    with pytest.raises(OptionError, match="cov_type='cluster'"):
        fit(data, cov_type="sandwich")
    with pytest.raises(OptionError, match="needs groups="):
        fit(data, groups=None, max_group_size=None)
    with pytest.raises(OptionError, match="max_group_size"):
        fit(data, max_group_size=0)
    with pytest.raises(OptionError, match="one label per row"):
        fit(data, groups=np.zeros(3))


def test_clusters_default_to_the_cluster_robust_interval(seed):
    # rows within a cluster are dependent: with groups= and no cov_type the default is the
    # cluster-robust interval (its meat released), not the plug-in of independent rows
    data = make_clusters(seed, n_groups=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_ols(FORMULA, data, bounds=BOUNDS, engine="ssp", groups="school",
                           max_group_size=20, mu=2.0, random_state=1)
    assert res.cov_type == "cluster"
    assert any("meat" in e.name for e in res.ledger.events)
    assert "plugin" not in res.inferences  # sigma~^2 would divide by the protected n
    # the plug-in of independent rows needs n, which protected cluster sizes keep private
    for kw in ({"robust": False, "cov_type": "plugin"}, {"cov_type": "plugin"},
               {"robust": False, "cov_type": "pboot"}):
        with pytest.raises(OptionError, match="protected cluster sizes"):
            fit(data, mu=2.0, **kw)
