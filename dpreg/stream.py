"""Local-DP streaming regression: :class:`LDPStream` and ``engine="ldp_sgd"``.

Nobody holds the raw data: the server sends the current iterate to the next person,
who returns a clipped gradient with Gaussian noise added on their own device (ldp-sgd
paper, (2.3)). The analysis is one pass in the order the rows arrive, with memory that
does not grow with n: the iterate, the random-scaling sums, optional plug-in sums and a
sparse record of the running average (see :mod:`dpreg.engines.ldp_sgd`).

Each device maps its row by the public conditioning of the declared bounds
(:mod:`dpreg.conditioning`; no private preconditioner, which would be a central
release) before privatizing its gradient; estimates, intervals and the trajectory are
mapped back exactly, and free convergence checks run on every result
(:func:`dpreg.inference.diagnostics.one_pass_report`).

Inference (s.4 of the paper): random scaling ("rs", the default: free, asymptotically
exact pivot), batch means ("batch_means", free) and the private plug-in ("plugin"),
whose Hessian and score matrices are *central* releases: a curator must see each row's
Hessian and gradient at the iterate it was served to form them, so the plug-in needs
trust that the local path does not. Its budget is a separate row of the ledger.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from dpreg.design import check_bounds, check_missing
from dpreg.engines.ldp_sgd import LDPPath, LDPSettings
from dpreg.exceptions import BudgetExceededError, DataError, FormulaError, OptionError
from dpreg.families import get_family, mallows_weights
from dpreg.formula import build_chunk, build_design, capture_env, column_kinds
from dpreg.inference.base import Inference, NormalLaw
from dpreg.inference.batch_means import batch_means_inference, default_n_batches
from dpreg.inference.diagnostics import attach_report, one_pass_report
from dpreg.inference.plugin import floor_eigenvalues
from dpreg.inference.random_scaling import rs_inference
from dpreg.model import DPRegression, _family_constants
from dpreg.options import FitOptions, check_known
from dpreg.privacy.calibration import calibrate_to_budget
from dpreg.privacy.disclosure import warn_fixed_seed
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.ledger import Ledger
from dpreg.privacy.mechanisms import gaussian_matrix_mechanism
from dpreg.privacy.request import PrivacyRequest
from dpreg.results import DPRegressionResults

__all__ = ["LDPStream", "fit_ldp_sgd"]

PATH, HESSIAN, SCORE = "LDP-SGD gradients", "Hessian A", "score covariance S"
#: Options of ``fit`` that mean nothing for a one-pass engine.
_NOT_FOR_LDP = ("batch_size", "steps")
_STREAM_OPTIONS = ("mu", "epsilon", "delta", "rho", "cov_type", "clip", "lr", "lr_decay",
                   "x_bound", "budget_split", "n_batches", "random_state", "strict",
                   "start_params", "condition")
RS_NOTE = ("RS: random-scaling pivot of the one-pass path (one row per step, no "
           "correction needed; ldp-sgd paper, Cor. 4).")


#: Default ``lr * hess_bound`` of the linear family under LDP-SGD (:func:`ldp_step`).
LINEAR_LDP_LR = 2.0


def ldp_step(obj, row_sq: float, lr_decay: float) -> tuple[float, float, str]:
    """The default step ``lr (t + t0)^-alpha`` of a one-pass LDP-SGD path.

    Curved scores (Huber, logistic, expectile) keep ``lr = ldp_lr_scale / kappa``,
    ``kappa = hess_bound * row_sq`` the public bound on a row's curvature, and ``t0 =
    0``: a larger step biases the average of their noisy iterates (Family docs; Huber,
    ldp-sgd Table 1 design, n = 40,000, mu = 1, 200 reps: PRS covers 93.0% at
    1/(4 kappa), 94.8% at 1/kappa; at 2/kappa the plug-in covers 84%).

    The linear family's score is linear in theta, so the step has no such bias and is
    limited by stability alone. One pass takes only ``n`` steps and the path
    decorrelates on a time scale ``t^alpha / (lr lambda)``, ``lambda`` the curvature of
    its slowest direction, which in conditioned coordinates is ``E z_j^2 <= 1`` and far
    smaller when the declared box is loose (1/16 for N(0, 1) covariates declared in
    [-4, 4]). At ``lr = 1 / row_sq`` (``row_sq = 1 + p`` on ``p`` conditioned columns)
    that time scale is a sizeable share of ``n`` and random scaling and batch means
    undercover (the LDP page of the user guide: 0.75 and 0.52 at n = 20,000, p = 3,
    mu = 2). The default is ``lr = 2 / hess_bound`` with the public offset ``t0 =
    (lr hess_bound row_sq)^(1/alpha) - 1``, which caps every step at ``1 / (hess_bound
    row_sq)`` (no step expands along any row, whatever its norm) and changes the
    schedule only in its first ``t0`` steps (asymptotically the same ``gamma t^-alpha``
    of the ldp-sgd paper's Theorem 2). Returns ``(lr, t0, reason)``.
    """
    if obj.family.name != "linear":
        kappa = obj.hess_bound * row_sq
        lr = obj.family.ldp_lr_scale / kappa
        return lr, 0.0, (f"lr = {lr:.4g} = {obj.family.ldp_lr_scale:g}/kappa, kappa = "
                         f"{kappa:.4g} the public bound on a row's curvature.")
    lr = LINEAR_LDP_LR / obj.hess_bound
    t0 = max(0.0, (lr * obj.hess_bound * row_sq) ** (1.0 / lr_decay) - 1.0)
    return lr, t0, (f"lr = {lr:.4g}, steps lr (t + t0)^-alpha with t0 = {t0:.4g}: no step "
                    f"exceeds 1/(hess_bound row_sq) = {1 / (obj.hess_bound * row_sq):.4g}, "
                    "and the path decorrelates within one pass (a linear score has no "
                    "step-size bias).")


class _LDPRun:
    """One LDP-SGD analysis: budget, ledger, pass and inference, shared by
    :class:`LDPStream` and ``fit(engine="ldp_sgd")``.

    ``model`` is a :class:`dpreg.DPRegression` whose design is a template (the first
    chunk, or all the data): only its public metadata (names, declared bounds) and its
    family constants are used to set up the pass.
    """

    def __init__(self, model, opts: FitOptions, request: PrivacyRequest):
        self.model = model
        self.opts = opts
        design = model.design
        obj = model.objective
        # The public map of the columns into [-1, 1] (dpreg.conditioning): a fixed matrix
        # from declared bounds, so each device can apply it to its own row before
        # computing its gradient; the local mechanism is unchanged. No private
        # preconditioner: it would be a central release of everyone's rows, which the
        # local model forbids, so condition="private" means "bounds" here.
        self.cond = model.engine_coordinates(opts)
        self.pub = model._public_settings(opts, self.cond, full_batch=True)
        self.step_offset = 0.0
        if opts.lr is None:
            lr, self.step_offset, why = ldp_step(obj, self.pub.row_sq_bound,
                                                 float(opts.lr_decay))
            self.pub = dataclasses.replace(self.pub, lr=lr, reasons=self.pub.reasons + (why,))
        self.split = opts.split()
        self.plugin = "hessian" in self.split
        clip = self.pub.clip
        self.b1 = obj.hess_bound * self.pub.row_sq_bound

        def build(mu_scale: float) -> list[GaussianMechanismEvent]:
            # matrices get sensitivity 1 here: only their noise multipliers are fixed
            # now; the ledger records them with the real n when they are released
            mu_path = mu_scale * math.sqrt(self.split["path"])
            events = [GaussianMechanismEvent(
                name=PATH, sensitivity=2 * clip, noise_std=2 * clip / mu_path,
                adjacency="replace-one", scope="local")]
            for key, name in (("hessian", HESSIAN), ("score", SCORE)):
                if key in self.split:
                    events.append(GaussianMechanismEvent(
                        name=name, sensitivity=1.0,
                        noise_std=1.0 / (mu_scale * math.sqrt(self.split[key])),
                        adjacency="replace-one"))
            return events

        try:
            events = calibrate_to_budget(request, build)
        except BudgetExceededError as err:
            raise BudgetExceededError(f"the budget {request.describe()} is too small to "
                                      f"calibrate the local noise: increase it ({err})") from None
        self.multipliers = {e.name: e.noise_multiplier for e in events}
        self.ledger = Ledger(request, delta=request.delta or 1e-5)
        self.ledger.record(events[0])  # the local path: before any row is touched
        path_event = events[0]
        self.noise_scale = path_event.noise_std
        self.settings = LDPSettings(
            lr=self.pub.lr, lr_decay=float(opts.lr_decay), clip=clip,
            noise_scale=self.noise_scale, plugin=self.plugin, hess_cap=obj.hess_bound,
            x_bound=self.pub.x_bound, code=obj.family.code, c=float(obj.c),
            tau=float(obj.tau), step_offset=self.step_offset)
        rng_path, self._rng_matrix = np.random.default_rng(self.pub.seed).spawn(2)
        self.path = LDPPath(design.k_exog, self.settings,
                            self.cond.to_engine(model._start(opts.start_params)), rng_path,
                            qmap=self.cond.M_inv)
        self.n_dropped = 0
        self._released: dict[str, Any] | None = None

    # ------------------------------------------------------------------ data
    def update(self, X: np.ndarray, y: np.ndarray, n_dropped: int = 0) -> None:
        obj = self.model.objective
        # Mallows weights on the rows mapped into [-1, 1] by the declared bounds, as the
        # model (and so the oracle) defines them (dpreg.conditioning)
        Z = self.cond.design(X)  # each device maps its own row: public constants
        if obj.mallows:
            model_rows = Z if self.cond is self.model.conditioning \
                else self.model.conditioning.design(X)
            w = mallows_weights(model_rows)
        else:
            w = np.ones(len(y))
        self.path.update(Z, y, w)
        self.n_dropped += int(n_dropped)

    # ------------------------------------------------------------------ inference
    def _release_plugin(self, snap) -> dict[str, Any]:
        """Privatize the plug-in sums (central Gaussian matrix mechanism, sensitivity 2B/n;
        ldp-sgd paper, Prop. 4)."""
        n = snap.nobs
        clip = self.settings.clip
        sens = {HESSIAN: 2 * self.b1 / n, SCORE: 2 * clip ** 2 / n}
        events = {name: GaussianMechanismEvent(
            name=name, sensitivity=sens[name],
            noise_std=sens[name] * self.multipliers[name], adjacency="replace-one")
            for name in (HESSIAN, SCORE)}
        for event in events.values():
            self.ledger.record(event)
        A_noisy, _ = gaussian_matrix_mechanism(snap.a_sum / n, events[HESSIAN], self._rng_matrix)
        S_noisy, _ = gaussian_matrix_mechanism(snap.s_sum / n, events[SCORE], self._rng_matrix)
        # eigenvalue thresholds (the paper's kappa_1, kappa_2): A into [one noise sd, B1],
        # S into [0, B0^2]; then the known privacy part 4 B0^2 / mu^2 I (Cor. 1)
        A, moved_a = floor_eigenvalues(A_noisy, min(events[HESSIAN].noise_std, self.b1),
                                       self.b1)
        S, moved_s = floor_eigenvalues(S_noisy, 0.0, clip ** 2)
        S_tilde = S + self.noise_scale ** 2 * np.eye(len(S))
        A_inv = np.linalg.inv(A)
        # floored in the engine's coordinates (where the public bounds hold), then mapped
        # to the user's exactly: M^-1 Sigma_z M^-T
        sigma = self.cond.covariance(A_inv @ S_tilde @ A_inv)
        return {"n": n, "sigma": sigma, "moved": (moved_a, moved_s)}

    def results(self, release_plugin: bool | None = None) -> DPRegressionResults:
        n = self.path.nobs
        p = self.path.p
        if n < 3:
            raise DataError(f"the stream has seen {n} row(s); results need at least 3")
        snap = self.path.snapshot()
        cond = self.cond
        params = cond.params(snap.params)
        notes = list(self.pub.reasons)
        if release_plugin is None:
            release_plugin = self.plugin
        if release_plugin and not self.plugin:
            raise OptionError("the plug-in needs a budget share: give budget_split with "
                              "'hessian' and 'score' (or cov_type='plugin')")
        if release_plugin and self._released is None:
            self._released = self._release_plugin(snap)
        rs_q = cond.covariance(snap.rs_q)
        inferences: dict[str, Inference] = {"rs": rs_inference(rs_q, 1.0, note=RS_NOTE)}
        steps = np.append(snap.mark_steps[snap.mark_steps < n], n)
        # running averages in the user's coordinates: batch means are linear in them, so
        # their covariance is the engine's mapped exactly
        avgs = np.vstack([cond.params(snap.mark_avg[snap.mark_steps < n]), params])
        n_batches = self.opts.n_batches or default_n_batches(n)
        try:
            inferences["batch_means"] = batch_means_inference(steps, avgs, n_batches,
                                                              self.settings.lr_decay)
        except OptionError as err:
            notes.append(f"Batch means unavailable: {err}.")
        cov = None
        plugin_cov = None
        if self._released is not None:
            rel = self._released
            plugin_cov = rel["sigma"]
            cov = plugin_cov / n
            text = "Plug-in: private A and S (central), sandwich A^-1 (S + 4 B0^2/mu^2 I) A^-1."
            if any(rel["moved"]):
                text += (f" {rel['moved'][0]} eigenvalue(s) of A and {rel['moved'][1]} of S "
                         "moved into their public ranges.")
            if rel["n"] != n:
                text += f" Released at n = {rel['n']}; scaled to the current n."
            inferences["plugin"] = Inference("plugin", np.sqrt(np.diag(cov)), NormalLaw(),
                                             True, text)
            notes.append("The plug-in matrices A and S are central releases: a curator "
                         "must see each row's gradient and Hessian at its iterate to form "
                         "them, unlike the LDP estimate; their budget is in the ledger.")
        cov_type = self.opts.cov_type
        if cov_type not in inferences:
            cov_type = "rs"
            notes.append(f"cov_type {self.opts.cov_type!r} is not available for this "
                         "release; p-values use random scaling.")
        mu_path = self.ledger.events[0].mu()
        notes.append(f"LDP-SGD: every row was privatized by its owner (mu = {mu_path:.4g} "
                     "GDP locally); one pass in the order of arrival.")
        design = self.model.design
        obj = self.model.objective
        split = self.split
        table = {
            "engine": "ldp_sgd", "rows (one pass)": n, "lr": self.settings.lr,
            "lr_decay": self.settings.lr_decay, "step offset t0": self.settings.step_offset,
            "clip (B0)": self.settings.clip,
            "local noise sd (2 B0 / mu)": self.noise_scale,
            "x_bound": "none (Mallows weights)" if self.pub.x_bound is None
            else self.pub.x_bound,
            "conditioning": cond.description + (
                "" if cond.is_identity else "; public map only (no private preconditioner "
                "under local DP)"),
            "budget_split": ", ".join(f"{k} {v:g}" for k, v in split.items()),
            "n_batches": n_batches,
            "random_state": "given (kept secret)" if self.opts.random_state is not None
            else "fresh OS entropy (not stored)",
        }
        trajectory = {"steps": steps, "average": avgs,
                      "rs_q_diag": np.vstack([snap.mark_q[snap.mark_steps < n],
                                              np.diag(rs_q)]),
                      "lr_decay": self.settings.lr_decay, "n_batches": n_batches,
                      "plugin_cov": plugin_cov}
        report = one_pass_report(design.exog_names, inferences, params, steps, avgs, n,
                                 self.settings.lr_decay)
        res = DPRegressionResults(
            params=params, names=design.exog_names, endog_name=design.endog_name,
            inferences=inferences, cov_type=cov_type, nobs=n,
            df_model=p - int("Intercept" in design.exog_names or "const" in design.exog_names),
            private=True, family_label=obj.label(), engine="LDP-SGD", settings=table,
            n_dropped=self.n_dropped, formula=design.formula,
            ledger=copy.deepcopy(self.ledger), cov_matrix=cov,
            design_info=design.design_info, trajectory=trajectory, notes=tuple(notes))
        return attach_report(res, report, "LDP-SGD")


def fit_ldp_sgd(model, opts: FitOptions, request: PrivacyRequest) -> DPRegressionResults:
    """``DPRegression.fit(engine="ldp_sgd")``: one pass over the rows in their order."""
    given = [k for k in _NOT_FOR_LDP if getattr(opts, k) is not None]
    if given or opts.sampling != "uniform":
        raise OptionError(f"{given or ['sampling']} do not apply to engine='ldp_sgd': it "
                          "takes one step per row, in order (steps = n, batch size 1)")
    if opts.diagnostics:
        raise OptionError("diagnostics=True is not available for engine='ldp_sgd' (rows "
                          "are privatized by their owners; nothing unprivatized exists)")
    run = _LDPRun(model, opts, request)
    X, y = model.design.device_rows()  # a row with a missing value sends pure noise
    block = 1 << 17
    with tqdm(total=len(y), disable=not opts.progress, desc="LDP-SGD", unit="row",
              leave=False) as bar:
        for start in range(0, len(y), block):
            run.update(X[start:start + block], y[start:start + block])
            bar.update(min(block, len(y) - start))
    return run.results()


class LDPStream:
    """Regression on a stream under local differential privacy (LDP-SGD), one pass.

    Parameters
    ----------
    formula : str
        Patsy formula, e.g. ``"y ~ x1 + x2"``.
    family : {"huber", "logistic", "expectile", "linear"}
        Default ``"huber"`` (c = 1.345 with Mallows weights, as in the ldp-sgd paper).
    c, tau, weights
        As for :class:`dpreg.DPRegression`.
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

    Examples
    --------
    >>> stream = dpreg.LDPStream("y ~ x1 + x2", family="huber", mu=1,
    ...                          random_state=1)                      # doctest: +SKIP
    >>> for chunk in pd.read_csv("big.csv", chunksize=100_000):       # doctest: +SKIP
    ...     stream.partial_fit(chunk)
    >>> print(stream.results().summary())                             # doctest: +SKIP

    Notes
    -----
    Each row is touched once, by its owner, through a Gaussian mechanism with
    sensitivity ``2 B0`` and noise ``2 B0 / mu_path``: the stream is ``mu_path``-GDP for
    every person whatever the order of the rows (parallel composition, ldp-sgd paper
    Prop. 5). The server sees only noisy gradients. The private plug-in ("plugin")
    needs a curator (see the module notes) and costs its own budget, released once:
    the first :meth:`results` that includes it records it in the ledger; later calls
    reuse it scaled to the current n.
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
        self._opts = FitOptions(engine="ldp_sgd", **options)
        warn_fixed_seed(self._opts.random_state)
        self._request = PrivacyRequest.from_options(
            mu=self._opts.mu, epsilon=self._opts.epsilon, delta=self._opts.delta,
            rho=self._opts.rho)
        self._family = get_family(family)
        _family_constants(self._family, c, tau, weights)  # validate now, not at chunk 1
        self._model_args = {"family": self._family, "c": c, "tau": tau, "weights": weights}
        self._formula = formula
        self._bounds = check_bounds(bounds)
        self._levels = levels
        self._missing = check_missing(missing)
        self._env = capture_env(eval_env + 1)
        self._run: _LDPRun | None = None
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
        """Take one step per row of ``chunk`` (a DataFrame or a pyarrow batch/table).

        A bad chunk (missing column, changed dtype, missing value with
        ``missing="raise"``, a category outside the declared levels) raises a
        :class:`~dpreg.exceptions.DataError` before any row is used: the stream's
        state is unchanged and the next chunk can follow.
        """
        data = _as_frame(chunk)
        if self._run is None:
            self._start(data)
            return self
        # rows with a missing value come back as null rows (pure noise): no count is kept
        y, X, _ = build_chunk(self._run.model.design, data, missing=self._missing,
                              bounds=self._bounds, levels=self._levels, dtypes=self._kinds)
        if len(y):
            self._family.check_y(y, self._run.model.design.endog_name)
            self._run.update(X, y)
        return self

    def _start(self, data: pd.DataFrame) -> None:
        design = build_design(self._formula, data, missing=self._missing,
                              bounds=self._bounds, levels=self._levels, eval_env=self._env,
                              binary_outcome=self._family.name == "logistic", chunk=True)
        model = DPRegression(None, None, _design=design, **self._model_args)
        model._check_design_privacy(self._opts.strict)
        kinds = column_kinds(self._formula, data)
        run = _LDPRun(model, self._opts, self._request)
        run.update(*design.device_rows())
        self._run, self._kinds = run, kinds

    def consume(self, source, *, chunksize: int = 100_000,
                progress: bool = False) -> "LDPStream":
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
        """
        if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
            raise OptionError(f"chunksize must be a positive integer, got {chunksize!r}")
        for chunk in tqdm(_chunks(source, chunksize), disable=not progress,
                          desc="LDP-SGD", unit="chunk", leave=False):
            self.partial_fit(chunk)
        return self

    def results(self, *, plugin: bool | None = None) -> DPRegressionResults:
        """Results for the rows seen so far (the stream can go on).

        Parameters
        ----------
        plugin : bool, optional
            Release the private plug-in matrices (default: if the budget has a share
            for them). They are released once per stream; ``plugin=False`` gives random
            scaling and batch means without spending it.
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

