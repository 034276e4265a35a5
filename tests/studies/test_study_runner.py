"""The runner: reproducible seeds, same numbers on every backend, cache and resume."""

import numpy as np
import pandas as pd
import pytest

import dpreg.studies as ds
from dpreg.exceptions import OptionError
from dpreg.studies import Study, run_replicates, run_study

#: Calls of counting_replicate in this process, and the call at which it fails.
STATE = {"calls": 0, "fail_at": None}


def counting_replicate(seed, *, n, scale):
    """Two coefficients with N(truth, scale^2) estimates; counts calls, can fail."""
    STATE["calls"] += 1
    if STATE["fail_at"] is not None and STATE["calls"] >= STATE["fail_at"]:
        raise KeyboardInterrupt("simulated kill")
    rng = np.random.default_rng(seed)
    truth = np.array([1.0, -1.0])
    est = truth + scale * rng.standard_normal(2) / np.sqrt(n)
    half = 1.96 * scale / np.sqrt(n)
    return ds.estimate_rows("normal", truth, est, lower=est - half, upper=est + half,
                            alpha=0.05)


def count_study(**kw):
    kw = {"reps": 10, **kw}
    return Study(name="count", replicate=counting_replicate, grid={"n": [10, 40, 90]},
                 constants={"scale": 2.0}, seed=3, **kw)


@pytest.fixture(autouse=True)
def reset_state():
    STATE.update(calls=0, fail_at=None)
    yield
    STATE.update(calls=0, fail_at=None)


def values(frame):
    return frame.drop(columns=["rep_seconds"])


def test_same_seed_same_numbers_whatever_the_chunking():
    study = count_study()
    a = run_replicates(study, n_jobs=1, progress=False)
    b = run_replicates(study, n_jobs=1, progress=False, chunk_size=3)
    pd.testing.assert_frame_equal(values(a), values(b))
    assert a["rep"].tolist()[:4] == [0, 0, 1, 1] and len(a) == 3 * 10 * 2
    assert a.columns[:3].tolist() == ["rep", "n", "method"]


def test_fewer_reps_are_a_prefix_and_a_subset_of_cells_the_same_cells():
    study = count_study()
    full = run_replicates(study, n_jobs=1, progress=False)
    few = run_replicates(study, reps=4, n_jobs=1, progress=False)
    pd.testing.assert_frame_equal(values(few),
                                  values(full[full.rep < 4].reset_index(drop=True)))
    one = run_replicates(study, where={"n": 40}, n_jobs=1, progress=False)
    pd.testing.assert_frame_equal(values(one),
                                  values(full[full.n == 40].reset_index(drop=True)))


def test_coverage_of_an_exact_interval_is_nominal_within_mc_error():
    table = run_study(count_study(reps=200), n_jobs=1, progress=False)
    avg = table[table.coef == "(average)"]
    # exact normal intervals: coverage 0.95; 4 MC s.e. of the average over 2 coefficients
    assert np.all(np.abs(avg.coverage - 0.95) <= 4 * avg.coverage_mcse)
    assert table.attrs["computed_reps"] == 600 and table.attrs["cached_reps"] == 0


def test_interrupted_study_resumes_from_the_cache(tmp_path):
    study = count_study()
    fresh = run_replicates(study, n_jobs=1, progress=False)
    STATE.update(calls=0, fail_at=13)
    with pytest.raises(KeyboardInterrupt):
        run_replicates(study, n_jobs=1, progress=False, cache_dir=tmp_path, chunk_size=5)
    # chunks of 5: the two chunks of cell n=10 finished; call 13 died inside the first
    # chunk of n=40, which was therefore not written
    assert STATE["calls"] == 13
    STATE.update(calls=0, fail_at=None)
    resumed = run_replicates(study, n_jobs=1, progress=False, cache_dir=tmp_path,
                             chunk_size=5)
    assert STATE["calls"] == 30 - 10
    assert resumed.attrs["cached_reps"] == 10 and resumed.attrs["computed_reps"] == 20
    pd.testing.assert_frame_equal(values(resumed), values(fresh))
    STATE.update(calls=0)
    again = run_replicates(study, n_jobs=1, progress=False, cache_dir=tmp_path)
    assert STATE["calls"] == 0
    pd.testing.assert_frame_equal(values(again), values(fresh))
    # more replications later: only the new ones run
    more = run_replicates(study, reps=12, n_jobs=1, progress=False, cache_dir=tmp_path)
    assert STATE["calls"] == 3 * 2
    full12 = run_replicates(study, reps=12, n_jobs=1, progress=False)
    pd.testing.assert_frame_equal(values(more), values(full12))


