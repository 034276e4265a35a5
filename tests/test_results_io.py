"""Saving and loading results, the wide summary_col, and the summary's rule lines."""

import io
import pickle

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg.exceptions import DataError, FormulaError, OptionError

LEVELS = {"g": ["a", "b", "c"]}
FORMULA = "y ~ x + np.log1p(x + 1) + C(g) + d"


@pytest.fixture(scope="module")
def fitted():
    from tests.conftest import SMALL_BOUNDS, make_small_frame

    frame = make_small_frame(11, n=300)
    bounds = dict(SMALL_BOUNDS, **{"np.log1p(x + 1)": (0.0, np.log(3.0))})
    # cov_type given: at n = 300 the floor check may make random scaling the default,
    # and these tests are about layouts with standard errors
    res = dpreg.dp_ols(FORMULA, frame, mu=2.0, bounds=bounds, levels=LEVELS,
                       random_state=2, steps=20000, cov_type="plugin")
    return res, frame


def test_save_load_predicts_on_new_frames(tmp_path, fitted):
    res, frame = fitted
    new = pd.DataFrame({"x": [0.3, -0.5, 0.9], "g": ["c", "a", "c"], "d": [1, 0, 0]})
    before = res.predict(new)
    pred_before = res.get_prediction(new).summary_frame()
    path = tmp_path / "res.pkl"
    res.save(path)
    for back in (dpreg.load(path), dpreg.load_pickle(str(path)),
                 dpreg.DPRegressionResults.load(path)):
        assert back._design_info is None  # rebuilt from the stored prototype, not kept
        np.testing.assert_allclose(back.predict(new), before, rtol=1e-12)
        pd.testing.assert_frame_equal(back.get_prediction(new).summary_frame(), pred_before)
        pd.testing.assert_series_equal(back.params, res.params)
        assert back.ledger.total_mu == pytest.approx(res.ledger.total_mu)
        assert back.summary().as_text() == res.summary().as_text()
    # a binary file object works too
    buf = io.BytesIO()
    res.save(buf)
    buf.seek(0)
    np.testing.assert_allclose(dpreg.load(buf).predict(new), before, rtol=1e-12)


def test_saved_file_holds_no_data(tmp_path, fitted):
    res, frame = fitted
    path = tmp_path / "res.pkl"
    res.save(path)
    blob = path.read_bytes()
    for col in ("y", "x"):
        for value in frame[col].to_numpy()[:100]:
            assert np.float64(value).tobytes() not in blob, col
    # the design prototype keeps variable kinds and declared categories only
    proto = pickle.loads(blob).record.design_prototype
    assert proto["columns"]["x"] == "numeric" and proto["columns"]["g"] == ("a", "b", "c")


def test_loaded_result_rejects_a_frame_with_an_unknown_category(tmp_path, fitted):
    res, _ = fitted
    res.save(tmp_path / "r.pkl")
    back = dpreg.load(tmp_path / "r.pkl")
    with pytest.raises(FormulaError, match="zzz"):
        back.predict(pd.DataFrame({"x": [0.1], "g": ["zzz"], "d": [0]}))


def test_load_refuses_other_objects(tmp_path):
    path = tmp_path / "other.pkl"
    path.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(DataError, match="not a dpreg result"):
        dpreg.load(path)


def test_one_pickle_path_for_results_and_streams(tmp_path, fitted):
    """Results and stream checkpoints are written by dpreg.pickling (atomically: a save
    that fails leaves the previous file whole and no temporary file); dpreg.load reads
    both, DPRegressionResults.load results only."""
    import dpreg.pickling
    import dpreg.results.io

    assert dpreg.results.io.write_pickle is dpreg.pickling.write_pickle
    assert dpreg.results.io.read_pickle is dpreg.pickling.read_pickle
    res, frame = fitted
    path = tmp_path / "res.pkl"
    res.save(path)
    before = path.read_bytes()
    res.unpicklable = lambda: None  # an attribute pickle cannot store
    try:
        with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
            res.save(path)
    finally:
        del res.unpicklable
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res.pkl"]
    stream = dpreg.LDPStream("y ~ x + d", family="huber", mu=2.0, random_state=3)
    stream.partial_fit(frame)
    stream.save(tmp_path / "stream.pkl")
    assert dpreg.load(tmp_path / "stream.pkl").nobs == len(frame)
    with pytest.raises(DataError, match="holds a LDPStream, not a dpreg result"):
        dpreg.DPRegressionResults.load(tmp_path / "stream.pkl")


