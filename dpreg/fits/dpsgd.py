"""DP-SGD (``engine="dpsgd"``): plan, run the engine, inference, record.

Central DP-SGD with randomized subsampling and inference from its averaged path
(the dpsgd-inference paper): the plug-in covariance with private Hessian and score
matrices, and random scaling (with its finite-sample correction when the plug-in
matrices are released); ``cov_type`` picks the one behind ``bse``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpreg._checks import integer_at_least, one_of
from dpreg.design import check_public_size
from dpreg.design.conditioning import Conditioning
from dpreg.engines import SGDSettings, run_dpsgd
from dpreg.engines.ssp import first_rows
from dpreg.exceptions import OptionError
from dpreg.fits.common import (
    PRECONDITIONER,
    FitRecord,
    Problem,
    Public,
    build_results,
    calibrate_and_record,
    seed_text,
    spawn_rngs,
)
from dpreg.fits.options import (
    DEFAULT_BUDGET_SPLIT,
    PathOptions,
    check_lr_decay,
    check_steps,
    plugin_split,
)
from dpreg.inference.base import StudentLaw
from dpreg.inference.diagnostics import (
    curvature_factor,
    floor_as_note,
    path_report,
    with_curvature_bias,
)
from dpreg.inference.methods import engine_methods
from dpreg.inference.mixed import plugin_with_rs
from dpreg.inference.plugin import (
    covariance_replicates,
    floor_eigenvalues,
    path_variance,
    plugin_inference,
)
from dpreg.inference.random_scaling import rs_inference
from dpreg.privacy.disclosure import adjacency_notes, cluster_note, sampling_adjacency
from dpreg.privacy.events import GaussianMechanismEvent, cluster_adjacency, is_replace_one
from dpreg.privacy.gdp import calibrate_dpsgd
from dpreg.privacy.mechanisms import gaussian_matrix_mechanism
from dpreg.privacy.request import PrivacyRequest
from dpreg.results import DPRegressionResults, Settings

__all__ = ["fit_dpsgd", "DPSGDOptions", "LABEL", "PATH", "HESSIAN", "SCORE",
           "PRECONDITIONED_SPLIT", "SAMPLINGS",
           "events_builder"]

LABEL = "DP-SGD"
PATH, HESSIAN, SCORE = "DP-SGD path", "Hessian A", "score covariance S"
SAMPLINGS = ("uniform", "poisson")
#: With ``condition="private"``: 5% of mu^2 buys the preconditioner, a private
#: second-moment matrix of the conditioned rows. It only sets the speed of convergence
#: (its noise never enters the intervals), so a small share suffices.
PRECONDITIONED_SPLIT = {"path": 0.6, "precondition": 0.05, "hessian": 0.25, "score": 0.1}


@dataclass(frozen=True)
class DPSGDOptions(PathOptions):
    """Options of ``engine="dpsgd"``: the common and path options, the batch size and
    sampling, the number of steps and the step-size decay (0.501, the dpsgd-inference
    paper's choice), and clusters as the privacy unit (``groups``, ``max_group_size``:
    a batch is then ``batch_size`` clusters, and the plug-in is cluster-robust)."""

    cov_types: ClassVar[tuple[str, ...]] = engine_methods("dpsgd", "plugin")
    scope: ClassVar[str] = "DP-SGD: subsampled batches, one averaged path"

    batch_size: int | None = None
    sampling: str = "uniform"
    steps: int | None = None
    lr_decay: float = 0.501
    groups: Any = None
    max_group_size: int | None = None

    def __post_init__(self):
        super().__post_init__()
        one_of("sampling", self.sampling, SAMPLINGS)
        if self.batch_size is not None:
            integer_at_least("batch_size", self.batch_size)
        check_steps(self.steps)
        check_lr_decay(self.lr_decay)
        if self.groups is None and self.max_group_size is not None:
            raise OptionError("max_group_size bounds the rows of a cluster; it needs groups= "
                              "(the column of cluster labels)")
        if self.groups is not None:
            if self.max_group_size is None:
                raise OptionError("groups= makes clusters the privacy unit and needs a "
                                  "public bound on their rows: give max_group_size= (each "
                                  "cluster keeps its first max_group_size rows)")
            integer_at_least("max_group_size", self.max_group_size)
            if self.sampling != "uniform":
                raise OptionError("groups= samples whole clusters without replacement "
                                  "(replace-one cluster): use sampling='uniform', not "
                                  f"{self.sampling!r}")

    def split(self) -> dict[str, float]:
        """The validated budget split (shares of mu^2 or rho; they sum to 1): the
        default, or ``budget_split`` with known keys, a share for the path, and both
        plug-in matrices or neither. A share of exactly 0 drops the mechanism."""
        preconditioned = self.condition == "private"
        split = self.engine_split()
        if split is None:
            split = PRECONDITIONED_SPLIT if preconditioned else DEFAULT_BUDGET_SPLIT
        keys = tuple(PRECONDITIONED_SPLIT) if preconditioned else tuple(DEFAULT_BUDGET_SPLIT)
        return plugin_split(split, keys)


def clustered(problem: Problem, opts: DPSGDOptions) -> tuple[Problem, int, int]:
    """With clusters as the privacy unit (``groups=``): the problem on each cluster's
    first ``max_group_size`` rows in the data's order (its public count ``G K``:
    :meth:`Problem.public_count`), the number of clusters ``G`` and the bound ``K``;
    otherwise the problem with ``(n, 1)`` (a row is the unit)."""
    if problem.groups is None:
        return problem, problem.design.nobs, 1
    k = int(opts.max_group_size)
    kept = dataclasses.replace(problem.keep_rows(first_rows(problem.groups, k)),
                               max_group_size=k)
    n_groups = int(np.max(kept.groups)) + 1 if kept.design.nobs else 0
    return kept, n_groups, k


def _plan(problem: Problem, opts: DPSGDOptions):
    """The public plan of a fit: its coordinates, public settings, budget split,
    adjacency, and the builder of its mechanisms (from public quantities only). With
    clusters the sampling units are the ``G`` clusters, a step's sum moves by at most
    ``K clip`` when one cluster is replaced, and the matrices by a cluster's term over
    the public ``G K`` (the clusters' sizes are protected)."""
    problem, units, k = clustered(problem, opts)
    n = problem.public_count()
    cond = problem.coordinates(opts.condition)
    pub = problem.public_settings(opts, cond,
                                  clusters=None if problem.groups is None else (units, k))
    split = opts.split()
    adjacency = (sampling_adjacency(opts.sampling) if problem.groups is None
                 else cluster_adjacency(k))
    factor = 2.0 if is_replace_one(adjacency) else 1.0
    sens = {PATH: factor * k * pub.clip,
            PRECONDITIONER: problem.matrix_sensitivity("G", pub, n, factor, k),
            HESSIAN: problem.matrix_sensitivity("A", pub, n, factor, k),
            SCORE: problem.matrix_sensitivity("S", pub, n, factor, k)}
    keys = {PATH: "path", PRECONDITIONER: "precondition", HESSIAN: "hessian",
            SCORE: "score"}

    def build(mu_scale: float) -> list[GaussianMechanismEvent]:
        events = []
        s = calibrate_dpsgd(mu_scale * math.sqrt(split["path"]), units, pub.batch_size,
                            pub.steps, sampling=opts.sampling)
        if "precondition" in split:
            mu_g = mu_scale * math.sqrt(split["precondition"])
            events.append(GaussianMechanismEvent(
                name=PRECONDITIONER, sensitivity=sens[PRECONDITIONER],
                noise_std=sens[PRECONDITIONER] / mu_g, adjacency=adjacency))
        events.append(GaussianMechanismEvent(
            name=PATH, sensitivity=sens[PATH], noise_std=s * sens[PATH],
            adjacency=adjacency, sampling=opts.sampling, sample_size=pub.batch_size,
            population=units, count=pub.steps))
        for name in (HESSIAN, SCORE):
            if keys[name] in split:
                mu_i = mu_scale * math.sqrt(split[keys[name]])
                events.append(GaussianMechanismEvent(
                    name=name, sensitivity=sens[name], noise_std=sens[name] / mu_i,
                    adjacency=adjacency))
        return events

    return problem, units, cond, pub, split, adjacency, build


def events_builder(problem: Problem, opts: DPSGDOptions):
    """The builder ``mu_scale -> events`` of the fit's mechanisms (public quantities
    only; see :mod:`dpreg.privacy.calibration`).

    Parameters
    ----------
    problem : Problem
        The design and objective.
    opts : DPSGDOptions
        Validated options.

    Returns
    -------
    callable
    """
    return _plan(problem, opts)[-1]


#: The options that set DP-SGD's path: left at their defaults (with the private
#: preconditioner), the step is the default rule's (:func:`default_step_rule`).
STEP_OPTIONS = ("lr", "lr_decay", "steps", "batch_size", "clip", "x_bound", "start_params")


def default_step_rule(opts: DPSGDOptions) -> bool:
    """Whether every option of :data:`STEP_OPTIONS` is at its default: the path then
    takes the step the package sets for the preconditioned curvature's public bound, from
    the public start (:func:`dpreg.inference.diagnostics.check_path`, ``step_rule``)."""
    defaults = {f.name: f.default for f in dataclasses.fields(DPSGDOptions)}
    for name in STEP_OPTIONS:
        value, default = getattr(opts, name), defaults[name]
        if (value is not None) if default is None else (value != default):
            return False
    return True


def fit_dpsgd(problem: Problem, opts: DPSGDOptions, request: PrivacyRequest,
              given=frozenset()) -> DPRegressionResults:
    """Fit by DP-SGD with plug-in and random-scaling inference.

    Parameters
    ----------
    problem : Problem
        The design and objective.
    opts : DPSGDOptions
        Validated options.
    request : PrivacyRequest
        The total budget.
    given : frozenset of str
        The options the user gave (a default ``cov_type`` becomes ``"plugin_rs"``,
        random scaling's intervals for the coefficients whose plug-in standard errors
        the private Hessian's eigenvalue floor set, when the floor check names some).

    Returns
    -------
    DPRegressionResults
        See :meth:`dpreg.DPRegression.fit`.
    """
    given_problem = problem
    problem, units, cond, pub, split, adjacency, build = _plan(problem, opts)
    design = problem.design
    n = problem.public_count()  # G K with clusters: their sizes are protected
    if problem.groups is not None:
        if units < 2:
            raise OptionError(f"groups= gives G = {units} cluster(s): cluster-robust "
                              "inference needs at least 2 (its t law has G - 1 degrees "
                              "of freedom)")
        check_public_size(design, clusters=n)  # G K >= p (n itself is protected)
    size_text = f"n = {n}" if problem.groups is None else f"G = {units} clusters"
    events, ledger = calibrate_and_record(
        request, build, units,
        f"{size_text}, batch_size = {pub.batch_size}, steps = {pub.steps}",
        prior=problem.prior)
    by_name = {e.name: e for e in events}
    path = by_name[PATH]
    rng_path, rng_matrix = spawn_rngs(pub.seed, 2)  # None: OS entropy
    Z, y = cond.design(design.exog), design.endog
    precond = None
    if PRECONDITIONER in by_name:
        precond, lr, why = problem.preconditioner(Z, by_name[PRECONDITIONER], pub, opts.lr,
                                                   rng_matrix)
        # the preconditioned step replaces the un-preconditioned default's reason
        kept = tuple(r for r in pub.reasons if not r.startswith("lr = "))
        pub = dataclasses.replace(pub, lr=lr, reasons=kept + (why,))
    settings = SGDSettings(batch_size=pub.batch_size, sampling=opts.sampling,
                           steps=pub.steps, clip=pub.clip, lr=pub.lr,
                           lr_decay=float(opts.lr_decay), noise_scale=0.0,
                           noise_multiplier=path.noise_multiplier, precond=precond,
                           rows_per_unit=n / units if units else 1.0)  # 1 or K
    # sigma_1: the noise on the sum over the batch, divided like the sum
    settings = dataclasses.replace(settings,
                                   noise_scale=path.noise_std / settings.denominator())
    theta0 = cond.to_engine(problem.start(opts.start_params))
    out = run_dpsgd(Z, y, objective=problem.objective, settings=settings,
                    theta0=theta0, rng=rng_path, progress=opts.progress,
                    clusters=problem.groups)
    clusters = {} if problem.groups is None else {
        "max_group_size": int(opts.max_group_size), "n_groups": units}
    inferences, cov, extras = _inference(problem, out, Z, settings, by_name, pub,
                                          rng_matrix, cond, **clusters)
    # three findings were measured with rows as the privacy unit and hold only there:
    # the long plug-in's note and the floor check's random-scaling gate
    # (validation/plugin_long_note.py, validation/dpsgd_floor_check.py; with clusters
    # the fits they let through covered the cluster-level slope as little as 0.41 at
    # G = 30 and 100, so there both warn as before), and the curvature correction below
    rows_unit = problem.groups is None
    report = path_report(design.exog_names, inferences, cond.params(out.params),
                         out.trajectory_steps, cond.params(out.trajectory_avg),
                         settings.steps, extras,
                         step_rule=(precond is not None and rows_unit
                                    and default_step_rule(opts)),
                         floor_gate=rows_unit)
    curved = precond is not None and problem.objective.family.checks_curvature_bias
    # the curvature correction (dpreg.inference.diagnostics, module notes;
    # validation/curvature_correction.py); with clusters the path is only checked (G
    # there is scaled by the clusters' public bound)
    correct = curved and rows_unit
    # the averaged logistic iterate solves the score equation for about k theta_hat;
    # k needs only the path and G, so fits without the plug-in matrices get it too
    k = (curvature_factor(out.trajectory_iter, out.params, np.linalg.inv(precond))
         if correct else None)
    if report is not None and curved:
        report = with_curvature_bias(report, design.exog_names, cond.params(out.params),
                                     out.trajectory_iter, out.params, np.linalg.inv(precond),
                                     inferences["plugin"].scale, factor=k)
    if report is not None and rows_unit and problem.prior and precond is not None \
            and default_step_rule(opts):
        # the floor's finding alone is a note at the learned ranges (FLOOR_NOTE_MIN_N_MU)
        report = floor_as_note(report, n * request.gdp_mu)
    notes: tuple[str, ...] = adjacency_notes(ledger)
    if report is not None:
        notes += report.notes
    estimate = out.params
    if k is not None:
        estimate = out.params / k
        notes += (f"Estimates: the averaged iterate divided by k = {k:.4g}, the curvature "
                  "correction of a logistic path (its iterates spread around their "
                  "average and the score is curved; post-processing of the path and the "
                  "private second moment); every interval moves with the estimate.",)
    if problem.groups is not None:
        notes += (cluster_note(opts.groups, opts.max_group_size, units,
                               f"a batch samples {pub.batch_size} of the G clusters and "
                               "divides its sum by the public m K"),)
    cov_type = opts.cov_type
    floored = () if report is None else report.floor_decided or report.floor_noted
    if floored and "plugin" in inferences and "rs" in inferences:
        inferences["plugin_rs"] = plugin_with_rs(inferences["plugin"], inferences["rs"],
                                                 design.exog_names, floored)
    if "cov_type" not in given and floored and not report.unconverged and not rows_unit:
        # clusters as the privacy unit: random scaling for every coefficient, as before
        # "plugin_rs" (measured with rows as the unit only)
        cov_type = "rs"
        report = dataclasses.replace(report, default_switched=True, default_rs=True)
        notes += ("Inference: random scaling, not the plug-in (the default): the plug-in "
                  "standard errors were set by the private Hessian's eigenvalue floor, "
                  "while random scaling needs no Hessian.",)
    elif "cov_type" not in given and floored and not report.unconverged:
        cov_type = "plugin_rs"
        report = dataclasses.replace(report, default_switched=True)
        notes += (f"Inference: the plug-in's intervals, random scaling's for {list(floored)} "
                  "(the default when the floor check names coefficients: their plug-in "
                  "standard errors were set by the private Hessian's eigenvalue floor, "
                  "while random scaling needs no Hessian); a test, prediction or margin that "
                  "involves them uses random scaling, any other the plug-in. "
                  "cov_type='plugin' or 'rs' gives either throughout.",)
    if request.unit == "rho":
        notes += ("zCDP does not improve with subsampling: each of the T steps is charged "
                  "as an unsampled Gaussian mechanism (rigorous, but far more noise than a "
                  "mu or (epsilon, delta) request of similar strength).",)
    table = {
        "engine": "dpsgd", "sampling": opts.sampling, "batch_size": pub.batch_size,
        "steps": pub.steps, "epochs": settings.epochs(n), "clip": pub.clip,
        "lr": pub.lr, "lr_decay": settings.lr_decay,
        "x_bound": "none (Mallows weights)" if pub.x_bound is None else pub.x_bound,
        "conditioning": cond.description + ("; preconditioned by a private second-moment "
                                             "matrix" if precond is not None else ""),
        "noise_multiplier": settings.noise_multiplier, "sigma_1": settings.noise_scale,
        "budget_split": ", ".join(f"{k} {v:g}" for k, v in split.items()),
        "random_state": seed_text(opts.random_state),
    }
    if problem.groups is not None:
        table["n_groups"] = units
        table["max_group_size"] = opts.max_group_size
    diagnostics = None
    if opts.diagnostics:
        diagnostics = {"clip_count": out.clip_count,
                       "clip_share": out.clip_count / out.grad_evals}
    return build_results(given_problem, FitRecord(
        params=cond.params(estimate), inferences=inferences, cov_type=cov_type,
        engine=LABEL, settings=Settings.from_values(table), notes=pub.reasons + notes,
        ledger=ledger, cov_matrix=cov,
        trajectory={"steps": out.trajectory_steps,
                    "average": cond.params(out.trajectory_avg),
                    "iterate": cond.params(out.trajectory_iter)},
        checked=True, report=report, diagnostics=diagnostics,
        n_groups=None if problem.groups is None else units))


def _inference(problem: Problem, out, Z: np.ndarray, settings: SGDSettings,
               events: dict, pub: Public, rng: np.random.Generator, cond: Conditioning,
               max_group_size: int = 1, n_groups: int | None = None):
    """Plug-in and random-scaling inference. The private matrices are computed and
    floored in the engine's coordinates (``Z``, where the public bounds hold), then
    ``V``, ``W`` and ``Q`` are mapped to the user's coordinates exactly.

    With ``n_groups`` clusters of at most ``max_group_size`` rows as the unit, ``S`` is
    the cluster meat, so ``V = A^-1 S A^-1`` is the cluster-robust sandwich. Every part
    is divided by the public count ``N = G K`` (the matrices' sums, ``m K`` for a
    batch's gradient: :meth:`SGDSettings.denominator`), and ``V / N`` does not depend on
    it: ``A`` and ``S`` scale by ``n / N``, so ``A^-1 S A^-1 / N = (A_n^-1 S_n A_n^-1) /
    n``."""
    n = problem.public_count()  # n, or G K with clusters
    m = settings.denominator()  # m, or m K with clusters
    epochs = settings.epochs(n)
    Q = cond.covariance(out.rs_q)
    if HESSIAN not in events:
        return {"rs": rs_inference(Q, epochs)}, None, {}
    A_hat = problem.matrix_statistic("A", Z, pub, out.params)
    S_hat = problem.matrix_statistic("S", Z, pub, out.params)
    A_noisy, _ = gaussian_matrix_mechanism(A_hat, events[HESSIAN], rng)
    S_noisy, _ = gaussian_matrix_mechanism(S_hat, events[SCORE], rng)
    # Eigenvalues into their public ranges: A in [one noise sd, hess_bound * row_sq]
    # (invertible, and never above what one row can contribute), S in [0, clip^2]
    # ([0, K clip^2] for the cluster meat: sum_g |s_g|^2 <= sum_g (n_g clip)^2 <= K n clip^2).
    a_cap = problem.objective.hess_bound * pub.row_sq_bound
    a_floor = min(events[HESSIAN].noise_std, a_cap)
    s_cap = max_group_size * pub.clip ** 2
    A, raised_a = floor_eigenvalues(A_noisy, a_floor, a_cap)
    S, raised_s = floor_eigenvalues(S_noisy, 0.0, s_cap)
    law, cr1 = None, 1.0
    if n_groups is not None:
        # CR1, as statsmodels' and Stata's cluster-robust errors: the sampling variance
        # V times G/(G-1) (N-1)/(N-p) (not the path's W), and t(G-1) intervals; the
        # public N = G K for the rows n, which are protected (a factor closer to 1 by
        # less than (p-1)/n)
        p = S.shape[0]
        cr1 = (n_groups / (n_groups - 1)) * (n - 1) / max(n - p, 1)
        law = StudentLaw(n_groups - 1)

    def variances(A_b, S_b):
        V_b, W_b = path_variance(A_b, S_b, settings.noise_scale, m)
        return cr1 * cond.covariance(V_b), cond.covariance(W_b)

    V, W = variances(A, S)
    # the same plug-in with the floor doubled: does the floor decide the answer?
    A2, _ = floor_eigenvalues(A_noisy, min(2 * a_floor, a_cap), a_cap)
    V2, W2 = variances(A2, S)
    floor_se = np.sqrt(np.diag(V2 / n + W2 / settings.steps))
    note = ""
    if raised_a or raised_s:
        note = (f"Plug-in: {raised_a} eigenvalue(s) of the private Hessian and {raised_s} "
                "of the private score covariance were moved into their public ranges "
                "(projection; post-processing).")
    def to_cov(A_b, S_b):
        V_b, W_b = variances(A_b, S_b)
        C_b = V_b / n + W_b / settings.steps
        return (C_b + C_b.T) / 2

    # a child generator: the fit's own draws (and so its numbers) are unchanged
    (boot_rng,) = rng.spawn(1)
    replicates = covariance_replicates(A, S, events[HESSIAN].noise_std,
                                       events[SCORE].noise_std, (a_floor, a_cap, s_cap),
                                       to_cov, boot_rng)
    if n_groups is not None:
        note = (note + " " if note else "") + (
            f"Cluster-robust plug-in: t({n_groups - 1}) intervals from the sandwich with the "
            f"private cluster meat and the CR1 factor G/(G-1) (N-1)/(N-p) = {cr1:.4g} on "
            f"its sampling part (G = {n_groups} clusters, public; N = G K, the rows' public "
            "bound).")
    plugin, cov = plugin_inference(V, W, n, settings.steps, note, cov_replicates=replicates,
                                   law=law)
    rs = rs_inference(Q, epochs, V=V, W=W, n=n, steps=settings.steps, batch_size=m)
    return {"plugin": plugin, "rs": rs}, cov, {"W": W, "floor_se": floor_se}
