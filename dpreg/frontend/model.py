"""The model: holds a checked design and its objective, fits privately or as an oracle.

``fit`` validates what every engine shares (options, the privacy request, the design's
privacy) and looks the engine up in :data:`dpreg.fits.registry.ENGINES`; the engine's
fit (:mod:`dpreg.fits`) plans, calibrates, records, runs and builds the results.
"""

from __future__ import annotations

import dataclasses
import warnings
from types import SimpleNamespace
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dpreg.design import (
    INTERCEPT_NAMES,
    Design,
    check_bounds,
    check_identified,
    check_public_size,
    design_from_arrays,
)
from dpreg.design.conditioning import Conditioning, default_conditioning
from dpreg.design.formula import (
    build_design,
    capture_env,
    column_kinds,
    numerical_columns,
    split_fixed_effects,
)
from dpreg.exceptions import BudgetExceededError, FormulaError, OptionError, PrivacyLeakWarning
from dpreg.families import (
    Family,
    Objective,
    check_c_scale,
    family_constants,
    get_family,
    mallows_weights,
)
from dpreg.fits.common import SKEWED_CLIP_MIN_N_MU, Problem, leak, ranges_rng, skewed_reach
from dpreg.fits.engine_choice import newton_rate_reason, request_mu
from dpreg.fits.oracle import fit_oracle
from dpreg.fits.registry import ENGINES, fit_options
from dpreg.fits.ssp_dask import dask_design, is_dask_frame
from dpreg.privacy.disclosure import warn_fixed_seed
from dpreg.privacy.ranges import (
    DEFAULT_BINS,
    RANGES_EVENT,
    SKEWED_TAIL,
    THRESHOLD,
    calibrate_ranges_event,
    release_ranges,
)
from dpreg.privacy.request import PrivacyRequest
from dpreg.privacy.scale_box import ScaleBox
from dpreg.results import DPRegressionResults

__all__ = ["DPRegression"]


class _FormulaRows:
    """Where a formula model's rows are, to learn private ranges and rebuild the design
    with them (``ranges="private"``): the formula, the DataFrame (held by the model,
    never by its results) and the model options it was built with."""

    def __init__(self, formula, data, *, missing, bounds, levels, env, binary_outcome):
        self.formula, self.data, self.missing = formula, data, missing
        self.bounds = dict(check_bounds(bounds))
        self.levels, self.env, self.binary_outcome = levels, env, binary_outcome

    def range_columns(self, design: Design) -> dict[str, tuple[np.ndarray, tuple]]:
        """``{column: (values of the design's rows, declared box)}`` of the numeric data
        columns the formula uses that have declared bounds, in the data's order."""
        kinds = column_kinds(self.formula, self.data)
        keep = slice(None) if design.missing_rows is None else ~design.missing_rows
        # a numeric column used only as categories (C(g)) has no range to learn: its
        # values are levels, and clipping one would make a new level
        numerical = numerical_columns(design)
        out = {}
        for col, kind in kinds.items():
            if kind == "numeric" and col in self.bounds and str(col) in numerical:
                values = self.data[col].to_numpy(dtype=float, na_value=np.nan)[keep]
                out[str(col)] = (values, self.bounds[col])
        return out

    def rebuild(self, ranges: Mapping[str, tuple[float, float]],
                template: Design | None = None) -> Design:
        """The design with ``ranges`` as the declared bounds of their columns
        (``template``: the design built before, whose columns it reuses)."""
        # the same formula on the same rows, checked row by row when the model was built
        return build_design(self.formula, self.data, missing=self.missing,
                            bounds={**self.bounds, **ranges}, levels=self.levels,
                            eval_env=self.env, binary_outcome=self.binary_outcome,
                            check_rowwise=False, template=template)


class _ArrayRows:
    """The rows of a model built from arrays, for ``ranges="private"`` (see
    :class:`_FormulaRows`): the columns are the design's own."""

    def __init__(self, endog, exog, *, missing, bounds, intercept):
        self.endog, self.exog, self.missing = endog, exog, missing
        self.bounds = dict(check_bounds(bounds))
        self.intercept = intercept

    def range_columns(self, design: Design) -> dict[str, tuple[np.ndarray, tuple]]:
        """``{column: (values, declared box)}`` of the outcome and the design columns
        with declared bounds (the intercept excepted), in the design's order."""
        if design.endog_name in design.exog_names:
            raise OptionError(f"the outcome and a regressor are both named "
                              f"{design.endog_name!r}: rename one, so that each has its own "
                              "bounds and its own learned range")
        out = {}
        if design.endog_name in self.bounds:
            out[design.endog_name] = (design.endog, self.bounds[design.endog_name])
        for j, name in enumerate(design.exog_names):
            if name in self.bounds and name not in ("const", "Intercept"):
                out[name] = (design.exog[:, j], self.bounds[name])
        return out

    def rebuild(self, ranges: Mapping[str, tuple[float, float]],
                template: Design | None = None) -> Design:
        """The design with ``ranges`` as the declared bounds of their columns
        (``template`` is not needed: the columns are the arrays')."""
        return design_from_arrays(self.endog, self.exog, missing=self.missing,
                                  bounds={**self.bounds, **ranges}, intercept=self.intercept)


