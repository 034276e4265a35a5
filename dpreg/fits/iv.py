"""IV-2SLS by sufficient-statistics perturbation (``dpreg.dp_iv2sls``).

Plan from public quantities, record six releases in the ledger before the data are
read, release the cross-products of the clipped rows (:mod:`dpreg.engines.iv`), and
post-process them (:mod:`dpreg.inference.iv_estimator`): the 2SLS estimate, the private
first-stage F statistics, a plug-in and a parametric-bootstrap interval. The design
mirrors ``engine="ssp"`` (:mod:`dpreg.fits.ssp`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dpreg._checks import integer_at_least
from dpreg.design import Design, design_notes
from dpreg.design.conditioning import Conditioning, default_conditioning
from dpreg.engines.iv import MECHANISMS, IVSettings, iv_events, iv_sums, release_iv
from dpreg.exceptions import OptionError
from dpreg.fits.common import (
    FitRecord,
    Problem,
    build_results,
    calibrate_and_record,
    seed_text,
    spawn_rngs,
)
from dpreg.fits.ssp import params_to_user
from dpreg.inference.base import Inference, NormalLaw
from dpreg.inference.bootstrap import bootstrap_inference
from dpreg.inference.iv_estimator import (
    first_stage_f,
    iv_covariance,
    iv_estimate,
    iv_pboot_replicates,
)
from dpreg.inference.methods import base_method, engine_methods
from dpreg.inference.ssp_estimator import ReleaseReport
from dpreg.privacy.request import split_budget
from dpreg.results import DPRegressionResults, Settings

__all__ = ["fit_iv2sls", "IVOptions", "IVProblem", "LABEL", "DEFAULT_SPLIT", "WEAK_F"]

LABEL = "IV-2SLS (SSP)"
#: Shares of mu^2 by release (see IVOptions for the reason).
DEFAULT_SPLIT = {"ww": 0.10, "wx": 0.35, "wy": 0.35, "xx": 0.08, "xy": 0.08, "yy": 0.04}
#: The rule-of-thumb threshold of the first-stage F (Staiger and Stock 1997).
WEAK_F = 10.0
#: Its interval methods, from the registry (:data:`dpreg.inference.methods.METHODS`,
#: estimator ``"iv2sls"``); the first is the default ``cov_type``.
COV_TYPES = engine_methods("iv2sls", "plugin")


@dataclass(frozen=True)
class IVOptions:
    """Options of :func:`dpreg.dp_iv2sls`.

    Attributes
    ----------
    cov_type : {"plugin", "pboot", "pboot_basic"}
        The interval behind ``bse`` and ``pvalues`` (all are computed).
    budget_split : dict, optional
        Shares of ``mu^2`` (or ``rho``) for ``"ww"`` (``W'W``), ``"wx"`` (``W'X``),
        ``"wy"`` (``W'y``), ``"xx"`` (``X'X``), ``"xy"`` (``X'y``) and ``"yy"``
        (``y'y``); each positive. Default :data:`DEFAULT_SPLIT`.
    n_boot : int
        Bootstrap replicates (default 2000).
    random_state : int, SeedSequence, Generator or None
        The noise's seed.

    Notes
    -----
    The default split is reasoned, not tuned. To first order the estimate moves with
    the noise of ``W'y`` and of ``W'X`` times ``beta`` (:mod:`dpreg.inference.iv_estimator`); at
    the largest ``||beta|| = y_bound / x_bound`` that keeps fitted values within the
    outcome's range their two parts are equal for equal shares, as their sensitivities
    ``2 w_bound y_bound`` and ``2 w_bound x_bound`` suggest, so each gets 0.35. The noise
    of ``W'W`` enters only multiplied by ``G^{-1}(W'y - W'X beta)``, which is zero for an
    exactly identified model and of order ``n^{-1/2}`` otherwise, so it gets 0.10 (enough
    to keep the floor of its eigenvalues rarely hit). ``X'X``, ``X'y`` and ``y'y`` serve
    the residual variance only (0.08, 0.08, 0.04, as SSP gives ``y'y`` 5%).
    """

    cov_type: str = "plugin"
    budget_split: Mapping[str, float] | None = None
    n_boot: int = 2000
    random_state: Any = None

    def __post_init__(self):
        if self.cov_type not in COV_TYPES:
            raise OptionError(f"cov_type must be one of {list(COV_TYPES)} for dp_iv2sls, got "
                              f"{self.cov_type!r}")
        integer_at_least("n_boot", self.n_boot, 100)
        self.split()

    def split(self) -> dict[str, float]:
        """The validated shares of ``mu^2`` by release."""
        given = self.budget_split
        if given is None:
            return dict(DEFAULT_SPLIT)
        keys = list(MECHANISMS)
        if not isinstance(given, Mapping) or not given:
            raise OptionError(f"budget_split must be a non-empty dict with keys {keys}, e.g. "
                              f"{DEFAULT_SPLIT}")
        unknown = [k for k in given if k not in keys]
        if unknown:
            raise OptionError(f"budget_split has unknown key(s) {unknown}; keys are {keys}")
        missing = [k for k in keys if k not in given or (
            isinstance(given[k], numbers.Real) and given[k] == 0)]
        if missing:
            raise OptionError(f"budget_split must give every release a positive share; "
                              f"{missing} have none")
        return split_budget(dict(given))


@dataclass(frozen=True, eq=False)
class IVProblem:
    """What an IV fit solves.

    Attributes
    ----------
    structural : Problem
        The design of the outcome on the regressors ``X`` (exogenous and endogenous),
        linear family; its conditioning gives the engine's coordinates of ``X``.
    instruments : Design
        The design of the instruments ``W`` (exogenous regressors and excluded
        instruments) on the same rows.
    exog_rows : tuple of int
        Columns of ``W`` that are exogenous regressors.
    endog_cols : tuple of int
        Columns of ``X`` that are endogenous.
    n_dropped : int
        Rows dropped for a missing value in any variable of the model.
    """

    structural: Problem
    instruments: Design
    exog_rows: tuple[int, ...]
    endog_cols: tuple[int, ...]
    n_dropped: int = 0


def _check(iv: IVProblem) -> tuple[Conditioning, Conditioning]:
    dx, dw = iv.structural.design, iv.instruments
    undeclared = sorted(set(dx.undeclared) | set(dw.undeclared))
    if undeclared:
        raise OptionError(f"dp_iv2sls needs public bounds for every numeric column (the "
                          f"rows of W'W, W'X, X'X are clipped to the bounds' norms); none "
                          f"declared for {undeclared}: declare bounds={{column: (lower, "
                          "upper)}}")
    if dx.endog_bounds is None:
        raise OptionError(f"dp_iv2sls needs public bounds on the outcome {dx.endog_name!r}: "
                          "declare bounds={column: (lower, upper)}")
    cond_x = iv.structural.conditioning
    cond_w = default_conditioning(dw)
    for cond, what in ((cond_x, "regressors"), (cond_w, "instruments")):
        if cond.norm_bound is None:
            raise OptionError(f"dp_iv2sls needs a public bound on the norm of a row of the "
                              f"{what}: declare bounds for every numeric column")
    return cond_x, cond_w


def _natural(M_left: np.ndarray, S: np.ndarray, M_right: np.ndarray) -> np.ndarray:
    """``M_left' S M_right``: a cross-product of engine rows in natural units."""
    return M_left.T @ S @ M_right


def fit_iv2sls(iv: IVProblem, opts: IVOptions, request) -> DPRegressionResults:
    """Fit two-stage least squares by sufficient-statistics perturbation.

    Parameters
    ----------
    iv : IVProblem
        The designs of ``X`` and ``W``, with declared bounds for every column.
    opts : IVOptions
    request : dpreg.privacy.PrivacyRequest
        The total budget.

    Returns
    -------
    DPRegressionResults

    Warns
    -----
    ConvergenceWarning
        A private first-stage F below 10 (weak instruments), eigenvalues of ``W'W``
        raised to the floor, or the residual variance at its floor.

    Notes
    -----
    Engine coordinates: ``X`` and ``W`` are each mapped into ``[-1, 1]`` by their declared
    bounds (:func:`dpreg.design.conditioning.default_conditioning`, ``X = Z_X M_X``, ``W = Z_W
    M_W``); 2SLS is invariant to an invertible map of ``W`` and equivariant in ``X``
    (``theta_z = M_X beta``), so the estimate and covariance map back exactly. The
    outcome is shifted by the midpoint of its bounds when the model has an intercept
    (``y_bound`` its half-range), else ``y_bound = max(|lower|, |upper|)``. The noise is
    drawn from the first of two generators spawned from ``random_state``, the bootstrap
    from the second.
    """
    cond_x, cond_w = _check(iv)
    problem = iv.structural
    dx, dw = problem.design, iv.instruments
    k, L = dx.k_exog, dw.k_exog
    if L - len(iv.exog_rows) < len(iv.endog_cols):
        raise OptionError(f"2SLS needs at least as many excluded instruments as endogenous "
                          f"regressors; got {L - len(iv.exog_rows)} instrument column(s) for "
                          f"{len(iv.endog_cols)} endogenous column(s)")
    intercept = problem.intercept_column()
    lo, hi = dx.endog_bounds
    shift = (lo + hi) / 2 if intercept is not None else 0.0
    y_bound = (hi - lo) / 2 if intercept is not None else max(abs(lo), abs(hi))
    settings = IVSettings(w_bound=float(cond_w.norm_bound), x_bound=float(cond_x.norm_bound),
                          y_bound=float(y_bound), y_shift=float(shift))
    split = opts.split()
    what = (f"IV-2SLS with w_bound = {settings.w_bound:.4g}, x_bound = "
            f"{settings.x_bound:.4g}, y_bound = {settings.y_bound:.4g}")

    def build(scale):
        return iv_events(settings, L, k, split, scale)

    n = dx.nobs
    events, ledger = calibrate_and_record(request, build, n, what)
    sums = iv_sums(cond_w.design(dw.exog), cond_x.design(dx.exog), dx.endog, settings)
    rng_noise, rng_boot = spawn_rngs(opts.random_state, 2)
    rel = release_iv(sums, events, rng_noise)
    del sums
    est = iv_estimate(rel)
    params = params_to_user(cond_x, est.params, shift, intercept)

    # intervals
    covs = {"plugin": cond_x.covariance(iv_covariance(est))}
    infs: dict[str, Inference] = {"plugin": Inference(
        "plugin", np.sqrt(np.diag(covs["plugin"])), NormalLaw(), True,
        "Plug-in (IV-2SLS, SSP): normal interval, sampling variance sigma~^2 (X'P_W X)~^-1 "
        "plus the delta-method variance of the privacy noise; it covers the structural "
        "coefficients under homoskedastic errors (rows within the declared bounds).",
        cov=covs["plugin"])}
    reps = params_to_user(cond_x, iv_pboot_replicates(est, rel, opts.n_boot, rng_boot), shift,
                    intercept)
    for name, kind in (("pboot", "percentile"), ("pboot_basic", "basic")):
        note = (f"Parametric bootstrap, {kind} interval from B = {opts.n_boot} replicates of "
                "the released W'W, W'X, W'y (sampling noise W'u ~ N(0, sigma~^2 W'W~)) and "
                "the estimator (post-processing, its own random stream).")
        infs[name] = bootstrap_inference(name, reps, params, kind, note)
        covs[name] = infs[name].cov

    # private first-stage F, in natural units (post-processing of W'W~+, W'X~, X'X~)
    Mw, Mx = cond_w.M, cond_x.M
    fstats = first_stage_f(_natural(Mw, est.gram, Mw), _natural(Mw, rel.wx, Mx),
                           _natural(Mx, rel.xx, Mx), iv.exog_rows, iv.endog_cols, n)
    endog_names = [dx.exog_names[j] for j in iv.endog_cols]
    first_stage = pd.Series(fstats, index=endog_names, name="first-stage F (private)")

    notes = list(design_notes(dx))
    notes.append("IV-2SLS (SSP): one release each of W'W, W'X, W'y, X'X, X'y, y'y of the "
                 "clipped rows; the estimate, first-stage F and intervals are "
                 "post-processing. The declared bounds must be true bounds (clipping "
                 "changes the target).")
    notes.append("Private first-stage F: " + ", ".join(
        f"{name} {f:.4g}" for name, f in zip(endog_names, fstats, strict=True)) + ".")
    messages = []
    weak = [name for name, f in zip(endog_names, fstats, strict=True)
            if not f >= WEAK_F]
    if not math.isfinite(float(np.min(fstats, initial=np.inf))):
        notes.append("A first-stage F is undefined (the private residual sum of squares of "
                     "the first stage was not positive).")
    if weak:
        messages.append(f"IV-2SLS: weak instruments: the private first-stage F of {weak} is "
                        f"below {WEAK_F:g} ({', '.join(f'{f:.3g}' for f in fstats)}): 2SLS is "
                        "then biased towards OLS and its intervals undercover; find stronger "
                        "instruments (or, if the F is low because of the privacy noise, "
                        "increase the budget)")
    if est.n_floored:
        messages.append(f"IV-2SLS: {est.n_floored} eigenvalue(s) of the released W'W were "
                        f"below the noise floor tau = {rel.floor:.4g} and were raised to it: "
                        "the intervals may undercover; increase the budget or n, or tighten "
                        "the bounds")
    if est.sigma2_floored:
        messages.append(f"IV-2SLS: the private residual sum of squares ({est.rss:.4g}) was "
                        f"below its floor s_yy = {rel.s_yy:.4g}; sigma~^2 was set from the "
                        "floor and the intervals' sampling variance is unreliable")

    table: dict[str, Any] = {
        "engine": "iv2sls (ssp)", "w_bound": settings.w_bound, "x_bound": settings.x_bound,
        "y_bound": settings.y_bound, "y_shift": settings.y_shift,
        "budget_split": ", ".join(f"{key} {w:.3g}" for key, w in split.items()),
        "conditioning": cond_x.description, "instruments": ", ".join(dw.exog_names),
        "floor": rel.floor, "n_floored": est.n_floored, "sigma2": est.sigma2,
        "sigma2_floored": est.sigma2_floored,
        "first_stage_F": ", ".join(f"{f:.4g}" for f in fstats), "n_boot": opts.n_boot,
        "random_state": seed_text(opts.random_state),
    }
    labels = {"y_shift": "y_shift (public centre of y)", "floor": "W'W eigenvalue floor (tau)",
              "n_floored": "eigenvalues floored", "sigma2": "sigma~^2 (private)",
              "sigma2_floored": "sigma~^2 at its floor", "budget_split": "budget_split (mu^2)",
              "first_stage_F": "first-stage F (private)", "instruments": "instruments (W)",
              "n_boot": "bootstrap replicates"}
    return build_results(problem, FitRecord(
        params=params, inferences=infs, cov_type=opts.cov_type, engine=LABEL,
        settings=Settings.from_values(table, labels), notes=tuple(notes), ledger=ledger,
        cov_matrix=covs[base_method(opts.cov_type)], nobs=n, n_dropped=iv.n_dropped,
        first_stage=first_stage,
        # its warnings reach the user through build_results, as every fit's report does
        report=ReleaseReport(warnings=tuple(messages))))
