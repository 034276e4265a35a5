"""The model: holds a checked design and a family, fits privately or as an oracle.

``fit`` is short: it resolves public settings, builds and calibrates the privacy plan,
records it in the ledger before touching the data, runs the engine, privatizes the
plug-in matrices, and hands plain records to :class:`~dpreg.results.DPRegressionResults`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from dpreg.conditioning import Conditioning, default_conditioning, identity_conditioning
from dpreg.design import Design, design_from_arrays, design_notes
from dpreg.engines import SGDSettings, default_schedule, run_dpsgd
from dpreg.exceptions import BudgetExceededError, OptionError, PrivacyLeakError, PrivacyLeakWarning
from dpreg.families import Family, Objective, get_family, mallows_weights
from dpreg.formula import build_design
from dpreg.inference.diagnostics import (
    CURVATURE_BIAS_LIMIT,
    attach_report,
    curvature_bias,
    path_report,
)
from dpreg.inference.plugin import (
    floor_eigenvalues,
    hessian_matrix,
    path_variance,
    plugin_inference,
    score_matrix,
    second_moment_matrix,
)
from dpreg.inference.random_scaling import rs_inference
from dpreg.options import FitOptions
from dpreg.privacy.calibration import calibrate_to_budget
from dpreg.privacy.disclosure import adjacency_notes, sampling_adjacency, warn_fixed_seed
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import calibrate_dpsgd
from dpreg.privacy.ledger import Ledger
from dpreg.privacy.mechanisms import gaussian_matrix_mechanism
from dpreg.privacy.request import PrivacyRequest
from dpreg.results import DPRegressionResults

__all__ = ["DPRegression"]

PATH, HESSIAN, SCORE = "DP-SGD path", "Hessian A", "score covariance S"
PRECONDITIONER = "second moment G (preconditioner)"
#: Beyond this noise multiplier a release is pure noise (and float64 variances overflow).
MAX_NOISE_MULTIPLIER = 1e12


@dataclass(frozen=True)
class _Public:
    """Public constants of one fit, with the reasons for the defaults."""

    x_bound: float | None
    row_sq_bound: float
    clip: float
    lr: float
    batch_size: int
    steps: int
    seed: Any
    reasons: tuple[str, ...]


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
        Truncation constant of the Huber and expectile losses (default 1.345; ``inf``
        gives the classical expectile loss). Ignored by other families.
    tau : float
        Expectile location in (0, 1) (default 0.5). Only for ``family="expectile"``.
    weights : {"mallows", None}, optional
        Mallows weights ``w(x) = min(1, 2/||x||^2)`` multiply each row's loss; they bound
        every gradient without covariate bounds. Default: on for Huber and expectile (as
        in the ldp-sgd paper), off for linear and logistic.
    missing : {"drop", "raise"}
        Drop rows with missing values (the count is reported, and is public by
        assumption: see the user guide's threat model) or raise. LDP-SGD sends such
        rows as null rows (pure noise) and reports no count.
    bounds : dict, optional
        Public bounds ``{column: (lower, upper)}`` of the outcome and covariates. They are
        enforced by clipping. Bounds may never be read off the data: where one is
        missing a :class:`~dpreg.exceptions.PrivacyLeakWarning` says what default is used.
    intercept : int, optional
        Index of the column of ``exog`` that is the intercept (named ``const``). A
        DataFrame column named ``const`` counts too; values never decide it.

    See Also
    --------
    DPRegression.from_formula, dpreg.dp_ols
    """

    def __init__(self, endog, exog, *, family: str = "linear", c: float | None = None,
                 tau: float = 0.5, weights: str | None = "default", missing: str = "drop",
                 bounds: Mapping[str, Any] | None = None, intercept: int | None = None,
                 _design: Design | None = None):
        self.family: Family = get_family(family)
        self.c, self.tau, self.mallows = _family_constants(self.family, c, tau, weights)
        self.design = _design if _design is not None else design_from_arrays(
            endog, exog, missing=missing, bounds=bounds, intercept=intercept)
        self.family.check_y(self.design.endog, self.design.endog_name)
        X = self.design.exog
        self.conditioning = default_conditioning(self.design)
        # Mallows weights are a public function of the row on the conditioned scale, where
        # ||z||^2 ~ 2 is typical as the weights assume (the ldp-sgd paper standardizes)
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
        data : pandas.DataFrame
        family, c, tau, weights, missing, bounds
            As for :class:`DPRegression`.
        levels : dict, optional
            ``{column: [category, ...]}``: the public categories of categorical columns.
            Categories not declared are read from the data and show in the output's
            names, so a :class:`~dpreg.exceptions.PrivacyLeakWarning` says so.
        eval_env : int
            Frames above the caller in which to look up functions used in the formula.
        """
        family_obj = get_family(family)
        design = build_design(formula, data, missing=missing, bounds=bounds, levels=levels,
                              eval_env=eval_env + 1,
                              binary_outcome=family_obj.name == "logistic")
        return cls(None, None, family=family_obj, c=c, tau=tau, weights=weights, _design=design)

    @property
    def exog_names(self) -> list[str]:
        return list(self.design.exog_names)

    @property
    def endog_name(self) -> str:
        return self.design.endog_name

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
        engine : {"dpsgd", "ldp_sgd", "dpgd", "adassp"}
            ``"dpsgd"``: central DP-SGD with randomized subsampling (default).
            ``"ldp_sgd"``: local DP, one pass, each row privatized by its owner (see
            :class:`dpreg.LDPStream`). ``"dpgd"``: full-batch DP-GD (Brown et al.).
            ``"adassp"``: AdaSSP sufficient statistics (linear family only). The
            user guide's "Choosing an engine" page compares them.
        cov_type : str, optional
            Inference behind ``bse`` and ``pvalues``. DP-SGD: ``"plugin"`` (default,
            normal) or ``"rs"`` (random scaling). LDP-SGD: ``"rs"`` (default),
            ``"batch_means"`` or ``"plugin"``. DP-GD: ``"batch_means"`` (default),
            ``"checkpoints"`` or ``"runs"`` (t intervals from m estimates). AdaSSP:
            ``"plugin"``. Every available method is also in ``conf_int(method=)``.
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
            Per-example gradient clipping norm ``tau``.
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
            (random scaling without finite-sample correction).
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
        bounds, so that a residual up to half the outcome's range is not clipped;
        families with a bounded score clip at the score bound times ``x_bound``.
        ``lr = lr_scale / (hess_bound (1 + p/m))`` with the preconditioner (the
        batch's curvature is then about ``hess_bound``), ``lr_scale / (hess_bound
        (1 + x_bound^2 / m))`` without; ``lr_scale`` is 1 for the linear family and
        1/4 for families whose score is curved (the average of noisy iterates is then
        biased in proportion to the step size; see :class:`dpreg.families.Family`).
        Full-batch DP-GD and one-row LDP-SGD use ``lr_scale / (hess_bound *
        x_bound^2)`` on the design as given.
        """
        from dpreg.options import check_known

        check_known(options)
        opts = FitOptions(**options)
        warn_fixed_seed(opts.random_state)
        request = PrivacyRequest.from_options(mu=opts.mu, epsilon=opts.epsilon,
                                              delta=opts.delta, rho=opts.rho)
        design = self.design
        n, p = design.nobs, design.k_exog
        self._check_design_privacy(opts.strict)
        if opts.diagnostics:
            self._leak("diagnostics=True attaches the count of clipped gradients, a "
                       "non-private statistic of the data", opts.strict)
        if opts.engine != "dpsgd":
            return _ENGINE_FITS[opts.engine]()(self, opts, request)
        cond = self.engine_coordinates(opts)
        pub = self._public_settings(opts, cond)
        split = opts.split()
        adjacency = sampling_adjacency(opts.sampling)
        factor = 2.0 if adjacency == "replace-one" else 1.0
        sens = {PATH: factor * pub.clip,
                PRECONDITIONER: factor * pub.row_sq_bound / n,
                HESSIAN: factor * self.objective.hess_bound * pub.row_sq_bound / n,
                SCORE: factor * pub.clip ** 2 / n}
        keys = {PATH: "path", PRECONDITIONER: "precondition", HESSIAN: "hessian",
                SCORE: "score"}

        def build(mu_scale: float) -> list[GaussianMechanismEvent]:
            events = []
            s = calibrate_dpsgd(mu_scale * math.sqrt(split["path"]), n, pub.batch_size,
                                pub.steps, sampling=opts.sampling)
            if "precondition" in split:
                mu_g = mu_scale * math.sqrt(split["precondition"])
                events.append(GaussianMechanismEvent(
                    name=PRECONDITIONER, sensitivity=sens[PRECONDITIONER],
                    noise_std=sens[PRECONDITIONER] / mu_g, adjacency=adjacency))
            events.append(GaussianMechanismEvent(
                name=PATH, sensitivity=sens[PATH], noise_std=s * sens[PATH],
                adjacency=adjacency, sampling=opts.sampling, sample_size=pub.batch_size,
                population=n, count=pub.steps))
            for name in (HESSIAN, SCORE):
                if keys[name] in split:
                    mu_i = mu_scale * math.sqrt(split[keys[name]])
                    events.append(GaussianMechanismEvent(
                        name=name, sensitivity=sens[name], noise_std=sens[name] / mu_i,
                        adjacency=adjacency))
            return events

        events, ledger = calibrate_and_record(
            request, build, n, f"n = {n}, batch_size = {pub.batch_size}, steps = {pub.steps}")
        by_name = {e.name: e for e in events}
        path = by_name[PATH]
        rng_path, rng_matrix = np.random.default_rng(pub.seed).spawn(2)  # None: OS entropy
        Z, y = cond.design(design.exog), design.endog
        precond = None
        if PRECONDITIONER in by_name:
            precond, lr, why = self._preconditioner(Z, by_name[PRECONDITIONER], pub, opts,
                                                    rng_matrix)
            # the preconditioned step replaces the un-preconditioned default's reason
            kept = tuple(r for r in pub.reasons if not r.startswith("lr = "))
            pub = dataclasses.replace(pub, lr=lr, reasons=kept + (why,))
        settings = SGDSettings(batch_size=pub.batch_size, sampling=opts.sampling,
                               steps=pub.steps, clip=pub.clip, lr=pub.lr,
                               lr_decay=float(opts.lr_decay),
                               noise_scale=path.noise_std / pub.batch_size,
                               noise_multiplier=path.noise_multiplier, precond=precond)
        theta0 = cond.to_engine(self._start(opts.start_params))
        out = run_dpsgd(Z, y, objective=self.objective, settings=settings,
                        theta0=theta0, rng=rng_path, progress=opts.progress)
        inferences, cov, extras = self._inference(out, Z, settings, by_name, pub, rng_matrix,
                                                  cond)
        report = path_report(design.exog_names, inferences, cond.params(out.params),
                             out.trajectory_steps, cond.params(out.trajectory_avg),
                             settings.steps, extras)
        if report is not None and precond is not None \
                and self.objective.family.name == "logistic":
            bias = curvature_bias(cond.params(out.params), out.trajectory_iter, out.params,
                                  np.linalg.inv(precond), inferences["plugin"].scale)
            names = list(design.exog_names)
            report = dataclasses.replace(
                report, curvature_bias=dict(zip(names, bias.tolist(), strict=True)),
                curvature_biased=tuple(nm for nm, b in zip(names, bias, strict=True)
                                       if b > CURVATURE_BIAS_LIMIT))
        notes: tuple[str, ...] = adjacency_notes(ledger)
        cov_type = opts.cov_type
        if "cov_type" not in options and report is not None and report.floor_decided \
                and not report.unconverged:
            cov_type = "rs"
            notes += ("Inference: random scaling, not the plug-in (the default): the plug-in "
                      "standard errors were set by the private Hessian's eigenvalue floor, "
                      "while random scaling needs no Hessian.",)
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
            "random_state": "given (kept secret)" if opts.random_state is not None
            else "fresh OS entropy (not stored)",
        }
        res = DPRegressionResults(
            params=cond.params(out.params), names=design.exog_names,
            endog_name=design.endog_name,
            inferences=inferences, cov_type=cov_type, nobs=n,
            df_model=p - int(design.has_intercept), private=True,
            family_label=self.objective.label(),
            engine="DP-SGD", settings=table, n_dropped=design.n_dropped,
            formula=design.formula, ledger=ledger, cov_matrix=cov,
            design_info=design.design_info,
            trajectory={"steps": out.trajectory_steps,
                        "average": cond.params(out.trajectory_avg),
                        "iterate": cond.params(out.trajectory_iter)},
            notes=pub.reasons + notes)
        if opts.diagnostics:
            res.diagnostics = {"clip_count": out.clip_count,
                               "clip_share": out.clip_count / out.grad_evals}
        return attach_report(res, report, "DP-SGD")

    def _preconditioner(self, Z, event, pub: _Public, opts: FitOptions,
                        rng: np.random.Generator):
        """The private preconditioner ``P = G~^{-1}`` and the step size it allows.

        ``G = n^{-1} sum_i w_i z~_i z~_i^T`` (rows clipped to the public norm bound) is
        released by the Gaussian matrix mechanism (``event``, in the ledger), its
        eigenvalues moved into ``[2 sqrt(p) sd, row_sq]`` (above the noise's operator
        norm, at most one row's contribution), and inverted. Preconditioning the
        privatized gradient is post-processing; with ``P A ~ hess_bound I`` the step is
        ``lr = lr_scale / (hess_bound (1 + p / m))``: the batch's mean curvature plus
        the spread of ``z' P z`` (mean ``p``) over ``m`` rows.
        """
        p = Z.shape[1]
        G_hat = second_moment_matrix(Z, self.objective.weights, pub.x_bound)
        G_noisy, _ = gaussian_matrix_mechanism(G_hat, event, rng)
        floor = min(2.0 * math.sqrt(p) * event.noise_std, pub.row_sq_bound)
        G, moved = floor_eigenvalues(G_noisy, floor, pub.row_sq_bound)
        P = np.linalg.inv(G)
        P = (P + P.T) / 2
        obj = self.objective
        if opts.lr is not None:
            lr = opts.lr
            why = f"lr = {lr:g} given; the gradient is preconditioned by P = G^-1."
        else:
            lr = obj.family.lr_scale / (obj.hess_bound * (1.0 + p / pub.batch_size))
            why = (f"lr = {lr:.4g} = {obj.family.lr_scale:g} / (hess_bound * (1 + p / m)): "
                   "the gradient is preconditioned by P = G^-1, G a private second-moment "
                   f"matrix of the conditioned rows ({moved} eigenvalue(s) floored).")
        return P, lr, why

    def engine_coordinates(self, opts: FitOptions) -> Conditioning:
        """The coordinates the engine works in: ``condition="private"`` (default) and
        ``"bounds"`` map the bounded numeric columns into ``[-1, 1]`` by their declared
        bounds (:mod:`dpreg.conditioning`; ``"private"`` adds DP-SGD's preconditioner);
        ``"none"`` uses the design as given."""
        if opts.condition == "none":
            return identity_conditioning(self.design.k_exog, self.design.row_norm_bound())
        return self.conditioning

    def fit_oracle(self) -> DPRegressionResults:
        """The non-private fit of the same model (see :func:`dpreg.oracle`)."""
        from dpreg.design import check_identified
        from dpreg.oracle import fit_oracle

        check_identified(self.design)  # private fits never refuse on the data's rank
        return fit_oracle(self.design, self.objective)

    # ------------------------------------------------------------------------------
    def _leak(self, message: str, strict: bool) -> None:
        if strict:
            raise PrivacyLeakError(message + " (strict=True)")
        warnings.warn(message, PrivacyLeakWarning, stacklevel=_user_stacklevel())

    def _check_design_privacy(self, strict: bool) -> None:
        """Refuse data-derived constants in the design; warn about data-derived names."""
        design = self.design
        if design.stateful:
            raise PrivacyLeakError(
                f"the formula uses stateful transforms in {list(design.stateful)}: they "
                "compute constants (means, scales, knots) from the private data without "
                "paying for them. Transform with public constants instead, e.g. "
                "I((x - 50) / 10)")
        if design.undeclared_levels:
            self._leak(f"the categories of {list(design.undeclared_levels)} were read from "
                       "the data; they appear in the output's names. Declare them with "
                       "levels={column: [...]} if they are public (a pandas "
                       "Categorical's categories count only when declared there)", strict)

    def _public_settings(self, opts: FitOptions, cond: Conditioning | None = None,
                         full_batch: bool = False) -> _Public:
        """Clip, step size, batch size and steps from public quantities, in the
        coordinates ``cond`` the engine works in (the design as given if ``None``);
        ``full_batch`` engines step on the mean over all rows."""
        design = self.design
        n, p = design.nobs, design.k_exog
        reasons = list(design_notes(design, local=opts.engine == "ldp_sgd"))
        obj = self.objective
        row_bound = design.row_norm_bound() if cond is None else cond.norm_bound
        x_bound = opts.x_bound or row_bound
        if x_bound is None and not obj.mallows:
            x_bound = math.sqrt(p)
            self._leak(f"no bounds declared for {list(design.undeclared)}: the norm of a "
                       f"design row is not known, so the private Hessian clips rows to "
                       f"x_bound = sqrt(p) = {x_bound:.4g}. Declare bounds={{column: (lower, "
                       f"upper)}} or x_bound=", opts.strict)
        # Public bounds on w(x)||x|| (gradient gain) and w(x)||x||^2 (Hessian per row):
        # with Mallows weights they are sqrt(2) and 2 whatever the covariates.
        if obj.mallows:
            gain = math.sqrt(2.0) if x_bound is None else min(math.sqrt(2.0), x_bound)
            row_sq = 2.0 if x_bound is None else min(2.0, x_bound ** 2)
        else:
            gain, row_sq = x_bound, x_bound ** 2
        clip = opts.clip
        if clip is None and obj.psi_bound is not None:
            clip = obj.psi_bound * gain
            reasons.append(f"clip = {clip:.4g}: the family's score bound times the bound on "
                           "w(x)||x||, so no gradient is ever clipped.")
        elif clip is None and design.endog_bounds is not None:
            lo, hi = design.endog_bounds
            clip = gain * obj.hess_bound * (hi - lo) / 2
            reasons.append(f"clip = {clip:.4g} from the declared bounds of "
                           f"{design.endog_name!r}: a residual up to half its range is not "
                           "clipped.")
        elif clip is None:
            clip = gain
            self._leak(f"no bounds declared for the outcome {design.endog_name!r} and no "
                       f"clip given: gradients are clipped at clip = {clip:.4g} (a unit "
                       "residual). Declare bounds or clip=", opts.strict)
        if opts.batch_size is not None and opts.batch_size > n:
            raise OptionError(f"batch_size = {opts.batch_size} exceeds the number of rows "
                              f"n = {n}")
        batch_size, t_def = default_schedule(n, opts.batch_size)
        steps = opts.steps or t_def
        if opts.lr is not None:
            lr = opts.lr
        elif cond is None or full_batch:  # one-row steps, or lambda_max(E z z') <= row_sq
            lr = obj.family.lr_scale / (obj.hess_bound * row_sq)
        else:
            # The curvature of a mean gradient over m conditioned rows: the population
            # part lambda_max(E w h z z') is about 1 on [-1, 1] covariates (at most
            # row_sq), the sampling part at most row_sq / m (one row's curvature over m).
            kappa = obj.hess_bound * (1.0 + row_sq / batch_size)
            lr = obj.family.lr_scale / kappa
            reasons.append(f"lr = {lr:.4g} = {obj.family.lr_scale:g} / kappa, kappa = "
                           f"hess_bound * (1 + row_sq / m) = {kappa:.4g}: the curvature of a "
                           "batch's mean gradient on the conditioned covariates.")
        seed = opts.random_state  # int, SeedSequence, Generator or None: never stored
        return _Public(x_bound=None if x_bound is None else float(x_bound),
                       row_sq_bound=float(row_sq), clip=float(clip), lr=float(lr),
                       batch_size=int(batch_size), steps=int(steps), seed=seed,
                       reasons=tuple(reasons))

    def _start(self, start_params) -> np.ndarray:
        """The public starting point: ``start_params``, or zeros with the intercept at
        the midpoint of the outcome's declared bounds for location families (the path
        then starts near the data's level instead of travelling to it)."""
        design = self.design
        p = design.k_exog
        if start_params is None:
            theta0 = np.zeros(p)
            lohi = design.endog_bounds
            names = design.exog_names
            if lohi is not None and self.family.name != "logistic":
                for j, name in enumerate(names):
                    if name in ("Intercept", "const") and design.column_bounds \
                            and tuple(design.column_bounds[j]) == (1.0, 1.0):
                        theta0[j] = (lohi[0] + lohi[1]) / 2
            return theta0
        theta0 = np.asarray(start_params, dtype=float).ravel()
        if theta0.shape != (p,) or not np.all(np.isfinite(theta0)):
            raise OptionError(f"start_params must be {p} finite numbers (one per column "
                              f"{self.exog_names}), got {start_params!r}")
        return theta0

    def _inference(self, out, Z: np.ndarray, settings: SGDSettings, events: dict,
                   pub: _Public, rng: np.random.Generator, cond: Conditioning):
        """Plug-in and random-scaling inference. The private matrices are computed and
        floored in the engine's coordinates (``Z``, where the public bounds hold), then
        ``V``, ``W`` and ``Q`` are mapped to the user's coordinates exactly."""
        n = self.design.nobs
        m = float(settings.batch_size)
        epochs = settings.epochs(n)
        Q = cond.covariance(out.rs_q)
        if HESSIAN not in events:
            return {"rs": rs_inference(Q, epochs)}, None, {}
        y = self.design.endog
        A_hat = hessian_matrix(Z, y, out.params, self.objective, pub.x_bound, pub.clip)
        S_hat = score_matrix(Z, y, out.params, self.objective, pub.clip)
        A_noisy, _ = gaussian_matrix_mechanism(A_hat, events[HESSIAN], rng)
        S_noisy, _ = gaussian_matrix_mechanism(S_hat, events[SCORE], rng)
        # Eigenvalues into their public ranges: A in [one noise sd, hess_bound * row_sq]
        # (invertible, and never above what one row can contribute), S in [0, clip^2].
        a_cap = self.objective.hess_bound * pub.row_sq_bound
        a_floor = min(events[HESSIAN].noise_std, a_cap)
        A, raised_a = floor_eigenvalues(A_noisy, a_floor, a_cap)
        S, raised_s = floor_eigenvalues(S_noisy, 0.0, pub.clip ** 2)
        V, W = path_variance(A, S, settings.noise_scale, m)
        V, W = cond.covariance(V), cond.covariance(W)
        # the same plug-in with the floor doubled: does the floor decide the answer?
        A2, _ = floor_eigenvalues(A_noisy, min(2 * a_floor, a_cap), a_cap)
        V2, W2 = (cond.covariance(M) for M in path_variance(A2, S, settings.noise_scale, m))
        floor_se = np.sqrt(np.diag(V2 / n + W2 / settings.steps))
        note = ""
        if raised_a or raised_s:
            note = (f"Plug-in: {raised_a} eigenvalue(s) of the private Hessian and {raised_s} "
                    "of the private score covariance were moved into their public ranges "
                    "(projection; post-processing).")
        plugin, cov = plugin_inference(V, W, n, settings.steps, note)
        rs = rs_inference(Q, epochs, V=V, W=W, n=n, steps=settings.steps, batch_size=m)
        return {"plugin": plugin, "rs": rs}, cov, {"W": W, "floor_se": floor_se}


