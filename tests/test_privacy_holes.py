"""Issue 15 (privacy holes found in review) and issue 16's "bounds with less friction".

Each test fails on the code before the fix: it asserts what the review found missing.
Bad-input cases of the same review are in tests/test_validation_matrix.py.
"""

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg.design import check_identified, design_from_arrays
from dpreg.design.formula import build_design
from dpreg.design.intervals import derive_bounds
from dpreg.exceptions import (
    ConvergenceWarning,
    DataError,
    OptionError,
    PrivacyLeakError,
    PrivacyLeakWarning,
    SeedReuseWarning,
)
from dpreg.privacy.events import ZERO_OUT
from dpreg.privacy.events import GaussianMechanismEvent as Event
from dpreg.privacy.gdp import mu_to_epsilon
from dpreg.privacy.ledger import Ledger
from dpreg.privacy.mechanisms import gaussian_matrix_mechanism
from dpreg.privacy.request import PrivacyRequest

FAST = dict(mu=1.0, steps=400)
LEVELS = {"g": ["a", "b", "c"]}


def ols(data, formula="y ~ x + C(g) + d", bounds=None, **kw):
    bounds = {"y": (-3.0, 5.0), "x": (-1.0, 1.0), "d": (0.0, 1.0)} if bounds is None else bounds
    return dpreg.dp_ols(formula, data, bounds=bounds, **{**FAST, "levels": LEVELS, **kw})


# ----------------------------------------------------------------- 1. adjacency
def test_poisson_sampling_is_labelled_zero_out_with_the_replace_one_equivalent(small_frame):
    res = ols(small_frame, sampling="poisson", batch_size=20)
    frame = res.ledger.to_frame()
    assert set(frame["adjacency"]) == {ZERO_OUT} == {"zero-out (n public)"}
    mu2, eps2 = res.ledger.replace_one_equivalent
    assert mu2 == pytest.approx(2 * res.ledger.total_mu, rel=1e-15)
    assert eps2 == pytest.approx(mu_to_epsilon(mu2, res.ledger.delta), rel=1e-15)
    note = [n for n in res.notes if "group privacy" in n]
    assert note and f"mu = {mu2:.4g}" in note[0] and ZERO_OUT in note[0]
    assert "Replace-one equivalent" in res.ledger.as_text()
    assert "zero-out (n public)" in res.summary().as_text()


def test_replace_one_equivalent_numbers_of_the_issue():
    # at mu = 1, delta = 1e-5: epsilon about 4.4 under zero-out, about 10 for replace-one
    ledger = Ledger(PrivacyRequest.from_options(mu=1.0))
    ledger.record(Event("A", 1.0, 1.0, ZERO_OUT))
    mu2, eps2 = ledger.replace_one_equivalent
    assert mu2 == pytest.approx(2.0) and eps2 == pytest.approx(10.0, abs=0.01)
    assert ledger.epsilon_gdp == pytest.approx(4.38, abs=0.01)


def test_zero_out_is_accounted_as_add_remove():
    from dpreg.privacy.accountants import rigorous_epsilon

    def path(adjacency):
        return Event("DP-SGD path", 1.0, 1.1, adjacency, "poisson", 10, 1000, 500)

    assert rigorous_epsilon([path(ZERO_OUT)], 1e-5) == rigorous_epsilon([path("add/remove")],
                                                                       1e-5)
    with pytest.raises(OptionError, match="zero-out"):  # uniform sampling is replace-one
        Event("DP-SGD path", 2.0, 2.2, ZERO_OUT, "uniform", 10, 1000, 500)


def test_uniform_sampling_stays_replace_one_without_a_group_note(small_frame):
    res = ols(small_frame)
    assert set(res.ledger.to_frame()["adjacency"]) == {"replace-one"}
    assert res.ledger.replace_one_equivalent is None
    assert not [n for n in res.notes if "group privacy" in n]


def test_subsampled_ledger_prints_no_gdp_view_rho():
    ledger = Ledger(PrivacyRequest.from_options(mu=3.0))
    ledger.record(Event("DP-SGD path", 1.0, 1.2, ZERO_OUT, "poisson", 10, 1000, 2000))
    (line,) = [ln for ln in ledger.as_text().splitlines() if ln.startswith("zCDP rho")]
    assert "GDP view" not in line  # the old line: "zCDP rho: 4.5 (GDP view mu^2/2)"
    assert line.startswith(f"zCDP rho: {ledger.rho_rigorous:.4g} (rigorous")
    assert ledger.rho_rigorous > 100 * ledger.total_mu ** 2 / 2  # what the old line hid


