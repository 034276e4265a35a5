"""LDPStream and engine="ldp_sgd": chunks versus one shot, files, bad chunks, ledger."""

import math
import pickle

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg.exceptions import DataError, FormulaError, OptionError
from dpreg.privacy import epsilon_to_mu

FORMULA = "y ~ x1 + x2 + C(g)"
LEVELS = {"g": ["a", "b"]}


@pytest.fixture
def frame(seed):
    rng = np.random.default_rng(seed)
    n = 6000
    x = rng.standard_normal((n, 2))
    g = rng.choice(["a", "b"], n)
    y = 1 + x.sum(axis=1) + 0.5 * (g == "b") + 0.5 * rng.standard_normal(n)
    return pd.DataFrame({"y": y, "x1": x[:, 0], "x2": x[:, 1], "g": g})


def _stream(**kw):
    opts = dict(family="huber", mu=2.0, levels=LEVELS, random_state=7)
    opts.update(kw)
    return dpreg.LDPStream(FORMULA, **opts)


def _same(r1, r2):
    np.testing.assert_array_equal(r1.params, r2.params)
    for method in r1.inferences:
        np.testing.assert_array_equal(r1.conf_int(method=method), r2.conf_int(method=method),
                                      err_msg=method)


def test_chunks_equal_one_shot(frame):
    one = dpreg.dp_huber(FORMULA, frame, engine="ldp_sgd", mu=2.0, levels=LEVELS,
                         random_state=7, budget_split={"path": 0.5, "hessian": 0.25,
                                                       "score": 0.25})
    stream = _stream(budget_split={"path": 0.5, "hessian": 0.25, "score": 0.25})
    for a, b in [(0, 1), (1, 500), (500, 4097), (4097, 6000)]:
        stream.partial_fit(frame.iloc[a:b])
    many = stream.results()
    assert set(one.inferences) == {"rs", "batch_means", "plugin"}
    _same(one, many)
    assert many.nobs == 6000 and np.all(np.isfinite(many.bse_by("plugin")))


def test_chunks_equal_one_shot_on_the_conditioned_rows(seed):
    """Natural-unit columns (the public map centres and scales them) and the linear
    family (its step offset): chunks and one shot give the same numbers, and the
    convergence report is the same."""
    rng = np.random.default_rng(seed)
    n = 9000
    d = pd.DataFrame({"age": rng.uniform(25, 65, n), "educ": rng.uniform(8, 18, n)})
    d["y"] = 5 + 0.05 * d["age"] + 0.3 * d["educ"] + rng.standard_normal(n)
    opts = dict(mu=3.0, bounds={"age": (18, 90), "educ": (0, 20), "y": (0, 30)},
                random_state=5, budget_split={"path": 0.5, "hessian": 0.25, "score": 0.25})
    one = dpreg.dp_ols("y ~ age + educ + age:educ", d, engine="ldp_sgd", **opts)
    stream = dpreg.LDPStream("y ~ age + educ + age:educ", family="linear", **opts)
    for a, b in [(0, 3), (3, 4096), (4096, 4100), (4100, 9000)]:
        stream.partial_fit(d.iloc[a:b])
    many = stream.results()
    _same(one, many)
    np.testing.assert_array_equal(one.trajectory["rs_q_diag"], many.trajectory["rs_q_diag"])
    assert one.convergence == many.convergence
    assert one.settings["step offset t0"] > 0
    assert "centred and scaled" in many.settings["conditioning"]


def test_csv_and_parquet_paths(frame, tmp_path):
    pytest.importorskip("pyarrow")
    csv, pq = tmp_path / "d.csv", tmp_path / "d.parquet"
    frame.to_csv(csv, index=False)
    frame.to_parquet(pq, index=False)
    ref = _stream().consume([frame.iloc[i:i + 1000] for i in range(0, 6000, 1000)]).results()
    from_csv = _stream().consume(csv, chunksize=1000).results()
    from_pq = _stream().consume(pq, chunksize=1000).results()
    np.testing.assert_allclose(from_csv.params, ref.params, rtol=1e-12)
    np.testing.assert_allclose(from_pq.params, ref.params, rtol=1e-12)


