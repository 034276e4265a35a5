"""Predictions at public covariate values with their uncertainty: ``get_prediction``.

The mean at a row ``x`` is the family's inverse link of ``x' theta``
(:attr:`dpreg.families.Family.inverse_link`: the identity for linear index families,
``1 / (1 + exp(-x' theta))`` for logistic). Its standard error comes from the delta
method with the fit's private covariance, ``se(x' theta) = sqrt(x' C x)``, times the
derivative of the inverse link (``p (1 - p)`` for logistic probabilities); intervals
for probabilities transform the interval of the linear index (statsmodels' ``"endpoint"``
method, so they stay inside (0, 1)). With random scaling the interval of ``x' theta``
uses the random-scaling scale of that contrast and the exact law of the scalar pivot
(there is no standard error). Only released quantities and the public rows enter.

DP-SGD's logistic estimates are the averaged iterate divided by the curvature factor
``k`` (:mod:`dpreg.inference.diagnostics`, "Curvature bias"), so each prediction's
linear index moved by ``(k - 1) |x' theta|``. The correction is approximate (one ``k``
for every row) and its error grows with its size, as for a coefficient: a row whose
index moved by over :data:`~dpreg.inference.diagnostics.CURVATURE_PREDICTION_LIMIT`
plug-in standard errors of ``x' theta`` is flagged (``flagged``) and named in a
:class:`~dpreg.exceptions.ConvergenceWarning`. Measured on the textbook study's 10%-ones
logit (``validation/prediction_intervals.py``, 600 fits at n = 2,000, mu = 5), the
unwarned fits' flagged predictions covered 0.79-0.85 and the unflagged ones 0.959-0.967;
the coefficients' flags do not find such rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from dpreg._checks import number_in
from dpreg.exceptions import ConvergenceWarning, user_stacklevel
from dpreg.inference.diagnostics import CURVATURE_PREDICTION_LIMIT

__all__ = ["PredictionResults", "predict_rows"]


class PredictionResults:
    """Predicted means at given rows, with standard errors and intervals.

    Attributes
    ----------
    predicted : ndarray
        Predicted mean (probability for logistic fits); ``predicted_mean`` is an alias.
    linpred : ndarray
        Linear index ``x' theta``.
    se : ndarray
        Delta-method standard error of ``predicted`` (NaN for random scaling);
        ``se_mean`` is an alias.
    method : str
        Inference method behind the intervals.
    row_labels : list
    curvature_moved : ndarray or None
        How far the curvature correction of a logistic DP-SGD fit moved each row's
        linear index, in plug-in standard errors of ``x' theta`` (``None`` for fits
        without the correction).
    flagged : ndarray of bool
        Rows whose ``curvature_moved`` exceeds
        :data:`~dpreg.inference.diagnostics.CURVATURE_PREDICTION_LIMIT`: their intervals
        may be shifted (module notes).
    """

    def __init__(self, *, linpred, scale_lin, critical, family, method: str,
                 is_standard_error: bool, row_labels, curvature_moved=None):
        # the fit's family (dpreg.families.Family) says what a prediction is: its
        # inverse link (None: the identity) and whether the outcome is 0/1
        # (probabilities, statsmodels' Logit column names)
        self.linpred = np.asarray(linpred, dtype=float)
        self._scale_lin = np.asarray(scale_lin, dtype=float)
        self._critical = critical
        self.logistic = family.binary_outcome
        self._link = family.inverse_link
        self.method = method
        self.row_labels = list(row_labels)
        if self._link is None:
            self.predicted, deriv = self.linpred.copy(), 1.0
        else:
            self.predicted, deriv, _ = self._link(self.linpred)
        self.se = deriv * self._scale_lin if is_standard_error else np.full_like(
            self.linpred, np.nan)
        self.curvature_moved = (None if curvature_moved is None
                                else np.asarray(curvature_moved, dtype=float))
        self.flagged = (np.zeros(self.linpred.shape, dtype=bool) if curvature_moved is None
                        else self.curvature_moved > CURVATURE_PREDICTION_LIMIT)

    @property
    def predicted_mean(self) -> np.ndarray:
        """Alias of ``predicted`` (statsmodels' name)."""
        return self.predicted

    @property
    def se_mean(self) -> np.ndarray:
        """Alias of ``se`` (statsmodels' name)."""
        return self.se

    @property
    def var_pred_mean(self) -> np.ndarray:
        """Variance of the predicted mean, ``se ** 2`` (statsmodels' name)."""
        return self.se ** 2

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """Intervals of the mean at level ``1 - alpha``.

        Parameters
        ----------
        alpha : float
            In (0, 1).

        Returns
        -------
        ndarray
            ``(k, 2)``: lower and upper end for each row.
        """
        number_in("alpha", alpha, 0, 1)
        half = self._critical(alpha) * self._scale_lin
        ci = np.column_stack([self.linpred - half, self.linpred + half])
        return ci if self._link is None else self._link(ci)[0]

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """Mean, standard error and interval per row, with statsmodels' column names.

        There are no ``obs_ci`` columns: an interval for a new observation needs the
        residual variance, a statistic of the private data that no mechanism released.

        Parameters
        ----------
        alpha : float
            Intervals at level ``1 - alpha``.

        Returns
        -------
        pandas.DataFrame
            ``mean, mean_se, mean_ci_lower, mean_ci_upper`` as for OLS; ``predicted, se,
            ci_lower, ci_upper`` for logistic fits, as for Logit.
        """
        ci = self.conf_int(alpha)
        names = (("predicted", "se", "ci_lower", "ci_upper") if self.logistic
                 else ("mean", "mean_se", "mean_ci_lower", "mean_ci_upper"))
        cols = (self.predicted, self.se, ci[:, 0], ci[:, 1])
        return pd.DataFrame(dict(zip(names, cols, strict=True)), index=self.row_labels)


def predict_rows(results, X: np.ndarray, row_labels, method: str | None) -> PredictionResults:
    """:class:`PredictionResults` for the design rows ``X`` (see the module docstring)."""
    from dpreg.results.hypothesis import contrast_scales, joint_source, resolve_method

    method = resolve_method(results, method, X)
    _, _, center, _ = joint_source(results, method)
    scale, law, name, is_se = contrast_scales(results, X, method)
    moved = curvature_moved(results, X)
    out = PredictionResults(linpred=X @ center, scale_lin=scale, critical=law.critical_value,
                            family=results.family, method=name, is_standard_error=is_se,
                            row_labels=row_labels, curvature_moved=moved)
    if out.flagged.any():
        rows = [label for label, f in zip(out.row_labels, out.flagged, strict=True) if f]
        k = results.convergence.curvature_factor
        warnings.warn(
            f"The curvature correction (every estimate is the averaged iterate divided by "
            f"k = {k:.4g}) moved the linear index of the predictions at rows {rows} by over "
            f"{CURVATURE_PREDICTION_LIMIT:g} plug-in standard error. The correction is "
            "approximate and its error grows with its size: the intervals of these "
            "predictions may be shifted (PredictionResults.flagged). Raise the budget, use "
            "fewer steps= or a smaller lr=.", ConvergenceWarning, stacklevel=user_stacklevel())
    return out


def curvature_moved(results, X: np.ndarray) -> np.ndarray | None:
    """How far the curvature correction of a logistic DP-SGD fit moved each row's linear
    index ``x' theta``, in plug-in standard errors of ``x' theta`` (module notes);
    ``None`` where the fit made no correction."""
    from dpreg.inference.diagnostics import curvature_bias
    from dpreg.results.hypothesis import contrast_scales

    report = getattr(results, "convergence", None)  # an optional part: DP-SGD's
    k = None if report is None else report.curvature_factor
    if k is None or "plugin" not in results.inferences:
        return None
    # the coefficients' measure applied to x' theta: (1 - 1/k) |k x' theta| over its s.e.
    averaged = k * (X @ results.params.to_numpy())
    return curvature_bias(averaged, None, None, None, contrast_scales(results, X, "plugin")[0],
                          factor=k)
