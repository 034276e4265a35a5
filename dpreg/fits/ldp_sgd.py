"""LDP-SGD (``engine="ldp_sgd"``): one pass, each row privatized by its owner.

Nobody holds the raw data: the server sends the current iterate to the next person,
who returns a clipped gradient with Gaussian noise added on their own device (ldp-sgd
paper, (2.3)). The analysis is one pass in the order the rows arrive, with memory that
does not grow with n: the iterate, the random-scaling sums, optional plug-in sums and a
sparse record of the running average (see :mod:`dpreg.engines.ldp_sgd`).
:class:`LDPRun` is that analysis; :func:`fit_ldp_sgd` runs it over a whole design and
:class:`dpreg.LDPStream` over chunks.

Each device maps its row by the public conditioning of the declared bounds
(:mod:`dpreg.design.conditioning`; no private preconditioner, which would be a central
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
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from tqdm.auto import tqdm

from dpreg._checks import integer_at_least
from dpreg.design import degenerate_note
from dpreg.design.reference_design import reference_rows
from dpreg.engines.ldp_sgd import LDPPath, LDPSettings
from dpreg.exceptions import DataError, OptionError
from dpreg.families import FAMILIES, mallows_weights
from dpreg.fits.common import (
    FitRecord,
    Problem,
    build_results,
    calibrate_and_record,
    seed_text,
    spawn_rngs,
)
from dpreg.fits.options import DEFAULT_BUDGET_SPLIT, PathOptions, check_lr_decay, plugin_split
from dpreg.inference.base import Inference, NormalLaw
from dpreg.inference.batch_means import batch_means_inference, default_n_batches
from dpreg.inference.diagnostics import one_pass_report
from dpreg.inference.methods import engine_methods
from dpreg.inference.plugin import floor_eigenvalues
from dpreg.inference.random_scaling import rs_inference
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.mechanisms import gaussian_matrix_mechanism
from dpreg.privacy.request import PrivacyRequest
from dpreg.results import DPRegressionResults, Settings

__all__ = ["LDPRun", "LDPOptions", "fit_ldp_sgd", "ldp_step", "LINEAR_LDP_LR", "LABEL",
           "LDP_PLUGIN_SPLIT", "MIXING_SHARE", "UNIFORM_SPREAD", "BOXED_OFFSET_FAMILIES",
           "spread_needed", "reference_spread"]

PATH, HESSIAN, SCORE = "LDP-SGD gradients", "Hessian A", "score covariance S"
LABEL = "LDP-SGD"
#: Summary labels of the settings whose names say less than the papers' notation.
SETTING_LABELS = {"rows": "rows (one pass)", "step_offset": "step offset t0",
                  "clip": "clip (B0)", "noise_std": "local noise sd (2 B0 / mu)"}
#: With the private plug-in: equal shares, so that the local path and the two central
#: matrices are each mu / sqrt(3) (the ldp-sgd paper gives each mu, Thm 3).
LDP_PLUGIN_SPLIT = {"path": 1 / 3, "hessian": 1 / 3, "score": 1 / 3}


@dataclass(frozen=True)
class LDPOptions(PathOptions):
    """Options of ``engine="ldp_sgd"`` (and of :class:`dpreg.LDPStream`): the common and
    path options, the step-size decay (0.51, the ldp-sgd paper's s.5) and the number of
    batch means."""

    cov_types: ClassVar[tuple[str, ...]] = engine_methods("ldp_sgd", "rs")
    scope: ClassVar[str] = ("LDP-SGD takes one step per row, in order (steps = n, batch "
                            "size 1)")

    lr_decay: float = 0.51
    n_batches: int | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.ranges != "declared":
            raise OptionError(
                f"ranges={self.ranges!r} does not apply to engine='ldp_sgd': the private "
                "ranges are a central release (a curator counts every row into noisy "
                "histograms), while under local DP no one but the row's owner sees it, and "
                "local histograms need far more rows than a fit has (user guide, Private "
                "ranges: 'Why no local protocol'). Declare tight public bounds, or "
                "use a central engine ('dpsgd', 'dpgd', 'ssp', 'adassp')")
        if self.n_batches is not None:
            integer_at_least("n_batches", self.n_batches)
            if self.n_batches < 2:
                raise OptionError(f"n_batches must be at least 2 (batch means need a "
                                  f"spread), got {self.n_batches}")
        check_lr_decay(self.lr_decay)

    def split(self) -> dict[str, float]:
        """The validated budget split: random scaling and batch means are free (default
        ``{"path": 1}``); the private plug-in gets :data:`LDP_PLUGIN_SPLIT` by default."""
        split = self.budget_split
        if split is None:
            split = LDP_PLUGIN_SPLIT if self.base_cov_type == "plugin" else {"path": 1.0}
        return plugin_split(split, tuple(DEFAULT_BUDGET_SPLIT))
RS_NOTE = ("RS: random-scaling pivot of the one-pass path (one row per step, no "
           "correction needed; ldp-sgd paper, Cor. 4).")


#: Default ``lr * hess_bound`` of the linear family under LDP-SGD when no declared box
#: conditions the rows (:func:`ldp_step`).
LINEAR_LDP_LR = 2.0
#: Default ``lr * hess_bound`` of the offset step in declared boxes (:func:`ldp_step`).
BOXED_LDP_LR = 8.0


#: Families that take the offset step of :func:`ldp_step` when a declared box conditions
#: the rows (their score is piecewise linear in theta; measured for Huber only): those
#: whose ``Family.ldp_offset_step`` is ``"boxed"``, which is what the fits read.
BOXED_OFFSET_FAMILIES = tuple(name for name, fam in FAMILIES.items()
                              if fam.ldp_offset_step == "boxed")


def ldp_step(obj, row_sq: float, lr_decay: float, boxed: bool = False
             ) -> tuple[float, float, str]:
    """The default step ``lr (t + t0)^-alpha`` of a one-pass LDP-SGD path.

    **The offset step** (the linear family; Huber when the rows are conditioned by declared
    bounds, ``boxed``): ``lr = 2 / hess_bound`` (``8 / hess_bound`` in declared boxes) with
    the public offset ``t0 = (lr hess_bound row_sq)^(1/alpha) - 1``, which caps every step
    at ``1 / (hess_bound row_sq)`` (no step expands along any row, whatever its norm) and
    changes the schedule only in its first ``t0`` steps (asymptotically the same ``gamma
    t^-alpha`` of the ldp-sgd paper's Theorem 2). One pass takes only ``n`` steps and the
    path decorrelates on a time scale ``t^alpha / (lr lambda)``, ``lambda`` the curvature of
    its slowest direction, which in conditioned coordinates is ``E z_j^2 <= 1`` and far
    smaller when the declared box is loose (1/16 for N(0, 1) covariates declared in [-4,
    4]). At ``lr = 1 / row_sq`` that time scale is a sizeable share of ``n`` and random
    scaling and batch means undercover (the LDP page of the user guide: 0.75 and 0.52 for
    the linear family at n = 20,000, p = 3, mu = 2). The linear score has no step-size bias.
    Huber's is linear where residuals are below ``c``, and in declared boxes the offset step
    covers where ``1 / kappa`` did not (``validation/ldp_boxed_step.py``: n = 20,000, 150
    fits each, RS: N(0, 1) declared in [-3, 3] 0.913 -> 0.962 at mu = 1 and 0.920 -> 0.960
    at mu = 2; uniform covariates filling the box 0.942 -> 0.962 and 0.947 -> 0.956; the
    robustness study's natural units 0.61 -> 0.87 unwarned), at 1.1-1.4 times the length.

    **Why 8 in declared boxes.** Honest boxes are loose: a covariate in natural units
    fills a fifth to a third of its half-range (schooling: s.d. 2.5 in [0, 25]), and the
    path's slowest direction needs a larger step to mix in one pass
    (:func:`spread_needed`). The robustness study's natural-units cells at ``2 /
    hess_bound`` -> ``8 / hess_bound`` (200 fits each, coverage of random scaling / batch
    means for the least-spread coefficient): Huber, n = 20,000, p = 3, mu = 2: 0.89 /
    0.80 -> 0.95 / 0.94; linear, same cell: 0.91 / 0.86 -> 0.96 / 0.94; linear, n =
    50,000, p = 10, mu = 5: 0.85 / 0.75 -> 0.91 / 0.88; the estimate's s.d. grows by
    3-20% there. Where the covariates fill their boxes the larger step costs length and
    nothing else (``validation/ldp_boxed_step.py``, Huber, 150 fits: random-scaling
    length 1.3 times at mu = 2 and 2 times at mu = 1, coverage 0.95-0.97 either way;
    ``validation/ldp_convergence.py``: 10 uniform covariates filling [-1, 1], the
    estimate's s.d. 1.8 times); pass ``lr=2`` when the covariates are known to fill their
    boxes.

    **The ldp-sgd paper's step** (other curved scores; Huber on Mallows weights, the
    paper's design, where the offset step dropped Table 1's plug-in coverage from 89.0%
    to 81.8%): ``lr = ldp_lr_scale / kappa``, ``kappa = hess_bound * row_sq`` the public
    bound on a row's curvature, and ``t0 = 0``: a larger step biases the average of
    their noisy iterates (Family docs; Huber, Table 1 design, n = 40,000, mu = 1, 200
    reps: PRS covers 93.0% at 1/(4 kappa), 94.8% at 1/kappa; at 2/kappa the plug-in
    covers 84%).

    Returns ``(lr, t0, reason)``.
    """
    offset = obj.family.ldp_offset_step
    if offset != "always" and not (boxed and offset == "boxed"):
        kappa = obj.hess_bound * row_sq
        lr = obj.family.ldp_lr_scale / kappa
        return lr, 0.0, (f"lr = {lr:.4g} = {obj.family.ldp_lr_scale:g}/kappa, kappa = "
                         f"{kappa:.4g} the public bound on a row's curvature.")
    lr = (BOXED_LDP_LR if boxed else LINEAR_LDP_LR) / obj.hess_bound
    t0 = max(0.0, (lr * obj.hess_bound * row_sq) ** (1.0 / lr_decay) - 1.0)
    why = ("a linear score has no step-size bias" if offset == "always" else
           "in a declared box the rows' curvature is far below its bound")
    return lr, t0, (f"lr = {lr:.4g}, steps lr (t + t0)^-alpha with t0 = {t0:.4g}: no step "
                    f"exceeds 1/(hess_bound row_sq) = {1 / (obj.hess_bound * row_sq):.4g}, "
                    f"and the path decorrelates within one pass ({why}).")


#: A one-pass path's intervals need its slowest direction to decorrelate within a
#: fortieth of the pass (:func:`spread_needed`; calibrated on the robustness study's
#: natural-units cells: at a tenth, coverage of the least-spread coefficient was 0.80-0.91).
MIXING_SHARE = 40.0
#: The spread of a covariate filling its declared box uniformly (sd / half-range): the
#: :func:`reference_spread` of a design of main effects.
UNIFORM_SPREAD = 1 / math.sqrt(3)


def spread_needed(n: int, lr: float, lr_decay: float, step_offset: float,
                  hess_bound: float) -> float:
    """The smallest standard deviation, as a share of half its declared range, that a
    covariate needs for one pass to mix in its direction (public: n and the schedule).

    In the bounds coordinates a covariate spread ``s`` (its standard deviation over half
    its declared range) gives its direction a curvature of at most ``hess_bound s^2``,
    and the path decorrelates there on a time scale ``(n + t0)^alpha / (lr hess_bound
    s^2)`` at the end of the pass. Random scaling and batch means estimate the variance
    from the path's own fluctuations, so they need that scale to be a small share of
    ``n``: ``s >= sqrt(MIXING_SHARE (n + t0)^alpha / (lr hess_bound n))``. Calibration
    (:data:`MIXING_SHARE`): schooling (``s = 0.2``) in the robustness study's
    natural-units cells (n = 20,000) covers 0.80-0.91 where this formula with a share of
    10 gives 0.20 (``lr = 2``) and 0.94-0.96 where it gives 0.10 (``lr = 8``), so the
    stated condition takes 40; the ldp-sgd paper's standardized design sits far inside
    it; ``validation/ldp_slow_direction.py``.

    Parameters
    ----------
    n : int
        Rows in the pass.
    lr, lr_decay, step_offset : float
        The schedule ``lr (t + t0)^-alpha``.
    hess_bound : float
        The family's public bound on the curvature of the loss.

    Returns
    -------
    float
        The standard deviation needed, as a share of half the declared range.
    """
    scale = MIXING_SHARE * (n + step_offset) ** lr_decay / (lr * hess_bound * n)
    return math.sqrt(scale)


def reference_spread(design, cond) -> float | None:
    """The spread of the flattest direction of the public reference design: the square
    root of the smallest eigenvalue of ``E[z z']`` over rows drawn with every numerical
    factor uniform on its declared bounds and every categorical one uniform over its
    levels, independently (:func:`dpreg.design.reference_design.reference_rows`), in the
    engine's coordinates ``z``.

    It generalizes :func:`spread_needed`'s one covariate to the design: with main
    effects only it is :data:`UNIFORM_SPREAD` (58%); an interaction spreads like the
    product of its main effects (33% for one of two uniform covariates); the dummies of a
    four-level factor overlap the intercept (23%). When :func:`spread_needed` exceeds
    it, even data filling their boxes cannot mix in one pass, and the fit warns from
    public numbers alone. Real data spread less than the reference in some direction
    (correlated covariates, means far from the boxes' centres), which no public number
    bounds: the summary states the condition.

    Parameters
    ----------
    design : dpreg.design.Design
        Only its public metadata is read.
    cond : dpreg.design.conditioning.Conditioning
        The engine's coordinates.

    Returns
    -------
    float or None
        The spread, as a share of half the declared range; ``None`` without a reference
        law (a column without declared bounds).
    """
    rows = reference_rows(design)
    if rows is None:
        return None
    Z = cond.design(rows)
    smallest = float(np.linalg.eigvalsh(Z.T @ Z / len(Z))[0])
    return math.sqrt(max(smallest, 0.0))


class LDPRun:
    """One LDP-SGD analysis: budget, ledger, pass and inference, shared by
    :class:`dpreg.LDPStream` and ``fit(engine="ldp_sgd")``.

    ``problem``'s design is a template (the first chunk, or all the data): only its
    public metadata (names, declared bounds) and its family constants are used to set up
    the pass.
    """

    def __init__(self, problem: Problem, opts: LDPOptions, request: PrivacyRequest):
        self.problem = problem
        self.opts = opts
        design = problem.design
        obj = problem.objective
        # The public map of the columns into [-1, 1] (dpreg.design.conditioning): a fixed matrix
        # from declared bounds, so each device can apply it to its own row before
        # computing its gradient; the local mechanism is unchanged. No private
        # preconditioner: it would be a central release of everyone's rows, which the
        # local model forbids, so condition="private" means "bounds" here.
        self.cond = problem.coordinates(opts.condition)
        self.pub = problem.public_settings(opts, self.cond, full_batch=True)
        self.step_offset = 0.0
        # what even data filling the declared boxes would spread (public)
        self.reference = None if self.cond.is_identity else reference_spread(design, self.cond)
        # declared boxes bound every row (whether or not the engine maps them)
        boxed = design.row_norm_bound() is not None
        # whether the fit runs the default offset step of declared boxes
        self._boxed_step = opts.lr is None and boxed and (
            obj.family.ldp_offset_step in ("always", "boxed"))
        if opts.lr is None:
            lr, self.step_offset, why = ldp_step(obj, self.pub.row_sq_bound,
                                                 float(opts.lr_decay), boxed=boxed)
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

        # n is unknown here (a stream opens its ledger before its first row), so the
        # reporting delta is report_delta's cap, whatever n turns out to be; the ledger
        # records the local path now, before any row is touched, and the plug-in
        # matrices when they are released (_release_plugin), at the real n
        events, self.ledger = calibrate_and_record(
            request, build, None, f"LDP-SGD's local path (clip = {clip:.4g})",
            deferred=(HESSIAN, SCORE))
        self.multipliers = {e.name: e.noise_multiplier for e in events}
        path_event = events[0]
        self.noise_scale = path_event.noise_std
        self.settings = LDPSettings(
            lr=self.pub.lr, lr_decay=float(opts.lr_decay), clip=clip,
            noise_scale=self.noise_scale, plugin=self.plugin, hess_cap=obj.hess_bound,
            x_bound=self.pub.x_bound, code=obj.family.code, c=float(obj.c),
            tau=float(obj.tau), step_offset=self.step_offset,
            row_sq_bound=self.pub.row_sq_bound)
        rng_path, self._rng_matrix = spawn_rngs(self.pub.seed, 2)
        self.path = LDPPath(design.k_exog, self.settings,
                            self.cond.to_engine(problem.start(opts.start_params)), rng_path,
                            qmap=self.cond.M_inv)
        self.n_dropped = 0
        self._released: dict[str, Any] | None = None

    # ------------------------------------------------------------------ data
    def update(self, X: np.ndarray, y: np.ndarray, n_dropped: int = 0) -> None:
        obj = self.problem.objective
        # Mallows weights on the rows mapped into [-1, 1] by the declared bounds, as the
        # model (and so the oracle) defines them (dpreg.design.conditioning)
        Z = self.cond.design(X)  # each device maps its own row: public constants
        if obj.mallows:
            model_rows = Z if self.cond is self.problem.conditioning \
                else self.problem.conditioning.design(X)
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
        if n < 3:
            raise DataError(f"the stream has seen {n} row(s); results need at least 3")
        snap = self.path.snapshot()
        cond = self.cond
        params = cond.params(snap.params)
        notes = list(self.pub.reasons)
        if n < len(params):  # n counts the rows sent, null rows included (public)
            notes.insert(0, degenerate_note(n, len(params)))
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
        if self.opts.base_cov_type not in inferences:
            cov_type = "rs"
            notes.append(f"cov_type {self.opts.cov_type!r} is not available for this "
                         "release; p-values use random scaling.")
        share = None
        reference = UNIFORM_SPREAD if self.reference is None else self.reference
        if not cond.is_identity:
            share = spread_needed(n, self.settings.lr, self.settings.lr_decay,
                                  self.settings.step_offset, self.problem.objective.hess_bound)
            if share <= reference:
                notes.append(
                    "One pass mixes only in the directions the data fill: with this n and "
                    "step, the intervals assume each bounded covariate's standard deviation "
                    f"is at least {share:.0%} of half its declared range, and that no "
                    "combination of the columns spreads less (correlated covariates, means "
                    "far from the boxes' centres, interactions and categorical columns "
                    "do); below it they come out too short: declare tighter bounds, use "
                    "more rows, pass a larger lr= or fit with a central engine "
                    "(spread_needed in dpreg.fits.ldp_sgd)." + (
                        " Covariates that fill their boxes mix at lr=2 too, with shorter "
                        "intervals." if self._boxed_step else ""))
        mu_path = self.ledger.events[0].mu()
        notes.append(f"LDP-SGD: every row was privatized by its owner (mu = {mu_path:.4g} "
                     "GDP locally); one pass in the order of arrival.")
        design = self.problem.design
        split = self.split
        table = {
            "engine": "ldp_sgd", "rows": n, "lr": self.settings.lr,
            "lr_decay": self.settings.lr_decay, "step_offset": self.settings.step_offset,
            "clip": self.settings.clip, "noise_std": self.noise_scale,
            "x_bound": "none (Mallows weights)" if self.pub.x_bound is None
            else self.pub.x_bound,
            "conditioning": cond.description + (
                "" if cond.is_identity else "; public map only (no private preconditioner "
                "under local DP)"),
            "budget_split": ", ".join(f"{k} {v:g}" for k, v in split.items()),
            "n_batches": n_batches,
            "random_state": seed_text(self.opts.random_state),
        }
        trajectory = {"steps": steps, "average": avgs,
                      "rs_q_diag": np.vstack([snap.mark_q[snap.mark_steps < n],
                                              np.diag(rs_q)]),
                      "lr_decay": self.settings.lr_decay, "n_batches": n_batches,
                      "plugin_cov": plugin_cov}
        report = one_pass_report(design.exog_names, inferences, params, steps, avgs, n,
                                 self.settings.lr_decay)
        if share is not None and share > reference:
            report = dataclasses.replace(report, public=(
                f"LDP-SGD cannot mix in one pass of {n} rows at this step: its intervals "
                "need every direction of the bounded columns to spread at least "
                f"{min(share, 1.0):.0%} of half its declared range, and even covariates "
                "filling their boxes uniformly and independently leave one that spreads "
                f"{reference:.0%}" + ("" if self.reference is None or
                                      reference >= 0.95 * UNIFORM_SPREAD else
                                      " (interactions and categorical columns spread less "
                                      "than main effects)") +
                "; they come out too short. Use more rows, pass a larger lr=, or fit "
                "with a central engine (spread_needed and reference_spread in "
                "dpreg.fits.ldp_sgd).",))
        return build_results(self.problem, FitRecord(
            params=params, inferences=inferences, cov_type=cov_type, engine=LABEL,
            settings=Settings.from_values(table, SETTING_LABELS), notes=tuple(notes),
            ledger=copy.deepcopy(self.ledger), cov_matrix=cov, trajectory=trajectory,
            checked=True, report=report, nobs=n, n_dropped=self.n_dropped))


def fit_ldp_sgd(problem: Problem, opts: LDPOptions, request: PrivacyRequest,
                given=frozenset()) -> DPRegressionResults:
    """Fit by LDP-SGD: one pass over the rows in their order.

    Parameters
    ----------
    problem : Problem
        The design and objective; each row is privatized as its owner would.
    opts : LDPOptions
        Validated options.
    request : PrivacyRequest
        The total budget (of the local path, plus the central plug-in matrices if
        ``budget_split`` gives them a share).
    given : frozenset of str
        The options the user gave (unused).

    Returns
    -------
    DPRegressionResults
        See :meth:`dpreg.DPRegression.fit`.
    """
    if opts.diagnostics:
        raise OptionError("diagnostics=True is not available for engine='ldp_sgd' (rows "
                          "are privatized by their owners; nothing unprivatized exists)")
    run = LDPRun(problem, opts, request)
    X, y = problem.design.device_rows()  # a row with a missing value sends pure noise
    block = 1 << 17
    with tqdm(total=len(y), disable=not opts.progress, desc="LDP-SGD", unit="row",
              leave=False) as bar:
        for start in range(0, len(y), block):
            run.update(X[start:start + block], y[start:start + block])
            bar.update(min(block, len(y) - start))
    return run.results()
