"""Non-private M-estimation of the same model and loss, clearly labelled, for comparison.

:func:`fit_oracle` fits a design and objective (the front end :func:`dpreg.oracle`
builds them from a formula).

The oracle reads the raw data without any privacy protection. It is never stored in a
private Results object; it is always a separate :class:`~dpreg.results.DPRegressionResults`
with ``private=False``. It minimizes exactly the private fit's loss (weights and
constants included): statsmodels OLS and Logit where they compute that estimator,
otherwise a trust-region Newton solver on the weighted M-estimation objective with a
sandwich covariance.
"""

from __future__ import annotations

import warnings

import numpy as np
import statsmodels.api as sm
from scipy import optimize

from dpreg.design import Design
from dpreg.exceptions import ConvergenceWarning
from dpreg.families import Objective, dispatch
from dpreg.inference.base import Inference, NormalLaw, StudentLaw
from dpreg.results import DPRegressionResults, ResultsRecord

__all__ = ["fit_oracle", "m_estimate"]


def m_estimate(X: np.ndarray, y: np.ndarray, objective: Objective,
               start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """Minimize ``n^{-1} sum_i w_i l(y_i, x_i' theta)``; return ``(theta, cov, converged)``.

    ``cov`` is the sandwich ``A^{-1} S A^{-1} / n`` with ``A`` the mean weighted Hessian
    and ``S`` the mean outer product of the weighted scores at the solution.
    """
    n, p = X.shape
    w = objective.weights
    code, c, tau = objective.family.code, objective.c, objective.tau
    grad, hess = np.empty(p), np.empty((p, p))

    def terms(theta):
        val = dispatch.objective_terms(X, y, w, code, c, tau, theta, grad, hess)
        return val / n, grad / n, hess / n

    def fun(theta):
        val, g, _ = terms(theta)
        return val, g.copy()

    def hessp(theta):
        return terms(theta)[2].copy()

    theta0 = np.zeros(p) if start is None else start
    sol = optimize.minimize(fun, theta0, jac=True, hess=hessp, method="trust-exact",
                            options={"gtol": 1e-10, "maxiter": 500})
    theta = sol.x
    _, _, A = terms(theta)
    xnorm = np.sqrt(np.einsum("ij,ij->i", X, X))
    scores = np.empty_like(X)
    dispatch.clipped_gradients(X, y, xnorm, w, code, c, tau, theta, np.inf, scores)
    S = scores.T @ scores / n
    Ainv = np.linalg.pinv(A)
    return theta, Ainv @ S @ Ainv / n, bool(sol.success)


def fit_oracle(design: Design, objective: Objective) -> DPRegressionResults:
    """Oracle fit of a checked design (statsmodels where it computes the same estimator)."""
    family = objective.family
    y, X = design.endog, design.exog  # declared bounds already enforced by the design
    label = "Oracle: " + objective.label() + " on the raw data"
    if family.statsmodels_model == "OLS" and not objective.mallows:
        res = sm.OLS(y, X).fit()
        params, cov = np.asarray(res.params), np.asarray(res.cov_params())
        law = StudentLaw(res.df_resid)
        label += " (statsmodels OLS)."
    elif family.statsmodels_model == "Logit" and not objective.mallows:
        params, cov = _logit(y, X)
        law = NormalLaw()
        label += " (statsmodels Logit)."
    else:
        # from least squares for the regression families (as statsmodels' RLM): from 0 a
        # Huber fit in natural units starts where most residuals are beyond c, where the
        # Hessian is nearly 0, and the trust region ends short of its tolerance
        start = None if family.binary_outcome else np.linalg.lstsq(X, y, rcond=None)[0]
        params, cov, converged = m_estimate(X, y, objective, start=start)
        if not converged:
            warnings.warn("the oracle's solver did not meet its tolerance; its numbers may be "
                          "inaccurate", ConvergenceWarning, stacklevel=3)
        law = NormalLaw()
        label += " (trust-region Newton, sandwich standard errors)."
    inf = Inference("oracle", np.sqrt(np.diag(cov)), law, True, label)
    return DPRegressionResults(ResultsRecord(
        params=params, names=design.exog_names, endog_name=design.endog_name,
        inferences={"oracle": inf}, cov_type="oracle", nobs=design.nobs,
        df_model=design.df_model, private=False,
        family_label=objective.label(), engine="oracle (non-private)", settings={},
        n_dropped=design.n_dropped, formula=design.formula, cov_matrix=cov,
        design_info=design.design_info))


def _logit(y, X):
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    singular = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = sm.Logit(y, X).fit(disp=0, maxiter=200)
        except np.linalg.LinAlgError:
            # statsmodels < 0.15: Newton's Hessian becomes singular when the fitted
            # probabilities reach 0 and 1 (separation) instead of a warning; BFGS gives
            # the finite numbers the warning below qualifies
            singular = True
            res = sm.Logit(y, X).fit(disp=0, maxiter=200, method="bfgs")
    separated = singular \
        or any(issubclass(w.category, PerfectSeparationWarning) for w in caught) \
        or not res.mle_retvals.get("converged", True)
    if separated:
        warnings.warn("the outcome is (quasi-)perfectly separated by the covariates: the "
                      "maximum likelihood estimate does not exist (coefficients run to "
                      "infinity), so the oracle's estimates and standard errors are not "
                      "meaningful. The private fit stays finite but estimates a "
                      "regularized target.", ConvergenceWarning, stacklevel=4)
    return np.asarray(res.params), np.asarray(res.cov_params())
