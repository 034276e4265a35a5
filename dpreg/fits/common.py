"""What every private fit shares: the problem, its public settings, the ledger.

A fit (one module per engine in :mod:`dpreg.fits`) takes a :class:`Problem` (a checked
design and its objective), validated options and a privacy request. It resolves the
public settings (:meth:`Problem.public_settings`, from declared bounds and ``n``, ``p``
only, each default with its reason), builds its Gaussian mechanisms, calibrates them and
records them in a new ledger *before* touching the data (:func:`calibrate_and_record`),
runs its engine, and builds the Results object from released quantities only.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dpreg.design import INTERCEPT_NAMES, Design, design_notes
from dpreg.design.conditioning import Conditioning, identity_conditioning
from dpreg.engines import default_schedule
from dpreg.exceptions import (
    BudgetExceededError,
    ConvergenceWarning,
    OptionError,
    PrivacyLeakError,
    PrivacyLeakWarning,
    user_stacklevel,
)
from dpreg.families import Objective
from dpreg.inference.methods import base_method, with_derived
from dpreg.inference.plugin import (
    cluster_score_matrix,
    floor_eigenvalues,
    hessian_matrix,
    score_matrix,
    second_moment_matrix,
)
from dpreg.privacy.calibration import calibrate_to_budget
from dpreg.privacy.ledger import Ledger
from dpreg.privacy.mechanisms import gaussian_matrix_mechanism
from dpreg.privacy.request import PrivacyRequest
from dpreg.results import DPRegressionResults, ResultsRecord, Settings

__all__ = ["Problem", "Public", "FitRecord", "NonPrivateDiagnostics", "build_results",
           "PRECONDITIONER",
           "MAX_NOISE_MULTIPLIER", "leak", "calibrate_and_record", "report_delta",
           "spawn_rngs", "ranges_rng", "seed_text", "format_vector", "START_INTERCEPT"]

#: Ledger name of the private second-moment matrix behind DP-SGD's and DP-GD's
#: preconditioner (``condition="private"``).
PRECONDITIONER = "second moment G (preconditioner)"
#: Beyond this noise multiplier a release is pure noise (and float64 variances overflow).
MAX_NOISE_MULTIPLIER = 1e12


@dataclass(frozen=True)
class Public:
    """Public constants of one fit, with the reasons for the defaults."""

    x_bound: float | None
    row_sq_bound: float
    clip: float
    lr: float
    batch_size: int
    steps: int
    seed: Any
    reasons: tuple[str, ...]


def leak(message: str, strict: bool) -> None:
    """Warn (:class:`~dpreg.exceptions.PrivacyLeakWarning`) about a non-private
    quantity in the output, or raise :class:`~dpreg.exceptions.PrivacyLeakError` when
    ``strict``."""
    if strict:
        raise PrivacyLeakError(message + " (strict=True)")
    warnings.warn(message, PrivacyLeakWarning, stacklevel=user_stacklevel())


@dataclass(frozen=True, eq=False)
class Problem:
    """What a fit solves: a checked design, its objective and the public conditioning
    of its columns (:func:`dpreg.design.conditioning.default_conditioning`).

    ``rows`` is ``None`` when the rows are the design's arrays; otherwise it says where
    they are (a Dask frame: :class:`dpreg.fits.ssp_dask.DaskRows`, whose design has no
    rows), and only an engine that reads rows through it (``"ssp"``) can fit.

    ``prior`` holds the mechanisms already released for this fit, before the engine's
    (the histograms of ``ranges="private"``, whose ranges are the design's bounds):
    :func:`calibrate_and_record` records them first and calibrates the engine's
    mechanisms to what they leave of the request.

    ``groups`` holds the cluster codes of the rows when clusters are the privacy unit
    (``groups=``; ``engine="ssp"`` and ``"dpsgd"`` take it).

    ``absorbed`` holds the design's columns of absorbed fixed effects (``absorb=``, SSP
    only): the column's name, its number of levels and the positions of its columns (the
    intercept and the dummies), which the results do not report."""

    design: Design
    objective: Objective
    conditioning: Conditioning
    rows: Any = None
    prior: tuple = ()
    #: The cluster of each design row (integer codes ``0 .. G-1``, in the rows' order)
    #: when clusters are the privacy unit (``groups=``, SSP and DP-SGD), else ``None``.
    groups: Any = None
    #: ``(column, n_levels, positions)`` of absorbed fixed effects (``absorb=``, SSP
    #: only), else ``None``.
    absorbed: Any = None
    #: With clusters: the public bound ``K`` on a cluster's rows, set once each cluster
    #: is cut to its first ``K`` (:func:`dpreg.fits.dpsgd.clustered`), else ``None``.
    max_group_size: int | None = None
    #: The outcome's median read off its released histogram (``ranges="private"``;
    #: post-processing of the ledger's first row), else ``None``: where the path of a
    #: location family starts its intercept (:data:`START_INTERCEPT`).
    outcome_median: float | None = None
    #: The largest residual DP-SGD's gradient clip lets through, in the outcome's units,
    #: when the outcome's released histogram shows a long tail on one side and ``n mu``
    #: is at least :data:`SKEWED_CLIP_MIN_N_MU` (post-processing of the ledger's first
    #: row: :func:`skewed_reach`), else ``None`` (half the outcome's range).
    outcome_reach: float | None = None

    @property
    def exog_names(self) -> list[str]:
        return list(self.design.exog_names)

    def intercept_column(self) -> int | None:
        """The column that is the intercept: named so, with public bounds ``(1, 1)``;
        ``None`` without an intercept."""
        design = self.design
        for j, name in enumerate(design.exog_names):
            if name in INTERCEPT_NAMES and design.column_bounds \
                    and design.column_bounds[j] is not None \
                    and tuple(design.column_bounds[j]) == (1.0, 1.0):
                return j
        return None

    def public_count(self) -> int:
        """The public number the central matrices (and DP-SGD's mean gradient) divide
        their sums by: the rows ``n``, or with clusters ``G K`` (``G`` clusters, public,
        of at most ``K`` rows). A cluster's size, and so ``n``, is then protected: a
        neighbour may replace a cluster by one of another size. Every quantity the
        plug-in combines is divided by the same count, so its sandwich does not depend on
        which count it is."""
        if self.groups is None:
            return self.design.nobs
        if self.max_group_size is None:
            raise ValueError("cut the clusters to their first max_group_size rows first")
        codes = np.asarray(self.groups)
        n_groups = int(codes.max()) + 1 if codes.size else 0
        return n_groups * int(self.max_group_size)

    def keep_rows(self, keep: np.ndarray) -> "Problem":
        """The problem on the design rows ``keep`` (a boolean mask): with clusters as the
        privacy unit, each cluster's first ``max_group_size`` rows
        (:func:`dpreg.engines.ssp.first_rows`)."""
        design = dataclasses.replace(self.design, endog=self.design.endog[keep],
                                     exog=self.design.exog[keep])
        objective = dataclasses.replace(self.objective,
                                        weights=np.asarray(self.objective.weights)[keep])
        groups = None if self.groups is None else np.asarray(self.groups)[keep]
        return dataclasses.replace(self, design=design, objective=objective, groups=groups)

    def coordinates(self, condition: str) -> Conditioning:
        """The coordinates the engine works in: ``condition="private"`` and ``"bounds"``
        map the bounded numeric columns into ``[-1, 1]`` by their declared bounds;
        ``"none"`` uses the design as given."""
        if condition == "none":
            return identity_conditioning(self.design.k_exog, self.design.row_norm_bound())
        return self.conditioning

    def weighted_row_bounds(self, cond: Conditioning | None,
                            x_bound: float | None) -> tuple[float, float]:
        """Public bounds on ``w_i ||z_i||`` and ``w_i ||z_i||^2`` for the rows ``z_i`` an
        engine working in coordinates ``cond`` sums: the one place every release's
        sensitivity (gradient clip, Hessian, preconditioner) takes its row bound from.

        Without Mallows weights they are ``x_bound`` and ``x_bound^2`` (``x_bound``
        bounds ``||z_i||`` in ``cond``). Mallows weights ``w(u) = min(1, 2/||u||^2)`` are
        a function of the row ``u_i = x_i M_w^{-1}`` in the model's own coordinates
        (``self.conditioning``, :class:`dpreg.DPRegression`), so ``w ||u|| <= sqrt(2)``
        and ``w ||u||^2 <= 2``. An engine working in other coordinates sees
        ``z_i = u_i K`` with ``K = M_w M^{-1}``, hence ``w ||z|| <= sqrt(2) ||K||_2`` and
        ``w ||z||^2 <= 2 ||K||_2^2``: with ``condition="none"`` and natural-unit bounds
        ``||K||_2`` is the largest half-range or centre, not 1 (the ledger once assumed
        1 there and understated the Hessian's sensitivity about 1,000-fold). Both bounds
        are capped by ``x_bound`` (``w <= 1``).
        """
        if not self.objective.mallows:
            if x_bound is None:
                raise ValueError("a row bound is needed without Mallows weights")
            return float(x_bound), float(x_bound) ** 2
        engine_inv = np.eye(self.design.k_exog) if cond is None else cond.M_inv
        if np.array_equal(engine_inv, self.conditioning.M_inv):
            k_sq = 1.0
        else:
            k_sq = float(np.linalg.norm(self.conditioning.M @ engine_inv, 2)) ** 2
        gain, row_sq = math.sqrt(2.0 * k_sq), 2.0 * k_sq
        if x_bound is not None:
            gain, row_sq = min(gain, x_bound), min(row_sq, x_bound ** 2)
        return float(gain), float(row_sq)

    def matrix_sensitivity(self, which: str, pub: "Public", n: int,
                           factor: float = 2.0, max_group_size: int = 1) -> float:
        """Frobenius sensitivity of the central matrix release ``which`` over ``n`` rows.

        ``"G"`` (second moment, the preconditioner), ``"A"`` (Hessian) or ``"S"`` (score
        covariance): ``n^{-1} sum_i m_i`` with each per-row term ``m_i`` bounded in
        Frobenius norm by ``row_sq``, ``hess_bound * row_sq`` and ``clip^2``
        (:meth:`weighted_row_bounds`; :meth:`matrix_statistic` enforces them), so
        replacing a row moves it by at most ``2 B / n`` (``factor = 2``) and adding or
        removing one by ``B / n`` (``factor = 1``; ldp-sgd paper, Prop. 4).

        With clusters of at most ``K = max_group_size`` rows as the unit, a cluster's
        term is at most ``K`` rows' for ``G`` and ``A``, and ``(K clip)^2`` for the
        cluster meat ``S`` (the outer product of a sum of ``K`` clipped gradients), and
        ``n`` is the public ``G K`` (:meth:`public_count`): a cluster of ``k_1`` rows
        replaced by one of ``k_2 <= K`` moves the sum by at most ``(k_1 + k_2) B``.
        """
        k = int(max_group_size)
        per_unit = {"G": k * pub.row_sq_bound,
                    "A": k * self.objective.hess_bound * pub.row_sq_bound,
                    "S": (k * pub.clip) ** 2}[which]
        return factor * per_unit / n

    def matrix_statistic(self, which: str, Z: np.ndarray, pub: "Public",
                         theta: np.ndarray | None = None) -> np.ndarray:
        """The statistic of the central matrix release ``which`` (see
        :meth:`matrix_sensitivity`) from the rows ``Z`` the engine sees, with the
        model's weights, clipped so that each per-row term is within the bound the
        sensitivity assumes; ``theta`` (engine coordinates) for ``"A"`` and ``"S"``."""
        obj, y = self.objective, self.design.endog
        if which == "G":
            mean = second_moment_matrix(Z, obj.weights, pub.x_bound, pub.row_sq_bound)
        elif which == "A":
            mean = hessian_matrix(Z, y, theta, obj, pub.x_bound, pub.clip, pub.row_sq_bound)
        elif which == "S" and self.groups is not None:
            mean = cluster_score_matrix(Z, y, theta, obj, pub.clip, self.groups)
        elif which == "S":
            mean = score_matrix(Z, y, theta, obj, pub.clip)
        else:
            raise ValueError(f"unknown matrix release {which!r}")
        if self.groups is None:
            return mean
        return mean * (Z.shape[0] / self.public_count())  # the sum over G K, not n

    def check_privacy(self, strict: bool) -> None:
        """Refuse data-derived constants in the design; warn about data-derived names."""
        design = self.design
        if design.stateful:
            raise PrivacyLeakError(
                f"the formula uses stateful transforms in {list(design.stateful)}: they "
                "compute constants (means, scales, knots) from the private data without "
                "paying for them. Transform with public constants instead, e.g. "
                "I((x - 50) / 10)")
        if design.undeclared_levels:
            leak(f"the categories of {list(design.undeclared_levels)} were read from "
                 "the data; they appear in the output's names. Declare them with "
                 "levels={column: [...]} if they are public (a pandas "
                 "Categorical's categories count only when declared there)", strict)

    def public_settings(self, opts, cond: Conditioning | None = None,
                        full_batch: bool = False,
                        clusters: tuple[int, int] | None = None) -> Public:
        """Clip, step size, batch size and steps from public quantities, in the
        coordinates ``cond`` the engine works in (the design as given if ``None``);
        ``full_batch`` engines step on the mean over all rows. ``clusters = (G, K)``
        when a batch samples clusters (``G`` of them, public, of at most ``K`` rows):
        the batch size and steps are then counted in clusters."""
        design = self.design
        n, p = design.nobs, design.k_exog
        reasons = list(design_notes(design, local=opts.engine == "ldp_sgd",
                                    counts=self.groups is None))
        obj = self.objective
        row_bound = design.row_norm_bound() if cond is None else cond.norm_bound
        x_bound = opts.x_bound or row_bound
        if x_bound is None and not obj.mallows:
            x_bound = math.sqrt(p)
            leak(f"no bounds declared for {list(design.undeclared)}: the norm of a "
                 f"design row is not known, so the private Hessian clips rows to "
                 f"x_bound = sqrt(p) = {x_bound:.4g}. Declare bounds={{column: (lower, "
                 f"upper)}} or x_bound=", opts.strict)
        gain, row_sq = self.weighted_row_bounds(cond, x_bound)
        clip = getattr(opts, "clip", None)
        if clip is None and obj.psi_bound is not None:
            clip = obj.psi_bound * gain
            reasons.append(f"clip = {clip:.4g}: the family's score bound times the bound on "
                           "w(x)||x||, so no gradient is ever clipped.")
        elif clip is None and design.endog_bounds is not None and self.outcome_reach:
            clip = gain * obj.hess_bound * self.outcome_reach
            reasons.append(f"clip = {clip:.4g}: a residual up to {self.outcome_reach:.4g}, "
                           f"the distance from {design.endog_name!r}'s private median to the "
                           "far end of its learned range, is not clipped (a long-tailed "
                           f"outcome at n mu >= {SKEWED_CLIP_MIN_N_MU:,}).")
        elif clip is None and design.endog_bounds is not None:
            lo, hi = design.endog_bounds
            clip = gain * obj.hess_bound * (hi - lo) / 2
            reasons.append(f"clip = {clip:.4g} from the declared bounds of "
                           f"{design.endog_name!r}: a residual up to half its range is not "
                           "clipped.")
        elif clip is None:
            clip = gain
            leak(f"no bounds declared for the outcome {design.endog_name!r} and no "
                 f"clip given: gradients are clipped at clip = {clip:.4g} (a unit "
                 "residual). Declare bounds or clip=", opts.strict)
        batch_size_given = getattr(opts, "batch_size", None)
        units = n if clusters is None else clusters[0]
        if batch_size_given is not None and batch_size_given > units:
            what = "rows n" if clusters is None else "clusters G"
            raise OptionError(f"batch_size = {batch_size_given} exceeds the number of "
                              f"{what} = {units}")
        batch_size, t_def = default_schedule(units, batch_size_given)
        steps = getattr(opts, "steps", None) or t_def
        lr_given = getattr(opts, "lr", None)
        if lr_given is not None:
            lr = lr_given
        elif cond is None or full_batch:  # one-row steps, or lambda_max(E z z') <= row_sq
            lr = obj.family.lr_scale / (obj.hess_bound * row_sq)
        else:
            # The curvature of a mean gradient over m conditioned rows: the population
            # part lambda_max(E w h z z') is about 1 on [-1, 1] covariates (at most
            # row_sq), the sampling part at most row_sq / m (one row's curvature over m;
            # with clusters, one cluster's, K rows', over the batch's public m K: the
            # gradient is then a sum over its rows divided by m K).
            kappa = obj.hess_bound * (1.0 + row_sq / batch_size)
            lr = obj.family.lr_scale / kappa
            reasons.append(f"lr = {lr:.4g} = {obj.family.lr_scale:g} / kappa, kappa = "
                           f"hess_bound * (1 + row_sq / m) = {kappa:.4g}: the "
                           "curvature of a batch's mean gradient on the conditioned "
                           "covariates.")
        seed = opts.random_state  # int, SeedSequence, Generator or None: never stored
        return Public(x_bound=None if x_bound is None else float(x_bound),
                      row_sq_bound=float(row_sq), clip=float(clip), lr=float(lr),
                      batch_size=int(batch_size), steps=int(steps), seed=seed,
                      reasons=tuple(reasons))

    def start(self, start_params) -> np.ndarray:
        """The public starting point: ``start_params``, or zeros with the intercept, for
        location families, at the outcome's private median (:attr:`outcome_median`,
        where its range was learned) or else at the midpoint of its bounds (the path
        then starts near the data's level instead of travelling to it)."""
        design = self.design
        p = design.k_exog
        if start_params is None:
            theta0 = np.zeros(p)
            lohi = design.endog_bounds
            names = design.exog_names
            if lohi is not None and self.objective.family.location:
                level = (lohi[0] + lohi[1]) / 2
                if START_INTERCEPT == "median" and self.outcome_median is not None:
                    level = min(max(self.outcome_median, lohi[0]), lohi[1])
                for j, name in enumerate(names):
                    if name in ("Intercept", "const") and design.column_bounds \
                            and tuple(design.column_bounds[j]) == (1.0, 1.0):
                        theta0[j] = level
            return theta0
        theta0 = np.asarray(start_params, dtype=float).ravel()
        if theta0.shape != (p,) or not np.all(np.isfinite(theta0)):
            raise OptionError(f"start_params must be {p} finite numbers (one per column "
                              f"{self.exog_names}), got {start_params!r}")
        return theta0

    def preconditioner(self, Z, event, pub: Public, lr_given: float | None,
                       rng: np.random.Generator):
        """The private preconditioner ``P = G~^{-1}`` and the step size it allows.

        ``G = n^{-1} sum_i w_i z~_i z~_i^T`` (rows clipped to the public norm bound) is
        released by the Gaussian matrix mechanism (``event``, in the ledger), its
        eigenvalues moved into ``[2 sqrt(p) sd, row_sq]`` (above the noise's operator
        norm, at most one row's contribution), and inverted. Preconditioning the
        privatized gradient is post-processing; with ``P A ~ hess_bound I`` the step is
        ``lr = lr_scale / (hess_bound (1 + p / m))``: the batch's mean curvature plus
        the spread of ``z' P z`` (mean ``p``) over ``m`` rows. Returns ``(P, lr, reason)``.

        With clusters the sums are divided by the public ``G K``, not by the rows ``n``
        (protected), so ``G`` is ``n / (G K)`` times the rows' second moment and ``z' P
        z`` has mean ``p G K / n``: the batch's ``m`` becomes ``m f`` with the fill
        ``f = n / (G K)`` read off the released ``G`` itself, its intercept's entry
        (``n / (G K)`` up to the noise; post-processing), kept in ``[1/K, 1]``
        (``f = 1`` without an intercept).
        """
        p = Z.shape[1]
        G_hat = self.matrix_statistic("G", Z, pub)
        G_noisy, _ = gaussian_matrix_mechanism(G_hat, event, rng)
        floor = min(2.0 * math.sqrt(p) * event.noise_std, pub.row_sq_bound)
        G, moved = floor_eigenvalues(G_noisy, floor, pub.row_sq_bound)
        P = np.linalg.inv(G)
        P = (P + P.T) / 2
        obj = self.objective
        if lr_given is not None:
            lr = lr_given
            why = f"lr = {lr:g} given; the gradient is preconditioned by P = G^-1."
        elif self.groups is None:
            lr = obj.family.lr_scale / (obj.hess_bound * (1.0 + p / pub.batch_size))
            why = (f"lr = {lr:.4g} = {obj.family.lr_scale:g} / (hess_bound * (1 + p / m)): "
                   "the gradient is preconditioned by P = G^-1, G a private second-moment "
                   f"matrix of the conditioned rows ({moved} eigenvalue(s) floored).")
        else:
            j = self.intercept_column()
            k = int(self.max_group_size)
            fill = 1.0 if j is None else min(max(float(G_noisy[j, j]), 1.0 / k), 1.0)
            lr = obj.family.lr_scale / (obj.hess_bound * (1.0 + p / (pub.batch_size * fill)))
            why = (f"lr = {lr:.4g} = {obj.family.lr_scale:g} / (hess_bound * (1 + p / (m f))), "
                   f"f = {fill:.3g} the clusters' fill n / (G K) read off the private "
                   "second-moment matrix G (its intercept's entry; post-processing): the "
                   f"gradient is preconditioned by P = G^-1 ({moved} eigenvalue(s) "
                   "floored).")
        return P, lr, why


def calibrate_and_record(request: PrivacyRequest, build, n: int | None, what: str,
                         prior: tuple = (), deferred: tuple[str, ...] = ()):
    """Calibrate ``build``'s events to ``request`` and record them in a new ledger,
    before any data is touched; refuse budgets too small to calibrate or to carry any
    information (noise multiplier above :data:`MAX_NOISE_MULTIPLIER`).

    ``n`` sets the ledger's reporting delta (:func:`report_delta`); it is ``None`` when
    the ledger opens before the rows are counted (LDP-SGD, whose stream records its local
    path before any row arrives).

    ``deferred`` names events that are calibrated now, with the others, but recorded
    only when they are released, because their sensitivity depends on an ``n`` not yet
    known (LDP-SGD's central plug-in matrices): only their noise multipliers are fixed
    here, and the caller records them.

    ``prior`` holds mechanisms already released for this fit (the private ranges of
    ``ranges="private"``, :attr:`Problem.prior`): they are recorded first, and ``build``'s
    events get what they leave of the request (a mu request: ``sqrt(mu^2 - sum mu_i^2)``
    exactly; other units: the scale at which ``prior`` and ``build``'s events together
    meet it under the request's accountant).

    Returns ``(events, ledger)`` with ``events`` the engine's only (in ``build``'s
    order); ``what`` describes the fit in error messages.
    """
    prior = tuple(prior)
    try:
        if not prior:
            events = calibrate_to_budget(request, build)
        elif request.unit == "mu":
            left = request.value ** 2 - math.fsum(e.mu() ** 2 for e in prior)
            if not left > 0:
                raise BudgetExceededError("the earlier releases spend the whole budget")
            events = calibrate_to_budget(PrivacyRequest.from_options(mu=math.sqrt(left)),
                                         build)
        else:
            events = calibrate_to_budget(
                request, lambda scale: [*prior, *build(scale)])[len(prior):]
        ledger = Ledger(request, delta=request.delta or report_delta(n))
        for event in (*prior, *events):
            if event.name not in deferred:
                ledger.record(event)
    except BudgetExceededError as err:
        raise BudgetExceededError(
            f"the budget {request.describe()} is too small to calibrate the noise for "
            f"{what}: increase it ({err})") from None
    useless = [e.name for e in events if not e.noise_multiplier <= MAX_NOISE_MULTIPLIER]
    if useless:
        raise BudgetExceededError(
            f"the budget {request.describe()} is too small to run: it needs noise "
            f"multipliers above {MAX_NOISE_MULTIPLIER:g} for {useless}, so the release "
            "would carry no information about the data; increase it")
    return events, ledger


def report_delta(n: int | None) -> float:
    """delta at which (eps, delta) is reported for mu or rho requests: min(1e-5, n^-1.1),
    and its cap 1e-5 when ``n`` is not known when the ledger opens (LDP-SGD, whose stream
    records its local path before any row arrives)."""
    if n is None:
        return 1e-5
    return min(1e-5, n ** -1.1)


def spawn_rngs(seed, k: int) -> list[np.random.Generator]:
    """``k`` independent generators from ``seed`` (``None``: fresh OS entropy). Children
    of a spawn are keyed by their index, so adding a stream at the end leaves the first
    ones unchanged."""
    return np.random.default_rng(seed).spawn(k)


#: Where the path of a location family starts its intercept when the outcome's range
#: was learned: ``"median"``, the median read off the outcome's released histogram (a
#: Huber or expectile fit of a skewed outcome starts near its estimate, where the
#: midpoint of the range, pulled out by the long tail, left DP-SGD's path short of it:
#: statsmodels' randhie visits); ``"midpoint"``, the midpoint of the learned range.
START_INTERCEPT = "median"

#: DP-SGD's gradient clip for a long-tailed outcome (its released histogram's tail note,
#: :meth:`dpreg.privacy.ranges.RangesRelease.skewed`) lets a residual reach from the
#: outcome's private median to the far end of its learned range, instead of half the
#: range, where ``n mu`` is at least this. Half the range clips the tail's residuals, all
#: of one sign, and moves the coefficients towards a robust fit's; the fuller reach costs
#: noise, worth it only where the sampling error, not the noise, dominates the interval
#: (``python validation/skewed_outcome.py --skewed-clip``; the private ranges page).
SKEWED_CLIP_MIN_N_MU = 30_000


def skewed_reach(side: str | None, lohi: tuple[float, float], median: float | None,
                 n: int, mu: float) -> float | None:
    """The residual reach of DP-SGD's clip for a long-tailed outcome
    (:attr:`Problem.outcome_reach`): ``max(hi - median, median - lo)`` when ``side`` (the
    tail note's) is given, the median is known and ``n mu >=``
    :data:`SKEWED_CLIP_MIN_N_MU`, else ``None``. Every input is public or released."""
    if side is None or median is None or n * mu < SKEWED_CLIP_MIN_N_MU:
        return None
    lo, hi = lohi
    median = min(max(median, lo), hi)
    return float(max(hi - median, median - lo))


#: Spawn key of the private ranges' noise (``ranges="private"``): far beyond the few
#: streams an engine spawns from the same seed with :func:`spawn_rngs`.
RANGES_STREAM = 1000


def ranges_rng(seed) -> np.random.Generator:
    """The generator of the private ranges' noise, independent of the engine's streams
    (:func:`spawn_rngs` of the same ``seed``): a child with key :data:`RANGES_STREAM` of
    an integer seed or SeedSequence, a spawned child of a Generator, or fresh OS entropy
    for ``None``."""
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, np.random.Generator):
        return seed.spawn(1)[0]
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return np.random.default_rng(np.random.SeedSequence(
        seq.entropy, spawn_key=(*seq.spawn_key, RANGES_STREAM)))


def seed_text(random_state) -> str:
    """The settings row of ``random_state``: a given seed is kept secret."""
    return ("given (kept secret)" if random_state is not None
            else "fresh OS entropy (not stored)")


def format_vector(names, values) -> str:
    """``"name value, ..."`` with four significant digits."""
    return ", ".join(f"{k} {v:.4g}" for k, v in zip(names, values, strict=True))


class NonPrivateDiagnostics(dict):
    """Counts of the private data asked for with ``diagnostics=True`` (clipped
    gradients, clipped rows): NON-PRIVATE, released by no mechanism in the ledger.

    A plain dict labelled as such wherever it shows (its ``repr``, the summary's note,
    ``res.settings["diagnostics"]``), and never written to a saved or pickled result
    (:meth:`dpreg.DPRegressionResults.save` drops it), so that a published file holds
    private releases only.
    """

    LABEL = "NON-PRIVATE (diagnostics=True; no mechanism paid for it; not saved)"

    def __repr__(self) -> str:
        return f"NonPrivateDiagnostics({dict.__repr__(self)}, {self.LABEL})"

    def note(self) -> str:
        """The summary's line."""
        shown = ", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}"
                          for k, v in self.items())
        return f"Diagnostics {self.LABEL}: {shown}."


