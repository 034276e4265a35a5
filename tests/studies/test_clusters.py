"""The clusters study: registration, the simulated law, the replicate and its table."""

import numpy as np
import pandas as pd
import pytest

import dpreg.studies as ds
from dpreg.studies import catalog
from dpreg.studies import clusters as cl
from dpreg.studies.runner import run_replicates


def test_registered_listed_and_crossed():
    assert "clusters" in ds.list_studies()
    assert "``clusters``" in catalog.__doc__
    study = ds.get_study("clusters")
    cells = [c.params for c in study.cells()]
    assert len(cells) == len(cl.ENGINES) * 3 * 3 and study.reps == 200
    assert {c["G"] for c in cells} == {30, 100, 500}
    assert {c["mu"] for c in cells} == {1.0, 2.0, 5.0}
    assert {c["engine"] for c in cells} == set(cl.ENGINES) <= set(cl.ENGINE_FITS)
    assert dict(study.cells()[0].constants)["max_group_size"] == cl.MAX_GROUP_SIZE


@pytest.fixture(scope="module")
def large():
    """20,000 clusters (about 240,000 rows)."""
    return cl.simulate_clusters(20_000, np.random.default_rng(29))


def test_sizes_follow_the_stated_law(large):
    """Sizes in [2, 40] with P(m) proportional to 1/m: mean 11.9, share of pairs 0.153,
    share of 30 rows or more 0.097, median 8, each within 4 standard errors of a
    20,000-cluster sample."""
    sizes = large.groupby("cluster").size().to_numpy()
    m, p = cl.size_law()
    assert sizes.min() == 2 and sizes.max() == cl.MAX_GROUP_SIZE
    G = sizes.size
    mean, sd = p @ m, np.sqrt(p @ m ** 2 - (p @ m) ** 2)
    assert mean == pytest.approx(11.896, abs=1e-3)
    assert abs(sizes.mean() - mean) < 4 * sd / np.sqrt(G)
    for share, observed in ((p[0], np.mean(sizes == 2)), (p[m >= 30].sum(),
                                                           np.mean(sizes >= 30))):
        assert abs(observed - share) < 4 * np.sqrt(share * (1 - share) / G)
    assert np.median(sizes) == 8
    # x2 is a cluster-level dummy, about half the clusters treated
    per = large.groupby("cluster")["x2"]
    assert (per.nunique() == 1).all()
    assert abs(per.first().mean() - 0.5) < 4 * 0.5 / np.sqrt(G)


def _icc(values: np.ndarray, cluster: np.ndarray) -> tuple[float, float]:
    """Pairwise intra-cluster correlation of a mean-0 column and its s.e. (clusters
    independent: the ratio estimator's linearization)."""
    values = values - values.mean()
    s = np.bincount(cluster, values)
    q = np.bincount(cluster, values ** 2)
    m = np.bincount(cluster)
    a, b = s ** 2 - q, m * (m - 1.0)
    ratio = a.sum() / b.sum()
    se = np.sqrt(np.sum((a - ratio * b) ** 2)) / b.sum()
    var = values.var()
    return ratio / var, se / var


def test_intra_cluster_correlation_is_0_3_in_x1_and_the_errors(large):
    truth = cl.TRUTH
    errors = (large["y"] - truth["Intercept"] - truth["x1"] * large["x1"]
              - truth["x2"] * large["x2"]).to_numpy()
    cluster = large["cluster"].to_numpy()
    for column in (large["x1"].to_numpy(), errors):
        icc, se = _icc(column, cluster)
        assert se < 0.02  # the sample is large enough for the check to mean something
        assert abs(icc - cl.ICC) < 4 * se, (icc, se)
    # the declared bounds are true bounds; the clipped rows are rare
    for column, (lo, hi) in cl.BOUNDS.items():
        assert lo <= large[column].min() and large[column].max() <= hi, column
    assert np.mean(np.abs(large["x1"]) == 4.0) < 5e-4


def test_noise_off_the_private_interval_is_statsmodels_cr1():
    """With the noise off (mu = 1e12) and K at least every cluster's size, SSP's cluster
    interval is statsmodels' CR1 interval with t(G - 1), the study's non-private one, but
    for CR1's count of rows: the fit counts the public G K (cluster sizes are protected),
    statsmodels the n rows, so the half-lengths differ by one factor for every
    coefficient, sqrt((N-1)/(N-p) (n-p)/(n-1)) in (0.98, 1) for clusters of 2-40 rows.
    Rows are for the slopes only."""
    rows = pd.DataFrame(cl.clusters_replicate(
        np.random.SeedSequence(1), engine="ssp", G=30, mu=1e12, max_group_size=40,
        icc=0.3, alpha=0.05))
    assert set(rows["coef"]) == {"x1", "x2"}
    assert set(rows["method"]) == {"cluster", "pboot", "nonprivate"}
    assert (rows["warned"] == 0).all() and (rows["checks"] == "").all()
    private = rows[rows["method"] == "cluster"].set_index("coef")
    nonprivate = rows[rows["method"] == "nonprivate"].set_index("coef")
    # 1e-5: the noise at mu = 1e12 moves the sums by ~1e-9 relative
    np.testing.assert_allclose(private["estimate"], nonprivate["estimate"], rtol=1e-5)
    ratio = (private["upper"] - private["lower"]) / (nonprivate["upper"] - nonprivate["lower"])
    np.testing.assert_allclose(ratio, ratio.iloc[0], rtol=1e-5)
    assert 0.98 < ratio.iloc[0] < 1 - 1e-4
    assert (nonprivate["truth"] == [0.5, 0.5]).all()


def test_a_tiny_run_gives_the_table():
    raw = run_replicates(ds.get_study("clusters"), reps=3, where={"G": 30, "mu": 5.0},
                         n_jobs=1, progress=False)
    table = cl.clusters_table(raw)
    assert list(table.columns) == [
        "engine", "G", "mu", "method", "coef", "reps", "unwarned", "coverage_unwarned",
        "mcse", "coverage", "coverage_nonprivate", "length_ratio", "length_ratio_unwarned",
        "contains_np", "passes"]
    assert len(table) == 8 and (table["reps"] == 3).all()  # 2 engines x 2 intervals x 2
    assert set(zip(table["engine"], table["method"], strict=True)) == {
        ("ssp", "cluster"), ("ssp", "pboot"), ("dpsgd", "plugin"), ("dpsgd", "rs")}
    assert table["length_ratio"].gt(0).all() and table["passes"].dtype == bool
