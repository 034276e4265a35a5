"""The public reference design (dpreg.design.reference_design) and the LDP-SGD warning it
drives: values checked against the reference law's moments computed by hand."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg.design.reference_design import reference_rows
from dpreg.exceptions import ConvergenceWarning
from dpreg.fits.ldp_sgd import UNIFORM_SPREAD, reference_spread, spread_needed
from dpreg.frontend.model import DPRegression


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"age": rng.uniform(20, 60, n), "educ": rng.uniform(8, 18, n),
                      "region": rng.choice(["n", "s", "e", "w"], n)})
    d["y"] = 1 + 0.02 * d.age + 0.1 * d.educ + rng.standard_normal(n)
    return d


BOUNDS = {"age": (16, 70), "educ": (6, 20), "y": (-10, 15)}
LEVELS = {"region": ["n", "s", "e", "w"]}


def _model(formula, n=500):
    levels = LEVELS if "region" in formula else None
    return DPRegression.from_formula(formula, _frame(n), bounds=BOUNDS, levels=levels)


def _dummy_block_spread(levels):
    """sqrt of the smallest eigenvalue of E[z z'] for an intercept and the treatment
    dummies of a factor with equally likely levels (by hand: E d_k = E d_k^2 = 1/L)."""
    q = 1 / levels
    m = np.diag([1.0] + [q] * (levels - 1))
    m[0, 1:] = m[1:, 0] = q
    return math.sqrt(np.linalg.eigvalsh(m)[0])


def test_reference_rows_stay_in_the_declared_boxes_and_levels():
    model = _model("y ~ age * educ + C(region)")
    rows = reference_rows(model.design)
    assert rows.shape == (20_000, model.design.k_exog)
    for j, (lo, hi) in enumerate(model.design.column_bounds):
        assert lo - 1e-9 <= rows[:, j].min() and rows[:, j].max() <= hi + 1e-9
    names = list(model.design.exog_names)
    age, educ = rows[:, names.index("age")], rows[:, names.index("educ")]
    # the interaction column is the product of its main effects' draws
    np.testing.assert_allclose(rows[:, names.index("age:educ")], age * educ)
    # the dummies of one factor are exclusive, each level a quarter of the rows
    dummies = rows[:, [j for j, nm in enumerate(names) if nm.startswith("C(region)")]]
    assert set(dummies.sum(axis=1)) <= {0.0, 1.0}
    assert np.all(np.abs(dummies.mean(axis=0) - 0.25) < 0.02)
    # main effects uniform on their boxes: sd = half-range / sqrt(3)
    assert abs(age.std() - 27 / math.sqrt(3)) < 0.3


@pytest.mark.parametrize("formula, expected", [
    ("y ~ age + educ", UNIFORM_SPREAD),             # main effects: sd / half-range
    ("y ~ age * educ", 1 / 3),                      # the product of two uniform spreads
    ("y ~ age + C(region)", _dummy_block_spread(4)),  # dummies overlap the intercept
])
def test_reference_spread_matches_the_reference_law_by_hand(formula, expected):
    model = _model(formula)
    got = reference_spread(model.design, model.conditioning)
    assert got == pytest.approx(expected, abs=0.01)


def test_reference_spread_needs_every_column_bounded():
    d = _frame(300)
    model = DPRegression.from_formula("y ~ age + educ", d, bounds={"age": (16, 70)})
    assert reference_rows(model.design) is None
    arrays = DPRegression(d["y"], d[["age"]].assign(const=1.0), bounds={"age": (16, 70)})
    rows = reference_rows(arrays.design)
    assert np.all(rows[:, 1] == 1.0) and 16 <= rows[:, 0].min() < rows[:, 0].max() <= 70
    assert reference_spread(arrays.design, arrays.conditioning) == pytest.approx(
        UNIFORM_SPREAD, abs=0.01)


def _public_findings(formula, n, seed=0):
    levels = LEVELS if "region" in formula else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = dpreg.dp_ols(formula, _frame(n, seed), mu=5, bounds=BOUNDS, levels=levels,
                           engine="ldp_sgd", random_state=seed)
    texts = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    return res, [t for t in texts if "cannot mix in one pass" in t]


def test_ldp_fit_warns_where_even_box_filling_data_cannot_mix():
    """n = 6,000 (the fair data's size): one pass needs a spread of 29% in every
    direction; the four-level factor leaves 23% even for data filling their boxes, so
    the fit warns from public numbers alone, whatever the data (the covariates here do
    fill their boxes); with main effects only (58%) it does not."""
    res, public = _public_findings("y ~ age + educ + C(region)", 6000)
    s = res.settings
    share = spread_needed(6000, float(s.value("lr")), float(s.value("lr_decay")),
                          float(s.value("step_offset")), 1.0)
    assert _dummy_block_spread(4) < share < UNIFORM_SPREAD
    assert len(public) == 1 and f"spreads {_dummy_block_spread(4):.0%}" in public[0]
    assert "categorical columns" in public[0]
    assert "cannot mix in one pass" in res.summary().as_text().replace("\n", " ")
    _, public = _public_findings("y ~ age + educ", 6000)
    assert public == []


def test_ldp_interaction_warns_until_the_pass_is_long_enough():
    """An interaction spreads at most a third of its declared box (the product of its
    main effects' spreads): at n = 2,000 one pass needs more, and the warning names the
    structure."""
    model = _model("y ~ age * educ")
    ref = reference_spread(model.design, model.conditioning)
    res, public = _public_findings("y ~ age * educ", 2000)
    s = res.settings
    share = spread_needed(2000, float(s.value("lr")), float(s.value("lr_decay")),
                          float(s.value("step_offset")), 1.0)
    assert share > ref
    assert len(public) == 1 and "interactions" in public[0]
