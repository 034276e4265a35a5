"""DP-SGD with clusters as the privacy unit (``engine="dpsgd"``, ``groups=``,
``max_group_size=``): the kernel's cluster sampling, the limit against statsmodels'
cluster-robust OLS, the ledger, the sensitivities of a whole cluster's replacement,
coverage, and bad options."""

import dataclasses
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from test_ssp_clusters import BOUNDS, FORMULA, make_clusters

import dpreg
from dpreg.audit.sensitivity import audit_cell
from dpreg.engines import SGDSettings, run_dpsgd
from dpreg.exceptions import OptionError
from dpreg.families import get_family
from dpreg.families.base import Objective
from dpreg.fits.common import Problem


def fit(data, **kw):
    opts = {"bounds": BOUNDS, "engine": "dpsgd", "groups": "school", "max_group_size": 20,
            "random_state": 1, "mu": 5.0, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpreg.dp_ols(FORMULA, data, **opts)


def _linear(n):
    return Objective(get_family("linear"), np.inf, 0.5, np.ones(n), False)


# ------------------------------------------------------------------ the kernel
def test_clusters_of_one_row_are_the_row_engine():
    # one row per cluster: the same draws, the same rows, the same sums: bit for bit
    rng = np.random.default_rng(0)
    n = 300
    X = np.c_[np.ones(n), rng.uniform(-1, 1, n)]
    y = X @ [1.0, 0.5] + rng.normal(0, 1, n)
    s = SGDSettings(batch_size=7, sampling="uniform", steps=500, clip=1.0, lr=0.5,
                    lr_decay=0.501, noise_scale=0.1, noise_multiplier=1.0)
    a = run_dpsgd(X, y, objective=_linear(n), settings=s, theta0=np.zeros(2),
                  rng=np.random.default_rng(1))
    b = run_dpsgd(X, y, objective=_linear(n), settings=s, theta0=np.zeros(2),
                  rng=np.random.default_rng(1), clusters=np.arange(n))
    assert np.array_equal(a.params, b.params) and np.array_equal(a.rs_q, b.rs_q)
    assert a.grad_evals == b.grad_evals == 7 * 500


def test_a_batch_of_clusters_sums_all_their_rows():
    # one step, lr 1, no noise, every cluster in the batch: theta moves by the mean of
    # all rows' clipped gradients (the sum over m n / G rows, divided like it)
    rng = np.random.default_rng(2)
    codes = np.repeat(np.arange(10), rng.integers(1, 6, 10))
    n = codes.size
    X = np.c_[np.ones(n), rng.uniform(-1, 1, n)]
    y = rng.normal(0, 1, n)
    s = SGDSettings(batch_size=10, sampling="uniform", steps=1, clip=1e9, lr=1.0,
                    lr_decay=0.0, noise_scale=0.0, noise_multiplier=0.0,
                    rows_per_unit=n / 10)
    out = run_dpsgd(X, y, objective=_linear(n), settings=s, theta0=np.zeros(2),
                    rng=np.random.default_rng(0), clusters=rng.permutation(codes))
    assert np.allclose(out.last, X.T @ y / n)  # -grad of (y - x'theta)^2 / 2 at 0
    assert out.grad_evals == n


def test_sampled_clusters_converge_to_least_squares():
    # one cluster per step, noise off: the averaged iterate reaches OLS
    rng = np.random.default_rng(0)
    codes = np.repeat(np.arange(200), 13)
    n = codes.size
    X = np.c_[np.ones(n), rng.uniform(-1, 1, n)]
    y = X @ [1.0, 0.5] + rng.normal(0, 1, 200)[codes] + rng.normal(0, 1, n)
    s = SGDSettings(batch_size=1, sampling="uniform", steps=400_000, clip=1e6, lr=0.5,
                    lr_decay=0.501, noise_scale=0.0, noise_multiplier=0.0,
                    rows_per_unit=n / 200)
    out = run_dpsgd(X, y, objective=_linear(n), settings=s, theta0=np.zeros(2),
                    rng=np.random.default_rng(1), clusters=codes)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    # the cluster-robust s.e. of the intercept is about 0.075: within a tenth of it
    assert np.abs(out.params - ols).max() < 0.0075, (out.params, ols)


# ------------------------------------------------------------------ statsmodels
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_nearly_noise_free_limit_is_statsmodels_cluster_robust(seed):
    # mu = 1e7 with a quarter of the clusters per step (noise multiplier ~0.2): the
    # estimate is OLS (within 0.08 s.e. over these seeds) and the plug-in s.e. is
    # statsmodels' CR1 cluster-robust s.e. (0.3% apart; without the CR1 factor 0.2% less)
    data = make_clusters(seed, n_groups=200)
    ref = smf.ols(FORMULA, data).fit(cov_type="cluster",
                                     cov_kwds={"groups": pd.factorize(data["school"])[0]})
    res = fit(data, mu=1e7, batch_size=50, random_state=2)
    assert res.cov_type == "plugin"
    assert np.all(np.abs(res.params - ref.params) < 0.1 * ref.bse)
    assert np.allclose(res.bse, ref.bse, rtol=0.005), (res.bse, ref.bse)
    inf = res.inference("plugin")
    assert inf.law.name == "t(199)"
    rows = fit(data, mu=1e7, batch_size=50, random_state=2, groups=None,
               max_group_size=None)
    # x1 shares a cluster effect with the errors: rows' s.e. is far too short for it
    assert rows.bse["x1"] < 0.5 * ref.bse["x1"]


def test_the_cluster_sandwich_at_ols_is_statsmodels_cr1_exactly(seed):
    # the plug-in's formula without its noise: A and the cluster meat S as the fit
    # computes them (its own functions, engine coordinates, divided by the public G K,
    # not n), at statsmodels' OLS estimate, give V = CR1 A^-1 S A^-1 / (G K) equal to
    # statsmodels' cluster covariance (CR1 with the rows' n here; the fit's own factor
    # uses G K, checked below)
    from dpreg.fits.dpsgd import DPSGDOptions, clustered
    from dpreg.inference.plugin import path_variance

    data = make_clusters(seed, n_groups=80)
    ref = smf.ols(FORMULA, data).fit(cov_type="cluster",
                                     cov_kwds={"groups": pd.factorize(data["school"])[0]})
    model = dpreg.DPRegression.from_formula(FORMULA, data, bounds=BOUNDS)
    opts = DPSGDOptions(groups="school", max_group_size=20)
    problem = dataclasses.replace(model.problem,
                                  groups=pd.factorize(data["school"])[0].astype(np.int64))
    problem, n_groups, _ = clustered(problem, opts)
    cond = problem.coordinates(opts.condition)
    pub = problem.public_settings(opts, cond, clusters=(n_groups, 20))
    Z = cond.design(problem.design.exog)
    theta = cond.to_engine(ref.params.to_numpy())
    A = problem.matrix_statistic("A", Z, pub, theta)
    S = problem.matrix_statistic("S", Z, pub, theta)
    n, p = Z.shape
    count = problem.public_count()
    assert count == n_groups * 20 > n  # unequal clusters: the public count is not n
    V, _ = path_variance(A, S, 0.0, 1.0)
    cr1 = n_groups / (n_groups - 1) * (n - 1) / (n - p)
    np.testing.assert_allclose(cr1 * cond.covariance(V) / count, ref.cov_params(),
                               rtol=1e-8)


# ------------------------------------------------------------------ the ledger
def test_ledger_counts_clusters_and_meets_the_request():
    data = make_clusters(4, n_groups=120)
    res = fit(data, mu=2.0, batch_size=3)
    events = {e.name: e for e in res.ledger.events}
    path = events["DP-SGD path"]
    k, clip = 20, res.settings["clip"]
    assert path.adjacency == "replace-one cluster (at most 20 rows)"
    assert (path.population, path.sample_size, path.sampling) == (120, 3, "uniform")
    assert path.sensitivity == pytest.approx(2 * k * clip)
    count = 120 * k  # the public G K, not the rows n: cluster sizes are protected
    assert events["score covariance S"].sensitivity == pytest.approx(
        2 * (k * clip) ** 2 / count)
    assert res.ledger.total_mu == pytest.approx(2.0, rel=1e-6)
    assert res.nobs is None and res.n_dropped is None and res.df_resid == 119
    text = res.summary().as_text()
    assert "Privacy unit: a cluster of 'school'" in text and "G = 120" in text
    assert re.search(r"No. Observations: +not released", text)


@pytest.mark.parametrize("engine", ["dpsgd", "ssp"])
def test_a_clusters_size_changes_nothing_public(engine):
    # neighbours under the cluster adjacency may differ in one cluster's size: every
    # public output (ledger, settings, counts, the notes' text) must then be the same,
    # so nothing the fit reports is a function of the rows' count n
    data = make_clusters(6, n_groups=60, lo=5, hi=20)
    first = data["school"].iloc[0]
    smaller = data[(data["school"] != first) | (data.groupby("school").cumcount() < 2)]
    assert len(smaller) < len(data)
    kw = {"engine": engine, "mu": 2.0}
    a, b = fit(data, **kw), fit(smaller, **kw)
    assert [(e.name, e.sensitivity, e.noise_std) for e in a.ledger.events] == \
        [(e.name, e.sensitivity, e.noise_std) for e in b.ledger.events]
    assert a.ledger.delta == b.ledger.delta
    private = {"lambda_min(G~+) (private)", "2 s_G sqrt(p) / lambda_min",  # noisy
               "eigenvalues floored", "sigma~^2 at its floor"}
    assert {k: v for k, v in a.settings.items() if k not in private} == \
        {k: v for k, v in b.settings.items() if k not in private}
    assert (a.nobs, a.n_dropped, a.df_resid) == (b.nobs, b.n_dropped, b.df_resid) \
        == (None, None, 59)
    digits = re.compile(r"-?\d[\d.e+-]*")
    assert [digits.sub("#", t) for t in a.notes] == [digits.sub("#", t) for t in b.notes]
    assert [t for t in a.notes if "CR1" in t or "Privacy unit" in t] == \
        [t for t in b.notes if "CR1" in t or "Privacy unit" in t]
    assert str(len(data)) not in a.summary().as_text()


def test_clusters_keep_their_first_rows():
    # the fit on clusters of up to 30 rows with K = 10 is the fit on each cluster's first
    # 10 rows in the data's order, bit for bit (same seed): not the last, not any 10
    data = make_clusters(5, n_groups=50, lo=5, hi=30)
    res = fit(data, max_group_size=10, mu=2.0)
    kept = data.groupby("school").cumcount() < 10
    assert int(kept.sum()) < len(data)
    first = fit(data[kept.to_numpy()], max_group_size=10, mu=2.0)
    assert np.array_equal(res.params, first.params)
    last = fit(data[(data.groupby("school").cumcount(ascending=False) < 10).to_numpy()],
               max_group_size=10, mu=2.0)
    assert not np.array_equal(res.params, last.params)


# ------------------------------------------------------------------ privacy
def test_replacing_a_whole_cluster_stays_within_the_ledger():
    # the audit's clustered cells: every release, corner clusters of K rows
    for family, weights, condition, form in [("linear", None, "none", "response"),
                                             ("logistic", None, "bounds", "categorical"),
                                             ("expectile", "mallows", "private", "square")]:
        table = audit_cell("dpsgd", "clusters", family, weights, condition, form)
        assert (table["ratio"] <= 1 + 1e-9).all(), table.to_string()
        assert table["ratio"].max() > 0.3  # and the search finds changes of that order


def test_the_audit_catches_a_row_sized_cluster_sensitivity(monkeypatch):
    # charge a cluster like one row (drop K): the audit finds ratios above 1
    original = Problem.matrix_sensitivity

    def row_sized(self, which, pub, n, factor=2.0, max_group_size=1):
        return original(self, which, pub, n, factor, 1)

    monkeypatch.setattr(Problem, "matrix_sensitivity", row_sized)
    table = audit_cell("dpsgd", "clusters", "linear", None, "bounds", "main")
    ratios = table.set_index("release")["ratio"]
    assert ratios["Hessian A"] > 1 and ratios["score covariance S"] > 1


# ------------------------------------------------------------------ coverage
def _coverage(reps, seed, n_groups, mu):
    beta = np.array([1.0, 0.5, -1.0])
    hits, warned = np.zeros(3), 0
    for r in range(reps):
        data = make_clusters(seed + r, n_groups=n_groups, beta=beta)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = fit(data, mu=mu, random_state=seed + 10_000 + r)
        warned += any(issubclass(w.category, dpreg.exceptions.ConvergenceWarning)
                      for w in caught)
        ci = res.conf_int().to_numpy()
        hits += (ci[:, 0] <= beta) & (beta <= ci[:, 1])
    return hits / reps, warned


def test_cluster_coverage_smoke(seed):
    # 10 data sets of 500 clusters: every coefficient covered at least 7 times
    cov, _ = _coverage(10, seed, 500, 5.0)
    assert np.all(cov >= 0.7), cov


@pytest.mark.slow
def test_cluster_coverage(seed):
    # 100 data sets of 500 clusters of 5-20 rows, mu = 5: at least 0.95 within 3 binomial
    # s.e. (the privacy noise of a 20-row cluster makes the plug-in conservative here)
    reps = 100
    cov, warned = _coverage(reps, seed, 500, 5.0)
    assert warned <= 5
    assert np.all(cov >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)), cov


