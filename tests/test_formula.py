"""Formula front end: term names, missing values and every bad-input case of issue 2."""

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg.design import check_identified, design_from_arrays
from dpreg.design.formula import build_design
from dpreg.exceptions import DataError, FormulaError, OptionError


def test_terms_categorical_interaction_and_intercept(small_frame):
    d = build_design("y ~ x + C(g) + x:d", small_frame)
    assert d.exog_names == ("Intercept", "C(g)[T.b]", "C(g)[T.c]", "x", "x:d")
    d0 = build_design("y ~ x - 1", small_frame)
    assert d0.exog_names == ("x",)
    assert d.exog.flags["C_CONTIGUOUS"] and d.exog.dtype == np.float64


def test_string_column_is_categorical(small_frame):
    d = build_design("y ~ g", small_frame)
    assert d.exog_names == ("Intercept", "g[T.b]", "g[T.c]")


def test_missing_drop_counts_and_raise_names_problem(small_frame):
    df = small_frame.copy()
    df.loc[[3, 7, 11], "x"] = np.nan
    df.loc[5, "y"] = np.nan
    d = build_design("y ~ x", df)
    assert d.n_dropped == 4 and d.nobs == len(df) - 4
    with pytest.raises(DataError, match="'x': 3"):
        build_design("y ~ x", df, missing="raise")
    with pytest.raises(OptionError, match="missing"):
        build_design("y ~ x", df, missing="zero")


def test_bounds_give_row_norm_bound(small_frame, small_bounds):
    d = build_design("y ~ x + C(g) + d", small_frame, bounds=small_bounds)
    # intercept 1, one of the two g dummies 1, |x| <= 1, |d| <= 1
    assert d.row_norm_bound() == pytest.approx(2.0)
    assert d.endog_bounds == (-3.0, 5.0)
    assert d.undeclared == ()
    d2 = build_design("y ~ x + d", small_frame, bounds={"x": (-1, 1)})
    assert d2.undeclared == ("d",) and d2.row_norm_bound() is None


@pytest.mark.parametrize("formula, error, match", [
    ("y ~ nope", FormulaError, "nope"),
    ("g ~ x", DataError, "not numeric"),
    ("y ~ 0", DataError, "no columns"),
    ("y x", FormulaError, "formula"),
])
def test_bad_formulas(small_frame, formula, error, match):
    df = small_frame.assign(x2=2 * small_frame["x"])
    with pytest.raises(error, match=match):
        build_design(formula, df)


def test_empty_after_dropping(small_frame):
    # the design is built (under LDP its rows are sent as null rows); fits that use
    # the complete rows refuse it, naming the reason
    df = small_frame.assign(x=np.nan)
    design = build_design("y ~ x", df)
    assert design.nobs == 0 and design.n_dropped == len(df)
    with pytest.raises(DataError, match="no rows left"):
        dpreg.dp_ols("y ~ x", df, mu=1.0, bounds={"y": (-3, 5), "x": (-1, 1)})
    with pytest.raises(DataError, match="no rows left"):
        dpreg.oracle("y ~ x", df)


def test_non_finite_values_named(small_frame):
    df = small_frame.copy()
    df.loc[2, "x"] = np.inf
    with pytest.raises(DataError, match="'x'"):
        build_design("y ~ x", df)
    df = small_frame.copy()
    df.loc[2, "y"] = -np.inf
    with pytest.raises(DataError, match="'y'"):
        build_design("y ~ x", df)


def test_duplicate_columns(small_frame):
    df = pd.concat([small_frame, small_frame[["x"]]], axis=1)
    with pytest.raises(DataError, match="duplicate"):
        build_design("y ~ d", df)


def test_bad_bounds(small_frame):
    with pytest.raises(OptionError, match="bounds\\['x'\\]"):
        build_design("y ~ x", small_frame, bounds={"x": (1, -1)})
    with pytest.raises(OptionError, match="zzz"):
        build_design("y ~ x", small_frame, bounds={"zzz": (0, 1)})


def test_row_norm_bound_for_other_codings(small_frame):
    # Sum coding has rows like (-1, -1): squared norm 2, not 1 (a treatment dummy)
    d = build_design("y ~ C(g, Sum)", small_frame)
    assert d.row_norm_bound() == pytest.approx(np.sqrt(1 + 2))
    observed = np.sqrt((d.exog ** 2).sum(axis=1)).max()
    assert observed <= d.row_norm_bound() + 1e-12
    d = build_design("y ~ C(g, Sum):x", small_frame, bounds={"x": (-1, 1)})
    assert np.sqrt((d.exog ** 2).sum(axis=1)).max() <= d.row_norm_bound() + 1e-12