@dataclass(frozen=True, eq=False)
class FitRecord:
    """What a private fit released, for :func:`build_results`.

    Attributes
    ----------
    params : ndarray (p,)
        The estimate, in the user's coordinates.
    inferences : dict
        :class:`~dpreg.inference.base.Inference` records by method name.
    cov_type : str
        The method behind ``bse`` and ``pvalues``.
    engine : str
        The engine's display name (the registry's label).
    settings : Settings
        The public settings.
    notes : tuple of str
        Reasons for the defaults and notes on the release, in order.
    ledger : Ledger
        What the fit spent.
    cov_matrix : ndarray (p, p), optional
        The covariance behind ``cov_params``.
    trajectory : dict, optional
        Running estimates for plots.
    checked : bool
        Whether the free convergence checks ran (the results then have ``convergence``,
        the report or ``None``).
    report : ConvergenceReport or ReleaseReport, optional
        The fit's findings (a path's free checks, or
        :class:`~dpreg.inference.ssp_estimator.ReleaseReport` of a one-shot release):
        each warns and adds a summary line. Only a path's is kept (with ``checked``).
    checkpoint_sd : ndarray (p,), optional
        DP-GD: the spread of the last checkpoints (``results.checkpoint_sd``).
    floor_sensitivity : DataFrame, optional
        SSP: each coefficient's move and standard-error change when the eigenvalue floor
        doubles (``results.floor_sensitivity``).
    first_stage : Series, optional
        IV-2SLS: the private first-stage F statistics (``results.first_stage``).
    diagnostics : dict, optional
        Non-private counts asked for with ``diagnostics=True``.
    nobs, n_dropped : int, optional
        Rows used and dropped (default: the design's).
    n_groups : int, optional
        ``G`` when clusters are the privacy unit: their sizes, and so the rows used and
        dropped, are then protected and not reported (``nobs`` and ``n_dropped`` are
        ``None`` on the results), and ``df_resid`` is ``G - 1``, the degrees of freedom
        of cluster-robust tests (statsmodels' ``cov_type="cluster"``).
    names : tuple of str, optional
        The names of the reported coefficients when they are not all the design's
        (absorbed fixed effects); ``params`` and the inferences are then theirs, and the
        results have no design for ``predict`` to rebuild.
    df_resid : int, optional
        The residual degrees of freedom when they are not ``nobs`` less the reported
        coefficients (absorbed fixed effects).
    """

    params: np.ndarray
    inferences: Mapping[str, Any]
    cov_type: str
    engine: str
    settings: Settings
    notes: tuple[str, ...]
    ledger: Ledger
    cov_matrix: np.ndarray | None = None
    trajectory: dict | None = None
    checked: bool = False
    report: Any = None
    checkpoint_sd: np.ndarray | None = None
    floor_sensitivity: pd.DataFrame | None = None
    first_stage: pd.Series | None = None
    diagnostics: dict | None = field(default=None)
    nobs: int | None = None
    n_dropped: int | None = None
    names: tuple[str, ...] | None = None
    df_resid: int | None = None
    n_groups: int | None = None


