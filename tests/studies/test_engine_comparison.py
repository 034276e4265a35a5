"""The engine comparison study: its replicate, its table and the shortest valid interval."""

import numpy as np
import pandas as pd
import pytest

from dpreg.studies import get_study
from dpreg.studies.engine_comparison import (
    comparison_replicate,
    comparison_table,
    shortest_valid,
)


def _raw(cells):
    """Synthetic replication rows: {(engine, method): (coverage share, length, warned)}."""
    rows = []
    for (engine, method), (covered, length, warned) in cells.items():
        for rep in range(200):
            hit = rep < round(covered * 200)
            for coef, scale in (("Intercept", 10.0), ("x", 0.1)):
                half = length * scale / 2
                centre = 0.0 if hit else 3 * half
                rows.append(dict(n=500, p=2, budget="mu=1", errors="normal", engine=engine,
                                 method=method, target="population", rep=rep, coef=coef,
                                 truth=0.0, estimate=centre, lower=centre - half,
                                 upper=centre + half, warned=int(rep < warned * 200),
                                 seconds=0.1))
    return pd.DataFrame(rows)


def test_shortest_valid_skips_undercovering_and_sample_only_intervals():
    """The shortest interval is chosen among those whose unwarned fits cover within 3 MC
    s.e. (0.95 - 3 * 0.0154 = 0.904 at 200 fits); AdaSSP (for OLS on the sample) and an
    interval that undercovers (0.85) are never chosen however short, and the ratio is
    the runner-up's length over the winner's (scales of the coefficients cancel)."""
    raw = _raw({("dpsgd", "plugin"): (0.85, 1.0, 0.0),   # short but undercovers
                ("dpsgd", "rs"): (0.95, 3.0, 0.0),
                ("dpgd", "batch_means"): (0.91, 2.0, 0.0),  # passes (>= 0.904)
                ("adassp", "plugin"): (0.95, 0.5, 0.0)})
    table = comparison_table(raw)
    row = table.set_index(["engine", "method"]).loc[("dpgd", "batch_means")]
    assert row["coverage_unwarned"] == pytest.approx(0.91)
    assert row["length"] == pytest.approx(2.0 * np.sqrt(10.0 * 0.1))  # geometric mean
    assert not table.set_index(["engine", "method"]).loc[("dpsgd", "plugin"), "passes"]
    best = shortest_valid(table).iloc[0]
    assert (best["engine"], best["method"]) == ("dpgd", "batch_means")
    assert (best["next_engine"], best["next_method"]) == ("dpsgd", "rs")
    assert best["ratio"] == pytest.approx(1.5)
    assert "dpsgd/plugin" in best["failing"] and "adassp" not in best["failing"]


def test_an_interval_valid_only_by_warning_is_not_chosen():
    """Fits that warned are left out of the coverage; an interval whose every fit warned
    has no valid coverage and is never the user's choice."""
    raw = _raw({("dpsgd", "plugin"): (0.5, 1.0, 1.0), ("dpgd", "batch_means"): (0.95, 2.0, 0.0)})
    best = shortest_valid(comparison_table(raw)).iloc[0]
    assert best["engine"] == "dpgd"


def test_replicate_scores_population_and_dpgd_clipped_target():
    """One replication: rows for every interval, the population truth for all, DP-GD's
    rows again against its clipped target, with the fit time and the warning flag."""
    seed = np.random.SeedSequence(3)
    rows = pd.DataFrame(comparison_replicate(seed, n=400, p=3, budget="mu=5",
                                             errors="normal", engine="dpgd", alpha=0.05))
    assert set(rows["target"]) == {"population", "clipped"}
    assert set(rows["method"]) >= {"batch_means"}
    assert (rows["seconds"] > 0).all() and set(rows["warned"]) <= {0, 1}
    pop = rows[rows["target"] == "population"]
    assert len(pop) == 3 * pop["method"].nunique()


def test_study_grid_covers_the_issue():
    """n 500 to 100,000, p 3 and 10, mu 0.5 to 5 and an (epsilon, delta) request, both
    error laws, every engine with intervals for linear regression."""
    study = get_study("engines")
    cells = pd.DataFrame([c.params for c in study.cells()])
    assert set(cells["n"]) == {500, 2000, 10_000, 100_000}
    assert set(cells["p"]) == {3, 10}
    assert {"mu=0.5", "mu=1", "mu=2", "mu=5", "eps=1,delta=1e-5"} <= set(cells["budget"])
    assert set(cells["errors"]) == {"normal", "hetero"}
    assert {"dpsgd", "dpgd", "adassp"} <= set(cells["engine"])