class DPRegression:
    """Differentially private regression model.

    Parameters
    ----------
    endog : array-like (n,)
        Outcome.
    exog : array-like (n, p)
        Design matrix (include a column of ones for an intercept, as in statsmodels).
    family : {"linear", "huber", "logistic", "expectile"}
        The loss (see the user guide's family pages).
    c : float, optional
        Truncation constant of the Huber and expectile losses, in the outcome's units
        (default 1.345; ``inf`` gives the classical expectile loss; under 1/10,000 of
        the outcome's declared range it is refused, :func:`dpreg.dp_huber`). Ignored by
        other families.
    tau : float
        Expectile location in (0, 1) (default 0.5). Only for ``family="expectile"``.
    weights : {"mallows", None}, optional
        Mallows weights ``w(x) = min(1, 2/||x||^2)`` multiply each row's loss; they bound
        every gradient without covariate bounds. ``x`` is the row with its bounded
        columns conditioned into ``[-1, 1]`` (columns without declared bounds stay in
        their own units, so declare bounds for any column far from unit scale: a row
        norm in the thousands weighs every row near zero). Default: on for Huber and
        expectile (as in the ldp-sgd paper), off for linear and logistic.
    missing : {"drop", "raise"}
        Drop rows with missing values (the count is reported, and is public by
        assumption: see the user guide's threat model) or raise. LDP-SGD sends such
        rows as null rows (pure noise) and reports no count.
    bounds : dict, optional
        Public bounds ``{column: (lower, upper)}`` of the outcome and covariates. They are
        enforced by clipping. Bounds may never be read off the data: where one is
        missing a :class:`~dpreg.exceptions.PrivacyLeakWarning` says what default is used.
        Where only a column's scale is known (a dollar amount under a billion), declare
        :class:`dpreg.ScaleBox` ``(lower, upper)``: the same box, whose private range
        (``ranges="auto"``) is learned on a powers-of-two grid.
    intercept : int, optional
        Index of the column of ``exog`` that is the intercept (named ``const``). A
        DataFrame column named ``const`` counts too; values never decide it.

    See Also
    --------
    DPRegression.from_formula : The same model from a patsy formula and a DataFrame.
    dpreg.dp_ols : Formula in, private results out, in one call.
    """

    def __init__(self, endog, exog, *, family: str = "linear", c: float | None = None,
                 tau: float = 0.5, weights: str | None = "default", missing: str = "drop",
                 bounds: Mapping[str, Any] | None = None, intercept: int | None = None):
        family = get_family(family)
        constants = family_constants(family, c, tau, weights)
        self._set_up(design_from_arrays(endog, exog, missing=missing, bounds=bounds,
                                        intercept=intercept), family, constants)
        self._source = _ArrayRows(endog, exog, missing=missing, bounds=bounds,
                                  intercept=intercept)

    @classmethod
    def from_design(cls, design: Design, *, family: str | Family = "linear",
                    c: float | None = None, tau: float = 0.5,
                    weights: str | None = "default") -> "DPRegression":
        """The model of a design already built (by a formula, or a stream's first chunk).

        Parameters
        ----------
        design : dpreg.design.Design
            The checked design (outcome, rows, names, declared bounds).
        family : str or Family
            As for :class:`DPRegression`.
        c : float, optional
            As for :class:`DPRegression`.
        tau : float
            As for :class:`DPRegression`.
        weights : {"default", "mallows", None}
            As for :class:`DPRegression`.

        Returns
        -------
        DPRegression
            The model (nothing is fitted yet).
        """
        family = get_family(family)
        constants = family_constants(family, c, tau, weights)
        model = cls.__new__(cls)
        model._set_up(design, family, constants)
        return model

    def _set_up(self, design: Design, family: Family, constants) -> None:
        self._rows = None  # where the rows are when not in the design (a Dask frame)
        self._source = None  # how to rebuild the design with other bounds (ranges=)
        self.family = family
        self.c, self.tau, self.mallows = constants
        self.design = design
        self.family.check_y(self.design.endog, self.design.endog_name)
        outcome_box = self.design.endog_bounds
        check_c_scale(self.family, self.c, self.design.endog_name,
                      None if isinstance(outcome_box, ScaleBox) else outcome_box)
        X = self.design.exog
        # Mallows weights are a public function of the row on the conditioned scale, where
        # ||z||^2 ~ 2 is typical as the weights assume (the ldp-sgd paper standardizes);
        # they bound the gradient without a row bound, so columns without declared
        # bounds do not stop the others from being conditioned
        self.conditioning = default_conditioning(self.design, partial=self.mallows)
        w = (mallows_weights(self.conditioning.design(X)) if self.mallows
             else np.ones(X.shape[0]))
        self.objective = Objective(self.family, self.c, self.tau, w, self.mallows)

    @classmethod
    def from_formula(cls, formula: str, data, *, family: str = "linear",
                     c: float | None = None, tau: float = 0.5, weights: str | None = "default",
                     missing: str = "drop", bounds: Mapping[str, Any] | None = None,
                     levels: Mapping[str, Any] | None = None,
                     eval_env: int = 0) -> "DPRegression":
        """Build the model from a patsy formula and a DataFrame.

        Parameters
        ----------
        formula : str
            e.g. ``"GPA_year1 ~ ssp + sfp + sfsp + sex + C(hsgroup)"``.
        data : pandas.DataFrame or dask.dataframe.DataFrame
            The data (held by the model; never in its results). A Dask frame is read
            partition by partition by ``engine="ssp"`` only; its categorical columns
            need ``levels=`` (see the user guide's SSP page).
        family : {"linear", "huber", "logistic", "expectile"}
            As for :class:`DPRegression`.
        c : float, optional
            As for :class:`DPRegression`.
        tau : float
            As for :class:`DPRegression`.
        weights : {"mallows", None}, optional
            As for :class:`DPRegression`.
        missing : {"drop", "raise"}
            As for :class:`DPRegression`.
        bounds : dict, optional
            As for :class:`DPRegression`; keys are the data's column names.
        levels : dict, optional
            ``{column: [category, ...]}``: the public categories of categorical columns.
            Categories not declared are read from the data and show in the output's
            names, so a :class:`~dpreg.exceptions.PrivacyLeakWarning` says so.
        eval_env : int
            Frames above the caller in which to look up functions used in the formula.

        Returns
        -------
        DPRegression
            The model (nothing is fitted yet).
        """
        base, absorb = split_fixed_effects(formula)
        if absorb is not None:  # a fit option: the model's design has no '|'
            raise FormulaError(f"{formula!r} absorbs {absorb!r}, an option of the fit: "
                               f"DPRegression.from_formula({base!r}, ...).fit(absorb="
                               f"{absorb!r}), or dpreg.dp_ols({formula!r}, ...)")
        family_obj = get_family(family)
        if is_dask_frame(data):
            design, rows = dask_design(formula, data, missing=missing, bounds=bounds,
                                       levels=levels, eval_env=capture_env(eval_env + 1),
                                       binary_outcome=family_obj.binary_outcome)
            model = cls.from_design(design, family=family_obj, c=c, tau=tau,
                                     weights=weights)
            model._rows = rows
            return model
        env = capture_env(eval_env + 1)
        binary = family_obj.binary_outcome
        design = build_design(formula, data, missing=missing, bounds=bounds, levels=levels,
                              eval_env=env, binary_outcome=binary)
        model = cls.from_design(design, family=family_obj, c=c, tau=tau, weights=weights)
        model._source = _FormulaRows(formula, data, missing=missing, bounds=bounds,
                                     levels=levels, env=env, binary_outcome=binary)
        return model

    @property
    def problem(self) -> Problem:
        """The design, objective and conditioning a fit solves."""
        return Problem(self.design, self.objective, self.conditioning,
                       rows=self._rows)

    @property
    def exog_names(self) -> list[str]:
        """Names of the design's columns, in order."""
        return list(self.design.exog_names)

    @property
    def endog_name(self) -> str:
        """Name of the outcome."""
        return self.design.endog_name

    def range_columns(self) -> dict[str, tuple[np.ndarray, tuple[float, float]]]:
        """The columns whose ranges ``fit(ranges="private")`` learns.

        Returns
        -------
        dict
            ``{column: (values of the design's rows, declared box)}`` for the numeric
            data columns with declared bounds (the outcome included), in a fixed public
            order; empty when the model keeps no data source (a Dask frame, or a model
            built from a design). The values are private data: this is for the fit and
            the sensitivity audit, not for printing.
        """
        if self._source is None:
            return {}
        return self._source.range_columns(self.design)

    # ------------------------------------------------------------------------------
    def fit(self, **options) -> DPRegressionResults:
        """Fit privately.

        Parameters
        ----------
        mu : float, optional
            Total budget in Gaussian DP (met by the GDP CLT for the path, exactly for
            the plug-in matrices).
        epsilon, delta : float, optional
            Total budget in (epsilon, delta)-DP, met exactly by a PLD or RDP accountant.
        rho : float, optional
            Total budget in zCDP, met by the RDP accountant. Give exactly one of ``mu``,
            ``epsilon`` with ``delta``, or ``rho``.
        engine : {"dpsgd", "ldp_sgd", "dpgd", "adassp", "ssp", "newton", "auto"}, optional
            Default (``None``): for linear regression, ``"auto"``'s choice among the
            engines that take every option given (an option such as ``steps=`` keeps
            DP-SGD; with ``groups=`` SSP), and ``"ssp"`` for the rows of a Dask frame; for
            the other families ``"newton"`` where ``n mu >= 25,000`` and ``p <= 8`` (with
            learned ranges and no option it lacks), else ``"dpsgd"``. The summary gives
            the reason.
            ``"dpsgd"``: central DP-SGD with randomized subsampling.
            ``"auto"``: the engine and interval the engines study found shortest among
            those that covered, chosen from n, p, the family and the budget
            (:mod:`dpreg.fits.engine_choice`); the summary gives the reason.
            ``"ldp_sgd"``: local DP, one pass, each row privatized by its owner (see
            :class:`dpreg.LDPStream`). ``"dpgd"``: full-batch DP-GD (Brown et al.).
            ``"adassp"``: AdaSSP sufficient statistics (linear family only).
            ``"ssp"``: sufficient-statistics perturbation with intervals for the
            population coefficients (linear family only). ``"newton"``: a start and
            eight noisy Newton steps (logistic, Huber and expectile families;
            :mod:`dpreg.engines.newton`). The user guide's "Choosing an engine" page
            compares them.
        cov_type : str, optional
            Inference behind ``bse`` and ``pvalues``. DP-SGD: ``"plugin"`` (default,
            normal; where the eigenvalue-floor check names coefficients and this is not
            given, the default becomes ``"plugin_rs"``: random scaling's intervals for
            those, the plug-in's for the others) or ``"rs"`` (random scaling).
            LDP-SGD: ``"rs"`` (default), ``"batch_means"`` or ``"plugin"``. DP-GD:
            ``"batch_means"`` (default), ``"checkpoints"`` or ``"runs"`` (t intervals
            from m estimates). AdaSSP:
            ``"plugin"``. SSP: ``"plugin"`` (default), ``"pboot"``, ``"pboot_basic"``
            (parametric bootstrap) or ``"sandwich"`` (needs ``robust=True``). Noisy
            Newton: ``"plugin"``. Every available method is also in
            ``conf_int(method=)``.
        batch_size : int, optional
            ``m`` (the expected batch size under Poisson sampling). Default: see Notes.
        sampling : {"uniform", "poisson"}
            Fixed-size sampling without replacement (replace-one adjacency) or Poisson
            sampling with rate ``m/n``: zero-out adjacency with n public (a row replaced
            by a null row); a replace-one change is then protected at ``2 mu`` (group
            privacy), which the summary reports.
        steps : int, optional
            ``T``. Default: see Notes.
        clip : float, optional
            Per-example gradient clipping norm ``tau``; SSP with ``robust=True``: the
            norm bound of the meat's scores.
        lr, lr_decay : float
            Step size ``eta_t = lr * t^(-lr_decay)``, ``lr_decay`` in (1/2, 1),
            default 0.501 for DP-SGD and 0.51 for LDP-SGD (the papers' choices); DP-GD
            uses the constant step ``lr``.
        x_bound : float, optional
            Public bound on the L2 norm of a design row (default: from ``bounds``).
        budget_split : dict, optional
            Shares of the budget (of ``mu^2`` in GDP, of ``rho`` in zCDP) for ``"path"``,
            ``"hessian"``, ``"score"``. Default ``{"path": 0.6, "hessian": 0.3,
            "score": 0.1}``; ``{"path": 1.0}`` spends nothing on plug-in matrices
            (random scaling without finite-sample correction). SSP: shares for
            ``"gram"``, ``"xty"``, ``"yty"`` (and ``"meat"``), default
            ``{"gram": 0.39, "xty": 0.56, "yty": 0.05}``. With ``ranges="private"``
            also ``"ranges"``, the shares of all releases summing to 1.
        random_state : int or numpy.random.Generator, optional
            Seed of the privacy noise, for reproducing a run on the same data. If
            omitted, fresh OS entropy is used and nothing is stored or printed (the safe
            default for a release). An integer seed gives a
            :class:`~dpreg.exceptions.SeedReuseWarning`: never reuse it for a second
            release, since the same noise on neighbouring data cancels.
        progress : bool
            Progress bar for long runs.
        strict : bool
            Turn :class:`~dpreg.exceptions.PrivacyLeakWarning` into an error.
        start_params : array-like, optional
            Public starting point (default zeros).
        diagnostics : bool
            Attach the (non-private) count of clipped gradients; warns.
        robust : bool
            SSP: release the sandwich's meat (a fourth ledger row) for
            ``cov_type="sandwich"`` and a heteroskedasticity-robust bootstrap.
        n_boot : int
            SSP: bootstrap replicates (default 2000).
        groups : str or array-like, optional
            SSP and DP-SGD: clusters as the privacy unit, a column of the data (or one
            label per row of the data as given); needs ``max_group_size``. SSP: with
            ``robust=True``, ``cov_type="cluster"`` (CR1, ``t(G-1)``), the default with
            ``groups``. DP-SGD (every family): batches of whole clusters, and a
            cluster-robust plug-in (CR1, ``t(G-1)``). With ``groups`` the linear default
            is SSP. See the user guide's page "Clusters as the privacy unit".
        max_group_size : int, optional
            With ``groups``: the public bound ``K`` on a cluster's rows; each cluster
            keeps its first ``K`` rows in the data's order.
        absorb : str, optional
            SSP: a categorical column whose fixed effects are absorbed (its levels
            declared in ``levels=``): its dummies join the design and the results report
            the other coefficients. See the user guide's SSP page, "Absorbed fixed
            effects".
        n_batches : int, optional
            LDP-SGD batch means: number of batches ``M`` (default ``round(n^0.25)``).
        n_estimates, burn_in : int
            DP-GD: ``m`` estimates behind the t interval (default 10) and iterates
            discarded first (default 20), the dpgd paper's Appendix B settings.
        aggregate : {"mean", "last", "ema", "upa"}
            DP-GD: the reported estimate (mean of the post-burn-in iterates, last
            iterate, exponential moving average with warm-up, or uniform past-k
            average); post-processing.
        ema_beta : float
            DP-GD: EMA decay ``beta`` (warm-up ``min(beta, (1+t)/(10+t))``).
        upa_k : int, optional
            DP-GD: number of past iterates in the uniform average.
        runs : int
            DP-GD: independent runs for ``cov_type="runs"`` (must equal
            ``n_estimates``); each run costs its share of the budget.
        condition : {"private", "bounds", "none"}
            The coordinates DP-SGD and DP-GD work in (see the user guide's
            "Convergence, conditioning and diagnostics"). ``"private"`` (default):
            numeric columns mapped into ``[-1, 1]`` by their declared bounds, and the
            privatized gradient preconditioned by a private second-moment matrix (5% of
            ``mu^2``, a ledger row). ``"bounds"``: the public map only. ``"none"``: the
            design as given (the papers' algorithms). LDP-SGD uses the public map
            (a second-moment release would be central).
            ``clip``, ``lr`` and ``x_bound`` refer to the coordinates the engine works
            in.
        ranges : {"auto", "declared", "private"}
            The boxes the rows are clipped to and every sensitivity is calibrated to.
            ``"declared"``: the declared ``bounds``. ``"private"``: ranges learned
            inside them first, by noisy histograms of the bounded numeric columns on a
            public grid (a ledger row; ``budget_split["ranges"]`` of the budget, default
            5%), then the design rebuilt with them as its bounds (see the user guide's
            "Private ranges"); central engines only. ``"auto"`` (default): ``"private"``
            for DP-SGD and SSP, whose intervals are for the population (some numeric
            column with declared bounds, the rows in memory, no ``groups=`` or
            ``absorb=``, and a given ``budget_split`` naming ``"ranges"``),
            ``"declared"`` otherwise (DP-GD's and AdaSSP's intervals are for a statistic
            of the given rows, which clipping to learned ranges would change). The
            textbook study measured the private ranges shorter, and warned less, in
            every cell (user guide: "The textbook study").

        Returns
        -------
        DPRegressionResults
            With ``convergence``, the report of the free diagnostics (DP-SGD with
            plug-in matrices).

        Warns
        -----
        ConvergenceWarning
            When the diagnostics find the path unconverged (random-scaling interval over
            4 times the plug-in's, or the two halves of the path disagree), the two
            intervals in disagreement (ratio below 0.4), or the plug-in decided by the
            private Hessian's eigenvalue floor. The summary repeats the warning.

        Notes
        -----
        Defaults use public quantities only. DP-SGD: batches of ``m = ceil(n / 200)``
        rows (at least ``n^2 / 5e7``) and ``T = (n/m)^2`` steps, which keeps the paper's
        ``c = m sqrt(T)/n = 1``, with at least ``min(200,000, 5e7 / m)`` steps (see
        :func:`dpreg.engines.default_schedule`). ``x_bound`` comes from the declared
        bounds of the conditioned columns (an intercept or a dummy column is bounded
        by 1). ``clip = x_bound * (upper - lower) / 2`` from the outcome's declared
        bounds, so that a residual up to half the outcome's range is not clipped (with
        learned ranges, a long-tailed outcome at ``n mu >= 30,000`` lets a residual reach
        from its private median to the far end of its range:
        :data:`dpreg.fits.common.SKEWED_CLIP_MIN_N_MU`); families with a bounded score
        clip at the score bound times ``x_bound``.
        ``lr = lr_scale / (hess_bound (1 + p/m))`` with the preconditioner (the
        batch's curvature is then about ``hess_bound``), ``lr_scale / (hess_bound
        (1 + x_bound^2 / m))`` without; ``lr_scale`` is 1 for the linear family and
        1/4 for families whose score is curved (the average of noisy iterates is then
        biased in proportion to the step size; see :class:`dpreg.families.Family`).
        Full-batch DP-GD and one-row LDP-SGD use ``lr_scale / (hess_bound *
        x_bound^2)`` on the design as given.
        """
        auto_reason = None
        given = frozenset(options)
        if options.get("engine") is None:
            options, auto_reason = self._resolve_default(options)
        elif options.get("engine") == "auto":
            options, auto_reason = self._resolve_auto(options)
        options = self._resolve_ranges(options)
        opts = fit_options(**options)
        if self._rows is not None and opts.engine != "ssp":
            raise OptionError(f"the rows are in a Dask DataFrame, which only engine='ssp' "
                              f"reads (partition by partition, linear regression); got "
                              f"engine={opts.engine!r}: pass engine='ssp', or a pandas "
                              "DataFrame for the other engines")
        warn_fixed_seed(opts.random_state)
        request = PrivacyRequest.from_options(mu=opts.mu, epsilon=opts.epsilon,
                                              delta=opts.delta, rho=opts.rho)
        problem = self.problem
        if getattr(opts, "absorb", None) is not None:
            problem = self._absorb_problem(opts.absorb)
        if getattr(opts, "groups", None) is not None:
            problem = dataclasses.replace(problem, groups=self._group_codes(opts))
        if self._rows is None:  # a Dask frame's rows are counted by the engine's pass
            check_public_size(problem.design, local=opts.engine == "ldp_sgd",
                              clusters=self._cluster_rows(problem.groups, opts))
        problem.check_privacy(opts.strict)
        if opts.diagnostics:
            leak("diagnostics=True attaches the count of clipped gradients, a "
                 "non-private statistic of the data", opts.strict)
        if opts.ranges == "private":
            # a default noisy Newton logit checks its outcome's rate first
            # (dpreg.fits.engine_choice.NEWTON_MIN_RATE_N_MU): DP-SGD is its fallback
            fallback = (dict(options, engine="dpsgd")
                        if auto_reason is not None and opts.engine == "newton"
                        and self.objective.family.binary_outcome else None)
            res, rate_reason = self._fit_private_ranges(opts, request, given, fallback,
                                                        auto_reason)
            auto_reason = rate_reason or auto_reason
        else:
            res = ENGINES[opts.engine].fit(problem, opts, request, given)
        if auto_reason is not None:
            res = DPRegressionResults(dataclasses.replace(
                res.record, notes=res.notes + (auto_reason,)))
        return res

    def _absorb_problem(self, column: str) -> Problem:
        """``absorb=column`` (SSP): the problem whose design adds the column's dummies
        (``C(column)`` with its declared levels, beside the formula's intercept), with
        the positions of the absorbed columns (the intercept and the dummies) that the
        results do not report."""
        if self._rows is not None:
            raise OptionError("absorb= is not supported for rows in a Dask DataFrame; pass "
                              "a pandas DataFrame")
        source = self._source
        if not isinstance(source, _FormulaRows):
            raise OptionError(f"absorb={column!r} names a column of the data, which a model "
                              "built from arrays has not: build it from a formula")
        if column not in source.data.columns:
            raise OptionError(f"absorb={column!r} is not a column of the data")
        if column not in (source.levels or {}):
            raise OptionError(f"absorb={column!r}: the levels of the absorbed column are "
                              f"public and must be declared: pass levels={{{column!r}: "
                              "[level, ...]}")
        if column in column_kinds(source.formula, source.data):
            raise OptionError(f"absorb={column!r} is already in the formula "
                              f"{source.formula!r}: remove it from the formula, or do not "
                              "absorb it")
        code = (f"C({column})" if column.isidentifier() else f"C(Q({column!r}))")
        design = build_design(f"{source.formula} + {code}", source.data,
                              missing=source.missing, bounds=source.bounds,
                              levels=source.levels, eval_env=source.env,
                              binary_outcome=source.binary_outcome)
        if design.nobs != self.design.nobs:
            raise OptionError(f"absorb={column!r} has missing values in rows the fit uses; "
                              "drop those rows or give them a level")
        cols = design.design_info.term_name_slices[code]
        positions = [j for j, name in enumerate(design.exog_names)
                     if name in INTERCEPT_NAMES] + list(range(cols.start, cols.stop))
        n_levels = len(dict.fromkeys(source.levels[column]))
        return dataclasses.replace(self.problem, design=design,
                                   conditioning=default_conditioning(
                                       design, partial=self.mallows),
                                   absorbed=(column, n_levels, tuple(sorted(positions))))

    @staticmethod
    def _cluster_rows(codes, opts) -> int | None:
        """The public bound ``G K`` on the rows with clusters as the privacy unit (their
        sizes, and so ``n``, are protected), else ``None``."""
        k = getattr(opts, "max_group_size", None)
        if codes is None or k is None or len(codes) == 0:
            return None
        return (int(np.max(codes)) + 1) * int(k)

    def _public_rows(self, options: dict) -> int:
        """The row count the engine rule reads: ``n``, or with ``groups=`` the public
        ``G K`` (cluster sizes are protected)."""
        if options.get("groups") is None or options.get("max_group_size") is None \
                or self._rows is not None:
            return self.design.nobs
        codes = self._group_codes(SimpleNamespace(groups=options["groups"], ranges=None))
        return self._cluster_rows(codes, SimpleNamespace(
            max_group_size=options["max_group_size"])) or self.design.nobs

    def _group_codes(self, opts) -> np.ndarray:
        """``groups=`` (a column of the data, or one value per row of the data as given)
        -> the cluster code ``0 .. G-1`` of each design row, in the rows' order."""
        groups, design = opts.groups, self.design
        if self._rows is not None:
            raise OptionError("groups= is not supported for rows in a Dask DataFrame; pass "
                              "a pandas DataFrame")
        if opts.ranges == "private":
            raise OptionError("groups= is not supported with ranges='private' (the range "
                              "histograms are calibrated to one row); declare the bounds")
        if isinstance(groups, str):
            if not isinstance(self._source, _FormulaRows):
                raise OptionError(f"groups={groups!r} names a column of the data, which a "
                                  "model built from arrays has not; pass one cluster label "
                                  "per row")
            data = self._source.data
            if groups not in data.columns:
                raise OptionError(f"groups={groups!r} is not a column of the data")
            values = data[groups].to_numpy()
        else:
            values = np.asarray(groups)
            n_given = design.nobs + design.n_dropped
            if values.ndim != 1 or values.shape[0] != n_given:
                raise OptionError(f"groups must be a column name or one label per row of "
                                  f"the data ({n_given}); got shape {values.shape}")
        if design.missing_rows is not None:
            values = values[~design.missing_rows]
        codes, _ = pd.factorize(values, use_na_sentinel=True)
        if np.any(codes < 0):
            raise OptionError("groups has missing labels in rows the fit uses; drop those "
                              "rows or give them a cluster")
        return codes.astype(np.int64)

    def _fit_private_ranges(self, opts, request: PrivacyRequest, given: frozenset,
                            fallback: dict | None = None, reason: str | None = None):
        """``ranges="private"``: learn each bounded column's range inside its declared box
        by noisy histograms (:mod:`dpreg.privacy.ranges`, the ledger's first row),
        rebuild the design with the learned ranges as its bounds, and fit it with the
        engine's mechanisms calibrated to what the histograms leave of the budget.

        With ``fallback`` (the options of another engine; a logit whose default is noisy
        Newton, ``reason`` the rule's line), the binary outcome's histogram is released
        with the others and its rate decides between noisy Newton and ``fallback``
        (:func:`dpreg.fits.engine_choice.newton_rate_reason`; post-processing). Returns
        the results and the new reason line (``None`` without ``fallback``)."""
        engine = ENGINES[opts.engine]
        if engine.events is None:  # pragma: no cover - a local engine refuses in its options
            raise OptionError(f"ranges='private' is a central release; engine="
                              f"{opts.engine!r} cannot use it")
        if self._rows is not None:
            raise OptionError("ranges='private' counts the rows in memory; the rows are in a "
                              "Dask DataFrame: pass a pandas DataFrame, or declare tight "
                              "bounds")
        if self._source is None:
            raise OptionError("ranges='private' rebuilds the design with the learned ranges: "
                              "build the model with DPRegression(endog, exog, bounds=...) or "
                              "from a formula and a pandas DataFrame (dp_ols, from_formula)")
        columns = self.range_columns()
        if not columns:
            raise OptionError("ranges='private' learns the ranges of the numeric columns with "
                              "declared bounds, inside those bounds; no column of the model "
                              "has any: declare bounds={column: (lower, upper)}")
        endog = self.design.endog_name
        rate_only = fallback is not None and endog not in columns
        if rate_only:  # the outcome's two values, for its rate only (not a range)
            columns = {**columns, endog: (np.asarray(self.design.endog, float), (0.0, 1.0))}
        # a binary outcome is counted (its rate), never clipped to a learned range: a
        # range between its two values would make it non-binary
        counted = self.objective.family.binary_outcome and endog in columns
        with warnings.catch_warnings():  # the engine's own fit repeats any such warning
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            build = engine.events(self.problem, opts)
        adjacency = build(1.0)[0].adjacency
        try:
            event = calibrate_ranges_event(request, build, len(columns), opts.ranges_share,
                                           adjacency, DEFAULT_BINS)
        except BudgetExceededError as err:
            raise BudgetExceededError(f"the budget {request.describe()} is too small to "
                                      f"learn the ranges and fit: {err}") from None
        release = release_ranges(columns, event, ranges_rng(opts.random_state), DEFAULT_BINS)
        rate_reason = None
        if fallback is not None:
            rate = release.share_at(endog, 1.0)
            keep, rate_reason = newton_rate_reason(self.design.nobs, request_mu(request),
                                                   rate, reason)
            if not keep:  # the fallback engine, calibrated to what the histograms leave
                opts = fit_options(**fallback)
                engine = ENGINES[opts.engine]
        if counted:
            release = release.without(endog)
        model = DPRegression.__new__(DPRegression)
        model._set_up(self._source.rebuild(release.ranges, self.design), self.family,
                      (self.c, self.tau, self.mallows))
        median = (release.quantiles[endog][2] if endog in release.quantiles
                  and endog not in release.kept else None)
        side = release.skewed(endog) if self.objective.psi_bound is None else None
        lohi = model.problem.design.endog_bounds
        reach = None if lohi is None else skewed_reach(side, lohi, median, self.design.nobs,
                                                       request_mu(request))
        problem = dataclasses.replace(model.problem, prior=(event,), outcome_median=median,
                                      outcome_reach=reach)
        res = engine.fit(problem, opts, request, given)
        settings = res.settings.with_setting("ranges",
                                             "learned privately: " + release.describe())
        scale = list(release.scale_grids)
        grid_text = f"{release.bins} equal bins of their declared boxes"
        if len(scale) == len(release.ranges):
            grid_text = "the powers-of-two grids of their ScaleBoxes"
        elif scale:
            grid_text += f" ({scale}: the powers-of-two grid of their ScaleBox)"
        kept = (f" The noise swamped the counts of {list(release.kept)} (or their rows "
                "were spread too thinly over the grid to locate): their declared boxes "
                "were kept." if release.kept else "")
        notes = res.notes + self._skewed_outcome_note(
            release, opts.engine, reach is not None and getattr(opts, "clip", None) is None) + (
            f"Rows were clipped to ranges learned privately (ranges='private'): noisy "
            f"histograms of {list(release.ranges)} on {grid_text} (ledger row "
            f"{RANGES_EVENT!r}, noise sd {event.noise_std:.3g} "
            f"per bin, {opts.ranges_share:.3g} of the budget), each range the bins between "
            f"the points where the counts above {THRESHOLD:g} noise sd, cumulated from either "
            "end (lone bins that the noise lifted far from the others passed over), exceed "
            f"{release.tail:.3g} rows, and "
            + ("a guard bin" if release.guard == 1 else f"{release.guard} guard bins (the "
               "noise per bin over the tail rows)")
            + " beyond each (snapped outward to the grid); the engine's settings and noise "
            "follow from these "
            f"ranges as if declared.{kept}"
            + (f" The same release counted the zeros and ones of the outcome {endog!r} ("
               + ("its rate, for the engine's choice; " if fallback is not None else "")
               + "a binary outcome is not clipped)." if counted else ""),)
        return DPRegressionResults(dataclasses.replace(res.record, settings=settings,
                                                       notes=notes)), rate_reason

    def _skewed_outcome_note(self, release, engine: str, reached: bool) -> tuple[str, ...]:
        """A note when the outcome of a family with an unbounded score (linear
        regression; expectiles with ``c=inf``) is skewed by its released histogram
        (:meth:`RangesRelease.skewed`):
        the learned range then clips a long tail on one side, which moves the
        coefficients (measured on the private ranges page); ``reached``: DP-SGD's clip
        was set by :func:`~dpreg.fits.common.skewed_reach`."""
        name = self.design.endog_name
        side = release.skewed(name) if self.objective.psi_bound is None else None
        if side is None:
            return ()
        below, above = release.tail_lengths(name)
        reach = above if side == "right" else below
        return (f"The outcome {name!r} has a long {side} tail: its "
                f"{'99%' if side == 'right' else '1%'} quantile lies {reach:.3g} "
                f"interquartile ranges {'above' if side == 'right' else 'below'} its median "
                f"(quantiles of its released histogram; a normal outcome: 1.7, more than "
                f"{SKEWED_TAIL:g} marks a long tail). Clipping that tail to the learned range "
                + ("moves the coefficients (DP-SGD's gradient clip lets a residual reach from "
                   "the median to the range's far end, as at n mu >= "
                   f"{SKEWED_CLIP_MIN_N_MU:,}): by 0.8 standard errors on statsmodels' "
                   "randhie visits at n = 20,190, mu = 2"
                   if engine == "dpsgd" and reached else
                   "(and DP-SGD's gradient clip, on the largest residuals: it reaches the "
                   f"range's far end only at n mu >= {SKEWED_CLIP_MIN_N_MU:,}) moves the "
                   "coefficients: by 1.4 standard errors on statsmodels' randhie visits at "
                   "n = 20,190, mu = 1"
                   if engine == "dpsgd" else
                   "moves the coefficients: by 0.9 standard errors on statsmodels' randhie "
                   "visits at n = 20,190, mu = 5, by SSP, whose only clip is the range's")
                + " (user guide, private ranges: skewed outcomes). ranges='declared' keeps "
                "the tail, at the declared box's longer intervals.",)

    def _resolve_ranges(self, options: dict) -> dict:
        """``ranges="auto"`` (the default): ``"private"`` where the engine's intervals are
        for the population and it can learn the ranges (DP-SGD, SSP, noisy Newton; some
        numeric column has declared bounds, the rows are a pandas frame or arrays in
        memory, no ``groups=`` or ``absorb=``, and a given ``budget_split`` names the
        ranges' share), else ``"declared"``. Every input is public: the options, the declared
        bounds and where the rows are."""
        ranges = options.get("ranges", "auto")
        if ranges != "auto":
            return options
        engine = ENGINES.get(options.get("engine", "dpsgd"))
        split = options.get("budget_split")
        private = (engine is not None and engine.learns_ranges
                   and self._rows is None and self._source is not None
                   and options.get("groups") is None and options.get("absorb") is None
                   and (not isinstance(split, Mapping) or "ranges" in split)
                   and bool(self.range_columns()))
        return dict(options, ranges="private" if private else "declared")

    def _with_newton_ranges(self, options: dict) -> dict:
        """``options`` with the ``ranges`` noisy Newton would get (public: it decides
        whether the Newton rule applies, which needs learned ranges)."""
        return dict(options, ranges=self._resolve_ranges(dict(options, engine="newton"))
                    ["ranges"])

    def _resolve_default(self, options: dict) -> tuple[dict, str | None]:
        """No ``engine=``: the rows of a Dask frame go to ``"ssp"`` (the one engine that
        reads them); the linear family gets :func:`dpreg.fits.engine_choice.
        default_engine` (``engine="auto"``'s choice among the engines that take the
        given options), the other families noisy Newton where its rule holds
        (:func:`dpreg.fits.engine_choice.newton_reason`) and DP-SGD otherwise.
        Returns the options with the engine and the summary's reason line (or
        ``None``)."""
        from dpreg.fits.engine_choice import default_engine

        options = {k: v for k, v in options.items() if k != "engine"}
        if self._rows is not None:
            return dict(options, engine="ssp"), None
        engine, cov_type, reason = default_engine(
            self._public_rows(options), self.design.k_exog, self.objective.family,
            self._request(options), self._with_newton_ranges(options),
            statistics_possible=self._statistics_possible())
        chosen = dict(options, engine=engine)
        if cov_type is not None:
            chosen["cov_type"] = cov_type
        return _with_robust_meat(chosen), reason

    def _request(self, options: dict) -> PrivacyRequest:
        return PrivacyRequest.from_options(
            mu=options.get("mu"), epsilon=options.get("epsilon"),
            delta=options.get("delta"), rho=options.get("rho"))

    def _statistics_possible(self) -> bool:
        """Whether the sufficient-statistics engines can fit this model (public)."""
        return self.design.endog_bounds is not None and not self.objective.mallows

    def _resolve_auto(self, options: dict) -> tuple[dict, str]:
        """``engine="auto"``: the options with the engine (and, unless given, the
        interval) that :func:`dpreg.fits.engine_choice.choose_engine` picks from public
        information, and its reason for the summary."""
        from dpreg.fits.engine_choice import choose_engine

        design = self.design
        engine, cov_type, reason = choose_engine(
            self._public_rows(options), design.k_exog, self.objective.family,
            self._request(options),
            statistics_possible=self._statistics_possible(),
            options=self._with_newton_ranges(
                {k: v for k, v in options.items() if k != "engine"}))
        if cov_type == "sandwich" and options.get("groups") is not None:
            cov_type = "cluster"  # with clusters SSP's meat is summed by cluster
        chosen = dict(options, engine=engine)
        if cov_type is not None and options.get("cov_type") is None:
            chosen["cov_type"] = cov_type
        return _with_robust_meat(chosen), reason

    def engine_coordinates(self, opts) -> Conditioning:
        """The coordinates the engine works in.

        ``condition="private"`` (default) and ``"bounds"`` map the bounded numeric
        columns into ``[-1, 1]`` by their declared bounds (:mod:`dpreg.design.conditioning`;
        ``"private"`` adds DP-SGD's preconditioner); ``"none"`` uses the design as given.

        Parameters
        ----------
        opts : dpreg.fits.options.CommonOptions
            Validated fit options (their ``condition`` decides).

        Returns
        -------
        dpreg.design.conditioning.Conditioning
            The public map between the user's coordinates and the engine's.
        """
        return self.problem.coordinates(opts.condition)

    def fit_oracle(self) -> DPRegressionResults:
        """The non-private fit of the same model (see :func:`dpreg.oracle`).

        Returns
        -------
        DPRegressionResults
            With ``private=False`` and no ledger.
        """
        if self._rows is not None:
            raise OptionError("the oracle needs the rows in memory: pass a pandas DataFrame "
                              "(the rows of a Dask DataFrame are read by engine='ssp' only)")
        check_identified(self.design)  # private fits never refuse on the data's rank
        return fit_oracle(self.design, self.objective)


def _with_robust_meat(options: dict) -> dict:
    """SSP's ``cov_type="sandwich"`` (or ``"cluster"``), when chosen for the user, with
    the meat it needs (``robust=True``, a share of the budget) unless ``robust=`` was
    given."""
    if options.get("cov_type") in ("sandwich", "cluster") and "robust" not in options:
        return dict(options, robust=True)
    return options
