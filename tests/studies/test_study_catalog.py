"""The shipped studies: definitions, one small replication each, reference estimators."""

import math

import numpy as np
import pandas as pd
import pytest

import dpreg.studies as ds
from dpreg.exceptions import OptionError
from dpreg.studies import replicates as rp
from dpreg.studies.catalog import LDP_TABLE1_PAPER
from dpreg.studies.reference import averaged_sgd, clipped_minimizer, ols

SHIPPED = ["smoke", "robustness", "textbook", "engines", "clusters", "iv", "dpsgd-fig1",
           "dpsgd-fig2", "dpsgd-fig3", "ldp-table1", "ldp-fig3", "dpgd-fig5-6"]


def test_catalog_lists_the_issue_studies():
    assert ds.list_studies() == SHIPPED
    assert len(ds.get_study("dpsgd-fig2").cells()) == 2 * 2 * 5
    assert [c.params["n"] for c in ds.get_study("dpsgd-fig2").cells()][:5] == \
        [500, 750, 1000, 1250, 1500]
    assert ds.get_study("dpsgd-fig3").requires == ("dpgd",)
    assert ds.get_study("dpgd-fig5-6").requires == ("dpgd",)
    # the robustness study: every family, batches, small n, p = 20, an (eps, delta) request
    cells = [c.params for c in ds.get_study("robustness").cells()]
    assert {c["family"] for c in cells} == {"linear", "huber", "logistic", "expectile"}
    assert {c["batch"] for c in cells} >= {1, 10, 50}
    assert any(c["p"] == 20 for c in cells) and any("eps" in c["budget"] for c in cells)
    with pytest.raises(OptionError, match="unknown study"):
        ds.get_study("fig99")


def test_every_study_has_figures_and_distinct_seeds():
    seeds = {ds.get_study(name).seed for name in SHIPPED}
    assert len(seeds) == len(SHIPPED)
    for name in SHIPPED:
        assert ds.get_study(name).figures


def test_ldp_reference_is_table1_of_the_paper():
    ref = LDP_TABLE1_PAPER.set_index(["mu", "n", "method"])
    assert ref.loc[(1.0, 40_000, "PPI"), "coverage"] == pytest.approx(0.9138)
    assert ref.loc[(2.0, 200_000, "PRS"), "length"] == pytest.approx(0.0293)
    assert len(ref) == 30


def _frame(rows):
    frame = pd.DataFrame(rows)
    assert {"method", "coef", "truth", "estimate"} <= set(frame.columns)
    return frame


def test_smoke_and_figure2_replicates():
    seed = np.random.SeedSequence(1)
    f = _frame(rp.smoke_replicate(seed, n=200, p=3, steps_per_n=50, mu=2.0, x_bound=4.0,
                                  clip=6.0, alpha=0.05))
    assert sorted(f.method.unique()) == ["oracle", "plugin", "rs"] and len(f) == 9
    f = _frame(rp.dpsgd_coverage_replicate(np.random.SeedSequence(2), family="logistic",
                                           design="toeplitz", n=300, mu=2.0,
                                           steps_power=1.5, x_bound=4.0, clip=6.0,
                                           alpha=0.05))
    assert len(f) == 9 and (f.truth.between(0, 0.5)).all()  # theta ~ U[0, 1/2]


def test_figure1_replicate_reference_estimators():
    f = _frame(rp.dpsgd_mse_replicate(np.random.SeedSequence(3), n=200, p=3, mu=2.0,
                                      kappas=(1.0, 1.5), lr=0.5, lr_decay=0.501,
                                      x_bound=4.0, clip=6.0))
    assert f.groupby("method").size().to_dict() == {
        "DP-SGD": 6, "OLS (non-private)": 3, "SGD-cyc (non-private, one pass)": 3,
        "SGD-ran (non-private)": 6}
    assert f[f.method == "OLS (non-private)"].steps.isna().all()
    assert sorted(f.steps.dropna().unique()) == [200, round(200 ** 1.5)]


