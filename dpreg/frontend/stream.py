"""Local-DP streaming regression: :class:`LDPStream`.

A stream takes chunks of rows as they arrive (``partial_fit``, ``consume``) and runs
one LDP-SGD analysis over them (:class:`dpreg.fits.ldp_sgd.LDPRun`, the same analysis
as ``fit(engine="ldp_sgd")``): each row is privatized by its owner, one pass in the
order of arrival, with memory that does not grow with n; results can be asked for at
any point and the stream goes on. A stream can be checkpointed after any chunk
(:meth:`LDPStream.save`, or pickle) and resumed from :func:`dpreg.load`.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
from typing import Any, Iterable, Mapping

import pandas as pd
from tqdm.auto import tqdm

from dpreg.design import check_bounds, check_missing
from dpreg.design.formula import (
    build_chunk,
    build_design,
    capture_env,
    column_kinds,
    formula_namespace,
    namespace_env,
    portable_namespace,
    restore_namespace,
    template_from_prototype,
    template_prototype,
)
from dpreg.exceptions import DataError, FormulaError, OptionError
from dpreg.families import family_constants, get_family
from dpreg.fits.ldp_sgd import LDPOptions, LDPRun
from dpreg.fits.registry import check_known, fit_options
from dpreg.frontend.model import DPRegression
from dpreg.privacy.disclosure import warn_fixed_seed
from dpreg.privacy.ledger import Ledger
from dpreg.privacy.request import PrivacyRequest
from dpreg.results import DPRegressionResults
from dpreg.results.io import register_loadable, write_pickle

__all__ = ["LDPStream"]

#: A stream's options: those of LDP-SGD but the engine, a progress bar over rows (see
#: ``consume(progress=)``) and the diagnostics (nothing unprivatized exists).
_STREAM_OPTIONS = tuple(f.name for f in dataclasses.fields(LDPOptions)
                        if f.name not in ("engine", "progress", "diagnostics"))


@register_loadable
class LDPStream:
    """Regression on a stream under local differential privacy (LDP-SGD), one pass.

    Parameters
    ----------
    formula : str
        Patsy formula, e.g. ``"y ~ x1 + x2"``.
    family : {"huber", "logistic", "expectile", "linear"}
        Default ``"huber"`` (c = 1.345 with Mallows weights, as in the ldp-sgd paper).
    c : float, optional
        As for :class:`dpreg.DPRegression`.
    tau : float
        As for :class:`dpreg.DPRegression`.
    weights : {"mallows", None}, optional
        As for :class:`dpreg.DPRegression` (default on for Huber and expectile).
    bounds : dict, optional
        Public bounds ``{column: (lower, upper)}``, enforced by clipping in every chunk.
    levels : dict, optional
        Public categories of categorical columns. Declare them: categories not declared
        are read from the first chunk, and a later chunk with another category fails.
    missing : {"raise", "drop"}
        Default ``"raise"``: a chunk with a missing value fails (and the stream is
        unchanged); the error names the column, so it is for whoever holds the chunk.
        ``"drop"``: the row's owner sends a null row (pure noise) in its place, so the
        server learns neither the count nor the positions of missing values; the row
        carries no information and counts in ``nobs`` (one message per person).
    eval_env : int
        Frames above the caller in which the formula's functions are looked up.
    **options
        ``mu`` (or ``epsilon`` with ``delta``, or ``rho``): the total budget. Also
        ``cov_type`` ({"rs", "batch_means", "plugin"}), ``clip`` (``B0``), ``lr``,
        ``lr_decay`` (alpha, default 0.51), ``x_bound``, ``budget_split`` (default
        ``{"path": 1}``: random scaling and batch means are free; with
        ``cov_type="plugin"`` the default gives path, Hessian and score a third of
        ``mu^2`` each), ``n_batches`` (default ``round(n^0.25)``), ``random_state``,
        ``strict``, ``start_params``, ``condition`` (``"bounds"`` or ``"none"``;
        ``"private"``, the default, means ``"bounds"`` here: the public map only, see
        the LDP page). See :meth:`dpreg.DPRegression.fit`.

    Notes
    -----
    Each row is touched once, by its owner, through a Gaussian mechanism with
    sensitivity ``2 B0`` and noise ``2 B0 / mu_path``: the stream is ``mu_path``-GDP for
    every person whatever the order of the rows (parallel composition, ldp-sgd paper
    Prop. 5). The server sees only noisy gradients. The private plug-in ("plugin")
    needs a curator (see :mod:`dpreg.fits.ldp_sgd`) and costs its own budget, released once:
    the first :meth:`results` that includes it records it in the ledger; later calls
    reuse it scaled to the current n.

    A checkpoint (:meth:`save`, or ``pickle``) holds the stream's whole state: the
    path, its running sums, the ledger, the row count and the random generators'
    states, so that a resumed stream gives the numbers of an uninterrupted one. It is
    the curator's working state, not a result: the generators' states determine the
    noise already drawn, and with a plug-in share the unprivatized sums are in it. Keep
    it with the data; publish :meth:`results`.

    Examples
    --------
    >>> stream = dpreg.LDPStream("y ~ x1 + x2", family="huber", mu=1,
    ...                          random_state=1)                      # doctest: +SKIP
    >>> for chunk in pd.read_csv("big.csv", chunksize=100_000):       # doctest: +SKIP
    ...     stream.partial_fit(chunk)
    >>> print(stream.results().summary())                             # doctest: +SKIP

    Checkpoint as the file is read, and after a crash resume where it stopped:

    >>> stream.consume("big.csv", checkpoint="run.ckpt")              # doctest: +SKIP
    >>> stream = dpreg.load("run.ckpt")                               # doctest: +SKIP
    >>> stream.consume("big.csv", skip=stream.nobs, checkpoint="run.ckpt")  # doctest: +SKIP
    """

    def __init__(self, formula: str, *, family: str = "huber", c: float | None = None,
                 tau: float = 0.5, weights: str | None = "default",
                 bounds: Mapping[str, Any] | None = None,
                 levels: Mapping[str, Any] | None = None, missing: str = "raise",
                 eval_env: int = 0, **options):
        check_known(options)
        wrong = [k for k in options if k not in _STREAM_OPTIONS]
        if wrong:
            raise OptionError(f"{wrong} do not apply to a stream; options are "
                              f"{list(_STREAM_OPTIONS)}")
        if not isinstance(formula, str) or "~" not in formula:
            raise FormulaError(f"formula must be a string 'outcome ~ terms', got {formula!r}")
        self._opts = fit_options(engine="ldp_sgd", **options)
        warn_fixed_seed(self._opts.random_state)
        self._request = PrivacyRequest.from_options(
            mu=self._opts.mu, epsilon=self._opts.epsilon, delta=self._opts.delta,
            rho=self._opts.rho)
        self._family = get_family(family)
        family_constants(self._family, c, tau, weights)  # validate now, not at chunk 1
        self._model_args = {"family": self._family, "c": c, "tau": tau, "weights": weights}
        self._formula = formula
        self._bounds = check_bounds(bounds)
        self._levels = levels
        self._missing = check_missing(missing)
        self._env = capture_env(eval_env + 1)
        self._run: LDPRun | None = None
        self._kinds: dict[str, str] = {}

    @property
    def nobs(self) -> int:
        """Rows used so far."""
        return 0 if self._run is None else self._run.path.nobs

    @property
    def ledger(self) -> Ledger | None:
        """The privacy ledger (``None`` before the first chunk)."""
        return None if self._run is None else self._run.ledger

    def partial_fit(self, chunk) -> "LDPStream":
        """Take one step per row of ``chunk``.

        A bad chunk (missing column, changed dtype, missing value with
        ``missing="raise"``, a category outside the declared levels) raises a
        :class:`~dpreg.exceptions.DataError` before any row is used: the stream's
        state is unchanged and the next chunk can follow.

        Parameters
        ----------
        chunk : pandas.DataFrame, pyarrow.Table or pyarrow.RecordBatch
            The next rows, in their order of arrival.

        Returns
        -------
        LDPStream
            The stream itself (calls chain).
        """
        data = _as_frame(chunk)
        if self._run is None:
            self._start(data)
            return self
        # rows with a missing value come back as null rows (pure noise): no count is kept
        y, X, _ = build_chunk(self._run.problem.design, data, missing=self._missing,
                              bounds=self._bounds, levels=self._levels, dtypes=self._kinds)
        if len(y):
            self._family.check_y(y, self._run.problem.design.endog_name)
            self._run.update(X, y)
        return self

    def _start(self, data: pd.DataFrame) -> None:
        design = build_design(self._formula, data, missing=self._missing,
                              bounds=self._bounds, levels=self._levels, eval_env=self._env,
                              binary_outcome=self._family.binary_outcome)
        problem = DPRegression.from_design(design, **self._model_args).problem
        problem.check_privacy(self._opts.strict)
        kinds = column_kinds(self._formula, data)
        run = LDPRun(problem, self._opts, self._request)
        run.update(*design.device_rows())
        self._run, self._kinds = run, kinds

    def consume(self, source, *, chunksize: int = 100_000, progress: bool = False,
                skip: int = 0, checkpoint=None) -> "LDPStream":
        """Stream every chunk of ``source`` through :meth:`partial_fit`.

        Parameters
        ----------
        source : str, os.PathLike, DataFrame, pyarrow Table/RecordBatch, or iterable
            A ``.csv`` (optionally compressed) or ``.parquet`` path is read in chunks of
            ``chunksize`` rows (parquet needs pyarrow); an iterable yields chunks.
        chunksize : int
            Rows per chunk when reading a file.
        progress : bool
            Show a progress bar over chunks.
        skip : int
            Rows at the start of ``source`` to pass over unread by the model: those a
            stream resumed from a checkpoint has already consumed (``stream.nobs`` when
            ``source`` is the only source). A row is privatized once; consuming it again
            would spend its budget twice, which the ledger would not know.
        checkpoint : str or os.PathLike, optional
            Save the stream there (:meth:`save`, atomically) after every chunk.

        Returns
        -------
        LDPStream
            The stream itself.
        """
        if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
            raise OptionError(f"chunksize must be a positive integer, got {chunksize!r}")
        if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
            raise OptionError(f"skip must be a non-negative integer, got {skip!r}")
        left = skip
        for chunk in tqdm(_chunks(source, chunksize), disable=not progress,
                          desc="LDP-SGD", unit="chunk", leave=False):
            if left:
                frame = _as_frame(chunk)
                if left >= len(frame):
                    left -= len(frame)
                    continue
                chunk, left = frame.iloc[left:], 0
            self.partial_fit(chunk)
            if checkpoint is not None:
                self.save(checkpoint)
        if left:
            raise DataError(f"skip = {skip} exceeds the {skip - left} rows of the source: "
                            "nothing was consumed")
        return self

    def save(self, fname) -> None:
        """Checkpoint the stream to ``fname``; resume with :func:`dpreg.load`.

        The resumed stream has this one's state, ledger and row count (``nobs``), and
        gives the numbers an uninterrupted run would. Feed it only rows it has not
        seen (:meth:`consume`'s ``skip``). The file is written atomically and is the
        curator's state, not a publishable result (see the class notes).

        Parameters
        ----------
        fname : str, path or writable binary file object
        """
        try:
            write_pickle(self, fname)
        except (pickle.PicklingError, TypeError, AttributeError) as err:
            raise OptionError(f"cannot checkpoint this stream: {err}. Functions the "
                              "formula calls must be importable (defined at module "
                              "level, not lambdas or local functions)") from None

    def __getstate__(self):
        # patsy's designs and evaluation environments do not pickle: the template is
        # stored as its public description (names, levels) and rebuilt on loading; the
        # formula's functions are stored by reference
        state = self.__dict__.copy()
        state["_env"] = portable_namespace(formula_namespace(self._formula, self._env))
        if self._run is not None:
            run = copy.copy(self._run)
            state["_template"] = template_prototype(run.problem.design)
            state["_shared_cond"] = run.cond is run.problem.conditioning
            run.problem = None
            state["_run"] = run
        return state

    def __setstate__(self, state):
        template = state.pop("_template", None)
        shared_cond = state.pop("_shared_cond", False)
        state["_env"] = namespace_env(restore_namespace(state["_env"]))
        self.__dict__.update(state)
        if self._run is None:
            return
        design = template_from_prototype(
            self._formula, template, missing=self._missing, bounds=self._bounds,
            levels=self._levels, eval_env=self._env,
            binary_outcome=self._family.binary_outcome)
        problem = DPRegression.from_design(design, **self._model_args).problem
        self._run.problem = problem
        if shared_cond:
            self._run.cond = problem.conditioning

    def results(self, *, plugin: bool | None = None) -> DPRegressionResults:
        """Results for the rows seen so far (the stream can go on).

        Parameters
        ----------
        plugin : bool, optional
            Release the private plug-in matrices (default: if the budget has a share
            for them). They are released once per stream; ``plugin=False`` gives random
            scaling and batch means without spending it.

        Returns
        -------
        DPRegressionResults
            Estimates and intervals for the rows seen so far, with a copy of the ledger.
        """
        if self._run is None:
            raise DataError("the stream has seen no rows yet; call partial_fit first")
        return self._run.results(release_plugin=plugin)

    def __repr__(self) -> str:
        return (f"<LDPStream {self._formula!r}, {self._family.name}, "
                f"{self._request.describe()}: {self.nobs} rows>")


def _as_frame(chunk) -> pd.DataFrame:
    if isinstance(chunk, pd.DataFrame):
        return chunk
    to_pandas = getattr(chunk, "to_pandas", None)  # pyarrow Table / RecordBatch
    if callable(to_pandas):
        return to_pandas()
    if isinstance(chunk, Mapping):
        return pd.DataFrame(chunk)
    raise DataError(f"a chunk must be a pandas DataFrame or a pyarrow Table/RecordBatch, "
                    f"got {type(chunk).__name__}")


def _chunks(source, chunksize: int) -> Iterable:
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise DataError(f"no such file: {path!r}")
        lower = path.lower()
        if lower.endswith((".parquet", ".pq")):
            try:
                import pyarrow.parquet as pq
            except ImportError:
                raise OptionError("reading parquet needs pyarrow: pip install "
                                  "'dpreg[stream]'") from None
            for batch in pq.ParquetFile(path).iter_batches(batch_size=chunksize):
                yield batch
            return
        # pandas' chunked C reader: as fast as pyarrow's streaming reader here, and its
        # memory stays flat (pyarrow's grew with the file: 470 -> 569 MiB, 1e6 -> 2e6 rows)
        with pd.read_csv(path, chunksize=chunksize) as reader:
            yield from reader
        return
    if isinstance(source, pd.DataFrame) or hasattr(source, "to_pandas"):
        yield source
        return
    try:
        iterator = iter(source)
    except TypeError:
        raise DataError(f"cannot stream from {type(source).__name__}: give a path, a "
                        "DataFrame or an iterable of DataFrames") from None
    yield from iterator