@pytest.mark.parametrize("spoil, match", [
    (lambda d: d.drop(columns="x2"), "lacks column"),
    (lambda d: d.assign(x1=d["x1"].astype(str)), "changed type"),
    (lambda d: d.assign(x1=d["x1"].where(d.index % 7 != 0)), "missing values"),
    (lambda d: d.assign(g=np.where(d.index % 5 == 0, "c", d["g"])), "outside the declared"),
    (lambda d: d.assign(x2=np.where(d.index % 9 == 0, np.inf, d["x2"])), "infinite"),
])
def test_bad_chunk_fails_clearly_and_leaves_the_stream_intact(frame, spoil, match):
    stream = _stream()
    stream.partial_fit(frame.iloc[:2000])
    before = stream.results(plugin=False)
    bad = spoil(frame.iloc[2000:3000].copy())
    with pytest.raises(DataError, match=match):
        stream.partial_fit(bad)
    assert stream.nobs == 2000
    _same(before, stream.results(plugin=False))
    stream.partial_fit(frame.iloc[2000:])
    clean = _stream().partial_fit(frame.iloc[:2000]).partial_fit(frame.iloc[2000:])
    _same(stream.results(), clean.results())


def test_a_c_far_below_the_outcome_scale_is_refused_before_the_first_row(frame):
    # the outcome in small units (times 1e5, a declared range of 1e6): c = 1.345 is a
    # median regression there; the first chunk is refused by name, no row used
    stream = _stream(bounds={"y": (-5e5, 5e5)})
    with pytest.raises(OptionError, match="c = 1.345 is under 1/10,000 of the declared"):
        stream.partial_fit(frame.iloc[:2000].assign(y=lambda d: 100_000 * d["y"]))
    assert stream.nobs == 0 and stream.ledger is None


def test_missing_drop_sends_noise_rows_and_publishes_no_count(frame):
    # issue 15: under local DP a row with a missing value is sent as a null row (pure
    # noise) by its owner; the server learns neither the count nor the positions
    holes = frame.assign(x1=frame["x1"].where(frame.index % 10 != 3))
    res = _stream(missing="drop").consume([holes.iloc[:3000], holes.iloc[3000:]]).results()
    assert res.n_dropped == 0 and res.nobs == 6000


def test_ledger_states_the_local_guarantee_and_the_plugin_once(frame):
    stream = _stream(mu=math.sqrt(3), cov_type="plugin")
    stream.partial_fit(frame.iloc[:3000])
    first = stream.results()
    stream.partial_fit(frame.iloc[3000:])
    later = stream.results()
    ledger = stream.ledger
    frame_ = ledger.to_frame()
    assert list(frame_["scope"]) == ["local", "central", "central"]
    assert list(frame_["mu"]) == pytest.approx([1.0, 1.0, 1.0], rel=1e-9)
    assert ledger.total_mu == pytest.approx(math.sqrt(3), rel=1e-9)
    assert "each row is mu = 1 GDP on its own" in ledger.as_text()
    # the stream's ledger opens before any row arrives: (eps, delta) is reported at the
    # cap 1e-5 of min(1e-5, n^-1.1), whatever n becomes (here 6000: n^-1.1 = 7e-5)
    assert ledger.delta == 1e-5
    assert "Released at n = 3000" in later.inferences["plugin"].note
    # the plug-in covariance released at n = 3000 is rescaled, not re-released
    np.testing.assert_allclose(later.bse ** 2 * 6000, first.bse ** 2 * 3000, rtol=1e-12)
    # local noise: 2 B0 / mu_path with B0 = sqrt(2) c (ldp-sgd paper, Example 1)
    b0 = math.sqrt(2) * 1.345
    assert later.settings["local noise sd (2 B0 / mu)"] == pytest.approx(2 * b0, rel=1e-9)


def test_epsilon_delta_request_is_met_exactly(frame):
    res = _stream(mu=None, epsilon=2.0, delta=1e-6).consume(frame).results()
    mu = epsilon_to_mu(2.0, 1e-6)
    b0 = math.sqrt(2) * 1.345
    assert res.settings["local noise sd (2 B0 / mu)"] == pytest.approx(2 * b0 / mu, rel=1e-6)
    assert res.ledger.epsilon_rigorous[0] <= 2.0 * (1 + 1e-9)