def test_levels_declared_and_checked(small_frame):
    d = build_design("y ~ C(g)", small_frame, levels={"g": ["c", "b", "a"]})
    assert d.exog_names == ("Intercept", "C(g)[T.b]", "C(g)[T.a]")  # declared order
    assert d.undeclared_levels == ()
    # declared but unobserved: a zero column. The design is built (a private fit must
    # not refuse on the data's rank); only the oracle's identification check refuses it
    unobserved = build_design("y ~ C(g)", small_frame, levels={"g": ["a", "b", "c", "z"]})
    assert "C(g)[T.z]" in unobserved.exog_names
    with pytest.raises(DataError, match="T.z"):
        check_identified(unobserved)
    assert build_design("y ~ C(g)", small_frame).undeclared_levels == ("C(g)",)
    with pytest.raises(DataError, match="outside the declared levels"):
        build_design("y ~ C(g)", small_frame, levels={"g": ["a", "b"]})


@pytest.mark.parametrize("term", ["C(g)", "C(g):x", "C(g, Treatment('b'))", "C(g, Sum)"])
def test_declared_levels_give_patsys_design_without_a_row_by_row_conversion(
        small_frame, monkeypatch, term):
    import patsy
    import patsy.categorical
    levels = ["c", "b", "a"]
    frame = small_frame.assign(g=pd.Categorical(small_frame["g"], categories=levels))
    want = patsy.dmatrix(term, frame, return_type="dataframe")  # patsy's own C
    calls = []
    convert = patsy.categorical.categorical_to_int
    monkeypatch.setattr("patsy.build.categorical_to_int",
                        lambda data, *a, **k: calls.append(type(data)) or convert(data, *a, **k))
    d = build_design(f"y ~ {term}", small_frame, levels={"g": levels})
    assert d.exog_names == tuple(want.columns)
    np.testing.assert_array_equal(d.exog, want.to_numpy())
    if term in ("C(g)", "C(g):x"):  # C() without options: patsy reads the codes
        assert calls and all(c is pd.Series for c in calls)


def test_later_builds_map_categoricals_whatever_their_categories(small_frame):
    """A stored design's C() term reads new rows whose Categorical lists the levels in
    another order, or only some of them, as patsy's own C() did (predictions, chunks)."""
    from dpreg.design.formula.rows import build_exog, build_rows

    levels = {"g": ["c", "b", "a"]}
    d = build_design("y ~ C(g) + x", small_frame, levels=levels, bounds={"x": (-1, 1)})
    new = pd.DataFrame({"x": [0.1, -0.2, 0.3],
                        "g": pd.Categorical(["a", "b", "a"], categories=["a", "b", "c"])})
    X = build_exog(d.design_info, new)
    names = list(d.exog_names)
    np.testing.assert_array_equal(X[:, names.index("C(g)[T.a]")], [1, 0, 1])
    np.testing.assert_array_equal(X[:, names.index("C(g)[T.b]")], [0, 1, 0])
    part = small_frame.iloc[:50].assign(
        g=pd.Categorical(small_frame["g"].iloc[:50], categories=["b", "a", "c"]))
    y, X, dropped = build_rows(d, part, missing="drop", bounds={"x": (-1, 1)},
                               levels=levels)
    want = build_design("y ~ C(g) + x", small_frame.iloc[:50], levels=levels,
                        bounds={"x": (-1, 1)})
    np.testing.assert_array_equal(X, want.exog)
    undeclared = build_design("y ~ C(g) + x", small_frame.assign(
        g=pd.Categorical(small_frame["g"])), bounds={"x": (-1, 1)})
    np.testing.assert_array_equal(build_exog(undeclared.design_info, new),
                                  build_exog(undeclared.design_info,
                                             new.assign(g=new["g"].astype(str))))


def test_stateful_transforms_are_recorded(small_frame):
    assert build_design("y ~ standardize(x)", small_frame).stateful == ("standardize(x)",)
    assert build_design("y ~ np.log(x + 2)", small_frame).stateful == ()


def test_nullable_dtypes_and_normalized_bound_keys(small_frame):
    df = small_frame.assign(d=small_frame["d"].astype("Int64"))
    df.loc[4, "d"] = pd.NA
    d = build_design("y ~ d", df)
    assert d.n_dropped == 1
    d = build_design("y ~ np.log(x+2)", small_frame, bounds={"np.log(x+2)": (0, 2)})
    assert d.undeclared == ()
    with pytest.raises(OptionError, match="categorical"):
        build_design("y ~ g", small_frame, bounds={"g": (0, 1)})


