"""One-call front ends: ``dp_ols(formula, data, **options)``."""

from __future__ import annotations

from dpreg.exceptions import OptionError
from dpreg.options import MODEL_OPTIONS, check_known
from dpreg.results import DPRegressionResults

__all__ = ["dp_ols"]


def _fit(formula, data, family, options, eval_env=1) -> DPRegressionResults:
    from dpreg.model import DPRegression

    check_known(options)
    if "family" in options:
        raise OptionError("family is fixed by the function; use DPRegression.from_formula "
                          "with family= for another family")
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
    data : pandas.DataFrame
    **options
        Model options ``missing``, ``bounds``, ``eval_env`` (see
        :meth:`dpreg.DPRegression.from_formula`) and fit options ``mu`` /
        ``epsilon``, ``delta`` / ``rho``, ``engine``, ``cov_type``, ``batch_size``,
        ``sampling``, ``steps``, ``clip``, ``lr``, ``lr_decay``, ``x_bound``,
        ``budget_split``, ``random_state``, ``progress``, ``strict``,
        ``start_params``, ``diagnostics`` (see :meth:`dpreg.DPRegression.fit`).

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
