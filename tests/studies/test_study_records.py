"""Replicate rows: p-values of the true null agree with the intervals they invert."""

import numpy as np
import pytest

import dpreg
from dpreg.exceptions import OptionError
from dpreg.studies import estimate_rows, result_rows


def _check_pvalues_invert_intervals(rows):
    for r in rows:
        inside = r["lower"] <= r["truth"] <= r["upper"]
        # H0: theta = truth is rejected at level alpha exactly when truth is outside
        assert (r["pvalue"] >= r["alpha"]) == inside, r


def test_result_rows_private_and_oracle(seed):
    sim = dpreg.datasets.simulate_linear(400, random_state=seed)
    model = dpreg.DPRegression.from_formula(sim.formula, sim.data)
    res = model.fit(mu=2.0, steps=40_000, x_bound=4.0, clip=6.0, random_state=seed)
    # a truth near the interval edges exercises both sides of the equivalence
    for shift in (0.0, 0.05, 0.2):
        truth = sim.params.to_numpy() + shift
        rows = result_rows(res, truth, alpha=[0.05, 0.2]) + \
            result_rows(model.fit_oracle(), truth, alpha=0.1)
        _check_pvalues_invert_intervals(rows)
    assert {r["method"] for r in rows} == {"plugin", "rs", "oracle"}
    assert {r["coef"] for r in rows} == {"x1", "x2", "x3"}
    labelled = result_rows(res, truth, methods=["rs"], labels={"rs": "RS"}, steps=7)
    assert {r["method"] for r in labelled} == {"RS"} and labelled[0]["steps"] == 7


def test_result_rows_for_iterate_intervals_centred_away_from_coef(seed):
    """DP-GD with aggregate='last': coef is the last iterate, intervals centre at the
    mean of the estimates; the p-value must follow the interval."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 2))
    y = X @ np.array([0.5, -0.5]) + rng.normal(size=300)
    res = dpreg.DPRegression(y, X).fit(engine="dpgd", rho=0.5, clip=5.0, lr=0.3,
                                       x_bound=5.0, steps=400, aggregate="last",
                                       random_state=seed)
    ci = res.conf_int(0.05, method="batch_means").to_numpy()
    assert not np.allclose(res.params.to_numpy(), ci.mean(axis=1))
    for truth in (ci.mean(axis=1), ci[:, 1] - 1e-9, ci[:, 1] + 1e-9):
        _check_pvalues_invert_intervals(result_rows(res, truth, alpha=0.05))


def test_estimate_rows_fields_and_checks():
    rows = estimate_rows("m", [1.0, 2.0], [1.5, 2.5], names=["a", "b"], k=3)
    assert rows[0] == {"method": "m", "coef": "a", "truth": 1.0, "estimate": 1.5,
                       "lower": rows[0]["lower"], "upper": rows[0]["upper"],
                       "pvalue": rows[0]["pvalue"], "alpha": rows[0]["alpha"], "k": 3}
    assert np.isnan(rows[0]["lower"]) and np.isnan(rows[0]["alpha"])
    assert estimate_rows("m", 0.0, [1.0, 2.0])[1]["truth"] == 0.0  # scalar truth
    with pytest.raises(OptionError, match="truth"):
        estimate_rows("m", [1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(OptionError, match="alpha"):
        estimate_rows("m", [1.0], [1.0], alpha=1.5)
    with pytest.raises(OptionError, match="method"):
        estimate_rows("", [1.0], [1.0])


def test_unknown_method():
    sim = dpreg.datasets.simulate_linear(200, random_state=1)
    res = dpreg.oracle(sim.formula, sim.data)
    with pytest.raises(OptionError, match="not available"):
        result_rows(res, sim.params, methods=["rs"])