# ------------------------------------------------------------------ bad options
def test_bad_options_are_named():
    data = make_clusters(3, n_groups=20)
    with pytest.raises(OptionError, match="needs a public bound on their rows"):
        fit(data, max_group_size=None)
    with pytest.raises(OptionError, match="needs groups="):
        fit(data, groups=None)
    with pytest.raises(OptionError, match="sampling='uniform'"):
        fit(data, sampling="poisson")
    with pytest.raises(OptionError, match="exceeds the number of clusters G = 20"):
        fit(data, batch_size=21)
    with pytest.raises(OptionError, match="max_group_size"):
        fit(data, max_group_size=0)
    with pytest.raises(OptionError, match="ranges='private'"):
        fit(data, ranges="private")
    with pytest.raises(OptionError, match="at least 2"):
        fit(data.assign(school="one"))
    with pytest.raises(dpreg.exceptions.DataError, match="G K = 2 rows at most < p = 3"):
        fit(data, max_group_size=1, groups=np.repeat([0, 1], [1, len(data) - 1]))


def test_the_step_reads_the_clusters_fill_off_the_private_preconditioner():
    # the sums are divided by the public G K, so the preconditioned step needs the fill
    # n / (G K): read off the released second-moment matrix's intercept entry, it is the
    # true fill with the noise nearly off, and the step is 1 / (1 + p / (m f))
    data = make_clusters(7, n_groups=200, lo=2, hi=20)
    fill = len(data) / (200 * 20)
    assert fill < 0.7  # clusters far from full
    res = fit(data, mu=1e7, batch_size=10)
    note = next(r for r in res.notes if r.startswith("lr = "))
    f = float(re.search(r"f = ([0-9.]+) the clusters' fill", note).group(1))
    assert f == pytest.approx(fill, abs=1e-3)
    assert res.settings["lr"] == pytest.approx(1 / (1 + 3 / (10 * fill)), rel=1e-3)


