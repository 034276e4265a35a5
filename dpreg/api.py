"""One-call front ends: ``dp_ols(formula, data, **options)``."""

from __future__ import annotations

from typing import Any, Mapping

from dpreg.exceptions import OptionError
from dpreg.fits.registry import check_known
from dpreg.model import DPRegression
from dpreg.options import MODEL_OPTIONS
from dpreg.results import DPRegressionResults

__all__ = ["dp_ols", "dp_huber", "dp_expectile", "dp_logit", "oracle"]


def _fit(formula, data, family, options, eval_env=1) -> DPRegressionResults:
    check_known(options)
    if "family" in options:
        raise OptionError("family is fixed by the function; use DPRegression.from_formula "
                          "with family= for another family")
    for name in ("c", "tau"):
        if name in options and options[name] is None:
            del options[name]
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
        Patsy formula, e.g. ``"GPA_year1 ~ ssp + sfp + sfsp + sex + C(hsgroup)"``.
    data : pandas.DataFrame or dask.dataframe.DataFrame
        A Dask frame is summed partition by partition by ``engine="ssp"`` (the only
        engine that reads one; see the user guide's SSP page).
    **options
        Model options ``missing``, ``bounds``, ``eval_env`` (see
        :meth:`dpreg.DPRegression.from_formula`) and fit options ``mu`` /
        ``epsilon``, ``delta`` / ``rho``, ``engine``, ``cov_type``, ``batch_size``,
        ``sampling``, ``steps``, ``clip``, ``lr``, ``lr_decay``, ``x_bound``,
        ``budget_split``, ``random_state``, ``progress``, ``strict``,
        ``start_params``, ``diagnostics``, ``robust``, ``n_boot`` (see
        :meth:`dpreg.DPRegression.fit`).

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
        the loss is not rescaled, so choose ``c`` on the outcome's scale.
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
        Example 3); ``numpy.inf`` gives the classical expectile loss, whose gradients
        are then clipped.
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
