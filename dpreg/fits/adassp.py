"""AdaSSP (``engine="adassp"``): plan, release the sufficient statistics, record.

Linear regression by AdaSSP, Algorithm 2 of Wang (2018), "Revisiting differentially
private linear regression: optimal and adaptive prediction & estimation in unbounded
domain", in Gaussian form (see :mod:`dpreg.engines.adassp`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpreg.design import design_notes
from dpreg.engines.adassp import AdaSSPSettings, adassp_covariance, adassp_estimate, adassp_events
from dpreg.exceptions import OptionError
from dpreg.fits.common import FitRecord, Problem, build_results, calibrate_and_record, seed_text
from dpreg.fits.options import CommonOptions
from dpreg.inference.base import Inference, NormalLaw
from dpreg.inference.methods import engine_methods
from dpreg.inference.ssp_estimator import ReleaseReport
from dpreg.results import DPRegressionResults, Settings

__all__ = ["fit_adassp", "AdaSSPOptions", "LABEL", "events_builder"]

LABEL = "AdaSSP"


@dataclass(frozen=True)
class AdaSSPOptions(CommonOptions):
    """Options of ``engine="adassp"``: the common options only (no path, no steps, no
    budget split)."""

    cov_types: ClassVar[tuple[str, ...]] = engine_methods("adassp", "plugin")
    scope: ClassVar[str] = ("AdaSSP: a one-shot release of X'X and X'y with an equal split "
                            "of the budget")


def _check_adassp_problem(problem: Problem) -> None:
    if not problem.objective.family.squared_loss:
        raise OptionError(f"engine='adassp' fits linear regression (squared loss) only; "
                          f"the model's family is {problem.objective.family.name!r}")
    if problem.objective.mallows:
        raise OptionError("engine='adassp' does not support weights='mallows'")
    if problem.design.endog_bounds is None:
        raise OptionError(f"engine='adassp' needs public bounds on the outcome "
                          f"{problem.design.endog_name!r} (|y| <= y_bound): declare "
                          "bounds={column: (lower, upper)}")


def _plan(problem: Problem, opts: AdaSSPOptions):
    """Public settings, the coordinates and the bounds of the releases (public
    quantities only). Like SSP, AdaSSP works on the columns mapped into ``[-1, 1]`` by
    their declared bounds (``condition="none"``: the design as given): in natural units
    the row-norm bound is the largest raw value (an age times schooling reaches 2,500),
    and the ridge, which scales with its square, shrinks every coefficient towards 0."""
    cond = problem.coordinates(opts.condition)
    pub = problem.public_settings(opts, cond)
    lo, hi = problem.design.endog_bounds
    return pub, cond, AdaSSPSettings(x_bound=float(pub.x_bound),
                                     y_bound=float(max(abs(lo), abs(hi))))


def events_builder(problem: Problem, opts: AdaSSPOptions):
    """The builder ``mu_scale -> events`` of the fit's releases (public quantities only;
    see :mod:`dpreg.privacy.calibration`).

    Parameters
    ----------
    problem : dpreg.fits.common.Problem
        The design and objective (checked as :func:`fit_adassp` checks them).
    opts : AdaSSPOptions
        Validated options.

    Returns
    -------
    callable
    """
    _check_adassp_problem(problem)
    settings = _plan(problem, opts)[2]
    return lambda scale: adassp_events(settings, scale)


def fit_adassp(problem: Problem, opts: AdaSSPOptions, request,
               given=frozenset()) -> DPRegressionResults:
    """Fit linear regression by AdaSSP (Wang 2018, Algorithm 2) in Gaussian form.

    Parameters
    ----------
    problem : dpreg.fits.common.Problem
        Linear family, no Mallows weights, with declared outcome bounds.
    opts : AdaSSPOptions
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
    Three Gaussian mechanisms, one ledger row each, with an equal share of mu^2 (or
    rho): the smallest eigenvalue of ``X'X``, ``X'X`` and ``X'y`` (see
    :mod:`dpreg.engines.adassp` for sensitivities). ``x_bound`` comes from the declared
    bounds (or ``x_bound=``), ``y_bound = max(|lower|, |upper|)`` of the outcome's
    declared bounds; rows and outcome are clipped to them. The ``"plugin"`` interval is
    normal with the delta-method covariance of the privacy noise
    (:func:`dpreg.engines.adassp.adassp_covariance`): it is for OLS on these data, not
    for the population parameter (AdaSSP releases no residual variance), and ignores the
    ridge bias when the ridge is positive.
    """
    _check_adassp_problem(problem)
    design = problem.design
    n = design.nobs
    pub, cond, settings = _plan(problem, opts)
    events, ledger = calibrate_and_record(
        request, lambda s: adassp_events(settings, s), n,
        f"AdaSSP with x_bound = {settings.x_bound:.4g}, y_bound = {settings.y_bound:.4g}",
        prior=problem.prior)
    rng = np.random.default_rng(pub.seed)
    out = adassp_estimate(cond.design(design.exog), design.endog, settings, events, rng)
    cov_z, raised = adassp_covariance(out, events)
    params, cov = cond.params(out.params), cond.covariance(cov_z)
    note = ("Plug-in (AdaSSP): normal interval from the delta-method covariance of the "
            "privacy noise in the released X'X and X'y; for OLS on these (clipped) data, "
            "not the population parameter (AdaSSP releases no residual variance).")
    if raised:
        note += f" {raised} eigenvalue(s) of X'X~ + lambda I were floored (post-processing)."
    inferences = {"plugin": Inference("plugin", np.sqrt(np.diag(cov)), NormalLaw(), True,
                                      note)}
    notes = list(design_notes(design))
    report = ReleaseReport()  # its warning reaches the user through build_results
    if out.ridge > 0:
        # a ridge means the private X'X is poorly conditioned at this budget (its
        # smallest eigenvalue is near the noise): the delta-method interval then misses
        # both the ridge's bias and the noise's higher-order effect. On statsmodels'
        # fair OLS (validation/adassp_fair.py) the ridge was positive in every fit at
        # epsilon = 1 and 3 (intervals containing OLS: 0.65 and 0.86 of coefficients)
        # and zero in every fit at epsilon = 10 (0.92)
        message = (f"AdaSSP added a ridge (lambda = {out.ridge:.4g}) because the private "
                   "X'X is poorly conditioned at this budget: the estimate is shrunk "
                   "towards 0 and the intervals, which include neither that bias nor the "
                   "noise in X'X beyond first order, are too short for every "
                   "coefficient. Use engine='ssp' (no ridge), raise the budget, or "
                   "declare tighter bounds.")
        report = ReleaseReport(warnings=(message,))
    table = {
        "engine": "adassp", "x_bound": settings.x_bound, "y_bound": settings.y_bound,
        "conditioning": cond.description,
        "ridge": out.ridge, "lambda_min": out.lambda_min,
        "failure_prob": settings.failure_prob,
        "budget_split": "equal thirds: lambda_min, X'X, X'y",
        "random_state": seed_text(opts.random_state),
    }
    diagnostics = None
    if opts.diagnostics:
        Z = cond.design(design.exog)
        norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
        diagnostics = {"rows_clipped": int(np.sum(norms > settings.x_bound))}
    labels = {"ridge": "ridge (lambda)", "lambda_min": "lambda_min (private)"}
    return build_results(problem, FitRecord(
        params=params, inferences=inferences, cov_type=opts.cov_type, engine=LABEL,
        settings=Settings.from_values(table, labels), notes=tuple(notes), ledger=ledger,
        cov_matrix=cov, diagnostics=diagnostics, report=report))
