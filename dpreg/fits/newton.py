"""Noisy Newton (``engine="newton"``): plan, release the steps' statistics, record.

Logistic, Huber and expectile regression by a start and eight Newton steps on released
gradients and two released Hessians, with a plug-in covariance that counts the sampling
variance, the last gradient's noise and the earlier gradients' noise that the noisy
Hessian leaves (after Avella-Medina, Bradshaw and Loh 2023; the releases, their
sensitivities and the covariance are in :mod:`dpreg.engines.newton`).

Where it is valid, and where not (``validation/newton_logit.py``; the user guide's
page on the logistic family): with privately learned ranges it covers like the
non-private fit, at about its length and in a small fraction of DP-SGD's time, where
the Hessian's noise is small against its curvature (large ``n mu``). Where that noise
floors an eigenvalue of the last Hessian the steps do not contract in that direction and
the intervals undercover; the fit then warns (:data:`FLOORED_WARNING`). Logistic
regression's default at large ``n mu`` (:func:`dpreg.fits.engine_choice.newton_reason`);
for Huber and expectile regression it is an option.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpreg.design import design_notes
from dpreg.engines.newton import (
    SHARES,
    STEPS,
    NewtonSettings,
    newton_events,
    run_newton,
)
from dpreg.exceptions import OptionError
from dpreg.fits.common import FitRecord, Problem, build_results, calibrate_and_record, seed_text
from dpreg.fits.options import CommonOptions
from dpreg.inference.base import Inference, NormalLaw
from dpreg.inference.methods import engine_methods
from dpreg.inference.plugin import mean_gradient
from dpreg.inference.ssp_estimator import ReleaseReport
from dpreg.results import DPRegressionResults, Settings

__all__ = ["fit_newton", "NewtonOptions", "LABEL", "events_builder", "newton_statistic",
           "FLOORED_WARNING", "UNCONVERGED_WARNING", "LAST_STEP_LIMIT"]

LABEL = "Noisy Newton"

#: The warning when the last released Hessian had an eigenvalue under its noise floor.
FLOORED_WARNING = (
    "{k} eigenvalue(s) of the last private Hessian fell under its noise floor: in that "
    "direction the Newton steps did not contract, and the intervals, which do not see it, "
    "undercover (measured: validation/newton_logit.py). Do not report these intervals; "
    "with a new budget (a second release spends its own), fit with engine='dpsgd', whose "
    "intervals cover or warn at budgets like this one.")

#: The fit warns when its last step moved a coefficient by more than this many of its
#: standard errors: converged steps move it by the noise they carry, about one standard
#: error at most (the step's variance is at most the covariance's privacy part), while
#: steps still travelling from a far start move it by many (a Huber fit started at the
#: midpoint of a declared count box: hundreds).
LAST_STEP_LIMIT = 5.0
#: The warning when the last step exceeded :data:`LAST_STEP_LIMIT`.
UNCONVERGED_WARNING = (
    "noisy Newton had not converged: its last step moved {names} by up to {z:.3g} "
    "standard errors (more than {limit:g}). The estimate and its intervals are not "
    "reliable. Steps from a start far from the estimate (the midpoint of a declared "
    "outcome box, ranges='declared') fall short: keep ranges='auto', whose start is the "
    "outcome's private median, or, with a new budget (a second release spends its own), "
    "fit with engine='dpsgd'.")


@dataclass(frozen=True)
class NewtonOptions(CommonOptions):
    """Options of ``engine="newton"``: the common options only (its steps, releases and
    budget split are fixed: :mod:`dpreg.engines.newton`)."""

    cov_types: ClassVar[tuple[str, ...]] = engine_methods("newton", "plugin")
    scope: ClassVar[str] = ("noisy Newton: a start and eight Newton steps on released "
                            "gradients and Hessians, logistic, Huber and expectile "
                            "regression")


def _check_newton_problem(problem: Problem) -> None:
    family = problem.objective.family
    if family.squared_loss:
        raise OptionError(f"engine='newton' fits logistic, Huber and expectile regression; "
                          f"for the model's family {family.name!r} use engine='ssp' (its "
                          "sufficient statistics are the Newton step)")
    if problem.groups is not None:
        raise OptionError("engine='newton' does not take groups= (clusters as the privacy "
                          "unit): use engine='dpsgd'")


def _plan(problem: Problem, opts: NewtonOptions):
    """Public settings, the coordinates and the start (public quantities only)."""
    cond = problem.coordinates(opts.condition)
    pub = problem.public_settings(opts, cond, full_batch=True)
    design = problem.design
    n, obj = design.nobs, problem.objective
    intercept = problem.intercept_column()
    from_rate = obj.family.binary_outcome and intercept is not None
    settings = NewtonSettings(
        n=n, p=design.k_exog, gradient_sensitivity=2.0 * pub.clip / n,
        hessian_sensitivity=problem.matrix_sensitivity("A", pub, n),
        score_sensitivity=problem.matrix_sensitivity("S", pub, n),
        hessian_cap=obj.hess_bound * pub.row_sq_bound, score_cap=pub.clip ** 2,
        intercept=intercept, start_from_rate=from_rate,
        majorize_first=obj.family.location, weighted=bool(obj.mallows))
    theta0 = np.zeros(design.k_exog) if from_rate else cond.to_engine(problem.start(None))
    return pub, cond, settings, theta0


def newton_statistic(problem: Problem, Z: np.ndarray, y: np.ndarray, pub, which: str,
                     theta: np.ndarray) -> np.ndarray:
    """The statistic :func:`dpreg.engines.newton.run_newton` releases: the mean clipped
    gradient (``"g"``), the Hessian (``"A"``), its majorizer (``"M"``: ``hess_bound``
    times the weighted second moment ``G``, each row's term at most ``hess_bound
    row_sq`` as the Hessian's, so the Hessian's sensitivity holds) or the score
    covariance (``"S"``), at ``theta`` in the engine's coordinates. The sensitivity audit
    calls it too."""
    if which == "g":
        return mean_gradient(Z, y, theta, problem.objective, pub.clip)
    if which == "M":
        return problem.objective.hess_bound * problem.matrix_statistic("G", Z, pub)
    return problem.matrix_statistic(which, Z, pub, theta)


def events_builder(problem: Problem, opts: NewtonOptions):
    """The builder ``mu_scale -> events`` of the fit's releases (public quantities only;
    see :mod:`dpreg.privacy.calibration`).

    Parameters
    ----------
    problem : dpreg.fits.common.Problem
        The design and objective (checked as :func:`fit_newton` checks them).
    opts : NewtonOptions
        Validated options.

    Returns
    -------
    callable
    """
    _check_newton_problem(problem)
    settings = _plan(problem, opts)[2]
    return lambda scale: newton_events(settings, scale)


def fit_newton(problem: Problem, opts: NewtonOptions, request,
               given=frozenset()) -> DPRegressionResults:
    """Fit logistic, Huber or expectile regression by noisy Newton steps.

    Parameters
    ----------
    problem : dpreg.fits.common.Problem
        Logistic, Huber or expectile family (Mallows weights too), no clusters.
    opts : NewtonOptions
        Validated options.
    request : dpreg.privacy.PrivacyRequest
        The total budget.
    given : frozenset of str
        The options the user gave (unused).

    Returns
    -------
    DPRegressionResults

    Notes
    -----
    Four kinds of Gaussian release, one ledger row each (:mod:`dpreg.engines.newton`):
    the gradients before the last (a logit with an intercept: eight, the start's and
    seven steps'; otherwise seven), the last gradient, two Hessians (three for Huber and
    expectile regression and for Mallows weights) and the score
    covariance, with shares 0.29, 0.31, 0.30 and 0.10 of what the private ranges leave
    of ``mu^2`` (or ``rho``).
    The ``"plugin"`` interval is normal with the covariance of
    :func:`dpreg.engines.newton.run_newton`; it is for the population coefficients.
    """
    _check_newton_problem(problem)
    design = problem.design
    pub, cond, settings, theta0 = _plan(problem, opts)
    events, ledger = calibrate_and_record(
        request, lambda s: newton_events(settings, s), design.nobs,
        f"noisy Newton with clip = {pub.clip:.4g}", prior=problem.prior)
    rng = np.random.default_rng(pub.seed)
    Z = cond.design(design.exog)
    y = np.asarray(design.endog, float)

    def statistic(which: str, theta: np.ndarray) -> np.ndarray:
        return newton_statistic(problem, Z, y, pub, which, theta)

    out = run_newton(settings, events, statistic, theta0, rng)
    params, cov = cond.params(out.params), cond.covariance(out.cov)
    note = ("Plug-in (noisy Newton): normal interval from the sandwich of the last private "
            "Hessian and the private score covariance, plus the gradients' noise that "
            "the steps carry (dpreg.engines.newton).")
    inferences = {"plugin": Inference("plugin", np.sqrt(np.diag(cov)), NormalLaw(), True,
                                      note)}
    notes = list(design_notes(design))
    messages = [FLOORED_WARNING.format(k=out.floored)] if out.floored else []
    moved = np.abs(params - cond.params(out.previous)) / np.sqrt(np.diag(cov))
    if np.max(moved) > LAST_STEP_LIMIT:
        names = [name for name, z in zip(design.exog_names, moved, strict=True)
                 if z > LAST_STEP_LIMIT]
        messages.append(UNCONVERGED_WARNING.format(names=names, z=float(np.max(moved)),
                                                   limit=LAST_STEP_LIMIT))
    report = ReleaseReport(warnings=tuple(messages))
    table = {
        "engine": "newton", "x_bound": pub.x_bound, "clip": pub.clip,
        "conditioning": cond.description,
        "steps": STEPS, "hessians_at": ", ".join(str(k) for k in settings.hessian_steps),
        "hessian_floor": out.floor, "floored": out.floored,
        "budget_split": ", ".join(f"{k} {v:g}" for k, v in SHARES.items()),
        "random_state": seed_text(opts.random_state),
    }
    if out.start_rate is not None:  # a logit's start, read off the first gradient
        table["start_rate"] = out.start_rate
    labels = {"start_rate": "start: ybar (private)", "hessian_floor": "Hessian floor",
              "floored": "eigenvalues floored", "hessians_at": "Hessians at steps"}
    diagnostics = None
    if opts.diagnostics and pub.x_bound is not None:
        norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
        diagnostics = {"rows_clipped": int(np.sum(norms > pub.x_bound))}
    return build_results(problem, FitRecord(
        params=params, inferences=inferences, cov_type=opts.cov_type, engine=LABEL,
        settings=Settings.from_values(table, labels), notes=tuple(notes), ledger=ledger,
        cov_matrix=cov, diagnostics=diagnostics, report=report))
