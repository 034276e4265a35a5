"""The model: holds a checked design and a family, fits privately or as an oracle.

``fit`` is short: it resolves public settings, builds and calibrates the privacy plan,
records it in the ledger before touching the data, runs the engine, privatizes the
plug-in matrices, and hands plain records to :class:`~dpreg.results.DPRegressionResults`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from dpreg.design import Design, design_from_arrays
from dpreg.engines import SGDSettings, default_schedule, run_dpsgd
from dpreg.exceptions import OptionError, PrivacyLeakError, PrivacyLeakWarning
from dpreg.families import Family, get_family
from dpreg.formula import build_design
from dpreg.inference.plugin import (floor_eigenvalues, hessian_matrix, path_variance,
                                    plugin_inference, score_matrix)
from dpreg.inference.random_scaling import rs_inference
from dpreg.options import FitOptions
from dpreg.privacy.calibration import calibrate_to_budget
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import calibrate_dpsgd
from dpreg.privacy.ledger import Ledger
from dpreg.privacy.mechanisms import gaussian_matrix_mechanism
from dpreg.privacy.request import PrivacyRequest
from dpreg.results import DPRegressionResults

__all__ = ["DPRegression"]

PATH, HESSIAN, SCORE = "DP-SGD path", "Hessian A", "score covariance S"


@dataclass(frozen=True)
class _Public:
    """Public constants of one fit, with the reasons for the defaults."""

    x_bound: float
    clip: float
    lr: float
    batch_size: int
    steps: int
    seed: int
    reasons: tuple[str, ...]


class DPRegression:
    """Differentially private regression model.

    Parameters
    ----------
    endog : array-like (n,)
        Outcome.
    exog : array-like (n, p)
        Design matrix (include a column of ones for an intercept, as in statsmodels).
    family : str
        ``"linear"`` (squared loss).
    missing : {"drop", "raise"}
        Drop rows with missing values (the count is reported) or raise.
    bounds : dict, optional
        Public bounds ``{column: (lower, upper)}`` of the outcome and covariates. They are
        enforced by clipping. Bounds may never be read off the data: where one is
        missing a :class:`~dpreg.exceptions.PrivacyLeakWarning` says what default is used.

    See Also
    --------
    DPRegression.from_formula, dpreg.dp_ols
    """

    def __init__(self, endog, exog, *, family: str = "linear", missing: str = "drop",
                 bounds: Mapping[str, Any] | None = None, _design: Design | None = None):
        self.family: Family = get_family(family)
        self.design = _design if _design is not None else design_from_arrays(
            endog, exog, missing=missing, bounds=bounds)
        self.family.check_y(self.design.endog, self.design.endog_name)

    @classmethod
    def from_formula(cls, formula: str, data, *, family: str = "linear",
                     missing: str = "drop", bounds: Mapping[str, Any] | None = None,
                     eval_env: int = 0) -> "DPRegression":
        """Build the model from a patsy formula and a DataFrame.

        Parameters
        ----------
        formula : str
            e.g. ``"GPA_year1 ~ ssp + sfp + sfsp + sex + C(hsgroup)"``.
        data : pandas.DataFrame
        family, missing, bounds
            As for :class:`DPRegression`.
        eval_env : int
            Frames above the caller in which to look up functions used in the formula.
        """
        design = build_design(formula, data, missing=missing, bounds=bounds,
                              eval_env=eval_env + 1)
        return cls(None, None, family=family, _design=design)

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
        engine : {"dpsgd"}
            Central DP-SGD with randomized subsampling.
        cov_type : {"plugin", "rs"}
            Inference behind ``pvalues``: private plug-in (normal) or random scaling.
        batch_size : int, optional
            ``m`` (the expected batch size under Poisson sampling). Default: see Notes.
        sampling : {"uniform", "poisson"}
            Fixed-size sampling without replacement (replace-one adjacency) or Poisson
            sampling with rate ``m/n`` (add/remove adjacency).
        steps : int, optional
            ``T``. Default: see Notes.
        clip : float, optional
            Per-example gradient clipping norm ``tau``.
        lr, lr_decay : float
            Step size ``eta_t = lr * t^(-lr_decay)``, ``lr_decay`` in (1/2, 1),
            default 0.501 (the paper's choice).
        x_bound : float, optional
            Public bound on the L2 norm of a design row (default: from ``bounds``).
        budget_split : dict, optional
            Shares of the budget (of ``mu^2`` in GDP, of ``rho`` in zCDP) for ``"path"``,
            ``"hessian"``, ``"score"``. Default ``{"path": 0.6, "hessian": 0.3,
            "score": 0.1}``; ``{"path": 1.0}`` spends nothing on plug-in matrices
            (random scaling without finite-sample correction).
        random_state : int or numpy.random.Generator, optional
            Seed. If omitted a seed is drawn and printed in the summary.
        progress : bool
            Progress bar for long runs.
        strict : bool
            Turn :class:`~dpreg.exceptions.PrivacyLeakWarning` into an error.
        start_params : array-like, optional
            Public starting point (default zeros).
        diagnostics : bool
            Attach the (non-private) count of clipped gradients; warns.

        Returns
        -------
        DPRegressionResults

        Notes
        -----
        Defaults use public quantities only. ``batch_size`` and ``steps`` follow the
        paper's regime ``c = m sqrt(T)/n = 1``: ``m = 1, T = n^2`` while ``n^2 <= 5e7``,
        else ``m = ceil(n^2/5e7)`` and ``T = (n/m)^2`` (bounded work, same ``c``), and
        never fewer than ``min(200 n, 5e7/m)`` steps (see
        :func:`dpreg.engines.default_schedule`).
        ``x_bound`` comes from the declared bounds (an intercept or a dummy column is
        bounded by 1). ``clip = x_bound * (upper - lower) / 2`` from the outcome's
        declared bounds, so that a residual up to half the outcome's range is not
        clipped. ``lr = 1 / x_bound^2``, which makes every single-example step a
        contraction; larger steps let the noisy iterates wander into the clipping
        region, where the path's effective Hessian is smaller than the plug-in's and
        plug-in intervals undercover (measured in the validation runs).
        """
        from dpreg.options import check_known

        check_known(options)
        opts = FitOptions(**options)
        request = PrivacyRequest.from_options(mu=opts.mu, epsilon=opts.epsilon,
                                              delta=opts.delta, rho=opts.rho)
        design, family = self.design, self.family
        n, p = design.nobs, design.k_exog
        pub = self._public_settings(opts)
        split = opts.split()
        adjacency = "replace-one" if opts.sampling == "uniform" else "add/remove"
        factor = 2.0 if adjacency == "replace-one" else 1.0
        sens = {PATH: factor * pub.clip,
                HESSIAN: factor * family.hess_bound * pub.x_bound ** 2 / n,
                SCORE: factor * pub.clip ** 2 / n}
        keys = {PATH: "path", HESSIAN: "hessian", SCORE: "score"}

        def build(mu_scale: float) -> list[GaussianMechanismEvent]:
            events = []
            s = calibrate_dpsgd(mu_scale * math.sqrt(split["path"]), n, pub.batch_size,
                                pub.steps, sampling=opts.sampling)
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

        events = calibrate_to_budget(request, build)
        ledger = Ledger(request, delta=request.delta or _report_delta(n))
        for event in events:  # checked before any data is touched
            ledger.record(event)
        by_name = {e.name: e for e in events}
        path = by_name[PATH]
        settings = SGDSettings(batch_size=pub.batch_size, sampling=opts.sampling,
                               steps=pub.steps, clip=pub.clip, lr=pub.lr,
                               lr_decay=float(opts.lr_decay),
                               noise_scale=path.noise_std / pub.batch_size,
                               noise_multiplier=path.noise_multiplier)
        rng_path, rng_matrix = np.random.default_rng(pub.seed).spawn(2)
        X, y = design.exog, self._outcome()
        theta0 = self._start(opts.start_params)
        out = run_dpsgd(X, y, family_code=family.code, family_c=0.0, settings=settings,
                        theta0=theta0, rng=rng_path, progress=opts.progress)
        inferences, cov, notes = self._inference(out, settings, by_name, pub, rng_matrix)
        if request.unit == "rho":
            notes += ("zCDP does not improve with subsampling: each of the T steps is charged "
                      "as an unsampled Gaussian mechanism (rigorous, but far more noise than a "
                      "mu or (epsilon, delta) request of similar strength).",)
        if opts.diagnostics:
            self._leak("diagnostics=True attaches the count of clipped gradients, a "
                       "non-private statistic of the data", opts.strict)
        table = {
            "engine": "dpsgd", "sampling": opts.sampling, "batch_size": pub.batch_size,
            "steps": pub.steps, "epochs": settings.epochs(n), "clip": pub.clip,
            "lr": pub.lr, "lr_decay": settings.lr_decay, "x_bound": pub.x_bound,
            "noise_multiplier": settings.noise_multiplier, "sigma_1": settings.noise_scale,
            "budget_split": ", ".join(f"{k} {v:g}" for k, v in split.items()),
            "random_state": pub.seed,
        }
        res = DPRegressionResults(
            params=out.params, names=design.exog_names, endog_name=design.endog_name,
            inferences=inferences, cov_type=opts.cov_type, nobs=n,
            df_model=p - int(design.has_intercept), private=True, family_label=family.label,
            engine="DP-SGD", settings=table, n_dropped=design.n_dropped,
            formula=design.formula, ledger=ledger, cov_matrix=cov,
            design_info=design.design_info,
            trajectory={"steps": out.trajectory_steps, "average": out.trajectory_avg,
                        "iterate": out.trajectory_iter},
            notes=pub.reasons + notes)
        if opts.diagnostics:
            res.diagnostics = {"clip_count": out.clip_count,
                               "clip_share": out.clip_count / out.grad_evals}
        return res

    def fit_oracle(self) -> DPRegressionResults:
        """The non-private fit of the same model (see :func:`dpreg.oracle`)."""
        from dpreg.oracle import fit_oracle

        return fit_oracle(self.design, self.family)

    # ------------------------------------------------------------------------------
    def _leak(self, message: str, strict: bool) -> None:
        if strict:
            raise PrivacyLeakError(message + " (strict=True)")
        warnings.warn(message, PrivacyLeakWarning, stacklevel=4)

    def _public_settings(self, opts: FitOptions) -> _Public:
        design = self.design
        n, p = design.nobs, design.k_exog
        reasons = []
        x_bound = opts.x_bound or design.row_norm_bound()
        if x_bound is None:
            x_bound = math.sqrt(p)
            self._leak(f"no bounds declared for {list(design.undeclared)}: the norm of a "
                       f"design row is not known, so the private Hessian clips rows to "
                       f"x_bound = sqrt(p) = {x_bound:.4g}. Declare bounds={{column: (lower, "
                       f"upper)}} or x_bound=", opts.strict)
        clip = opts.clip
        if clip is None:
            if design.endog_bounds is not None:
                lo, hi = design.endog_bounds
                clip = x_bound * (hi - lo) / 2
                reasons.append(f"clip = x_bound * (upper - lower) / 2 = {clip:.4g} from the "
                               f"declared bounds of {design.endog_name!r}.")
            else:
                clip = x_bound
                self._leak(f"no bounds declared for the outcome {design.endog_name!r} and no "
                           f"clip given: gradients are clipped at clip = x_bound = "
                           f"{clip:.4g} (a unit residual). Declare bounds or clip=",
                           opts.strict)
        lr = opts.lr if opts.lr is not None else 1.0 / x_bound ** 2
        if opts.batch_size is not None and opts.batch_size > n:
            raise OptionError(f"batch_size = {opts.batch_size} exceeds the number of rows "
                              f"n = {n}")
        batch_size, t_def = default_schedule(n, opts.batch_size)
        steps = opts.steps or t_def
        rs = opts.random_state
        if rs is None:
            seed = int(np.random.SeedSequence().entropy % (2 ** 63))
        elif isinstance(rs, np.random.Generator):
            seed = int(rs.integers(2 ** 63))
        elif isinstance(rs, np.random.SeedSequence):
            seed = int(rs.generate_state(2, np.uint64)[0] >> np.uint64(1))
        else:
            seed = int(rs)
        return _Public(x_bound=float(x_bound), clip=float(clip), lr=float(lr),
                       batch_size=int(batch_size), steps=int(steps), seed=seed,
                       reasons=tuple(reasons))

    def _outcome(self) -> np.ndarray:
        y = self.design.endog
        if self.design.endog_bounds is not None:
            lo, hi = self.design.endog_bounds
            y = np.clip(y, lo, hi)  # declared bounds are enforced (a copy; data untouched)
        return np.ascontiguousarray(y)

    def _start(self, start_params) -> np.ndarray:
        p = self.design.k_exog
        if start_params is None:
            return np.zeros(p)
        theta0 = np.asarray(start_params, dtype=float).ravel()
        if theta0.shape != (p,) or not np.all(np.isfinite(theta0)):
            raise OptionError(f"start_params must be {p} finite numbers (one per column "
                              f"{self.exog_names}), got {start_params!r}")
        return theta0

    def _inference(self, out, settings: SGDSettings, events: dict, pub: _Public,
                   rng: np.random.Generator):
        n = self.design.nobs
        m = float(settings.batch_size)
        epochs = settings.epochs(n)
        if HESSIAN not in events:
            return {"rs": rs_inference(out.rs_q, epochs)}, None, ()
        X, y = self.design.exog, self._outcome()
        A_hat = hessian_matrix(X, y, out.params, self.family, pub.x_bound, pub.clip)
        S_hat = score_matrix(X, y, out.params, self.family, pub.clip)
        A_noisy, _ = gaussian_matrix_mechanism(A_hat, events[HESSIAN], rng)
        S_noisy, _ = gaussian_matrix_mechanism(S_hat, events[SCORE], rng)
        # Floors: one noise standard deviation for A (invertibility), zero for S (PSD).
        A, raised_a = floor_eigenvalues(A_noisy, events[HESSIAN].noise_std)
        S, raised_s = floor_eigenvalues(S_noisy, 0.0)
        V, W = path_variance(A, S, settings.noise_scale, m)
        note = ""
        if raised_a or raised_s:
            note = (f"Plug-in: {raised_a} eigenvalue(s) of the private Hessian and {raised_s} "
                    "of the private score covariance were raised to the floor (projection "
                    "to positive definite; post-processing).")
        plugin, cov = plugin_inference(V, W, n, settings.steps, note)
        rs = rs_inference(out.rs_q, epochs, V=V, W=W, n=n, steps=settings.steps,
                          batch_size=m)
        return {"plugin": plugin, "rs": rs}, cov, ()


def _report_delta(n: int) -> float:
    """delta at which (eps, delta) is reported for mu or rho requests: min(1e-5, n^-1.1)."""
    return min(1e-5, n ** -1.1)
