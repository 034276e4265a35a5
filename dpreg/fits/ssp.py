"""SSP (``engine="ssp"``): plan, release the sufficient statistics, infer, record.

Linear regression by plain sufficient-statistics perturbation, aimed at the population
coefficients (design memo ``design/ssp-engine.md``): noisy ``X'X``, ``X'y`` and ``y'y``
of the clipped rows (three ledger rows; a fourth, the sandwich's meat, with
``robust=True``), the estimate ``beta~ = G~+^{-1} X'y~`` from the eigenvalue-floored
Gram matrix, a private residual variance, and intervals that add the sampling variance
to the privacy noise's: analytic (``"plugin"``, ``"sandwich"``) or by the parametric
bootstrap of Ferrando, Wang and Sheldon (2022) (``"pboot"``, ``"pboot_basic"``). See
:mod:`dpreg.engines.ssp` for the releases and their sensitivities and
:mod:`dpreg.inference.ssp_estimator` for the estimator and the intervals.

Absorbed fixed effects (``absorb="state"``, the levels declared with ``levels=``). The
design gains ``C(state)`` with the declared levels beside the formula's intercept (the
intercept and ``L - 1`` dummies; without an intercept, ``L`` dummies), so every SSP
code path (centring ``y`` by the intercept, the conditioning, the releases, the
estimator, the intervals) is the one of a formula with a categorical term. A row's
design vector holds the intercept's 1 and at most one dummy's 1, so the declared
row-norm bound ``x_bound`` counts the dummies once (``1 + 1 + sum_j max z_j^2`` under the
square root), not ``L`` times. The released ``X'X``, ``X'y`` and ``y'y`` then carry the
per-level counts (the dummies' diagonal), the per-level sums of the covariates and of
the outcome (the dummy rows of ``X'X`` and ``X'y``) and the pooled cross-products. This
is parallel composition over the levels: replacing one row changes the blocks of its
old and new level only, and the change of the whole release is bounded by the row
sensitivities :func:`dpreg.engines.ssp.ssp_sensitivities` computes from ``x_bound``
(``sqrt(2) x_bound^2``, ``2 x_bound y_bound``, ``y_bound^2``), whatever ``L``: one budget
for all levels, not one per level. The levels are public (declared), so the set of
released entries is too. The within estimator of the slopes is post-processing: by the
Frisch-Waugh-Lovell theorem the slopes of ``beta~`` from the full released Gram are
the within (demeaned) slopes, and the slopes' block of the plug-in covariance is their
covariance. The results report the slopes only (the absorbed coefficients, estimates of
per-level means, are not printed, as in ``linearmodels``' ``AbsorbingLS``); ``df_model``
and ``df_resid = n - p`` count the intercept and the dummies.

Unlike ``engine="adassp"`` (Wang 2018, whose data-dependent ridge shrinks the estimate
and whose interval is about OLS on the sample), SSP has no ridge and its intervals are
about the population coefficients.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Mapping

import numpy as np
import pandas as pd

from dpreg._checks import integer_at_least, positive_number
from dpreg.design import design_notes
from dpreg.design.conditioning import Conditioning
from dpreg.engines.ssp import (
    MECHANISMS,
    SSPSettings,
    SSPSums,
    cluster_meat_sum,
    first_rows,
    meat_sum,
    release_ssp,
    ssp_events,
    ssp_sums,
)
from dpreg.exceptions import OptionError
from dpreg.fits.common import (
    FitRecord,
    Problem,
    build_results,
    calibrate_and_record,
    seed_text,
    spawn_rngs,
)
from dpreg.fits.options import CommonOptions
from dpreg.inference.base import Inference, NormalLaw, StudentLaw
from dpreg.inference.bootstrap import bootstrap_inference
from dpreg.inference.methods import engine_methods
from dpreg.inference.ssp_estimator import (
    SSPEstimate,
    SSPRelease,
    pboot_replicates,
    ssp_covariance,
    ssp_estimate,
    ssp_report,
)
from dpreg.privacy.calibration import calibrate_to_budget
from dpreg.privacy.disclosure import cluster_note
from dpreg.privacy.request import split_budget
from dpreg.results import DPRegressionResults, Settings

__all__ = ["fit_ssp", "ssp_plan", "params_to_user", "SSPOptions",
           "LABEL", "DEFAULT_SPLIT", "ROBUST_SPLIT", "ArraySource", "events_builder"]

LABEL = "SSP"
#: Shares of mu^2 of X'X, X'y and y'y (see SSPOptions for the reason).
DEFAULT_SPLIT = {"gram": 0.39, "xty": 0.56, "yty": 0.05}
#: With robust=True: the meat takes a quarter, the others keep their proportions.
ROBUST_SPLIT = {k: 0.75 * w for k, w in DEFAULT_SPLIT.items()} | {"meat": 0.25}


@dataclass(frozen=True)
class SSPOptions(CommonOptions):
    """Options of ``engine="ssp"``.

    Attributes
    ----------
    budget_split : dict, optional
        Shares of ``mu^2`` (or ``rho``) for ``"gram"`` (``X'X``), ``"xty"`` (``X'y``),
        ``"yty"`` (``y'y``) and, with ``robust=True``, ``"meat"``; every release needs a
        positive share. Default :data:`DEFAULT_SPLIT` (:data:`ROBUST_SPLIT` with
        ``robust=True``).
    robust : bool
        Release the sandwich's meat (a fourth ledger row): ``cov_type="sandwich"``
        becomes available and the bootstrap draws its sampling noise from the meat
        (valid under heteroskedasticity).
    clip : float, optional
        Norm bound of the meat's per-row scores ``r_i x_i`` (``robust=True`` only).
        Default ``x_bound * (upper - lower)`` of the outcome's declared bounds: a
        residual as large as the outcome's range on the longest row is not clipped.
    n_boot : int
        Bootstrap replicates ``B`` (default 2000, so that the 2.5% quantiles have a
        small Monte Carlo error).
    groups : str or array-like, optional
        Clusters as the privacy unit: a column of the data (or one label per row of the
        data as given). Two data sets are then neighbours when one whole cluster is
        replaced, and every sensitivity is that of a cluster (:mod:`dpreg.engines.ssp`).
        The number of clusters ``G`` is public. Needs ``max_group_size`` and
        ``robust=True`` (the default with ``groups``): the meat is the cluster meat, and
        the intervals are ``cov_type="cluster"`` (CR1, ``t(G-1)``, the default) or the
        bootstrap from it. The plug-in (``sigma~^2 G~^-1``) is not offered: it assumes
        independent rows and needs the rows' count, which is protected.
    max_group_size : int, optional
        ``K``, the public bound on a cluster's rows: each cluster keeps its first ``K``
        rows in the data's order (the others are not read). A neighbour replaces a
        cluster by one of any size up to ``K``, so a cluster's size is protected too:
        the rows used are not reported, and the CR1 factor counts the public ``G K``
        rows. The default ``clip`` of the cluster scores is ``K x_bound (upper -
        lower)``.
    absorb : str, optional
        A categorical column of the data whose fixed effects are absorbed: its dummies
        (every declared level, with the intercept) join the design, and the results
        report the other coefficients only, like ``linearmodels``' ``AbsorbingLS``. Its
        levels must be declared with ``levels=`` (they are public). A row touches one
        level's dummy, so the released sums carry the per-level counts and sums at the
        row sensitivities (parallel composition over the levels: one budget for all;
        :mod:`dpreg.fits.ssp`, "Absorbed fixed effects").

    Notes
    -----
    The default split is not the memo's ``mu_k^2`` proportional to ``Delta_k`` (which minimises
    ``sum_k s_k^2``): that weighs ``y'y`` by ``y_bound^2`` and, with the loose outcome
    bounds of natural-units data (``y`` in ``[-10, 14]``, ``x_bound = sqrt(6)``), gives
    ``y'y`` 68% of the budget and ``X'X`` 4%. The privacy variance of ``beta~`` is
    ``G^{-1}(s_c^2 I + s_G^2 C(beta))G^{-1}``; at the largest ``||beta|| = y_bound /
    x_bound`` that keeps fitted values within the outcome's range its two parts are
    ``4 / w_xty`` and ``2 / w_gram`` times ``x_bound^2 y_bound^2 / mu^2``, minimised by
    ``w_gram : w_xty = sqrt(2) : 2`` whatever the bounds; ``y'y`` only serves the
    residual variance and gets 5%. Measured by ``python validation/ssp_coverage.py
    --reps 200 --compare-splits --n 10000 50000 --p 4 6 --mu 1 --errors t3`` (200 data
    sets of ``natural_units_design`` per cell, every split after the private ranges'
    5%): against this split, the memo's has 1.20-1.88 times the root mean squared error
    per coefficient (1.62-1.88 at n = 10,000); equal thirds 1.03-1.10 times; 15% for
    ``y'y`` 1.006-1.029 times, 30% 1.02-1.08; ``X'X`` at 0.5 1.02-1.06; 2% for ``y'y``
    0.992-0.998 times, and ``X'X`` at 0.30 (``y'y`` 0.05) 0.998-1.024 times: within
    0.8% of the best split tried. The plug-in interval's coverage differs by at most
    0.02 between the splits of a cell (0.930-0.960; lowest at n = 50,000, p = 6, where
    every split covers 0.930-0.932). Before the private ranges (declared boxes) the
    memo's split floored ``X'X`` in 99.5% of the fits at n = 10,000, p = 6; with them
    in at most 0.5%.

    The default ``cov_type`` is ``"plugin"``, measured by ``python
    validation/ssp_coverage.py --reps 300`` (the population coefficients of
    ``natural_units_design`` at the defaults, ranges learned privately; n = 2000,
    10,000, 50,000; p = 4, 6; mu = 0.5, 2; t(3) and heteroskedastic errors; binomial s.e.
    0.013). Where (almost) no fit warns, the plug-in and the bootstrap both cover
    (0.934-0.963; the least-covered coefficient 0.907-0.937 at n = 50,000, 1 to 3.4
    binomial standard errors low, a cause not established). Where the released
    ``X'X`` is floored, both undercover and the bootstrap more: at n = 2000, mu = 0.5,
    p = 6 (95% of fits warn) the plug-in covers 0.86, the percentile bootstrap 0.82,
    the basic 0.84. Over all cells, the fits with no floored eigenvalue cover whatever
    the delta-method diagnostic (plug-in 0.947, 0.955 and 0.958 with it below 0.1,
    between 0.1 and 0.5, above 0.5; bootstrap 0.946, 0.955, 0.954), and those with 1, 2,
    3 floored eigenvalues less and less (plug-in 0.911, 0.847, 0.771; percentile
    bootstrap 0.885, 0.800, 0.696). So the floor, not
    the memo's threshold of 0.1 on the diagnostic, triggers the warning, and it does not
    recommend the bootstrap. The heteroskedasticity of that design is mild (the
    classical forms cover); the sandwich with the default ``clip`` covers 0.935-0.988
    with intervals 1.0-1.5 times the plug-in's (the meat's noise, scaled by the
    outcome's range, is large).
    """

    cov_types: ClassVar[tuple[str, ...]] = engine_methods("ssp", "plugin")
    scope: ClassVar[str] = ("SSP: one release of X'X, X'y and y'y (and of the sandwich's "
                            "meat with robust=True)")

    budget_split: Mapping[str, float] | None = None
    robust: bool = False
    clip: float | None = None
    n_boot: int = 2000
    groups: Any = None
    max_group_size: int | None = None
    absorb: str | None = None

    def __post_init__(self):
        if self.groups is not None and self.cov_type is None:
            # clusters are the privacy unit because rows within one are dependent: the
            # default interval is then the cluster-robust one (its meat is a release)
            object.__setattr__(self, "cov_type", "cluster")
            object.__setattr__(self, "robust", True)
        super().__post_init__()
        if not isinstance(self.robust, (bool, np.bool_)):
            raise OptionError(f"robust must be True or False, got {self.robust!r}")
        if self.clip is not None:
            positive_number("clip", self.clip)
            if not self.robust:
                raise OptionError("clip bounds the sandwich's scores, released only with "
                                  "robust=True; got clip without robust=True")
        if self.base_cov_type == "sandwich" and not self.robust:
            raise OptionError("cov_type='sandwich' needs the meat, a fourth release: pass "
                              "robust=True (it takes a share of the budget)")
        integer_at_least("n_boot", self.n_boot, 100)
        if self.absorb is not None and not isinstance(self.absorb, str):
            raise OptionError(f"absorb must name one categorical column of the data, got "
                              f"{self.absorb!r}")
        if self.absorb is not None and self.ranges == "private":
            raise OptionError("absorb= is not supported with ranges='private'; declare the "
                              "bounds")
        self._check_groups()
        self.split()  # validated here, read with split() by the fit

    def _check_groups(self) -> None:
        if self.groups is None:
            if self.max_group_size is not None:
                raise OptionError("max_group_size bounds the rows of a cluster; it needs "
                                  "groups= (the column of cluster labels)")
            if self.base_cov_type == "cluster":
                raise OptionError("cov_type='cluster' needs groups= (the column of cluster "
                                  "labels), max_group_size= and robust=True")
            return
        if self.max_group_size is None:
            raise OptionError("groups= makes clusters the privacy unit and needs a public "
                              "bound on their rows: give max_group_size= (each cluster "
                              "keeps its first max_group_size rows)")
        integer_at_least("max_group_size", self.max_group_size, 1)
        if not self.robust:
            raise OptionError("with groups= the intervals come from the cluster meat, a "
                              "fourth release: pass robust=True (the default with groups= "
                              "and no cov_type; it takes a share of the budget). Without "
                              "it the intervals would assume independent rows and need "
                              "the rows' count, which protected cluster sizes keep private")
        if self.base_cov_type == "plugin":
            raise OptionError("with groups= the plug-in (sigma~^2 G~^-1) is not offered: it "
                              "assumes independent rows and needs the rows' count, which "
                              "protected cluster sizes keep private. Use "
                              "cov_type='cluster' (the default) or 'pboot'")
        if self.base_cov_type == "sandwich":
            raise OptionError("with groups= the meat is summed by cluster: use "
                              "cov_type='cluster' (with robust=True), not 'sandwich'")

    def split(self) -> dict[str, float]:
        """The validated shares of ``mu^2`` by release."""
        keys = tuple(k for k in MECHANISMS if k != "meat" or self.robust)
        given = self.engine_split()
        if given is None:
            return dict(ROBUST_SPLIT if self.robust else DEFAULT_SPLIT)
        if not isinstance(given, Mapping) or not given:
            raise OptionError(f"budget_split must be a non-empty dict with keys {list(keys)}, "
                              f"e.g. {DEFAULT_SPLIT}")
        unknown = [k for k in given if k not in keys]
        if unknown:
            why = " ('meat' needs robust=True)" if "meat" in unknown else ""
            raise OptionError(f"budget_split has unknown key(s) {unknown}{why}; keys are "
                              f"{list(keys)}")
        missing = [k for k in keys if k not in given or (
            isinstance(given[k], numbers.Real) and given[k] == 0)]
        if missing:
            raise OptionError(f"budget_split must give every release a positive share; "
                              f"{missing} have none")
        return split_budget(dict(given))


class ArraySource:
    """The rows of an in-memory design, in the engine's coordinates.

    The fit reads the data through this interface only (``nobs``, ``n_dropped``,
    ``sums``, ``meat``, ``notes``), so that another source (rows summed block by block
    elsewhere) gives the same fit.

    Parameters
    ----------
    problem : Problem
    cond : Conditioning
        The engine's coordinates.
    """

    def __init__(self, problem: Problem, cond: Conditioning,
                 max_group_size: int | None = None):
        self._X = problem.design.exog
        self._y = problem.design.endog
        self._cond = cond
        self._design = problem.design
        self.n_dropped = problem.design.n_dropped
        self._codes, self.n_groups = None, None
        if problem.groups is not None:  # each cluster keeps its first K rows
            keep = first_rows(problem.groups, max_group_size)
            self._X, self._y = self._X[keep], self._y[keep]
            self._codes = np.asarray(problem.groups)[keep]
            self.n_groups = int(self._codes.max()) + 1 if self._codes.size else 0
        self.nobs = self._X.shape[0]

    def notes(self) -> tuple[str, ...]:
        """The design's notes for the summary (:func:`dpreg.design.design_notes`)."""
        return design_notes(self._design, counts=self._codes is None)

    def _Z(self) -> np.ndarray:
        return self._cond.design(self._X)

    def sums(self, settings: SSPSettings) -> SSPSums:
        """Sums of the clipped rows (:func:`dpreg.engines.ssp.ssp_sums`)."""
        return ssp_sums(self._Z(), self._y, settings)

    def meat(self, settings: SSPSettings, theta: np.ndarray) -> tuple[np.ndarray, int]:
        """The meat at the released ``theta`` (:func:`dpreg.engines.ssp.meat_sum`, or
        :func:`dpreg.engines.ssp.cluster_meat_sum` by cluster)."""
        if self._codes is not None:
            return cluster_meat_sum(self._Z(), self._y, settings, theta, self._codes,
                                    self.n_groups)
        return meat_sum(self._Z(), self._y, settings, theta)


