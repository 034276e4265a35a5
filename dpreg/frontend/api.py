"""One-call front ends: ``dp_ols(formula, data, **options)``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from dpreg.design.formula import (
    build_design,
    capture_env,
    parse_iv_formula,
    split_fixed_effects,
)
from dpreg.exceptions import OptionError
from dpreg.fits.iv import IVOptions, IVProblem, fit_iv2sls
from dpreg.fits.options import MODEL_OPTIONS
from dpreg.fits.registry import check_known
from dpreg.frontend.model import DPRegression
from dpreg.privacy.request import PrivacyRequest
from dpreg.results import DPRegressionResults

__all__ = ["dp_ols", "dp_huber", "dp_expectile", "dp_logit", "dp_iv2sls", "oracle"]


def _fit(formula, data, family, options, eval_env=1) -> DPRegressionResults:
    check_known(options)
    if "family" in options:
        raise OptionError("family is fixed by the function; use DPRegression.from_formula "
                          "with family= for another family")
    for name in ("c", "tau"):
        if name in options and options[name] is None:
            del options[name]
    formula, absorb = split_fixed_effects(formula)
    if absorb is not None:  # "y ~ x | state": absorb="state"
        if options.get("absorb") is not None:
            raise OptionError(f"the formula absorbs {absorb!r} after '|' and absorb="
                              f"{options['absorb']!r} was given too: use one of them")
        options["absorb"] = absorb
    model_opts = {k: options.pop(k) for k in list(options) if k in MODEL_OPTIONS}
    eval_env = model_opts.pop("eval_env", 0) + eval_env + 1
    model = DPRegression.from_formula(formula, data, family=family, eval_env=eval_env,
                                      **model_opts)
    return model.fit(**options)


def dp_ols(formula: str, data, **options) -> DPRegressionResults:
    """Differentially private linear regression (squared loss) from a formula.

    Parameters
    ----------
    formula : str
        Patsy formula, e.g. ``"GPA_year1 ~ ssp + sfp + sfsp + sex + C(hsgroup)"``;
        ``"y ~ x1 + x2 | state"`` (pyfixest's syntax) absorbs the fixed effects of
        ``state``, as ``absorb="state"`` does.
    data : pandas.DataFrame or dask.dataframe.DataFrame
        A Dask frame is summed partition by partition by ``engine="ssp"`` (the only
        engine that reads one; see the user guide's SSP page).
    **options
        Model options ``missing``, ``bounds``, ``eval_env`` (see
        :meth:`dpreg.DPRegression.from_formula`) and fit options ``mu`` /
        ``epsilon``, ``delta`` / ``rho``, ``engine``, ``cov_type``, ``batch_size``,
        ``sampling``, ``steps``, ``clip``, ``lr``, ``lr_decay``, ``x_bound``,
        ``budget_split``, ``random_state``, ``progress``, ``strict``,
        ``start_params``, ``diagnostics``, ``robust``, ``n_boot``, ``groups``,
        ``max_group_size``, ``absorb`` (see :meth:`dpreg.DPRegression.fit`).

    Returns
    -------
    DPRegressionResults

    Examples
    --------
    >>> import dpreg
    >>> sim = dpreg.datasets.simulate_linear(500, random_state=0)
    >>> res = dpreg.dp_ols(sim.formula, sim.data, mu=1.0, x_bound=4.0, clip=8.0,
    ...                    random_state=1)
    >>> res.params.index.tolist()
    ['x1', 'x2', 'x3']
    """
    return _fit(formula, data, "linear", dict(options))


def dp_huber(formula: str, data, *, c: float = 1.345, **options) -> DPRegressionResults:
    """Differentially private Huber regression from a formula.

    Parameters
    ----------
    formula : str
        As for :func:`dp_ols`.
    data : pandas.DataFrame
        As for :func:`dp_ols`.
    c : float
        Huber's truncation constant: residuals beyond ``c`` get a bounded influence. The
        default 1.345 gives 95% efficiency at the normal model with unit error scale;
        the loss is not rescaled, so choose ``c`` in the outcome's units (statsmodels'
        ``HuberT(t)`` is in units of a residual scale: its default is ``c = 1.345``
        times the residual scale here). A ``c`` under 1/10,000 of the outcome's
        declared range (1.345 on earnings in dollars) is refused with an
        :class:`~dpreg.exceptions.OptionError` before anything is released
        (:data:`dpreg.families.base.C_RANGE_FLOOR`).
    **options
        As for :func:`dp_ols`, plus ``weights`` (``"mallows"`` by default, ``None`` to
        turn Mallows weights off).

    Returns
    -------
    DPRegressionResults
    """
    return _fit(formula, data, "huber", dict(options, c=c))


def dp_expectile(formula: str, data, *, tau: float = 0.5, c: float = 1.345,
                 **options) -> DPRegressionResults:
    """Differentially private robust expectile regression from a formula.

    Parameters
    ----------
    formula : str
        As for :func:`dp_ols`.
    data : pandas.DataFrame
        As for :func:`dp_ols`.
    tau : float
        Expectile location in (0, 1): residuals above the fit weigh ``tau``, below it
        ``1 - tau`` (``tau = 0.5`` is Huber regression at half weight).
    c : float
        Huber truncation constant of the robust expectile loss (ldp-sgd paper,
        Example 3), in the outcome's units as for :func:`dp_huber` (and refused under
        1/10,000 of the outcome's declared range); ``numpy.inf`` gives the classical
        expectile loss, whose gradients are then clipped.
    **options
        As for :func:`dp_huber`.

    Returns
    -------
    DPRegressionResults
    """
    return _fit(formula, data, "expectile", dict(options, c=c, tau=tau))


def dp_logit(formula: str, data, **options) -> DPRegressionResults:
    """Differentially private logistic regression from a formula.

    Parameters
    ----------
    formula : str
        As for :func:`dp_ols`. The outcome is 0/1, boolean, or a two-level category
        (its second level in sorted order is coded 1 and named in the output).
    data : pandas.DataFrame
        As for :func:`dp_ols`.
    **options
        As for :func:`dp_ols`, plus ``weights`` (``None`` by default; ``"mallows"``
        for the ldp-sgd paper's weighted loss).

    Returns
    -------
    DPRegressionResults
    """
    return _fit(formula, data, "logistic", dict(options))


def _term_columns(design, terms) -> tuple[int, ...]:
    """Positions of the columns of ``terms`` in ``design`` (patsy may reorder terms)."""
    slices = design.design_info.term_name_slices
    return tuple(sorted(j for t in terms if t in slices
                        for j in range(*slices[t].indices(design.k_exog))))


def dp_iv2sls(formula: str, data, *, mu: float | None = None, epsilon: float | None = None,
              delta: float | None = None, rho: float | None = None,
              bounds: Mapping[str, Any] | None = None,
              levels: Mapping[str, Any] | None = None, missing: str = "drop",
              cov_type: str = "plugin", budget_split: Mapping[str, float] | None = None,
              n_boot: int = 2000, random_state=None, strict: bool = False,
              eval_env: int = 0) -> DPRegressionResults:
    """Differentially private two-stage least squares (instrumental variables).

    Sufficient-statistics perturbation: ``W'W``, ``W'X``, ``W'y``, ``X'X``, ``X'y`` and
    ``y'y`` of the clipped rows are each released once by the Gaussian mechanism
    (``W`` the exogenous regressors and excluded instruments, ``X`` the exogenous and
    endogenous regressors), and the 2SLS estimate, its intervals and the first-stage F
    statistics are computed from the releases (user guide: "Instrumental variables").

    Parameters
    ----------
    formula : str
        linearmodels' syntax: ``"y ~ 1 + x + [d ~ z1 + z2]"``, exogenous regressors
        ``x``, endogenous ``d``, excluded instruments ``z1, z2``. As in linearmodels,
        there is an intercept only where the formula says ``1``.
    data : pandas.DataFrame
        The data.
    mu : float, optional
        Total budget in Gaussian DP.
    epsilon : float, optional
        Total budget in (epsilon, delta)-DP, with ``delta``.
    delta : float, optional
        With ``epsilon``.
    rho : float, optional
        Total budget in zCDP. Give exactly one of ``mu``, ``epsilon`` (with ``delta``),
        ``rho``.
    bounds : dict
        Public ``{column: (lower, upper)}`` bounds of the outcome and of every numeric
        regressor and instrument (required: rows are clipped to them).
    levels : dict, optional
        Public categories of categorical columns.
    missing : {"drop", "raise"}
        Rows with a missing value in any variable of the model are dropped (the count is
        public by assumption) or raise.
    cov_type : {"plugin", "pboot", "pboot_basic"}
        The interval behind ``bse`` and ``pvalues``: the plug-in normal interval
        (default) or the parametric bootstrap's percentile or basic interval. All three
        are in ``res.inferences``.
    budget_split : dict, optional
        Shares of ``mu^2`` of the six releases (:class:`dpreg.fits.iv.IVOptions`).
    n_boot : int
        Bootstrap replicates.
    random_state : int, numpy.random.SeedSequence, numpy.random.Generator or None
        The noise's seed.
    strict : bool
        Raise instead of warning when a category is read from the data.
    eval_env : int
        Frames above the caller in which to look up functions used in the formula.

    Returns
    -------
    DPRegressionResults
        Engine ``"IV-2SLS (SSP)"``; ``res.first_stage`` holds the private first-stage F
        statistics (one per endogenous regressor).

    Warns
    -----
    ConvergenceWarning
        When a private first-stage F is below 10 (weak instruments), and when a noisy
        matrix had to be floored.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dpreg
    >>> rng = np.random.default_rng(0)
    >>> z = rng.uniform(-1, 1, 2000); u = rng.uniform(-1, 1, 2000)
    >>> d = np.clip(z + 0.5 * u, -2, 2); y = np.clip(1 + d + u, -4, 6)
    >>> df = pd.DataFrame({"y": y, "d": d, "z": z})
    >>> res = dpreg.dp_iv2sls("y ~ 1 + [d ~ z]", df, mu=1e6, random_state=1,
    ...                       bounds={"y": (-4, 6), "d": (-2, 2), "z": (-1, 1)})
    >>> res.params.index.tolist()
    ['Intercept', 'd']
    """
    parts = parse_iv_formula(formula)
    opts = IVOptions(cov_type=cov_type, budget_split=budget_split, n_boot=n_boot,
                     random_state=random_state)
    request = PrivacyRequest.from_options(mu=mu, epsilon=epsilon, delta=delta, rho=rho)
    env = capture_env(eval_env + 1)
    full = build_design(parts.combined, data, missing=missing, bounds=bounds, levels=levels,
                        eval_env=env)
    rows = data
    if full.missing_rows is not None:
        rows = data.loc[~full.missing_rows] if hasattr(data, "loc") else data
        rows = rows.reset_index(drop=True)
    dx = build_design(parts.structural, rows, missing=missing, bounds=bounds, levels=levels,
                      eval_env=env)
    dw = build_design(parts.instrumental, rows, missing=missing, bounds=bounds,
                      levels=levels, eval_env=env)
    dx = replace(dx, formula=formula, n_dropped=full.n_dropped)
    model = DPRegression.from_design(dx, family="linear")
    problem = model.problem
    problem.check_privacy(strict)
    replace(problem, design=dw).check_privacy(strict)  # categorical/stateful instruments
    iv = IVProblem(structural=problem, instruments=dw,
                   exog_rows=_term_columns(dw, ("Intercept", *parts.exog_terms)),
                   endog_cols=_term_columns(dx, parts.endog_terms),
                   n_dropped=full.n_dropped)
    return fit_iv2sls(iv, opts, request)


def oracle(formula: str, data, *, family: str = "linear", c: float | None = None,
           tau: float = 0.5, weights: str | None = "default", missing: str = "drop",
           bounds: Mapping[str, Any] | None = None, levels: Mapping[str, Any] | None = None,
           eval_env: int = 0) -> DPRegressionResults:
    """Non-private fit of ``formula`` on ``data`` (a benchmark, NOT private).

    Parameters
    ----------
    formula : str
        Patsy formula (as for :meth:`dpreg.DPRegression.from_formula`).
    data : pandas.DataFrame
        The data (NOT protected: the oracle reads them directly).
    family : {"linear", "huber", "logistic", "expectile"}
        As for :class:`dpreg.DPRegression`.
    c : float, optional
        As for :class:`dpreg.DPRegression`.
    tau : float
        As for :class:`dpreg.DPRegression`.
    weights : {"mallows", None}, optional
        As for :class:`dpreg.DPRegression`.
    missing : {"drop", "raise"}
        As for :class:`dpreg.DPRegression`.
    bounds : dict, optional
        As for :class:`dpreg.DPRegression`. ``bounds`` clip the outcome as in the
        private fit, so that the oracle minimizes the same loss.
    levels : dict, optional
        As for :meth:`dpreg.DPRegression.from_formula`.
    eval_env : int
        As for :meth:`dpreg.DPRegression.from_formula`.

    Returns
    -------
    DPRegressionResults
        With ``private=False``. Linear without weights: statsmodels OLS (t reference law
        with ``n - p`` degrees of freedom). Logistic without weights: statsmodels Logit.
        Otherwise the weighted M-estimator with sandwich standard errors (normal law).

    Examples
    --------
    >>> import dpreg
    >>> sim = dpreg.datasets.simulate_linear(200, random_state=0)
    >>> res = dpreg.oracle(sim.formula, sim.data)
    >>> res.private
    False
    """
    model = DPRegression.from_formula(formula, data, family=family, c=c, tau=tau,
                                      weights=weights, missing=missing, bounds=bounds,
                                      levels=levels, eval_env=eval_env + 1)
    return model.fit_oracle()