def test_pickles_that_name_the_modules_before_the_move_load(fitted):
    """Files written before the loose modules of dpreg/ moved into folders name the old
    modules (a stream checkpoint holds dpreg.stream.LDPStream and
    dpreg.conditioning.Conditioning); dpreg.load finds them where they live now
    (dpreg.pickling.MOVED_MODULES)."""
    import dpreg.pickling

    _, frame = fitted
    stream = dpreg.LDPStream("y ~ x + d", family="huber", mu=2.0, random_state=3)
    stream.partial_fit(frame)
    raw = pickle.dumps(stream, protocol=2)  # protocol 2: each class as "module\nname\n"
    for old, new in dpreg.pickling.MOVED_MODULES.items():
        raw = raw.replace(f"c{new}\n".encode(), f"c{old}\n".encode())
    assert b"cdpreg.stream\nLDPStream\n" in raw
    assert b"cdpreg.conditioning\nConditioning\n" in raw
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(raw)
    back = dpreg.load(io.BytesIO(raw))
    assert type(back) is dpreg.LDPStream
    pd.testing.assert_frame_equal(back.results().conf_int(), stream.results().conf_int())


def test_pickles_that_name_the_renamed_estimator_modules_load():
    """dpreg.inference.ssp and dpreg.inference.iv became ssp_estimator and iv_estimator
    (three modules were called ssp.py); a pickle that names the old modules still loads
    through dpreg.pickling.read_pickle, with the same numbers."""
    import dpreg.pickling
    from dpreg.inference.iv_estimator import IVRelease
    from dpreg.inference.ssp_estimator import SSPRelease, gram_floor

    rng = np.random.default_rng(5)
    gram = np.eye(3) + 0.1
    ssp = SSPRelease(gram=gram, xty=rng.standard_normal(3), yty=4.0, nobs=50, s_gram=0.5,
                     s_xty=0.2, s_yty=0.1, floor=gram_floor(0.5, 3))
    iv = IVRelease(ww=gram, wx=gram[:, :2], wy=np.ones(3), xx=gram[:2, :2], xy=np.ones(2),
                   yy=3.0, nobs=50, s_ww=0.1, s_wx=0.1, s_wy=0.1, s_xx=0.1, s_xy=0.1,
                   s_yy=0.1, floor=0.2)
    for obj, old in ((ssp, "dpreg.inference.ssp"), (iv, "dpreg.inference.iv")):
        new = dpreg.pickling.MOVED_MODULES[old]
        assert type(obj).__module__ == new
        raw = pickle.dumps(obj, protocol=2)  # protocol 2: each class as "module\nname\n"
        raw = raw.replace(f"c{new}\n".encode(), f"c{old}\n".encode())
        assert f"c{old}\n{type(obj).__name__}\n".encode() in raw
        with pytest.raises(ModuleNotFoundError):
            pickle.loads(raw)
        back = dpreg.pickling.read_pickle(io.BytesIO(raw))
        assert type(back) is type(obj)
        for name, value in vars(obj).items():
            np.testing.assert_array_equal(getattr(back, name), value)  # exact: a copy


def test_prototype_mismatch_is_a_clear_error():
    from dpreg.design.formula import design_info_from_prototype

    proto = {"columns": {"x": "numeric"}, "names": ("Intercept", "x", "extra")}
    with pytest.raises(DataError, match="fitted"):
        design_info_from_prototype("y ~ x", proto)