@pytest.mark.parametrize("name", ["dpsgd-fig3", "dpgd-fig5-6"])
def test_dpgd_replicates(name):
    if name == "dpsgd-fig3":
        f = _frame(rp.dpsgd_vs_dpgd_replicate(
            np.random.SeedSequence(4), n=300, p=3, mu=2.0, kappas=(1.5,), gd_steps=(5,),
            gd_lr=0.5, gd_runs=4, x_bound=4.0, clip=6.0, alpha=0.05))
        assert set(f.method) == {"DP-SGD plug-in", "DP-GD last-step plug-in",
                                 "DP-GD runs (t)"}
        assert f.loc[f.method != "DP-SGD plug-in", "kappa"].isna().all()
    else:
        f = _frame(rp.dpgd_intervals_replicate(
            np.random.SeedSequence(5), n=500, p=4, rho=0.5, clip_per_sqrt_p=5.0, lr=1 / 3,
            burn_in=5, m=4, totals=(40, 400), alpha=0.05))
        # runs only when total / m > burn_in: 40 / 4 = 10 > 5 and 400 / 4 = 100 > 5
        assert set(f.method) == {"OLS (non-private)", "batch_means", "checkpoints", "runs"}
        assert set(f.target) == {"theta*", "clipped minimizer"}
        star = f[(f.target == "theta*") & (f.coef == "x1")].truth
        assert star.nunique() == 1  # the same theta* in every row


def test_ldp_replicate_levels():
    f = _frame(rp.ldp_coverage_replicate(np.random.SeedSequence(6), n=3000, p=2, mu=2.0,
                                         c=1.345, alphas=(0.05, 0.1),
                                         methods=("plugin", "rs")))
    assert set(f.method) == {"PPI", "PRS"} and sorted(f.alpha.unique()) == [0.05, 0.1]
    assert (f.truth == 1.0).all() and len(f) == 2 * 2 * 3


def test_averaged_sgd_matches_a_plain_loop_and_converges(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(50, 2))
    y = X @ np.array([1.0, 2.0]) + rng.normal(size=50)
    theta, avg = np.zeros(2), np.zeros(2)
    for t in range(120):  # cyclic: rows 0..49, 0..49, 0..19
        i = t % 50
        theta = theta - 0.3 * (t + 1) ** -0.6 * (X[i] @ theta - y[i]) * X[i]
        avg += (theta - avg) / (t + 1)
    np.testing.assert_allclose(averaged_sgd(X, y, 120, lr=0.3, lr_decay=0.6,
                                            sampling="cyclic"), avg, rtol=1e-12)
    X = rng.normal(size=(400, 2))
    y = X @ np.array([1.0, 2.0]) + rng.normal(size=400)
    beta, bse = ols(X, y)
    est = averaged_sgd(X, y, 400 ** 2, lr=0.5, lr_decay=0.501, rng=rng)
    # averaged SGD with T = n^2 is within a small fraction of OLS's own s.e. of OLS
    assert np.all(np.abs(est - beta) < 0.25 * bse)
    with pytest.raises(ValueError, match="rng"):
        averaged_sgd(X, y, 10, lr=0.1, lr_decay=0.6)


def test_clipped_minimizer_is_ols_without_clipping_and_huber_like_with(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 3))
    y = X @ np.ones(3) + rng.normal(size=300)
    np.testing.assert_allclose(clipped_minimizer(X, y, 1e9, lr=0.5), ols(X, y)[0],
                               atol=1e-10)
    y[:10] += 50  # outliers: clipping bounds their pull
    clipped = clipped_minimizer(X, y, 2.0, lr=0.5)
    assert np.linalg.norm(clipped - 1) < np.linalg.norm(ols(X, y)[0] - 1)
    # first-order condition of the clipped objective
    r = X @ clipped - y
    scale = np.minimum(1, 2.0 / (np.abs(r) * np.linalg.norm(X, axis=1)))
    assert np.max(np.abs(X.T @ (r * scale))) / 300 < 1e-10
    assert math.isfinite(clipped.sum())
