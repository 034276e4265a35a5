"""DP-GD (``engine="dpgd"``): plan, run the engine, inference, record.

:meth:`dpreg.DPRegression.fit` validates the options, the request and the design's
privacy, then calls :func:`fit_dpgd`. It resolves the public settings, builds its
Gaussian mechanisms, calibrates them to the request and records them in the ledger
*before* touching the data, runs the engine, and builds Results from the released
quantities only.

DP-GD follows Brown, Dvijotham, Evans, Liu, Smith and Thakurta (2024), "Private gradient
descent for linear regression: tighter error bounds and instance-specific uncertainty
estimation", ICML (Algorithm 1, Lemma 2.1, Section 3.1); checkpoint aggregation follows
Shejwalkar et al. (2022), "Recycling scraps" (s.2.1.1, s.3.1).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpreg._checks import integer_at_least, number_in, one_of
from dpreg.engines.dpgd import GDSettings, default_gd_steps, run_dpgd
from dpreg.exceptions import OptionError
from dpreg.fits.common import (
    PRECONDITIONER,
    FitRecord,
    Problem,
    build_results,
    calibrate_and_record,
    format_vector,
    seed_text,
    spawn_rngs,
)
from dpreg.fits.options import PathOptions, check_steps, checked_split
from dpreg.inference.diagnostics import iterate_report, with_curvature_bias
from dpreg.inference.iterates import (
    AGGREGATES,
    aggregate,
    batch_layout,
    batch_means,
    checkpoint_estimates,
    t_inference,
)
from dpreg.inference.methods import engine_methods
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.results import DPRegressionResults, Settings

__all__ = ["fit_dpgd", "DPGDOptions", "LABEL", "TARGET_NOTE", "DPGD_SPLIT_KEYS",
           "events_builder"]

LABEL = "DP-GD"

PATH, CLIP_SHARE = "DP-GD path", "clip share"
#: Keys of ``budget_split`` for DP-GD: the path, the private preconditioner
#: (``condition="private"``), and an optional private clipped share.
DPGD_SPLIT_KEYS = ("path", "precondition", "clip_share")
#: DP-GD's default split with the private preconditioner (as DP-SGD's, 5% of mu^2).
PRECONDITIONED_GD_SPLIT = {"path": 0.95, "precondition": 0.05}
#: Preconditioned DP-GD with a curved score (``lr_scale < 1``: logistic, expectile) steps
#: a tenth of ``lr_scale / hess_bound``. The iterates' stationary spread grows with the
#: mixing times a default batch (1000 steps) spans, and the average of noisy iterates of
#: a curved score is biased by that spread; a tenth still leaves about 100 mixing times
#: per batch (measured, logistic in natural units, n = 5000, p = 3, mu = 1: batch-means
#: coverage of the target 0.23 at the full step, 0.975 at a tenth).
CURVED_GD_STEP = 0.1
TARGET_NOTE = (
    "Intervals are for the empirical minimizer of the clipped objective on these data "
    "(the loss whose gradients are clipped at `clip`; for squared loss a Huber-type loss, "
    "dpgd paper s.2.5), not for the population parameter: they carry the privacy noise, "
    "not the sampling variability of the data.")
_AGG_LABEL = {"last": "last iterate", "mean": "mean of the estimates",
              "ema": "exponential moving average (warm-up)", "upa": "uniform past-k average"}


@dataclass(frozen=True)
class DPGDOptions(PathOptions):
    """Options of ``engine="dpgd"``: the common and path options, the steps of each run,
    and the estimates behind the t interval (the dpgd paper's Appendix B settings: 10
    estimates after a burn-in of 20 iterates), the reported aggregate and the runs."""

    cov_types: ClassVar[tuple[str, ...]] = engine_methods("dpgd", "batch_means")
    scope: ClassVar[str] = ("full-batch DP-GD: every step uses all rows (no batches, no "
                            "sampling) with a constant step; the number of batch means, "
                            "checkpoints or runs is n_estimates")

    steps: int | None = None
    n_estimates: int = 10
    burn_in: int = 20
    aggregate: str = "mean"
    ema_beta: float = 0.999
    upa_k: int | None = None
    runs: int = 1

    def __post_init__(self):
        super().__post_init__()
        one_of("aggregate", self.aggregate, AGGREGATES)
        integer_at_least("n_estimates", self.n_estimates)
        if self.upa_k is not None:
            integer_at_least("upa_k", self.upa_k)
        integer_at_least("runs", self.runs)
        if self.n_estimates < 2:
            raise OptionError(f"n_estimates must be at least 2 (a t interval needs a "
                              f"spread), got {self.n_estimates}")
        integer_at_least("burn_in", self.burn_in, 0)
        number_in("ema_beta", self.ema_beta, 0, 1)
        check_steps(self.steps)
        if self.base_cov_type == "runs" and self.runs != self.n_estimates:
            raise OptionError(
                f"cov_type='runs' needs runs = n_estimates (one estimate per independent "
                f"run; each run is paid from the budget); got runs={self.runs}, "
                f"n_estimates={self.n_estimates}")
        if self.base_cov_type != "runs" and self.runs != 1:
            raise OptionError(f"runs={self.runs} applies to cov_type='runs' only; "
                              f"cov_type={self.cov_type!r} uses one run")
        if self.upa_k is not None and self.aggregate != "upa":
            raise OptionError(f"upa_k applies to aggregate='upa' only; got "
                              f"aggregate={self.aggregate!r}")

    def split(self) -> dict[str, float]:
        """The validated budget split: all of it on the path, but 5% on the private
        preconditioner with ``condition="private"``; ``"clip_share"`` buys the private
        share of clipped gradients."""
        preconditioned = self.condition == "private"
        if self.engine_split() is None:
            return dict(PRECONDITIONED_GD_SPLIT) if preconditioned else {"path": 1.0}
        keys = DPGD_SPLIT_KEYS if preconditioned else tuple(k for k in DPGD_SPLIT_KEYS
                                                             if k != "precondition")
        return checked_split(self.engine_split(), keys, {"path": 0.95, "clip_share": 0.05})


def _resolve_steps(opts, lr: float) -> tuple[int, list[str]]:
    """Steps of each run, and the reason when it is a default."""
    if opts.steps is not None:
        return int(opts.steps), []
    total, length = default_gd_steps(opts.n_estimates, opts.burn_in, lr)
    if opts.base_cov_type == "runs":
        steps = opts.burn_in + length
        why = (f"steps = {steps} per run: burn_in + {length} (100 / lr, within [1000, "
               "10000]), long against the mixing time 1/(lr lambda_min) on unit-scale "
               "covariates.")
    else:
        steps = total
        why = (f"steps = {steps}: burn_in + n_estimates * {length} (a batch of 100 / lr "
               "steps, within [1000, 10000]), long against the mixing time "
               "1/(lr lambda_min) on unit-scale covariates.")
    return steps, [why]


def _check_layout(opts, steps: int) -> int:
    """Check that the run(s) can give the estimates; return the default ``upa_k``."""
    if opts.base_cov_type == "runs":
        post = steps - opts.burn_in
        if post < 1 and opts.aggregate != "last":
            raise OptionError(f"steps = {steps} per run leaves no iterate after burn_in = "
                              f"{opts.burn_in}; increase steps or lower burn_in (or use "
                              "aggregate='last', the final iterate of each run)")
        default_k = max(1, post // opts.n_estimates)
    else:
        _, length = batch_layout(steps, opts.burn_in, opts.n_estimates)
        post, default_k = steps - opts.burn_in, length
    if opts.upa_k is not None and opts.upa_k > post:
        raise OptionError(f"upa_k = {opts.upa_k} exceeds the {post} iterates after burn_in "
                          f"= {opts.burn_in}")
    return opts.upa_k if opts.upa_k is not None else default_k


def _plan(problem: Problem, opts: DPGDOptions):
    """The public plan of a fit (public quantities only): coordinates, settings, split,
    step size, steps and their reasons, the default ``upa_k``, and the builder of its
    mechanisms."""
    n, p = problem.design.nobs, problem.design.k_exog
    # the public map of the columns into [-1, 1], then (condition="private") the private
    # preconditioner P = G~^{-1}, as for DP-SGD: the public map leaves correlated columns
    # (a product beside its main effects) mixing slowly; mapped back exactly below
    cond = problem.coordinates(opts.condition)
    pub = problem.public_settings(opts, cond, full_batch=True)
    split = opts.split()
    if "precondition" in split:
        # the step of a preconditioned full batch: m = n in lr_scale / (hess_bound (1 + p/m))
        pub = dataclasses.replace(pub, batch_size=n)
    runs = int(opts.runs)
    lr = pub.lr
    curved = problem.objective.family.lr_scale < 1.0
    if "precondition" in split and opts.lr is None:
        obj = problem.objective
        lr = obj.family.lr_scale / (obj.hess_bound * (1.0 + p / n))
        lr *= CURVED_GD_STEP if curved else 1.0
    steps, reasons = _resolve_steps(opts, lr)
    if opts.lr is None and "precondition" not in split:
        reasons.insert(0, f"lr = {pub.lr:.4g}: {problem.objective.family.lr_scale:g} / "
                          "(hess_bound * x_bound^2), so that lr * lambda_max(Z'Z/n) <= 1 "
                          "from public bounds alone on the conditioned columns (the "
                          "paper's lr = 1/3 suits standardized covariates; pass lr=).")
    upa_k = _check_layout(opts, steps)
    sens = 2.0 * pub.clip / n

    def build(mu_scale: float) -> list[GaussianMechanismEvent]:
        mu_run = mu_scale * math.sqrt(split["path"] / runs)
        events = [GaussianMechanismEvent(
            name=PATH if runs == 1 else f"DP-GD run {r + 1}/{runs}", sensitivity=sens,
            noise_std=math.sqrt(steps) * sens / mu_run, adjacency="replace-one",
            count=steps) for r in range(runs)]
        if "precondition" in split:
            sens_g = problem.matrix_sensitivity("G", pub, n)  # replace-one
            mu_g = mu_scale * math.sqrt(split["precondition"])
            events.append(GaussianMechanismEvent(name=PRECONDITIONER, sensitivity=sens_g,
                                                 noise_std=sens_g / mu_g,
                                                 adjacency="replace-one"))
        if "clip_share" in split:
            mu_c = mu_scale * math.sqrt(split["clip_share"])
            events.append(GaussianMechanismEvent(name=CLIP_SHARE, sensitivity=1.0 / n,
                                                 noise_std=1.0 / (n * mu_c),
                                                 adjacency="replace-one"))
        return events

    return cond, pub, split, lr, curved, steps, reasons, upa_k, build


def events_builder(problem: Problem, opts: DPGDOptions):
    """The builder ``mu_scale -> events`` of the fit's mechanisms (public quantities
    only; see :mod:`dpreg.privacy.calibration`).

    Parameters
    ----------
    problem : dpreg.fits.common.Problem
        The design and objective.
    opts : DPGDOptions
        Validated options.

    Returns
    -------
    callable
    """
    return _plan(problem, opts)[-1]


def fit_dpgd(problem: Problem, opts: DPGDOptions, request,
             given=frozenset()) -> DPRegressionResults:
    """Fit by full-batch DP-GD with t intervals from the iterates.

    Parameters
    ----------
    problem : dpreg.fits.common.Problem
        The design and objective.
    opts : DPGDOptions
        Validated options.
    request : dpreg.privacy.PrivacyRequest
        The total budget.
    given : frozenset of str
        The options the user gave (unused: every default is fixed).

    Returns
    -------
    DPRegressionResults

    Notes
    -----
    Privacy (Lemma 2.1). The mean of per-example gradients clipped at ``gamma`` has
    replace-one L2 sensitivity ``2 gamma / n``; ``T`` steps with noise ``N(0, lambda^2 I)``
    are ``sqrt(T) (2 gamma / n) / lambda``-GDP exactly, i.e. rho-zCDP with
    ``rho = 2 T gamma^2 / (n^2 lambda^2)``. ``lambda`` is calibrated to the request: mu
    by GDP composition, rho by zCDP, (epsilon, delta) by the PLD accountant of
    dp_accounting (no subsampling, so no CLT anywhere). With ``cov_type="runs"`` each run
    is one mechanism in the ledger and gets ``1/runs`` of the path's mu^2 (or rho).

    Intervals (s.3.1). ``"batch_means"`` and ``"checkpoints"`` come from one run for
    free (both are computed; ``cov_type`` picks the one behind ``bse``); ``"runs"`` needs
    ``runs = n_estimates``. See :mod:`dpreg.inference.iterates`.

    Reported estimate (``aggregate``). ``"mean"``: ``theta_bar`` of the chosen
    construction (for runs: the mean of the runs' post-burn-in averages). ``"last"``,
    ``"ema"``, ``"upa"``: the last iterate, the moving average with warm-up, or the mean
    of the last ``upa_k`` iterates (per run, then averaged over runs for ``"runs"``).
    Single-run intervals stay centred at ``theta_bar``. The sample standard deviation of
    the last ``n_estimates`` checkpoints (the runs' last iterates for ``"runs"``) is
    attached as ``checkpoint_sd``: it estimates the sd of the last iterate
    (recycling-scraps paper, s.3.1).

    Clipped share. The share of clipped gradients is a statistic of the data. It is
    released only through its own Gaussian mechanism, ``budget_split={"path": w,
    "clip_share": 1 - w}`` (replace-one sensitivity ``1/n``: a replaced row changes its
    own indicator at each of the ``T`` steps; by adaptive composition the other rows'
    indicators are functions of the released path), or shown non-privately with
    ``diagnostics=True``. By default no budget is spent on it and it is not shown.
    """
    design = problem.design
    n = design.nobs
    cond, pub, split, lr, curved, steps, reasons, upa_k, build = _plan(problem, opts)
    precond = None
    runs, m, burn_in = int(opts.runs), int(opts.n_estimates), int(opts.burn_in)
    events, ledger = calibrate_and_record(
        request, build, n, f"n = {n}, steps = {steps}, runs = {runs}", prior=problem.prior)
    noise_std = events[0].noise_std
    # a third child for the preconditioner: the first two streams are those of a fit
    # without it (children of a spawn are keyed by their index)
    rng_path, rng_extra, rng_g = spawn_rngs(pub.seed, 3)
    Z = cond.design(design.exog)
    by_name = {e.name: e for e in events}
    if PRECONDITIONER in by_name:
        precond, lr_full, why = problem.preconditioner(Z, by_name[PRECONDITIONER], pub,
                                                       opts.lr, rng_g)
        if opts.lr is None and curved:
            why += (f" For this curved score DP-GD steps a tenth of it, lr = {lr:.4g}: the "
                    "spread of the iterates, which biases their average, shrinks with the "
                    "step while a batch still spans about 100 mixing times.")
        else:
            lr = lr_full
        reasons.insert(0, why)
    settings = GDSettings(steps=steps, clip=pub.clip, lr=lr, noise_std=noise_std,
                          runs=runs, precond=precond)
    out = run_dpgd(Z, design.endog, objective=problem.objective,
                   settings=settings, theta0=cond.to_engine(problem.start(opts.start_params)),
                   rng=rng_path, progress=opts.progress)
    engine_path0 = out.paths[0, 1 + burn_in:]  # the engine's coordinates, for the checks
    out = dataclasses.replace(out, paths=cond.params(out.paths))
    names = design.exog_names
    inferences, params, ckpt_sd, notes = _dpgd_inference(out, opts, upa_k)
    estimates = inferences[opts.base_cov_type].estimates
    cov = np.atleast_2d(np.cov(estimates, rowvar=False)) / estimates.shape[0]
    notes = [TARGET_NOTE, *notes]
    if runs > 1:
        notes.append(f"cov_type='runs': {runs} independent runs, each paid from the budget "
                     f"(1/{runs} of the path's share each; one ledger row per run).")
    where = f"the {runs} runs' last iterates" if runs > 1 else f"the last {m} checkpoints"
    notes.append(f"sd of {where} (estimates the sd of the last iterate; recycling-scraps "
                 "s.3.1): "
                 + format_vector(names, ckpt_sd))
    notes.append(_clip_share_note(out, opts, events, rng_extra))
    table = {
        "engine": "dpgd", "steps": steps, "runs": runs, "burn_in": burn_in,
        "n_estimates": m, "clip": pub.clip, "lr": lr,
        "x_bound": "none (Mallows weights)" if pub.x_bound is None else pub.x_bound,
        "conditioning": cond.description + ("; preconditioned by a private second-moment "
                                             "matrix" if precond is not None else ""),
        "noise_std": noise_std, "noise_multiplier": events[0].noise_multiplier,
        "aggregate": opts.aggregate,
        "budget_split": ", ".join(f"{k} {v:g}" for k, v in split.items()),
        "random_state": seed_text(opts.random_state),
    }
    if runs == 1:
        table["batch_length"] = batch_layout(steps, burn_in, m)[1]
    if opts.aggregate == "ema":
        table["ema_beta"] = float(opts.ema_beta)
    if opts.aggregate == "upa":
        table["upa_k"] = upa_k
    path0 = out.paths[0, 1:]
    diagnostics = None
    if opts.diagnostics:
        diagnostics = {"clip_count": out.clip_count, "clip_share": out.clip_share}
    # the free checks read the released path: the first run's (or each run's, for
    # cov_type="runs", whose estimates are post-burn-in means of their own runs)
    report = iterate_report(names, path0, burn_in, m) if runs == 1 else None
    if report is not None and precond is not None \
            and problem.objective.family.checks_curvature_bias and len(engine_path0) > 1:
        # the curvature bias of the averaged iterate, as for DP-SGD (spread of the
        # post-burn-in iterates in the private second moment G = P^-1)
        report = with_curvature_bias(report, names, np.asarray(params), engine_path0,
                                     engine_path0.mean(axis=0), np.linalg.inv(precond),
                                     inferences[opts.base_cov_type].scale)
    return build_results(problem, FitRecord(
        params=params, inferences=inferences, cov_type=opts.cov_type, engine=LABEL,
        settings=Settings.from_values(table, {"noise_std": "noise_std (lambda)"}),
        notes=tuple(pub.reasons) + tuple(reasons) + tuple(notes), ledger=ledger,
        cov_matrix=cov,
        trajectory={"steps": np.arange(1, steps + 1),
                    "average": np.cumsum(path0, axis=0) / np.arange(1, steps + 1)[:, None],
                    "iterate": path0},
        checked=True, report=report, checkpoint_sd=ckpt_sd, diagnostics=diagnostics))


def _dpgd_inference(out, opts, upa_k: int):
    """Inferences by name, the reported estimate, the last-checkpoint sd, and notes."""
    m, burn_in, how = opts.n_estimates, opts.burn_in, opts.aggregate
    kw = {"beta": float(opts.ema_beta), "k": upa_k}
    notes = []
    if opts.runs > 1:
        per_run = np.array([aggregate(path[1:] if how == "last" else path[1 + burn_in:],
                                      how, **kw) for path in out.paths])
        what = {"last": "final iterate", "mean": "mean of the post-burn-in iterates",
                "ema": "EMA of the post-burn-in iterates",
                "upa": f"mean of the last {upa_k} iterates"}[how]
        inf = t_inference(per_run, "runs", note=(
            f"Runs: one estimate per run ({what}), t({m - 1}) interval (3.1); the runs are "
            "independent, so the t law is exact for Gaussian iterates."))
        last = out.paths[:, -1, :]
        return {"runs": inf}, inf.center, last.std(axis=0, ddof=1), notes
    iterates = out.paths[0, 1:]
    _, length = batch_layout(iterates.shape[0], burn_in, m)
    bm = t_inference(batch_means(iterates, burn_in, m), "batch_means", note=(
        f"Batch means: {m} batches of {length} iterates after burn-in {burn_in}, t({m - 1}) "
        "interval (3.1); valid when a batch is long against the iterates' autocorrelation."))
    cp = t_inference(checkpoint_estimates(iterates, burn_in, m), "checkpoints", note=(
        f"Checkpoints: every {length}-th iterate after burn-in {burn_in} (the last is the "
        f"final iterate), t({m - 1}) interval (3.1)."))
    inferences = {"batch_means": bm, "checkpoints": cp}
    chosen = inferences[opts.base_cov_type]
    if how == "mean":
        params = chosen.center
    else:
        params = aggregate(iterates[burn_in:], how, **kw)
        notes.append(f"coef is the {_AGG_LABEL[how]} of the iterates (aggregate={how!r}); "
                     "intervals and p-values are centred at theta_bar, the mean of the "
                     f"{m} {opts.base_cov_type.replace('_', ' ')} estimates, as in (3.1).")
    return inferences, params, cp.estimates.std(axis=0, ddof=1), notes


def _clip_share_note(out, opts, events, rng) -> str:
    by_name = {e.name: e for e in events}
    if CLIP_SHARE in by_name:
        e = by_name[CLIP_SHARE]
        released = float(np.clip(out.clip_share + e.noise_std * rng.standard_normal(),
                                  0.0, 1.0))
        return (f"Share of per-example gradients clipped: {released:.4g} (private: Gaussian "
                f"mechanism {CLIP_SHARE!r} in the ledger, noise sd {e.noise_std:.3g}).")
    if opts.diagnostics:
        return (f"Share of per-example gradients clipped: {out.clip_share:.4g} (NON-PRIVATE, "
                "shown because diagnostics=True).")
    return ("Share of per-example gradients clipped: not released (a statistic of the data; "
            "pass budget_split={'path': 0.95, 'clip_share': 0.05} to release it privately, "
            "or diagnostics=True to see it non-privately).")