def test_results_without_plugin_spend_nothing(frame):
    stream = _stream(cov_type="plugin").consume(frame)
    res = stream.results(plugin=False)
    assert "plugin" not in res.inferences and len(stream.ledger) == 1
    assert res.cov_type == "rs"


def test_private_results_hold_no_raw_rows(frame):
    res = _stream().consume(frame).results()
    blob = pickle.dumps(res) + res.summary().as_text().encode()
    for value in frame["y"].iloc[:50]:
        assert np.float64(value).tobytes() not in blob
        assert repr(float(value)).encode() not in blob


@pytest.mark.parametrize("kw, err, match", [
    ({"steps": 10}, OptionError, "do not apply to a stream"),
    ({"cov_type": "runs"}, OptionError, "not available with engine 'ldp_sgd'"),
    ({"lr_decay": 0.4}, OptionError, "lr_decay"),
    ({"mu": -1}, dpreg.BudgetExceededError, "mu"),
])
def test_bad_stream_options(kw, err, match):
    with pytest.raises(err, match=match):
        _stream(**kw)


def test_bad_sources(frame):
    with pytest.raises(FormulaError):
        dpreg.LDPStream("y x1", mu=1)
    with pytest.raises(DataError, match="no such file"):
        _stream().consume("/nonexistent/file.csv")
    with pytest.raises(DataError, match="no rows yet"):
        _stream().results()
    with pytest.raises(DataError, match="DataFrame"):
        _stream().partial_fit(42)


def test_one_shot_refuses_dpsgd_only_options(frame):
    with pytest.raises(OptionError, match="ldp_sgd"):
        dpreg.dp_huber(FORMULA, frame, engine="ldp_sgd", mu=1, levels=LEVELS, steps=100)