# -- summary_col, wide -------------------------------------------------------------------
def test_summary_col_wide_models_side_by_side(fitted):
    res, frame = fitted
    orc = dpreg.oracle("y ~ x + d", frame, bounds={"y": (-3, 5)})
    rs_only = dpreg.dp_ols("y ~ x", frame, mu=2.0, bounds={"y": (-3, 5), "x": (-1, 1)},
                           budget_split={"path": 1.0}, cov_type="rs", random_state=1,
                           steps=5000)
    table = dpreg.summary_col([res, orc, rs_only], model_names=["DP", "Oracle", "DP (RS)"])
    text = table.as_text()
    lines = text.splitlines()
    header = next(line for line in lines if "Oracle" in line and "DP (RS)" in line)
    assert header.split()[:2] == ["DP", "Oracle"]
    for row in ("N", "Engine", "Budget (mu)", "(eps, delta)", "Inference"):
        assert any(line.startswith(row) for line in lines), row
    # coefficient row, then its standard error in parentheses on the next line
    i = next(k for k, line in enumerate(lines) if line.startswith("C(g)[T.b]"))
    assert f"{res.params['C(g)[T.b]']:.3f}" in lines[i]
    assert f"({res.bse['C(g)[T.b]']:.3f})" in lines[i + 1]
    # RS has no standard error: its column shows the interval in brackets
    lo, hi = rs_only.conf_int().loc["x"]
    assert f"[{lo:.3f}, {hi:.3f}]" in text
    eps, _ = res.ledger.epsilon_rigorous
    assert f"({eps:.3g}, " in text and "non-private" in text and "RS" in text
    inference_line = next(line for line in lines if line.startswith("Inference"))
    assert inference_line.split()[1:] == ["Plug-in", "Oracle", "RS"]
    assert "\\begin{tabular}" in table.as_latex() and "<table" in table.as_html()


def test_summary_col_options(fitted):
    res, _ = fitted
    text = dpreg.summary_col([res], stat="ci", stars=True, alpha=0.1).as_text()
    lo, hi = res.conf_int(0.1).loc["x"]
    assert f"[{lo:.3f}, {hi:.3f}]" in text and "90% intervals" in text
    text = dpreg.summary_col([res], variables=["d", "x"]).as_text()
    assert text.index("\nd ") < text.index("\nx ") and "Intercept" not in text
    text = dpreg.summary_col([res], method="rs").as_text()
    assert "RS" in text.splitlines()[-3] or "Inference" in text
    with pytest.raises(OptionError, match="layout"):
        dpreg.summary_col([res], layout="tall")
    with pytest.raises(OptionError, match="stat"):
        dpreg.summary_col([res], stat="t")
    with pytest.raises(OptionError, match="none of the results"):
        dpreg.summary_col([res], variables=["nope"])
    with pytest.raises(OptionError, match="model_names"):
        dpreg.summary_col([res], model_names=["a", "b"])


def _rules_match_rows(text):
    lines = text.splitlines()
    rules = [line for line in lines if line and set(line) <= {"=", "-"}]
    first = lines.index(rules[0])
    last = len(lines) - 1 - lines[::-1].index(rules[-1])
    body = [line.rstrip() for line in lines[first:last + 1] if line not in rules]
    return {len(r) for r in rules}, max(len(line) for line in body)


def test_summary_rule_lines_match_the_table_width(fitted):
    res, _ = fitted
    for text in (res.summary().as_text(), dpreg.summary_col([res]).as_text()):
        widths, widest = _rules_match_rows(text)
        assert widths == {widest}
    title = res.summary().as_text().splitlines()[0]
    width = _rules_match_rows(res.summary().as_text())[1]
    assert abs(len(title) - len(title.lstrip()) - (width - len(title.strip())) / 2) <= 1


@pytest.mark.parametrize("formula", [
    "y ~ x + C(h) + flag",                  # integer-coded category, boolean column
    "y ~ 0 + x:C(g) + np.exp(x / 2)",       # no intercept, interaction, a numpy function
    "y ~ C(g, Treatment('b')) * d",          # another reference level, products
])
def test_saved_designs_rebuild_for_several_formulas(tmp_path, formula):
    import warnings

    rng = np.random.default_rng(4)
    n = 120
    frame = pd.DataFrame({"x": rng.uniform(-1, 1, n), "g": rng.choice(["a", "b", "c"], n),
                          "h": rng.integers(1, 4, n), "flag": rng.random(n) < 0.5,
                          "d": rng.integers(0, 2, n)})
    frame["y"] = frame["x"] + rng.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undeclared categories: not the point here
        res = dpreg.oracle(formula, frame)
    new = frame.sample(7, random_state=1)
    res.save(tmp_path / "r.pkl")
    back = dpreg.load(tmp_path / "r.pkl")
    np.testing.assert_allclose(back.predict(new), res.predict(new), rtol=1e-12)
    pd.testing.assert_frame_equal(back.get_prediction(new).summary_frame(),
                                  res.get_prediction(new).summary_frame())