def test_cache_is_keyed_on_revision(tmp_path):
    run_replicates(count_study(), n_jobs=1, progress=False, cache_dir=tmp_path)
    STATE.update(calls=0)
    run_replicates(count_study(revision="2"), n_jobs=1, progress=False, cache_dir=tmp_path)
    assert STATE["calls"] == 30


def bad_replicate(seed, *, n):
    return [{"method": "m", "coef": "x", "truth": 0.0, "estimate": 0.0, "n": 1}]


def empty_replicate(seed, *, n):
    return []


@pytest.mark.parametrize("func, match", [(bad_replicate, "reuse factor"),
                                         (empty_replicate, "non-empty list")])
def test_bad_rows_raise(func, match):
    study = Study(name="bad", replicate=func, grid={"n": [1]}, reps=1)
    with pytest.raises(OptionError, match=match):
        run_replicates(study, n_jobs=1, progress=False)


def test_option_checks():
    study = count_study()
    with pytest.raises(OptionError, match="backend"):
        run_replicates(study, backend="spark")
    with pytest.raises(OptionError, match="n_jobs"):
        run_replicates(study, n_jobs=0)
    with pytest.raises(OptionError, match="client"):
        run_replicates(study, client=object())
    with pytest.raises(OptionError, match="Study"):
        run_replicates("smoke")


def test_missing_engine_fails_clearly():
    study = Study(name="needs", replicate=counting_replicate, grid={"n": [1]},
                  constants={"scale": 1.0}, requires=("warp_drive",))
    with pytest.raises(ds.StudyUnavailableError, match="warp_drive"):
        run_replicates(study, n_jobs=1, progress=False)


def test_dask_backend_without_client_says_how():
    distributed = pytest.importorskip("distributed")
    try:
        distributed.default_client()
        pytest.skip("a default Dask client exists in this process")
    except ValueError:
        pass
    with pytest.raises(OptionError, match="Client"):
        run_replicates(count_study(), backend="dask", progress=False)


@pytest.fixture(scope="module")
def dask_client():
    """A LocalCluster with 2 worker processes (one thread each), shared by this module."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        yield client


def test_dask_cluster_gives_the_same_numbers_as_the_local_run(dask_client):
    """Done criterion of issue 7: a 2-worker LocalCluster reproduces the local run."""
    import joblib

    study = ds.get_study("smoke")
    local = values(run_replicates(study, reps=6, n_jobs=1, progress=False))
    dask = run_replicates(study, reps=6, backend="dask", client=dask_client, progress=False)
    assert dask.attrs["workers"] == 2 and dask.attrs["backend"] == "dask"
    # exact equality: every replication has its own seed; nothing depends on the worker
    pd.testing.assert_frame_equal(local, values(dask))
    # joblib's dask backend: backend="local" inside parallel_config(backend="dask")
    with joblib.parallel_config(backend="dask", client=dask_client):
        via_joblib = values(run_replicates(study, reps=6, progress=False))
    pd.testing.assert_frame_equal(local, via_joblib)
    # the summaries are then identical too
    pd.testing.assert_frame_equal(ds.summarize(local), ds.summarize(values(dask)))


@pytest.mark.slow
def test_local_processes_and_dask_agree_on_a_full_study(dask_client, tmp_path):
    """joblib worker processes, a Dask cluster with a cache, and one process agree."""
    study = ds.get_study("smoke")
    one = values(run_replicates(study, n_jobs=1, progress=False))
    loky = values(run_replicates(study, n_jobs=2, progress=False))
    dask = values(run_replicates(study, backend="dask", client=dask_client, progress=False,
                                 cache_dir=tmp_path))
    pd.testing.assert_frame_equal(one, loky)
    pd.testing.assert_frame_equal(one, dask)