def test_identification_is_checked_for_oracles_only(small_frame):
    d = build_design("y ~ x + C(g) + d", small_frame.iloc[:3])
    assert d.nobs == 3 and d.k_exog == 5
    with pytest.raises(DataError, match="more regressors"):
        check_identified(d)
    collinear = build_design("y ~ x + x2", small_frame.assign(x2=2 * small_frame["x"]))
    with pytest.raises(DataError, match="x2"):
        check_identified(collinear)


def test_arrays_front_end(small_frame):
    X = np.column_stack([np.ones(len(small_frame)), small_frame["x"]])
    d = design_from_arrays(small_frame["y"], X, bounds={"x2": (-1, 1)}, intercept=0)
    assert d.exog_names == ("const", "x2") and d.endog_name == "y"
    assert d.row_norm_bound() == pytest.approx(np.sqrt(2))
    Xn = X.copy()
    Xn[0, 1] = np.nan
    assert design_from_arrays(small_frame["y"], Xn).n_dropped == 1
    with pytest.raises(DataError, match="missing"):
        design_from_arrays(small_frame["y"], Xn, missing="raise")
    with pytest.raises(DataError, match="numeric"):
        design_from_arrays(["a"] * 3, np.ones((3, 1)))
    with pytest.raises(DataError, match="rows"):
        design_from_arrays(np.ones(3), np.ones((4, 1)))


def test_bounds_on_a_transformed_outcome_are_enforced_with_copy_on_write_pandas():
    # pandas 3 (copy-on-write) hands out read-only arrays: clipping the outcome of
    # np.log1p(y) to its declared bounds crashed with "output array is read-only"
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"y": rng.uniform(0, 400, 200), "x": rng.uniform(0, 10, 200)})
    before = data.copy()
    design = build_design("np.log1p(y) ~ x", data, bounds={"np.log1p(y)": (0.0, 5.0),
                                                            "x": (0.0, 10.0)})
    expected = np.clip(np.log1p(data["y"].to_numpy()), 0.0, 5.0)
    np.testing.assert_array_equal(design.endog, expected)  # clipped at 5 = log1p(147)
    assert (np.log1p(data["y"]) > 5).any()  # some rows were clipped ...
    pd.testing.assert_frame_equal(data, before)  # ... in dpreg's copy, not the caller's


def test_read_only_input_arrays_are_accepted_and_untouched():
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, 100)
    y = 1 + x + rng.normal(0, 1, 100)
    x.setflags(write=False)
    y.setflags(write=False)
    data = pd.DataFrame({"y": y, "x": x}, copy=False)
    design = build_design("y ~ x", data, bounds={"y": (-1.0, 1.0), "x": (-1.0, 1.0)})
    assert design.endog.max() <= 1.0 and design.exog[:, 1].max() <= 1.0
    assert y.max() > 1.0 and not y.flags.writeable  # the caller's arrays unchanged
    X = np.column_stack([np.ones(100), x])
    X.setflags(write=False)
    design = design_from_arrays(y, X, bounds={"y": (-1.0, 1.0), "x1": (-1.0, 1.0)})
    assert design.endog.max() <= 1.0


@pytest.mark.parametrize("formula", ["y ~ x1 + x2 + x1:x2", "y ~ x1 + C(g)", "y ~ 0 + x1",
                                     "y ~ np.log(x2) + C(g):x1"])
def test_a_rebuild_from_its_template_equals_patsys(formula):
    # the rebuild with learned ranges reuses the first design's columns: for raw numeric
    # terms it is built with numpy, otherwise by patsy; either way it equals a fresh
    # build with the new bounds, missing rows included
    rng = np.random.default_rng(0)
    n = 300
    data = pd.DataFrame({"y": rng.normal(size=n), "x1": rng.uniform(-3, 3, n),
                         "x2": rng.uniform(0, 1, n), "g": rng.choice(["a", "b", "c"], n)})
    data.loc[[5, 77], "x1"] = np.nan
    data.loc[[9], "y"] = np.nan
    wide = {"y": (-5, 5), "x1": (-3, 3), "x2": (0, 1)}
    narrow = {"y": (-2, 2), "x1": (-1.5, 1.0), "x2": (0.1, 0.9)}
    levels = {"g": ["a", "b", "c"]}
    first = build_design(formula, data, bounds=wide, levels=levels)
    fresh = build_design(formula, data, bounds=narrow, levels=levels)
    again = build_design(formula, data, bounds=narrow, levels=levels, check_rowwise=False,
                         template=first)
    assert again.exog_names == fresh.exog_names and again.endog_name == fresh.endog_name
    np.testing.assert_array_equal(again.exog, fresh.exog)
    np.testing.assert_array_equal(again.endog, fresh.endog)
    np.testing.assert_array_equal(again.missing_rows, fresh.missing_rows)
    assert again.x_norm_bound == fresh.x_norm_bound
    assert again.column_bounds == fresh.column_bounds