def _check_ssp_problem(problem: Problem) -> None:
    family = problem.objective.family.name
    if not problem.objective.family.squared_loss:
        raise OptionError(f"engine='ssp' fits linear regression (squared loss) only; the "
                          f"model's family is {family!r}: use dp_ols, or another engine "
                          "for this family")
    if problem.objective.mallows:
        raise OptionError("engine='ssp' does not support weights='mallows'")
    if problem.design.endog_bounds is None:
        raise OptionError(f"engine='ssp' needs public bounds on the outcome "
                          f"{problem.design.endog_name!r} (|y| is clipped to them): declare "
                          "bounds={column: (lower, upper)}")


def ssp_plan(problem: Problem, opts: SSPOptions, cond: Conditioning
             ) -> tuple[SSPSettings, int | None]:
    """SSP's public plan: the bounds and clips of its sums, from declared quantities.

    Parameters
    ----------
    problem : Problem
        The design, objective and conditioning.
    opts : SSPOptions
        The fit's options.
    cond : Conditioning
        The coordinates the engine works in.

    Returns
    -------
    settings : dpreg.engines.ssp.SSPSettings
        The row-norm and outcome bounds (and the meat's clip) of the released sums.
    intercept : int or None
        The intercept's column, whose outcome is centred at the midpoint of its bounds.
    """
    design = problem.design
    x_bound = opts.x_bound or cond.norm_bound
    if x_bound is None:
        raise OptionError(f"engine='ssp' needs a public bound on the norm of a design row: "
                          f"declare bounds for {list(design.undeclared)} (bounds={{column: "
                          "(lower, upper)}) or give x_bound=")
    lo, hi = design.endog_bounds
    j = problem.intercept_column()
    shift = (lo + hi) / 2 if j is not None else 0.0
    y_bound = (hi - lo) / 2 if j is not None else max(abs(lo), abs(hi))
    clip = None
    k = opts.max_group_size
    if opts.robust:
        clip = opts.clip if opts.clip is not None else (
            float(x_bound) * (hi - lo) * (1 if k is None else int(k)))
    return SSPSettings(x_bound=float(x_bound), y_bound=float(y_bound), y_shift=float(shift),
                       clip=None if clip is None else float(clip),
                       max_group_size=None if k is None else int(k)), j