def calibrate_and_record(request: PrivacyRequest, build, n: int, what: str):
    """Calibrate ``build``'s events to ``request`` and record them in a new ledger,
    before any data is touched; refuse budgets too small to calibrate or to carry any
    information (noise multiplier above :data:`MAX_NOISE_MULTIPLIER`).

    Returns ``(events, ledger)``; ``what`` describes the fit in error messages.
    """
    try:
        events = calibrate_to_budget(request, build)
        ledger = Ledger(request, delta=request.delta or _report_delta(n))
        for event in events:
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


def _fit_ldp_sgd():
    from dpreg.stream import fit_ldp_sgd

    return fit_ldp_sgd


def _fit_dpgd():
    from dpreg.fit_dpgd import fit_dpgd

    return fit_dpgd


def _fit_adassp():
    from dpreg.fit_dpgd import fit_adassp

    return fit_adassp


#: Engines other than DP-SGD live in their own modules: ``fit(model, opts, request)``.
_ENGINE_FITS = {"ldp_sgd": _fit_ldp_sgd, "dpgd": _fit_dpgd, "adassp": _fit_adassp}


def _family_constants(family: Family, c, tau, weights) -> tuple[float, float, bool]:
    """Validate ``c``, ``tau`` and ``weights`` for ``family``; fill the family's defaults."""
    if family.default_c is None:
        c_val = math.inf
    else:
        c_val = family.default_c if c is None else c
        if isinstance(c_val, bool) or not isinstance(c_val, numbers.Real) or not c_val > 0:
            raise OptionError(f"c must be a positive number (inf allowed for expectiles), "
                              f"got {c!r}")
        if not math.isfinite(c_val) and family.name != "expectile":
            raise OptionError(f"c must be finite for the {family.name} family, got {c!r}")
    if family.uses_tau:
        if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or not 0 < tau < 1:
            raise OptionError(f"tau must be in (0, 1), got {tau!r}")
    elif tau != 0.5:
        raise OptionError(f"tau applies to the expectile family only, not {family.name!r}")
    if weights == "default":
        mallows = family.mallows_default
    elif weights in ("mallows", None):
        mallows = weights == "mallows"
    else:
        raise OptionError(f"weights must be 'mallows' or None, got {weights!r}")
    return float(c_val), float(tau), mallows


def _user_stacklevel() -> int:
    """Stack level of the first frame outside dpreg, so warnings point at the user's line."""
    import sys

    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("dpreg"):
        frame, level = frame.f_back, level + 1
    return level


def _report_delta(n: int) -> float:
    """delta at which (eps, delta) is reported for mu or rho requests: min(1e-5, n^-1.1)."""
    return min(1e-5, n ** -1.1)