def test_prs_covers_in_a_small_monte_carlo():
    """PRS at n = 20,000, mu = 2, Huber (Table 1 design, p = 3): 200 replications.

    Nominal 0.95 averaged over 4 coefficients; the Monte Carlo s.e. of an average of
    4 dependent coverage indicators is at most sqrt(.95 .05 / 200) = 0.0154; we allow
    3 of them below and any excess above (random scaling is conservative at finite n).
    """
    rng = np.random.default_rng(11)
    n, reps = 20000, 200
    cover = []
    for r in range(reps):
        x = rng.standard_normal((n, 3))
        y = 1 + x.sum(axis=1) + 0.5 * rng.standard_normal(n)
        d = pd.DataFrame({"y": y, "x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2]})
        res = dpreg.dp_huber("y ~ x1 + x2 + x3", d, engine="ldp_sgd", mu=2.0,
                             random_state=r)
        ci = res.conf_int(method="rs").to_numpy()
        cover.append(np.mean((ci[:, 0] <= 1) & (1 <= ci[:, 1])))
    assert np.mean(cover) >= 0.95 - 3 * 0.0154


def test_numeric_fast_path_equals_patsy(seed, monkeypatch):
    """Chunks of plain numeric designs are built without patsy; the columns must be
    patsy's, including interactions, and rows with a missing value are dropped."""
    import patsy

    from dpreg.design.formula import build_design, numeric
    from dpreg.design.formula.numeric import numeric_columns, numeric_plan

    monkeypatch.setattr(numeric, "_BLOCK_ROWS", 64)  # several blocks and a partial one

    rng = np.random.default_rng(seed)
    d = pd.DataFrame(rng.standard_normal((500, 3)), columns=["y", "a", "b"])
    d.loc[d.index % 11 == 0, "a"] = np.nan
    formula = "y ~ a + b + a:b"
    template = build_design(formula, d.iloc[1:50])
    plan = numeric_plan(template.endog_info, template.design_info, d)
    assert plan is not None
    y, X, keep = numeric_columns(plan, d)
    np.testing.assert_array_equal(keep, d.notna().all(axis=1).to_numpy())
    y_ref, X_ref = patsy.build_design_matrices(
        [template.endog_info, template.design_info], d, NA_action="drop")
    np.testing.assert_array_equal(X, np.asarray(X_ref))
    np.testing.assert_array_equal(y, np.asarray(y_ref)[:, 0])
    # new arrays, never views of the caller's frame
    assert not np.shares_memory(y, d["y"].to_numpy())
    full = d.dropna()
    y_all, _, _ = numeric_columns(plan, full)
    assert not np.shares_memory(y_all, full["y"].to_numpy())
    # a categorical or transformed term falls back to patsy
    cat = build_design("y ~ a + C(g)", d.assign(g=np.where(d.index % 2, "u", "v")).iloc[1:50])
    assert numeric_plan(cat.endog_info, cat.design_info, d.assign(g="u")) is None
    logged = build_design("y ~ np.exp(a)", d.iloc[1:50])
    assert numeric_plan(logged.endog_info, logged.design_info, d) is None


def test_trajectory_bands_end_at_the_reported_intervals(frame, tmp_path):
    pytest.importorskip("matplotlib")
    from dpreg.results.plotting import trajectory_bands

    res = _stream(mu=math.sqrt(3), cov_type="plugin").consume(frame).results()
    bands = trajectory_bands(res.trajectory, alpha=0.1)
    assert bands["steps"][-1] == res.nobs
    for method in ("rs", "plugin", "batch_means"):
        ci = res.conf_int(alpha=0.1, method=method).to_numpy()
        np.testing.assert_allclose(bands["half_width"][method][-1], (ci[:, 1] - ci[:, 0]) / 2,
                                   rtol=1e-10, err_msg=method)
    np.testing.assert_allclose(bands["estimate"][-1], res.params, rtol=1e-12)
    fig = res.plot_trajectory(path=tmp_path / "t.png", truth=[1, 1, 1, 0.5])
    assert (tmp_path / "t.png").stat().st_size > 10_000
    assert len(fig.axes[0].lines) == 1 + 2 * 3 + 1  # estimate, 3 bands, truth


def test_plot_trajectory_of_a_dpsgd_fit(small_frame, small_bounds, tmp_path):
    pytest.importorskip("matplotlib")
    res = dpreg.dp_ols("y ~ x + d", small_frame, mu=1, bounds=small_bounds, random_state=1)
    fig = res.plot_trajectory(path=tmp_path / "d.png")
    assert len(fig.axes[0].lines) == 2  # running average and iterate
    with pytest.raises(OptionError, match="no trajectory for"):
        from dpreg.results.plotting import trajectory_bands
        trajectory_bands(_stream().consume(small_frame.assign(
            x1=small_frame["x"], x2=small_frame["d"], g="a")).results().trajectory,
            methods=["plugin"])


def test_later_chunks_clip_declared_bounds_of_transformed_terms():
    """A declared bound on a transformed term (``np.log(w)`` in [0, 1]) is enforced on
    every chunk, not only on the first: a later row with log(w) = 3.9 must reach the
    device clipped to 1, or its gradient exceeds the sensitivity the local noise was
    calibrated to. The stream fed in two chunks equals the one-shot fit, which clips."""
    rng = np.random.default_rng(4)
    n = 400
    w = np.exp(rng.uniform(0, 1, n))
    w[300:] = 50.0  # log 50 = 3.9, outside the declared [0, 1], all in the second chunk
    d = pd.DataFrame({"w": w, "y": rng.uniform(-1, 1, n)})
    bounds = {"np.log(w)": (0, 1), "y": (-1, 1)}
    kw = dict(formula="y ~ np.log(w)", family="huber", mu=1.0, bounds=bounds,
              random_state=3)
    stream = dpreg.LDPStream(**kw)
    stream.consume([d.iloc[:200], d.iloc[200:]])
    chunked = stream.results()
    one = dpreg.dp_huber("y ~ np.log(w)", d, engine="ldp_sgd", mu=1.0, bounds=bounds,
                         random_state=3)
    np.testing.assert_allclose(chunked.params, one.params, rtol=1e-12)


# ----------------------------------------------------------------- checkpoints
class _Crash(RuntimeError):
    pass


def _crashing(chunks, after):
    """Chunks as a file reader yields them, then a crash (the machine goes down)."""
    for k, chunk in enumerate(chunks):
        if k == after:
            raise _Crash
        yield chunk


@pytest.mark.parametrize("cov", ["rs", "plugin"])
def test_a_stream_resumed_from_its_checkpoint_equals_one_uninterrupted_run(frame, tmp_path,
                                                                          cov):
    kw = dict(cov_type=cov, bounds={"x1": (-4, 4), "x2": (-4, 4), "y": (-10, 10)})
    path = tmp_path / "big.csv"
    frame.to_csv(path, index=False)
    whole = _stream(**kw).consume(path, chunksize=700)
    ckpt = tmp_path / "run.ckpt"
    stream = _stream(**kw)
    # every run reads the same file (a CSV's floats are parsed the same way each time)
    offset = 0
    if cov == "plugin":  # a plug-in released before the crash is released once only
        offset = 700
        first = pd.read_csv(path, nrows=offset)
        stream.partial_fit(first)
        stream.results()
        whole = _stream(**kw).partial_fit(first)
        whole.results()
        whole.consume(path, chunksize=700, skip=offset)
    with pytest.raises(_Crash):
        source = pd.read_csv(path, chunksize=700, skiprows=range(1, offset + 1))
        stream.consume(_crashing(source, after=4), checkpoint=ckpt)
    resumed = dpreg.load(ckpt)
    assert isinstance(resumed, dpreg.LDPStream)
    assert resumed.nobs == offset + 4 * 700 == stream.nobs
    # the rows it consumed are skipped: each row is privatized once
    resumed.consume(path, chunksize=700, skip=resumed.nobs)
    a, b = whole.results(), resumed.results()
    _same(a, b)
    assert b.nobs == len(frame)
    assert [e.name for e in b.ledger.events] == [e.name for e in a.ledger.events]
    assert b.ledger.total_mu == pytest.approx(a.ledger.total_mu, rel=1e-12)


def test_stream_pickles_with_transformed_terms_and_a_binary_outcome(frame):
    data = frame.assign(y=frame["y"] > 1, x1=frame["x1"].abs() + 1)
    opts = dict(family="logistic", mu=2.0, levels=LEVELS, random_state=3,
                bounds={"x1": (1, 5), "x2": (-4, 4)})
    formula = "y ~ np.log(x1) + I(x2 ** 2) + C(g)"
    stream = dpreg.LDPStream(formula, **opts).partial_fit(data.iloc[:2000])
    resumed = pickle.loads(pickle.dumps(stream)).partial_fit(data.iloc[2000:])
    whole = dpreg.LDPStream(formula, **opts).partial_fit(data)
    a, b = whole.results(), resumed.results()
    _same(a, b)
    assert list(b.params.index) == list(a.params.index)
    assert b.endog_name == a.endog_name == "y[True]"
    unstarted = pickle.loads(pickle.dumps(dpreg.LDPStream(formula, **opts)))
    assert unstarted.nobs == 0 and unstarted.ledger is None


def test_checkpoint_errors_name_the_problem(frame, tmp_path):
    stream = _stream().partial_fit(frame.iloc[:100])
    with pytest.raises(OptionError, match="skip must be a non-negative integer"):
        stream.consume(frame, skip=-1)
    with pytest.raises(DataError, match="skip = 99999 exceeds the 6000 rows"):
        stream.consume(frame, skip=99_999)
    assert stream.nobs == 100
    bad = tmp_path / "other.pkl"
    bad.write_bytes(pickle.dumps({"not": "dpreg"}))
    with pytest.raises(DataError, match="holds a dict, not a dpreg result or stream"):
        dpreg.load(bad)
    square = lambda v: v * v  # noqa: E731 - a lambda cannot be pickled, by design
    local = dpreg.LDPStream("y ~ square(x1)", mu=1.0, random_state=1).partial_fit(frame)
    assert square(2) == 4
    with pytest.raises(OptionError, match="cannot checkpoint this stream"):
        local.save(tmp_path / "local.ckpt")