# ----------------------------------------------------------------- 2. row-wise terms
@pytest.mark.parametrize("formula, term, spelling", [
    ("y ~ I(x - x.mean())", "I(x - x.mean())", "I(x - c1)"),
    ("y ~ I(x / x.max())", "I(x / x.max())", "I(x / c1)"),
    ("y ~ I((x - np.median(x)) / np.std(x))", "I((x - np.median(x)) / np.std(x))",
     "I((x - c1) / c2)"),
    ("y ~ d + I(x.rank())", "I(x.rank())", "I(c1)"),
    ("I(y - y.mean()) ~ x", "I(y - y.mean())", "I(y - c1)"),
])
def test_terms_reading_other_rows_are_refused(small_frame, formula, term, spelling):
    with pytest.raises(PrivacyLeakError) as info:
        build_design(formula, small_frame)
    assert repr(term) in str(info.value) and spelling in str(info.value)


def test_a_model_with_a_term_reading_other_rows_is_refused_before_any_rebuild(small_frame):
    """The rebuild with privately learned ranges skips the row-wise check (same formula,
    same rows); the check runs when the model is built, so such a term never reaches a
    fit, whatever ``ranges=``."""
    with pytest.raises(PrivacyLeakError):
        build_design("y ~ I(x - x.mean())", small_frame)
    assert build_design("y ~ I(x - x.mean())", small_frame, check_rowwise=False).nobs > 0
    for ranges in ("auto", "private", "declared"):
        with pytest.raises(PrivacyLeakError):
            dpreg.dp_ols("y ~ I(x - x.mean())", small_frame, mu=1.0, ranges=ranges,
                         bounds={"y": (-10, 10), "x": (-10, 10)})


@pytest.mark.parametrize("formula", ["y ~ np.log(x + 2) + I(x ** 2) + C(g) + x:d",
                                     "y ~ np.exp(x) * d - 1", "y ~ I((x - 0.5) / 2)"])
def test_row_wise_terms_pass(small_frame, formula):
    assert build_design(formula, small_frame).nobs == len(small_frame)


# ----------------------------------------------------------------- 3. data-dependent refusals
@pytest.mark.parametrize("engine", ["dpsgd", "dpgd", "adassp"])
def test_private_fits_run_on_rank_deficient_designs_and_say_so(small_frame, engine):
    kw = {} if engine == "dpsgd" else {"steps": None}
    # a declared level with no rows, and an all-True boolean column
    data = small_frame.assign(t=True)
    res = ols(data, "y ~ x + C(g) + t", levels={"g": ["a", "b", "c", "z"]}, engine=engine,
              **kw)
    assert np.all(np.isfinite(res.params))
    assert any("may be degenerate" in n for n in res.notes)
    with pytest.raises(DataError, match="rank deficient"):  # the oracle still checks
        dpreg.oracle("y ~ x + C(g) + t", data, levels={"g": ["a", "b", "c", "z"]})


@pytest.mark.parametrize("engine", ["dpsgd", "dpgd", "ssp", "adassp", "ldp_sgd"])
def test_private_fit_with_more_columns_than_rows_is_refused_from_public_numbers(
        small_frame, engine):
    # n and p are public: a fit on 3 rows with 5 columns is refused with both numbers
    # (it printed noise before), by every engine
    kw = {} if engine in ("dpsgd", "dpgd") else {"steps": None}
    with pytest.raises(DataError, match=r"n = 3 rows < p = 5 columns"):
        ols(small_frame.iloc[:3], engine=engine, **kw)
    with pytest.raises(DataError, match="more regressors"):
        dpreg.oracle("y ~ x + C(g) + d", small_frame.iloc[:3])
    # n = p runs (the refusal is n < p, not a property of the data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 5 rows: noise, as it says
        res = ols(small_frame.iloc[:5], engine=engine, **kw)
    assert np.all(np.isfinite(res.params))