def params_to_user(cond: Conditioning, theta_z: np.ndarray, shift: float,
                   intercept: int | None) -> np.ndarray:
    """Coefficients in the engine's coordinates, fitted to the outcome less ``shift``
    -> the user's coefficients (the intercept takes the shift back).

    Parameters
    ----------
    cond : Conditioning
    theta_z : ndarray (..., p)
        One estimate, or replicates in rows.
    shift : float
        The public shift of the outcome.
    intercept : int or None
        The intercept's column (:meth:`Problem.intercept_column`).

    Returns
    -------
    ndarray (..., p)
    """
    theta = np.array(theta_z, dtype=float, copy=True)
    if intercept is not None:
        theta[..., intercept] += shift
    return cond.params(theta)


def _cr1_factor(n_groups: int, max_group_size: int, p: int) -> float:
    """CR1's ``G/(G-1) (N-1)/(N-p)`` with the public ``N = G K`` for the rows ``n``
    (cluster sizes are protected)."""
    n = n_groups * max_group_size
    return (n_groups / max(n_groups - 1, 1)) * (n - 1) / max(n - p, 1)


def _analytic_kind(opts: SSPOptions, n_groups: int | None) -> str:
    """The fit's delta-method interval: its ``cov_type``, or the one the bootstrap's
    sampling noise comes from."""
    if opts.base_cov_type in ("plugin", "sandwich", "cluster"):
        return opts.base_cov_type
    return "cluster" if n_groups is not None else "sandwich" if opts.robust else "plugin"


