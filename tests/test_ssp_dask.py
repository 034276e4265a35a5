"""SSP on a Dask frame: the same numbers as on the pandas frame, partition by partition."""

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg.exceptions import OptionError, PrivacyLeakError

dd = pytest.importorskip("dask.dataframe")

FORMULA = "y ~ x1 + x2 + C(g) + x1:x2"
BOUNDS = {"y": (-15.0, 20.0), "x1": (0.0, 10.0), "x2": (-3.0, 3.0)}
LEVELS = {"g": ["a", "b", "c"]}


def make_frame(seed, n=2000):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x1": rng.uniform(-1, 11, n), "x2": rng.uniform(-3, 3, n),
                       "g": rng.choice(LEVELS["g"], n), "other": rng.normal(size=n)})
    df["y"] = 1 + 0.3 * df.x1 - 0.5 * df.x2 + 0.4 * (df.g == "b") + rng.normal(0, 1, n)
    df.loc[[3, 500, 1999], "y"] = np.nan   # rows dropped for missing values
    df.loc[[10, 11], "x2"] = np.nan
    df.loc[[12], "g"] = None
    return df


def with_empty_partition(df, k):
    """``k`` partitions of ``df`` and an empty one in the middle."""
    parts = np.array_split(np.arange(len(df)), k)
    frames = [df.iloc[i] for i in parts]
    frames.insert(len(frames) // 2 + 1, df.iloc[:0])
    return dd.from_map(lambda f: f, frames, meta=df.iloc[:0], enforce_metadata=False)


def fit(data, **kw):
    # the pandas fit in the declared boxes, as a Dask frame's (whose rows are not in
    # memory to learn ranges from)
    return dpreg.dp_ols(FORMULA, data, bounds=BOUNDS, levels=LEVELS, engine="ssp",
                        random_state=5, **{"mu": 1.0, "ranges": "declared", **kw})


def assert_same_fit(a, b):
    # Same noise, sums equal up to their order of addition: rtol 1e-10.
    np.testing.assert_allclose(b.params, a.params, rtol=1e-10, atol=1e-12)
    for m in a.inferences:
        np.testing.assert_allclose(b.inferences[m].scale, a.inferences[m].scale, rtol=1e-10)
        np.testing.assert_allclose(b.conf_int(method=m), a.conf_int(method=m), rtol=1e-10,
                                   atol=1e-12)
    np.testing.assert_allclose(b.bse, a.bse, rtol=1e-10)
    assert (b.nobs, b.n_dropped) == (a.nobs, a.n_dropped)
    assert a.n_dropped == 6
    ea, eb = a.ledger.events, b.ledger.events
    assert [(e.name, e.sensitivity, e.noise_std) for e in ea] == \
        [(e.name, e.sensitivity, e.noise_std) for e in eb]
    assert a.ledger.delta == b.ledger.delta
    assert a.ledger.epsilon_rigorous == b.ledger.epsilon_rigorous


@pytest.fixture(scope="module")
def frame():
    return make_frame(20251122)


@pytest.fixture(scope="module")
def pandas_fits(frame):
    return {False: fit(frame), True: fit(frame, robust=True, cov_type="sandwich")}


@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("robust", [False, True])
def test_default_scheduler_matches_pandas(frame, pandas_fits, k, robust):
    ddf = with_empty_partition(frame, k)
    assert ddf.npartitions == k + 1
    kw = {"robust": True, "cov_type": "sandwich"} if robust else {}
    res = fit(ddf, **kw)
    assert_same_fit(pandas_fits[robust], res)
    assert any("Dask DataFrame" in n for n in res.notes)


def test_distributed_cluster_matches_pandas(frame, pandas_fits):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        for k in (1, 3, 7):
            ddf = dd.from_pandas(frame, npartitions=k)
            assert_same_fit(pandas_fits[False], fit(ddf))
        assert_same_fit(pandas_fits[True], fit(with_empty_partition(frame, 3), robust=True,
                                              cov_type="sandwich"))


def test_only_the_reduction_is_computed(frame, monkeypatch):
    # the fit never collects the frame or a partition: computing the frame itself (or
    # its length, head or delayed partitions) would raise
    ddf = dd.from_pandas(frame, npartitions=3)
    for name in ("compute", "persist", "head", "to_delayed", "__len__"):
        monkeypatch.setattr(type(ddf), name, _refuse(name))
    res = fit(ddf)
    assert res.nobs == len(frame) - 6


def _refuse(name):
    def method(*args, **kwargs):
        raise AssertionError(f"the fit called DataFrame.{name}")
    return method


def test_other_engines_and_families_are_refused(frame):
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(OptionError, match="engine='ssp'"):
        dpreg.dp_ols(FORMULA, ddf, bounds=BOUNDS, levels=LEVELS, mu=1.0, engine="dpsgd")
    with pytest.raises(OptionError, match="engine='ssp'"):
        dpreg.dp_ols(FORMULA, ddf, bounds=BOUNDS, levels=LEVELS, mu=1.0, engine="dpgd")
    with pytest.raises(OptionError, match="'huber'"):
        dpreg.dp_huber("y ~ x1", ddf, bounds=BOUNDS, mu=1.0, engine="ssp")
    with pytest.raises(OptionError, match="Dask"):
        dpreg.oracle("y ~ x1", ddf, bounds=BOUNDS)


def test_undeclared_levels_and_stateful_transforms_are_refused(frame):
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(OptionError, match=r"levels=\{'g'"):
        dpreg.dp_ols("y ~ x1 + g", ddf, bounds=BOUNDS, mu=1.0, engine="ssp")
    with pytest.raises(OptionError, match="levels="):
        dpreg.dp_ols("y ~ C(x1)", ddf, bounds=BOUNDS, mu=1.0, engine="ssp")
    with pytest.raises(PrivacyLeakError, match="stateful"):
        dpreg.dp_ols("y ~ center(x1)", ddf, bounds=BOUNDS, mu=1.0, engine="ssp")
    with pytest.raises(PrivacyLeakError, match="row by row"):
        dpreg.dp_ols("y ~ I(x1 - x1.mean())", ddf, bounds=BOUNDS, mu=1.0, engine="ssp")


def test_bad_partition_values_raise_the_pandas_error(frame):
    bad = frame.copy()
    bad.loc[7, "g"] = "z"   # outside the declared levels
    with pytest.raises(Exception, match="outside the declared levels"):
        fit(dd.from_pandas(bad, npartitions=3))


def test_functions_of_the_callers_namespace_reach_the_partitions(frame):
    def half(v):
        return v / 2

    # and a bound declared on a transformed term is enforced in every partition
    # (half(x1) is clipped at 4 of its 5)
    ddf = dd.from_pandas(frame, npartitions=3)
    kw = dict(bounds={**BOUNDS, "half(x1)": (0.0, 4.0)}, levels=LEVELS, engine="ssp",
              mu=20.0, random_state=1, ranges="declared")
    a = dpreg.dp_ols("y ~ half(x1) + np.log1p(x1 + 1)", frame, **kw)
    b = dpreg.dp_ols("y ~ half(x1) + np.log1p(x1 + 1)", ddf, **kw)
    np.testing.assert_allclose(b.params, a.params, rtol=1e-10)


def test_the_package_imports_and_fits_without_dask():
    code = textwrap.dedent("""
        import sys
        sys.modules["dask"] = None  # import dask now fails
        import numpy as np, pandas as pd, dpreg
        rng = np.random.default_rng(0)
        df = pd.DataFrame({"x": rng.uniform(-1, 1, 300)})
        df["y"] = df.x + rng.normal(size=300)
        res = dpreg.dp_ols("y ~ x", df, bounds={"x": (-1, 1), "y": (-5, 5)}, engine="ssp",
                           mu=1.0)
        assert np.all(np.isfinite(res.params))
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