def test_a_rebuild_of_other_terms_does_not_parse_the_formula_again(monkeypatch):
    # patsy builds the template's terms on the clipped rows (build_design_matrices), with
    # no second parse and type sniffing (dmatrices)
    import patsy

    rng = np.random.default_rng(3)
    data = pd.DataFrame({"y": rng.normal(size=80), "x": rng.uniform(0.5, 2, 80),
                         "g": rng.choice(["a", "b"], 80)})
    formula = "y ~ np.log(x) + C(g)"
    first = build_design(formula, data, bounds={"y": (-4, 4), "x": (0.1, 4)},
                         levels={"g": ["a", "b"]})

    def no_parse(*args, **kwargs):
        raise AssertionError("patsy.dmatrices was called")

    monkeypatch.setattr(patsy, "dmatrices", no_parse)
    again = build_design(formula, data, bounds={"y": (-1, 1), "x": (0.6, 1.5)},
                         levels={"g": ["a", "b"]}, check_rowwise=False, template=first)
    assert again.exog_names == first.exog_names
    column = again.exog[:, list(again.exog_names).index("np.log(x)")]
    assert column.max() <= np.log(1.5) + 1e-12 and column.min() >= np.log(0.6) - 1e-12
    with pytest.raises(AssertionError, match="dmatrices was called"):
        build_design(formula, data, bounds={"y": (-1, 1), "x": (0.6, 1.5)},
                     levels={"g": ["a", "b"]})


def test_a_rebuild_of_raw_numeric_terms_does_not_call_patsy(monkeypatch):
    rng = np.random.default_rng(1)
    data = pd.DataFrame({"y": rng.normal(size=50), "x": rng.normal(size=50)})
    first = build_design("y ~ x", data, bounds={"y": (-4, 4), "x": (-4, 4)})
    import dpreg.design.formula.build as build_module

    def no_patsy(*args, **kwargs):
        raise AssertionError("patsy was called")

    monkeypatch.setattr(build_module, "design_matrices", no_patsy)
    again = build_design("y ~ x", data, bounds={"y": (-1, 1), "x": (-1, 1)},
                         check_rowwise=False, template=first)
    assert again.exog[:, 1].max() <= 1 and again.nobs == 50
    with pytest.raises(AssertionError, match="patsy was called"):
        build_design("y ~ x", data, bounds={"y": (-1, 1), "x": (-1, 1)})


@pytest.mark.parametrize("formula", ["y ~ x1 + x2 + x1:x2", "y ~ 0 + x1 + k", "y ~ k:x2 + x1"])
def test_a_first_build_of_raw_numeric_terms_equals_patsys(formula, monkeypatch):
    # patsy describes the terms from the first rows, numpy fills the design: the columns,
    # names, dropped rows and outcome must be patsy's own build of the same (clipped) rows
    import patsy

    import dpreg.design.formula.build as build_module

    rng = np.random.default_rng(2)
    n = 500
    data = pd.DataFrame({"y": rng.normal(size=n), "x1": rng.uniform(-3, 3, n),
                         "x2": rng.uniform(0, 1, n), "k": rng.integers(0, 5, n)})
    data.loc[[3, 40, 411], "x1"] = np.nan  # inside and beyond the described rows
    data.loc[[250], "y"] = np.nan
    bounds = {"y": (-2, 2), "x1": (-1.5, 1.0), "x2": (0.1, 0.9), "k": (0, 4)}
    sizes = []
    real = build_module.design_matrices

    def counted(fn, formula, frame, **kwargs):
        sizes.append(len(frame))
        return real(fn, formula, frame, **kwargs)

    monkeypatch.setattr(build_module, "design_matrices", counted)
    design = build_design(formula, data, bounds=bounds)
    assert sizes == [build_module._HEAD_ROWS]  # patsy never saw the whole frame
    clipped = data.assign(**{c: data[c].clip(*b) for c, b in bounds.items()})
    y_ref, X_ref = patsy.dmatrices(formula, clipped, NA_action="drop")
    np.testing.assert_array_equal(design.exog, np.asarray(X_ref))
    np.testing.assert_array_equal(design.endog, np.asarray(y_ref)[:, 0])
    assert design.exog_names == tuple(X_ref.design_info.column_names)
    assert design.n_dropped == 4 and design.missing_rows.sum() == 4
    assert design.exog.flags.c_contiguous and design.endog.flags.owndata