def _analytic_covariance(kind: str, est: SSPEstimate, rel: SSPRelease, cond: Conditioning,
                         settings: SSPSettings, n_groups: int | None) -> np.ndarray:
    """The delta-method covariance ``kind`` (``"plugin"``, ``"sandwich"`` or
    ``"cluster"``) of ``est``, in the user's coordinates."""
    if kind == "plugin":
        return cond.covariance(ssp_covariance(est, rel))
    factor = 1.0 if kind == "sandwich" else \
        _cr1_factor(n_groups, settings.max_group_size, rel.xty.shape[0])
    return cond.covariance(ssp_covariance(est, rel, sandwich=True, meat_factor=factor))


def floor_sensitivity(est: SSPEstimate, rel: SSPRelease, kind: str, cond: Conditioning,
                      settings: SSPSettings, intercept: int | None,
                      n_groups: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """How much the public eigenvalue floor decides each coefficient: the fit redone with
    the floor doubled (``2 tau``; post-processing of the same release).

    Returns
    -------
    shift : ndarray (p,)
        ``|beta_j(2 tau) - beta_j(tau)| / se_j(tau)``: the estimate's move in its own
        standard errors.
    se_change : ndarray (p,)
        ``|se_j(2 tau) / se_j(tau) - 1|``.
    """
    rel2 = replace(rel, floor=2.0 * rel.floor)
    est2 = ssp_estimate(rel2)
    se = np.sqrt(np.diag(_analytic_covariance(kind, est, rel, cond, settings, n_groups)))
    se2 = np.sqrt(np.diag(_analytic_covariance(kind, est2, rel2, cond, settings, n_groups)))
    b = params_to_user(cond, est.params, settings.y_shift, intercept)
    b2 = params_to_user(cond, est2.params, settings.y_shift, intercept)
    return np.abs(b2 - b) / se, np.abs(se2 / se - 1.0)


def _inferences(est: SSPEstimate, rel: SSPRelease, opts: SSPOptions, cond: Conditioning,
                settings: SSPSettings, intercept: int | None, rng: np.random.Generator,
                params: np.ndarray, n_groups: int | None = None
                ) -> tuple[dict[str, Inference], dict[str, np.ndarray]]:
    """Every interval of the fit, in the user's coordinates, and their covariances."""
    target = ("the population coefficients of the linear model E[y|x] = x'beta with "
              "homoskedastic errors (rows within the declared bounds)")
    proj = ("the projection parameter E[xx']^-1 E[xy] of the clipped distribution "
            "(independent rows; heteroskedasticity allowed)")
    covs, infs = {}, {}
    if n_groups is None:  # sigma~^2 needs the rows' count, protected with clusters
        covs["plugin"] = _analytic_covariance("plugin", est, rel, cond, settings, None)
        infs["plugin"] = Inference(
            "plugin", np.sqrt(np.diag(covs["plugin"])), NormalLaw(), True,
            "Plug-in (SSP): normal interval, sampling variance sigma~^2 G~^-1 plus the "
            "delta-method variance of the privacy noise; it covers " + target + ".",
            cov=covs["plugin"])
    if opts.robust and n_groups is not None:
        proj = ("the projection parameter E[xx']^-1 E[xy] of the clipped distribution "
                "(independent clusters of at most max_group_size rows; any dependence "
                "within a cluster)")
        factor = _cr1_factor(n_groups, settings.max_group_size, rel.xty.shape[0])
        covs["cluster"] = _analytic_covariance("cluster", est, rel, cond, settings,
                                               n_groups)
        infs["cluster"] = Inference(
            "cluster", np.sqrt(np.diag(covs["cluster"])), StudentLaw(max(n_groups - 1, 1)),
            True,
            f"Cluster-robust (SSP): t({n_groups - 1}) interval, G~^-1 (c M~ + privacy term) "
            f"G~^-1 with the released cluster meat M~ and the CR1 factor c = G/(G-1) "
            f"(N-1)/(N-p) = {factor:.4g} (G = {n_groups} clusters, public; N = G K, the "
            "rows' public bound); it covers "
            + proj + ".", cov=covs["cluster"])
        sampling = rel.meat
        covers = proj
    elif opts.robust:
        covs["sandwich"] = _analytic_covariance("sandwich", est, rel, cond, settings, None)
        infs["sandwich"] = Inference(
            "sandwich", np.sqrt(np.diag(covs["sandwich"])), NormalLaw(), True,
            "Sandwich (SSP): normal interval, G~^-1 (M~ + privacy term) G~^-1 with the "
            "released meat M~; it covers " + proj + ".", cov=covs["sandwich"])
        sampling = rel.meat  # its negative eigenvalues are taken as 0 (M~+)
        covers = proj
    else:
        sampling = est.sigma2 * est.gram
        covers = target
    reps_z = pboot_replicates(est.params, est.gram, sampling, rel.s_gram, rel.s_xty,
                              rel.floor, opts.n_boot, rng)
    reps = params_to_user(cond, reps_z, settings.y_shift, intercept)
    what = ("the cluster meat M~ (robust=True)" if opts.robust and n_groups is not None
            else "the meat M~ (robust=True)" if opts.robust else "sigma~^2 G~+")
    for name, kind in (("pboot", "percentile"), ("pboot_basic", "basic")):
        note = (f"Parametric bootstrap (Ferrando, Wang & Sheldon 2022), {kind} interval from "
                f"B = {opts.n_boot} replicates of the release and the estimator (sampling "
                f"noise from {what}; post-processing, its own random stream); p-values by "
                f"inverting the interval; it covers {covers}.") if name == "pboot" else (
                "Parametric bootstrap, basic (pivotal) interval 2 beta~ - quantiles, from "
                "the same replicates.")
        infs[name] = bootstrap_inference(name, reps, params, kind, note)
        covs[name] = infs[name].cov
    return infs, covs


def _reported(inference: Inference, keep: np.ndarray) -> Inference:
    """The inference record of the coefficients at positions ``keep`` (absorbed fixed
    effects left out); every per-coefficient array is subset, nothing is recomputed."""
    changes: dict[str, Any] = {"scale": np.asarray(inference.scale)[keep]}
    if inference.cov is not None:
        changes["cov"] = np.asarray(inference.cov)[np.ix_(keep, keep)]
    if inference.cov_replicates is not None:
        changes["cov_replicates"] = np.asarray(inference.cov_replicates)[:, keep][:, :, keep]
    for name in ("replicates", "center"):  # a bootstrap record's (B, p) and (p,) arrays
        value = getattr(inference, name, None)
        if value is not None:
            changes[name] = np.asarray(value)[..., keep]
    return replace(inference, **changes)


def events_builder(problem: Problem, opts: SSPOptions):
    """The builder ``mu_scale -> events`` of the fit's releases (public quantities only;
    see :mod:`dpreg.privacy.calibration`).

    Parameters
    ----------
    problem : dpreg.fits.common.Problem
        The design and objective (checked as :func:`fit_ssp` checks them).
    opts : SSPOptions
        Validated options.

    Returns
    -------
    callable
    """
    _check_ssp_problem(problem)
    settings, _ = ssp_plan(problem, opts, problem.coordinates(opts.condition))
    p = problem.design.k_exog
    split = opts.split()
    return lambda scale: ssp_events(settings, p, split, scale)


def fit_ssp(problem: Problem, opts: SSPOptions, request,
            given=frozenset()) -> DPRegressionResults:
    """Fit linear regression by sufficient-statistics perturbation.

    Parameters
    ----------
    problem : dpreg.fits.common.Problem
        Linear family, no Mallows weights, declared outcome bounds and a public bound
        on the design rows (declared bounds or ``x_bound``).
    opts : SSPOptions
        Validated options.
    request : dpreg.privacy.PrivacyRequest
        The total budget.
    given : frozenset of str
        The options the user gave (unused).

    Returns
    -------
    DPRegressionResults

    Warns
    -----
    ConvergenceWarning
        When the delta method is unreliable: eigenvalues of ``G~`` were raised to the
        floor (the diagnostic ``2 s_G sqrt(p) / lambda_min(G~+)`` then sits at its cap
        ``2 / sqrt(log(2 p^2 / 0.05))``), for every ``cov_type``; or when the residual
        variance hit its floor (with an interval that uses it). See
        :class:`SSPOptions` for why the warning does not recommend the bootstrap.

    Notes
    -----
    Plan from public quantities: the engine's coordinates (``condition``: the bounds'
    map into ``[-1, 1]``, or the design as given with ``"none"``), ``x_bound`` (the
    declared bounds' row-norm bound, or ``x_bound=``), the outcome shifted by the
    midpoint of its declared bounds when the design has an intercept (``y_bound`` its
    half-range; without an intercept ``y_bound = max(|lower|, |upper|)``), the budget
    split. The events are calibrated so that their composition meets ``request`` and
    recorded before the data are read (for rows in a Dask frame, whose ``n`` is not
    known before the pass, they are calibrated first and recorded once the pass gives
    ``n``, which only the ledger's reporting ``delta`` uses; nothing is released before
    the noise is added). The noise is drawn from the first of two generators
    spawned from ``random_state`` (the sums, then the meat), the bootstrap from the
    second. Estimates, covariances and replicates are mapped back to the user's
    coordinates exactly.
    """
    _check_ssp_problem(problem)
    design = problem.design
    p = design.k_exog
    cond = problem.coordinates(opts.condition)
    settings, intercept = ssp_plan(problem, opts, cond)
    split = opts.split()
    what = (f"SSP with x_bound = {settings.x_bound:.4g}, y_bound = {settings.y_bound:.4g}")
    if (opts.groups is None) != (problem.groups is None):
        raise OptionError("groups= must be resolved to the rows' clusters by the model "
                          "(DPRegression.fit) before the SSP fit")
    if problem.groups is not None and problem.rows is not None:
        raise OptionError("groups= is not supported for rows in a Dask DataFrame")

    def build(scale):
        return ssp_events(settings, p, split, scale)

    # where the rows are: the design's arrays, or a Dask frame summed partition by
    # partition (dpreg.fits.ssp_dask), whose count n comes out of the same pass
    source = (ArraySource(problem, cond, settings.max_group_size) if problem.rows is None
              else problem.rows.ssp_source(problem, cond))
    if source.nobs is not None:  # the ledger's reporting delta from the public units
        units = getattr(source, "n_groups", None) or source.nobs
        events, ledger = calibrate_and_record(request, build, units, what,
                                              prior=problem.prior)
        sums = source.sums(settings)
    else:
        calibrate_to_budget(request, build)  # fail before a long pass, not after it
        sums = source.sums(settings)
        events, ledger = calibrate_and_record(request, build, sums.nobs, what,
                                              prior=problem.prior)
    n = int(sums.nobs)
    rng_noise, rng_boot = spawn_rngs(opts.random_state, 2)
    # down the layers once: the engine releases, inference computes from the release
    out = release_ssp(sums, events, rng_noise, meat=(
        (lambda theta: source.meat(settings, theta)) if opts.robust else None))
    rel = out.release
    est = ssp_estimate(rel)
    theta_z = est.params
    params = params_to_user(cond, theta_z, settings.y_shift, intercept)
    n_groups = getattr(source, "n_groups", None)
    inferences, covs = _inferences(est, rel, opts, cond, settings, intercept, rng_boot, params,
                                   n_groups)
    shift, se_change = floor_sensitivity(est, rel, _analytic_kind(opts, n_groups), cond,
                                         settings, intercept, n_groups)
    keep = np.arange(p)  # the reported coefficients (not the absorbed effects)
    if problem.absorbed is not None:
        keep = np.setdiff1d(np.arange(p), problem.absorbed[2])

    notes = list(source.notes())
    if n_groups is not None:
        notes.append(cluster_note(opts.groups, settings.max_group_size, n_groups))
    if problem.absorbed is not None:
        column, n_levels, positions = problem.absorbed
        df_text = (f"df_resid = n - {p}" if n_groups is None else
                   "df_resid = G - 1 (cluster-robust)")
        notes.append(f"Absorbed fixed effects: {column!r}, {n_levels} declared levels "
                     f"({len(positions)} design columns: the intercept and the levels' "
                     f"dummies, not reported); {df_text} counts them. One budget "
                     "for all levels: a row touches one level's dummy (parallel "
                     "composition).")
    uses_sigma2 = opts.base_cov_type == "plugin" or (opts.base_cov_type.startswith("pboot")
                                                and not opts.robust)
    # its warnings reach the user through build_results, as every fit's report does
    report = ssp_report(est, rel, [design.exog_names[j] for j in keep], se_change[keep],
                        uses_sigma2)
    notes.extend(report.notes)

    table: dict[str, Any] = {
        "engine": "ssp", "x_bound": settings.x_bound, "y_bound": settings.y_bound,
        "y_shift": settings.y_shift,
        "budget_split": ", ".join(f"{k} {w:.3g}" for k, w in split.items()),
        "conditioning": cond.description, "floor": rel.floor,
        "n_floored": est.n_floored, "lambda_min": est.lambda_min,
        "delta_ratio": est.delta_ratio,
        "sigma2": est.sigma2, "sigma2_floored": est.sigma2_floored,
        "n_boot": opts.n_boot, "robust": opts.robust,
    }
    if opts.robust:
        table["clip"] = settings.clip
    if problem.absorbed is not None:
        table["absorb"] = f"{problem.absorbed[0]} ({problem.absorbed[1]} levels)"
    if n_groups is not None:  # sigma~^2 divides by the rows' count, which is protected
        del table["sigma2"]
        table["n_groups"] = n_groups
        table["max_group_size"] = settings.max_group_size
    table["random_state"] = seed_text(opts.random_state)
    labels = {"y_shift": "y_shift (public centre of y)", "floor": "eigenvalue floor (tau)",
              "n_floored": "eigenvalues floored", "lambda_min": "lambda_min(G~+) (private)",
              "delta_ratio": "2 s_G sqrt(p) / lambda_min", "sigma2": "sigma~^2 (private)",
              "sigma2_floored": "sigma~^2 at its floor", "budget_split": "budget_split (mu^2)",
              "n_boot": "bootstrap replicates", "n_groups": "clusters G (public)",
              "max_group_size": "max_group_size (rows kept per cluster)",
              "absorb": "absorbed effects"}
    diagnostics = None
    if opts.diagnostics:
        diagnostics = {"rows_clipped": out.rows_clipped}
        if out.scores_clipped is not None:
            diagnostics["scores_clipped"] = out.scores_clipped
    names, df_resid, cov = None, None, covs[opts.base_cov_type]
    if problem.absorbed is not None:  # report the other coefficients only
        names = tuple(design.exog_names[j] for j in keep)
        params = params[keep]
        inferences = {k: _reported(inf, keep) for k, inf in inferences.items()}
        cov = None if cov is None else cov[np.ix_(keep, keep)]
        df_resid = n - p
    sensitivity = pd.DataFrame({"shift": shift[keep], "se_change": se_change[keep]},
                               index=[design.exog_names[j] for j in keep])
    return build_results(problem, FitRecord(
        params=params, inferences=inferences, cov_type=opts.cov_type, engine=LABEL,
        settings=Settings.from_values(table, labels), notes=tuple(notes), ledger=ledger,
        cov_matrix=cov, diagnostics=diagnostics, nobs=n, report=report,
        n_dropped=source.n_dropped, names=names, df_resid=df_resid, n_groups=n_groups,
        floor_sensitivity=sensitivity))