def build_results(problem: Problem, record: FitRecord) -> DPRegressionResults:
    """The Results object of a private fit: its record, the design's public description,
    and the convergence report's warnings (:class:`~dpreg.exceptions.ConvergenceWarning`,
    each repeated as a ``WARNING:`` line of the summary)."""
    design = problem.design
    notes = tuple(record.notes)
    report = record.report
    if report is not None and not report.ok:
        for message in report.messages(record.engine):
            warnings.warn(message, ConvergenceWarning, stacklevel=user_stacklevel())
            notes += ("WARNING: " + message,)
    # the optional parts the fit made (the others stay ABSENT: no such attribute)
    parts: dict[str, Any] = {name: value for name, value in (
        ("floor_sensitivity", record.floor_sensitivity),
        ("first_stage", record.first_stage)) if value is not None}
    if record.checkpoint_sd is not None:
        parts["checkpoint_sd"] = pd.Series(record.checkpoint_sd, index=list(design.exog_names),
                                           name="checkpoint_sd")
    settings = record.settings
    if record.diagnostics is not None:
        diagnostics = NonPrivateDiagnostics(record.diagnostics)
        parts["diagnostics"] = diagnostics
        notes += (diagnostics.note(),)
        settings = settings.with_setting("diagnostics", NonPrivateDiagnostics.LABEL)
    if record.checked:
        parts["convergence"] = report
    names = design.exog_names if record.names is None else record.names
    nobs = design.nobs if record.nobs is None else record.nobs
    n_dropped = design.n_dropped if record.n_dropped is None else record.n_dropped
    df_resid = record.df_resid
    if record.n_groups is not None:  # cluster sizes are protected
        nobs, n_dropped, df_resid = None, None, record.n_groups - 1
    # the methods that post-process a released record (inference.methods.with_derived);
    # the one chosen as cov_type brings its covariance matrix to cov_params
    inferences = with_derived(record.inferences, record.cov_matrix)
    cov_matrix, chosen = record.cov_matrix, inferences.get(record.cov_type)
    if base_method(record.cov_type) != record.cov_type and chosen is not None \
            and chosen.cov is not None:
        cov_matrix = chosen.cov
    return DPRegressionResults(ResultsRecord(
        params=record.params, names=names, endog_name=design.endog_name,
        inferences=inferences, cov_type=record.cov_type, nobs=nobs,
        df_model=design.df_model, private=True, family_label=problem.objective.label(),
        engine=record.engine, settings=settings, n_dropped=n_dropped, df_resid=df_resid,
        formula=design.formula, ledger=record.ledger, cov_matrix=cov_matrix,
        trajectory=record.trajectory, notes=notes,
        design_info=design.design_info if record.names is None else None, **parts))