def test_ldp_refusal_counts_the_rows_sent_not_the_complete_ones(small_frame):
    # under LDP a row with a missing value is sent as noise: 5 rows sent, 2 of them
    # incomplete, is n = 5 >= p = 5 (refusing would publish that rows were missing)
    data = small_frame.iloc[:5].copy()
    data.loc[data.index[:2], "x"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = ols(data, engine="ldp_sgd", steps=None)
    assert np.all(np.isfinite(res.params))
    with pytest.raises(DataError, match=r"n = 3 rows < p = 5"):
        ols(data, engine="dpsgd")  # central: the missing count is public


def test_array_intercept_comes_from_names_or_argument_not_values(small_frame):
    X = np.column_stack([np.ones(len(small_frame)), small_frame["x"]])
    neighbour = X.copy()
    neighbour[0, 0] = 0.5  # one person's value changes
    d1, d2 = design_from_arrays(small_frame["y"], X), design_from_arrays(small_frame["y"],
                                                                         neighbour)
    assert d1.exog_names == d2.exog_names == ("x1", "x2")
    assert not d1.has_intercept and not d2.has_intercept
    d3 = design_from_arrays(small_frame["y"], neighbour, intercept=0)
    assert d3.exog_names == ("const", "x2") and d3.has_intercept
    frame = pd.DataFrame({"const": np.full(len(X), 7.0), "x": small_frame["x"]})
    d4 = design_from_arrays(small_frame["y"], frame, bounds={"x": (-1, 1)})
    assert d4.has_intercept and np.all(d4.exog[:, 0] == 1.0)  # clipped to its bound 1
    assert d4.row_norm_bound() == pytest.approx(math.sqrt(2))


def test_pandas_categorical_categories_are_not_declared(small_frame):
    data = small_frame.assign(g=small_frame["g"].astype("category"))
    assert build_design("y ~ x + g", data).undeclared_levels == ("g",)
    with pytest.warns(PrivacyLeakWarning, match="categories of \\['g'\\]"):
        ols(data, "y ~ x + g", levels=None)
    declared = build_design("y ~ x + g", data, levels={"g": ["a", "b", "c"]})
    assert declared.undeclared_levels == ()


# ----------------------------------------------------------------- 4. missing values
def test_central_fit_states_that_the_missing_count_is_public(small_frame):
    data = small_frame.copy()
    data.loc[[1, 5, 9], "x"] = np.nan
    res = ols(data)
    assert res.n_dropped == 3
    assert any("public by assumption" in n for n in res.notes)


def test_ldp_sgd_sends_null_rows_in_place_and_publishes_no_count(small_frame):
    data = small_frame.copy()
    data.loc[[1, 5, 9], "x"] = np.nan
    kw = dict(engine="ldp_sgd", steps=None, random_state=3)
    res = ols(data, **kw)
    assert res.nobs == len(data) and res.n_dropped == 0
    assert any("null row" in n for n in res.notes)
    assert not any("public by assumption" in n for n in res.notes)
    # the same as a device that replaces those rows by zeros where they stand
    zeros = small_frame.assign(y=small_frame["y"], d=small_frame["d"].astype(float))
    zeros.loc[[1, 5, 9], ["y", "x", "d"]] = 0.0
    zeros.loc[[1, 5, 9], "g"] = "a"
    ref_design = build_design("y ~ x + C(g) + d", zeros)
    X_dev, y_dev = build_design("y ~ x + C(g) + d", data).device_rows()
    ref_X = ref_design.exog.copy()
    ref_X[[1, 5, 9]] = 0.0  # the intercept too: a null row
    np.testing.assert_array_equal(X_dev, ref_X)
    assert np.all(y_dev[[1, 5, 9]] == 0.0)


def test_stream_null_rows_equal_the_one_shot_fit(small_frame):
    data = small_frame.copy()
    data.loc[[1, 250], "x"] = np.nan
    opts = dict(bounds={"y": (-3.0, 5.0), "x": (-1.0, 1.0), "d": (0.0, 1.0)}, mu=1.0,
                missing="drop", random_state=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeedReuseWarning)
        stream = dpreg.LDPStream("y ~ x + d", **opts)
        stream.partial_fit(data.iloc[:200]).partial_fit(data.iloc[200:])
        one = dpreg.LDPStream("y ~ x + d", **opts).partial_fit(data)
    a, b = stream.results(), one.results()
    assert a.nobs == len(data) and a.n_dropped == 0
    np.testing.assert_array_equal(a.params, b.params)


def _public_text(res):
    """What an LDP fit publishes besides its numbers: notes, settings and the summary's
    words (digits removed: the estimates differ between the two data sets)."""
    words = re.sub(r"[-+]?\d*\.?\d+(e[-+]?\d+)?", "#", str(res.summary()))
    return res.notes, " ".join(words.split())


def test_ldp_publishes_nothing_that_depends_on_which_rows_are_missing(small_frame):
    # 12 rows sent, p = 5; in one data set 8 of them miss x. Everything published but
    # the estimates must be the same text (no count, no "n = 4 rows < p = 5" note)
    full = small_frame.iloc[:12].copy()
    holes = full.copy()
    holes.loc[holes.index[:8], "x"] = np.nan
    kw = dict(engine="ldp_sgd", steps=None, random_state=2, missing="drop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = ols(full, **kw), ols(holes, **kw)
    assert a.nobs == b.nobs == 12 and a.n_dropped == b.n_dropped == 0
    assert _public_text(a) == _public_text(b)
    assert not any("n = 4" in n for n in b.notes)


def test_stream_notes_count_the_rows_sent_not_the_first_chunk(small_frame):
    data = small_frame.iloc[:17].copy()
    data.loc[data.index[:2], "x"] = np.nan
    opts = dict(bounds={"y": (-3.0, 5.0), "x": (-1.0, 1.0), "d": (0.0, 1.0)}, mu=1.0,
                missing="drop", levels=LEVELS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stream = dpreg.LDPStream("y ~ x + C(g) + d", **opts).partial_fit(data.iloc[:3])
        early = stream.results()
        stream.partial_fit(data.iloc[3:])
        late = stream.results()
    # 3 rows sent < p = 5: the note says so from the rows sent (3), not the complete (1)
    assert any("n = 3 rows < p = 5" in n for n in early.notes)
    assert not any("n = 1 " in n for n in early.notes)
    assert late.nobs == 17 and not any("degenerate: n" in n for n in late.notes)


def test_stream_whose_first_chunk_is_one_missing_row_is_not_refused(small_frame):
    data = small_frame.iloc[:40].copy()
    data.loc[data.index[0], "x"] = np.nan
    opts = dict(bounds={"y": (-3.0, 5.0), "x": (-1.0, 1.0), "d": (0.0, 1.0)}, mu=1.0,
                missing="drop", random_state=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stream = dpreg.LDPStream("y ~ x + d", **opts).partial_fit(data.iloc[:1])
        stream.partial_fit(data.iloc[1:])
        one = dpreg.LDPStream("y ~ x + d", **opts).partial_fit(data)
    assert stream.nobs == 40
    np.testing.assert_array_equal(stream.results().params, one.results().params)


def test_central_fit_with_no_complete_row_is_refused_by_name(small_frame):
    data = small_frame.assign(x=np.nan)
    with pytest.raises(DataError, match="no rows left after removing rows with missing"):
        ols(data)


# ----------------------------------------------------------------- 5. seeds
def test_integer_seed_warns_and_no_seed_is_silent(small_frame):
    with pytest.warns(SeedReuseWarning, match="never for a second release") as record:
        ols(small_frame, random_state=1)
    assert record[0].filename == __file__  # points at the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeedReuseWarning)
        ols(small_frame)  # the default: fresh OS entropy, no warning
        ols(small_frame, random_state=np.random.default_rng(0))
    with pytest.warns(SeedReuseWarning):
        dpreg.LDPStream("y ~ x", mu=1.0, random_state=2)
    with pytest.warns(SeedReuseWarning):
        ols(small_frame, random_state=np.random.SeedSequence(3))
    assert not issubclass(SeedReuseWarning, PrivacyLeakWarning)


def test_same_seed_on_neighbours_cancels_the_noise():
    # why a seed is never for a second release: the noise is the same, so the
    # difference of two releases is the exact difference of the private statistics
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3))
    A = A + A.T
    B = A.copy()
    B[0, 0] += 0.3  # a neighbouring data set's statistic
    event = Event("Hessian A", 1.0, 5.0, "replace-one")
    a, _ = gaussian_matrix_mechanism(A, event, np.random.default_rng(7))
    b, _ = gaussian_matrix_mechanism(B, event, np.random.default_rng(7))
    np.testing.assert_allclose(b - a, B - A, atol=1e-12)


def test_fit_docstring_says_an_omitted_seed_is_neither_stored_nor_printed(small_frame):
    doc = dpreg.DPRegression.fit.__doc__
    assert "drawn and printed" not in doc and "nothing is stored or printed" in doc
    res = ols(small_frame)
    assert res.settings["random_state"] == "fresh OS entropy (not stored)"


# ----------------------------------------------------------------- 6. bad input
def test_covariates_near_1e300_are_not_called_collinear(small_frame):
    rng = np.random.default_rng(1)
    huge = small_frame.assign(x=small_frame["x"] * 1e300,
                              x2=rng.uniform(-1, 1, len(small_frame)) * 1e300)
    check_identified(build_design("y ~ x + x2", huge))  # old code: "rank deficient"
    with pytest.raises(DataError, match="x3"):  # true collinearity is still found
        check_identified(build_design("y ~ x + x2 + x3", huge.assign(x3=huge["x"] / 2)))
    with pytest.warns(PrivacyLeakWarning):  # no bounds: rows clipped to sqrt(p)
        res = dpreg.dp_ols("y ~ x + x2", huge, bounds={"y": (-3, 5)}, **FAST)
    assert np.all(np.isfinite(res.params))


def test_bounds_on_a_transformed_main_effect_are_enforced(small_frame):
    data = small_frame.assign(w=np.exp(3 * small_frame["x"]))  # log(w) in (-3, 3)
    d = build_design("y ~ np.log(w)", data, bounds={"np.log(w)": (0, 1)})
    col = d.exog[:, d.exog_names.index("np.log(w)")]
    assert col.min() == 0.0 and col.max() == 1.0  # clipped in the design
    assert d.row_norm_bound() == pytest.approx(math.sqrt(2))


@pytest.mark.parametrize("bounds, needle", [
    ({"y": (-1e301, 1e301)}, "bounds['y']"),
    ({"x": (0, 1e60)}, "exceed 1e+50"),
])
def test_bounds_whose_products_overflow_are_refused(small_frame, bounds, needle):
    with pytest.raises(OptionError) as info:
        build_design("y ~ x", small_frame, bounds=bounds)
    assert needle in str(info.value)


def test_object_and_datetime_columns_are_named_with_their_dtype(small_frame):
    with pytest.raises(DataError, match="'x' has dtype object but holds numbers"):
        build_design("y ~ x", small_frame.assign(x=small_frame["x"].astype(object)))
    stamps = pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(len(small_frame)), "D")
    with pytest.raises(DataError, match="'t' has dtype datetime64"):
        build_design("y ~ x + t", small_frame.assign(t=stamps))
    # declared as categorical, numbers in an object column are fine
    ok = build_design("y ~ d2", small_frame.assign(d2=small_frame["d"].astype(object)),
                      levels={"d2": [0, 1]})
    assert ok.undeclared_levels == ()


# ----------------------------------------------------------------- 16. bounds, less friction
def test_one_bounds_dict_serves_several_models(small_frame):
    data = small_frame.assign(w=np.exp(small_frame["x"]) + 1.0, s=small_frame["g"])
    bounds = {"y": (-3.0, 5.0), "x": (-1.0, 1.0), "d": (0.0, 1.0), "w": (1.0, 4.0),
              "s": (0, 1)}
    for formula in ("y ~ x", "y ~ d + np.log(w)", "y ~ x + C(g)"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)
            d = build_design(formula, data, bounds=bounds)
        assert d.undeclared == ()
    with pytest.raises(OptionError, match="did you mean \\['w'\\]"):
        build_design("y ~ x", data, bounds={"ww": (0, 1)})


@pytest.mark.parametrize("term, raw, expected", [
    ("np.log(w)", {"w": (1.0, math.e ** 2)}, (0.0, 2.0)),
    ("np.log1p(w)", {"w": (0.0, math.e - 1)}, (0.0, 1.0)),
    ("np.sqrt(w)", {"w": (4.0, 9.0)}, (2.0, 3.0)),
    ("np.exp(x)", {"x": (-1.0, 0.0)}, (math.exp(-1), 1.0)),
    ("I(x * d)", {"x": (-1.0, 2.0), "d": (0.0, 3.0)}, (-3.0, 6.0)),
    ("I(x + d)", {"x": (-1.0, 2.0), "d": (0.0, 3.0)}, (-1.0, 5.0)),
    ("I(x ** 2)", {"x": (-1.0, 2.0)}, (0.0, 4.0)),
    ("I(1 / w)", {"w": (2.0, 4.0)}, (0.25, 0.5)),
])
def test_derived_bounds(term, raw, expected):
    lo, hi = derive_bounds(term, raw)
    assert lo == pytest.approx(expected[0], abs=1e-11) and lo <= expected[0]
    assert hi == pytest.approx(expected[1], abs=1e-11) and hi >= expected[1]


@pytest.mark.parametrize("term, raw", [
    ("np.log(w)", {"w": (0.0, 1.0)}),        # log reaches -inf
    ("np.sqrt(w)", {"w": (-1.0, 1.0)}),      # outside the domain
    ("I(1 / w)", {"w": (-1.0, 1.0)}),        # divisor may be 0
    ("I(w - w.mean())", {"w": (0.0, 1.0)}),  # not a function of the row
    ("np.sin(w)", {"w": (0.0, 1.0)}),        # not in the sound list
    ("np.log(v)", {"w": (1.0, 2.0)}),        # v has no bounds
])
def test_bounds_not_derivable_soundly(term, raw):
    assert derive_bounds(term, raw) is None


def test_derived_bounds_hold_on_random_points():
    rng = np.random.default_rng(4)
    raw = {"x": (-2.0, 3.0), "w": (0.5, 7.0)}
    for code in ("I(x * w + np.log(w))", "I((x - 1) ** 3 / w)", "np.exp(-x) + np.sqrt(w)",
                 "I(abs(x) * np.log1p(w) - x ** 2)"):
        lo, hi = derive_bounds(code, raw)
        x = np.concatenate([rng.uniform(*raw["x"], 5000), raw["x"]])
        w = np.concatenate([rng.uniform(*raw["w"], 5000), raw["w"]])
        values = eval(code.replace("I(", "("), {"np": np, "x": x, "w": w, "abs": np.abs})
        assert lo <= values.min() and values.max() <= hi, code


def test_formula_uses_derived_bounds_and_lists_them(small_frame):
    data = small_frame.assign(w=np.exp(2 * (small_frame["x"] + 1)))  # log(w) in [0, 4]
    bounds = {"y": (-3.0, 5.0), "x": (-1.0, 1.0), "w": (1.0, math.exp(4))}
    d = build_design("y ~ np.log(w) + I(x * d)", data, bounds={**bounds, "d": (0, 1)})
    assert d.undeclared == ()
    assert set(d.derived_bounds) == {"np.log(w)", "I(x * d)"}
    assert d.row_norm_bound() == pytest.approx(math.sqrt(1 + 16 + 1), rel=1e-9)
    assert np.abs(d.exog).max(axis=0)[1] <= d.derived_bounds["np.log(w)"][1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        res = dpreg.dp_ols("y ~ np.log(w)", data, bounds=bounds, **FAST)
    assert any("derived" in n and "np.log(w) in [" in n for n in res.notes)


def test_an_underivable_bound_is_asked_for_by_name(small_frame):
    # in the declared boxes, where x's box [-1, 1] holds 0: with ranges learned (and
    # fresh noise) a range of x that excludes 0 would make the bound derivable
    with pytest.warns(PrivacyLeakWarning, match=r"I\(1 / x\)"):
        ols(small_frame, "y ~ I(1 / x)", ranges="declared", random_state=3)


@pytest.mark.parametrize("engine", ["ssp", "dpsgd"])
def test_a_budget_beyond_float_range_prints_an_infinite_epsilon(small_frame, engine):
    # mu = 1e9 (the noise off, as users check against OLS) overflowed inside the PLD and
    # crashed summary(); infinity is a true (trivial) bound
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ols(small_frame, engine=engine, mu=1e9,
                  steps=None if engine == "ssp" else 400)
        text = res.summary().as_text()
    eps, name = res.ledger.epsilon_rigorous
    assert math.isinf(eps) and "beyond float range" in name
    assert "(inf, 1e-05)" in text