@pytest.mark.parametrize("kw", [{"engine": "auto"}, {"engine": None, "steps": 3000},
                                {"engine": "ssp", "missing": True},
                                {"engine": "dpsgd", "missing": True}])
def test_the_engine_rule_notes_and_refusals_do_not_read_the_clusters_sizes(kw):
    # the engine rule reads the public G K, not n; the dropped-rows note does not count
    # the rows; neighbours that differ in one cluster's size (or in its missing values)
    # get the same engine, ledger and notes (digits masked: noisy values differ)
    kw = dict(kw)
    data = make_clusters(9, n_groups=59, lo=5, hi=20)
    first = data["school"].iloc[0]
    other = data[(data["school"] != first) | (data.groupby("school").cumcount() < 1)].copy()
    if kw.pop("missing", False):
        other = data.copy()
        other.loc[other.index[:3], "x1"] = np.nan
    if kw.get("engine") is None:
        kw.pop("engine")
        a = dpreg.dp_ols(FORMULA, data, bounds=BOUNDS, groups="school", max_group_size=20,
                         mu=5.0, random_state=1, **kw)
        b = dpreg.dp_ols(FORMULA, other, bounds=BOUNDS, groups="school", max_group_size=20,
                         mu=5.0, random_state=1, **kw)
    else:
        a, b = fit(data, **kw), fit(other, **kw)
    assert a.engine == b.engine
    assert [(e.name, e.sensitivity, e.noise_std) for e in a.ledger.events] == \
        [(e.name, e.sensitivity, e.noise_std) for e in b.ledger.events]
    digits = re.compile(r"-?\d[\d.e+-]*")
    assert [digits.sub("#", t) for t in a.notes] == [digits.sub("#", t) for t in b.notes]


def test_two_single_row_clusters_are_judged_by_g_k_not_n():
    # n = 2 rows < p = 3 columns, but n is protected: the public bound G K = 40 decides
    data = make_clusters(10, n_groups=2, lo=1, hi=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit(data, mu=2.0)
    assert res.nobs is None
    with pytest.raises(dpreg.exceptions.DataError, match="G K = 2 rows at most"):
        fit(data, max_group_size=1, mu=2.0)
