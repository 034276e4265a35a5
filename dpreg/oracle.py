"""Non-private fits of the same model and loss, clearly labelled, for comparison tables.

The oracle reads the raw data without any privacy protection. It is never stored in a
private Results object; it is always a separate :class:`~dpreg.results.DPRegressionResults`
with ``private=False``.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import statsmodels.api as sm

from dpreg.design import Design
from dpreg.families import Family, get_family
from dpreg.inference.base import Inference, StudentLaw
from dpreg.results import DPRegressionResults

__all__ = ["oracle", "fit_oracle"]


def oracle(formula: str, data, *, family: str = "linear", missing: str = "drop",
           bounds: Mapping[str, Any] | None = None, eval_env: int = 0) -> DPRegressionResults:
    """Non-private fit of ``formula`` on ``data`` (a benchmark, NOT private).

    Parameters
    ----------
    formula, data, family, missing, bounds, eval_env
        As for :func:`dpreg.dp_ols`. ``bounds`` clip the outcome as in the private
        fit, so that the oracle minimizes the same loss.

    Returns
    -------
    DPRegressionResults
        With ``private=False``; for the linear family the numbers are statsmodels'
        OLS (t reference law with ``n - p`` degrees of freedom).

    Examples
    --------
    >>> import dpreg
    >>> sim = dpreg.datasets.simulate_linear(200, random_state=0)
    >>> res = dpreg.oracle(sim.formula, sim.data)
    >>> res.private
    False
    """
    from dpreg.model import DPRegression

    model = DPRegression.from_formula(formula, data, family=family, missing=missing,
                                      bounds=bounds, eval_env=eval_env + 1)
    return model.fit_oracle()


def fit_oracle(design: Design, family: Family | str) -> DPRegressionResults:
    """Oracle fit of a checked design (statsmodels where it computes the same estimator)."""
    family = get_family(family)
    y = design.endog
    if design.endog_bounds is not None:
        y = np.clip(y, *design.endog_bounds)
    if family.name == "linear":
        res = sm.OLS(y, design.exog).fit()
        law = StudentLaw(res.df_resid)
        inf = Inference("oracle", np.asarray(res.bse), law, True,
                        "Oracle: ordinary least squares on the raw data (statsmodels OLS).")
        params, cov = np.asarray(res.params), np.asarray(res.cov_params())
    else:  # pragma: no cover - other families arrive with their own oracles
        raise NotImplementedError(family.name)
    return DPRegressionResults(
        params=params, names=design.exog_names, endog_name=design.endog_name,
        inferences={"oracle": inf}, cov_type="oracle", nobs=design.nobs,
        df_model=design.k_exog - int(design.has_intercept), private=False,
        family_label=family.label, engine="oracle (non-private)", settings={},
        n_dropped=design.n_dropped, formula=design.formula, cov_matrix=cov,
        design_info=design.design_info)
