"""Run a study's cells in parallel, locally (joblib) or on a Dask cluster, with a cache.

The work is split into chunks of consecutive replications of one cell. Each replication
draws its randomness from its own :class:`numpy.random.SeedSequence`
(:meth:`dpreg.studies.Cell.seed_sequence`), so the numbers do not depend on the backend,
the number of workers, the chunking or the order in which chunks finish. Finished chunks
are written to the cache as they arrive, so an interrupted study resumes where it
stopped.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from dpreg._checks import integer_at_least, one_of
from dpreg.exceptions import OptionError
from dpreg.studies.cache import CellCache
from dpreg.studies.spec import ROW_FIELDS, Cell, Study, StudyUnavailableError
from dpreg.studies.summaries import summarize

__all__ = ["run_replicates", "run_study", "check_requirements", "BACKENDS"]

BACKENDS = ("local", "dask")
#: Most replications in one chunk: the granularity of progress, caching and resuming.
MAX_CHUNK = 50


def check_requirements(study: Study) -> None:
    """Raise :class:`StudyUnavailableError` if an engine the study needs is missing.

    Parameters
    ----------
    study : Study
    """
    from dpreg.fits.registry import ENGINES

    for engine in study.requires:
        if engine not in ENGINES:
            raise StudyUnavailableError(
                f"study {study.name!r} needs engine {engine!r}, which this installation of "
                f"dpreg does not have (engines: {sorted(ENGINES)})")
        if engine in ("dpgd", "adassp"):
            try:
                from dpreg.fits.dpgd import fit_dpgd  # noqa: F401
            except ImportError as err:
                raise StudyUnavailableError(
                    f"study {study.name!r} needs engine {engine!r}, which cannot be imported "
                    f"here: {err}") from None


# ------------------------------------------------------------------------------ worker
def _rows_frame(rows, cell_params: dict, rep: int, seconds: float) -> pd.DataFrame:
    if not isinstance(rows, (list, tuple)) or not rows or \
            not all(isinstance(r, Mapping) for r in rows):
        raise OptionError("a replicate function must return a non-empty list of dicts "
                          f"(one per method and coefficient); got {type(rows).__name__}")
    frame = pd.DataFrame(list(rows))
    missing = [c for c in ("method", "coef", "truth", "estimate") if c not in frame]
    if missing:
        raise OptionError(f"replicate rows lack the field(s) {missing}")
    clash = [c for c in frame.columns if c in cell_params or c in ("rep", "rep_seconds")]
    if clash:
        raise OptionError(f"replicate rows reuse factor or runner names as keys: {clash}")
    for name in ("lower", "upper", "pvalue", "alpha"):
        if name not in frame:
            frame[name] = np.nan
    keys = [c for c in frame.columns if c not in ROW_FIELDS]
    frame = frame[list(ROW_FIELDS) + keys]
    for k, v in reversed(list(cell_params.items())):
        frame.insert(0, k, [v] * len(frame))
    frame.insert(0, "rep", rep)
    frame["rep_seconds"] = seconds
    return frame


def _run_chunk(task_id: int, replicate: Callable, cell: Cell, start: int,
               stop: int) -> tuple[int, pd.DataFrame]:
    """Replications ``start .. stop - 1`` of ``cell`` (runs on a worker)."""
    kwargs, params = cell.kwargs, cell.params
    frames = []
    for rep in range(start, stop):
        t0 = time.perf_counter()
        rows = replicate(cell.seed_sequence(rep), **kwargs)
        frames.append(_rows_frame(rows, params, rep, time.perf_counter() - t0))
    return task_id, pd.concat(frames, ignore_index=True)


# ------------------------------------------------------------------------------ planning
def _ranges(missing: list[int], size: int) -> list[tuple[int, int]]:
    """Contiguous runs of ``missing`` (sorted) cut into pieces of at most ``size``."""
    out = []
    i = 0
    while i < len(missing):
        j = i
        while j + 1 < len(missing) and missing[j + 1] == missing[j] + 1 \
                and missing[j + 1] - missing[i] < size:
            j += 1
        out.append((missing[i], missing[j] + 1))
        i = j + 1
    return out


class _Plan:
    """The chunks to compute (cells x missing replications) and where results go."""

    def __init__(self, cells, reps, cache_dir, workers, chunk_size):
        self.cells = cells
        self.caches = [CellCache(cache_dir, c) if cache_dir is not None else None
                       for c in cells]
        self.missing = []
        for cache in self.caches:
            done = cache.done(reps) if cache is not None else set()
            self.missing.append([r for r in range(reps) if r not in done])
        total = sum(len(m) for m in self.missing)
        if chunk_size is None:
            chunk_size = max(1, min(MAX_CHUNK, math.ceil(total / (4 * max(1, workers)))))
        self.chunk_size = integer_at_least("chunk_size", chunk_size)
        self.tasks = [(i, a, b) for i, m in enumerate(self.missing)
                      for a, b in _ranges(m, self.chunk_size)]
        self.total_missing = total
        self.computed: list[list[pd.DataFrame]] = [[] for _ in cells]

    def accept(self, task_id: int, frame: pd.DataFrame) -> None:
        i, a, b = self.tasks[task_id]
        if self.caches[i] is not None:
            self.caches[i].save(a, b, frame)
        self.computed[i].append(frame)


# ------------------------------------------------------------------------------ backends
def _progress(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="rep", disable=not enabled or total == 0,
                smoothing=0.05)


def _run_local(plan: _Plan, replicate, n_jobs, bar) -> None:
    if n_jobs == 1:
        for task_id, (i, a, b) in enumerate(plan.tasks):
            _, frame = _run_chunk(task_id, replicate, plan.cells[i], a, b)
            plan.accept(task_id, frame)
            bar.update(b - a)
        return
    from joblib import Parallel, delayed

    jobs = (delayed(_run_chunk)(task_id, replicate, plan.cells[i], a, b)
            for task_id, (i, a, b) in enumerate(plan.tasks))
    try:
        parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    except ValueError:  # a joblib backend that cannot stream results: collect at the end
        parallel = Parallel(n_jobs=n_jobs)
    for task_id, frame in parallel(jobs):
        plan.accept(task_id, frame)
        i, a, b = plan.tasks[task_id]
        bar.update(b - a)


def _dask_client(client):
    try:
        import distributed
    except ImportError:
        raise StudyUnavailableError("backend='dask' needs the dask.distributed package "
                                    "(pip install 'dask[distributed]')") from None
    if client is not None:
        return client
    try:
        return distributed.default_client()
    except ValueError:
        raise OptionError(
            "backend='dask' needs a dask.distributed Client: create one first (e.g. "
            "Client(LocalCluster(n_workers=2)) or Client('tcp://scheduler:8786')) or pass "
            "client=") from None


def _run_dask(plan: _Plan, replicate, client, bar) -> None:
    from distributed import as_completed

    futures = [client.submit(_run_chunk, task_id, replicate, plan.cells[i], a, b, pure=False)
               for task_id, (i, a, b) in enumerate(plan.tasks)]
    try:
        for fut in as_completed(futures, loop=client.loop):
            task_id, frame = fut.result()
            plan.accept(task_id, frame)
            i, a, b = plan.tasks[task_id]
            bar.update(b - a)
    finally:
        client.cancel([f for f in futures if not f.done()])


def _workers(backend, client, n_jobs) -> int:
    if backend == "dask":
        return max(1, sum(client.nthreads().values()))
    if n_jobs is None or n_jobs < 0:
        cpus = os.cpu_count() or 1
        return max(1, cpus + 1 + n_jobs) if n_jobs is not None else cpus
    return n_jobs


# ------------------------------------------------------------------------------ public
def run_replicates(study: Study, *, reps: int | None = None,
                   where: Mapping[str, Any] | Callable[[dict], bool] | None = None,
                   backend: str = "local", client=None, n_jobs: int | None = None,
                   cache_dir=None, progress: bool = True,
                   chunk_size: int | None = None) -> pd.DataFrame:
    """Run (or read from the cache) every replication of a study's cells.

    Parameters
    ----------
    study : Study
    reps : int, optional
        Replications per cell (default ``study.reps``).
    where : dict or callable, optional
        Run only the matching cells (see :meth:`Study.cells`).
    backend : {"local", "dask"}
        ``"local"``: joblib on this machine (``n_jobs`` processes; inside
        ``joblib.parallel_config(backend="dask")`` joblib sends the work to Dask
        instead). ``"dask"``: the chunks are submitted to a ``dask.distributed``
        cluster through ``client`` (default: the current default client).
    client : distributed.Client, optional
        For ``backend="dask"``.
    n_jobs : int, optional
        Local processes (``-1``: all cores; ``1``: in this process, no pickling). Default
        all cores.
    cache_dir : str or Path, optional
        Cache folder: finished chunks are written there and found again on the next
        call, which then computes only the missing replications.
    progress : bool
        Show a progress bar over replications.
    chunk_size : int, optional
        Replications per task (default: about four tasks per worker, at most 50).

    Returns
    -------
    pandas.DataFrame
        One row per replication, method and coefficient: ``rep``, the cell's factors,
        the replicate's fields and keys, and ``rep_seconds`` (compute time of the
        replication). Ordered by cell (grid order), replication and row; identical
        whatever the backend, workers, chunking or cache state.
    """
    if not isinstance(study, Study):
        raise OptionError(f"study must be a dpreg.studies.Study, got {type(study).__name__}")
    reps = study.reps if reps is None else integer_at_least("reps", reps)
    one_of("backend", backend, BACKENDS)
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int)
                               or n_jobs == 0):
        raise OptionError(f"n_jobs must be a non-zero integer, got {n_jobs!r}")
    if backend == "local" and client is not None:
        raise OptionError("client= applies to backend='dask' only")
    check_requirements(study)
    cells = study.cells(where)
    if backend == "dask":
        client = _dask_client(client)
    workers = _workers(backend, client, n_jobs)
    plan = _Plan(cells, reps, cache_dir, workers, chunk_size)
    bar = _progress(plan.total_missing, study.name, progress)
    try:
        if plan.tasks and backend == "dask":
            _run_dask(plan, study.replicate, client, bar)
        elif plan.tasks:
            _run_local(plan, study.replicate, -1 if n_jobs is None else n_jobs, bar)
    finally:
        bar.close()
    frames = []
    for cache, computed in zip(plan.caches, plan.computed, strict=True):
        parts = list(computed)
        if cache is not None:
            cached = cache.load(reps)
            parts = [cached] if cached is not None else parts
        if not parts:
            continue
        frame = pd.concat(parts, ignore_index=True)
        frames.append(frame.sort_values("rep", kind="stable", ignore_index=True))
    raw = pd.concat(frames, ignore_index=True)
    raw.attrs.update(study=study.name, reps=reps, computed_reps=plan.total_missing,
                     cached_reps=reps * len(cells) - plan.total_missing, backend=backend,
                     workers=workers)
    return raw


def run_study(study: Study, **options) -> pd.DataFrame:
    """Run a study and summarize it: the tidy table of coverage, length, bias, RMSE and
    rejection rates, each with its Monte Carlo standard error.

    Parameters
    ----------
    study : Study
    **options
        As for :func:`run_replicates` (``reps``, ``where``, ``backend``, ``client``,
        ``n_jobs``, ``cache_dir``, ``progress``, ``chunk_size``).

    Returns
    -------
    pandas.DataFrame
        :func:`dpreg.studies.summarize` of the replications. ``attrs`` records the study
        name, ``reps``, how many replications were computed and read from the cache,
        the backend, the workers, ``seconds`` (wall time of this call) and
        ``compute_seconds`` (sum of the replications' compute times, cached ones
        included).

    Examples
    --------
    >>> import dpreg.studies as ds
    >>> table = ds.run_study(ds.get_study("smoke"), reps=4, n_jobs=1, progress=False)
    >>> sorted(table["method"].unique())
    ['oracle', 'plugin', 'rs']
    """
    t0 = time.perf_counter()
    raw = run_replicates(study, **options)
    table = summarize(raw)
    table.attrs.update(raw.attrs)
    keys = [k for k in study.factor_names if k in raw] + ["rep"]
    per_rep = raw.groupby(keys, sort=False, dropna=False)
    table.attrs["compute_seconds"] = float(per_rep["rep_seconds"].first().sum())
    table.attrs["seconds"] = time.perf_counter() - t0
    return table
