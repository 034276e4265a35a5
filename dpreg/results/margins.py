"""Marginal effects at public covariate values: ``get_margeff``.

For a logistic fit the effect of regressor ``k`` at row ``x`` is
``d p / d x_k = p (1 - p) theta_k`` with ``p = 1 / (1 + exp(-x' theta))``; at several
public rows the effects are averaged over them. Standard errors use the delta method
with the fit's private covariance: the Jacobian of the effects in ``theta`` is
``p (1 - p) [I + (1 - 2 p) theta x']`` (averaged over the rows). For the linear index
families the effect is ``theta_k`` itself, wherever it is evaluated.

statsmodels' default ``at="overall"`` averages the effects over the estimation rows and
``"mean"``/``"median"`` evaluate them at the rows' mean or median: statistics of the
private data that no mechanism paid for. They are refused, with the public spelling
that replaces them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpreg._checks import number_in
from dpreg.exceptions import OptionError, PrivateStatisticError

__all__ = ["Margins", "margins"]

_PRIVATE_AT = ("overall", "mean", "median", "all")
_INTERCEPTS = ("Intercept", "const")


class Margins:
    """Marginal effects with statsmodels' ``DiscreteMargins`` attribute names.

    Attributes
    ----------
    margeff : ndarray
        Effects ``dy/dx`` of the non-constant regressors.
    margeff_se : ndarray
        Delta-method standard errors (NaN for random scaling, which has none).
    tvalues, pvalues : ndarray
    names : list of str
    method : str
        Inference method.
    """

    def __init__(self, *, margeff, scale, law, names, method: str, is_standard_error: bool,
                 at):
        self.margeff = np.asarray(margeff, dtype=float)
        self._scale = np.asarray(scale, dtype=float)
        self._law = law
        self.names = list(names)
        self.method = method
        self.at = at
        self.margeff_se = self._scale if is_standard_error else np.full_like(self._scale,
                                                                             np.nan)
        self.tvalues = self.margeff / self._scale
        self.pvalues = law.two_sided_pvalue(self.tvalues)

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """Intervals of the effects at level ``1 - alpha``.

        Parameters
        ----------
        alpha : float
            In (0, 1).

        Returns
        -------
        ndarray
            ``(k, 2)``: lower and upper end for each effect.
        """
        number_in("alpha", alpha, 0, 1)
        half = self._law.critical_value(alpha) * self._scale
        return np.column_stack([self.margeff - half, self.margeff + half])

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """The effects as a DataFrame with statsmodels' column names.

        Parameters
        ----------
        alpha : float
            Intervals at level ``1 - alpha``.

        Returns
        -------
        pandas.DataFrame
            Columns ``dy/dx``, ``Std. Err.``, ``z``, ``Pr(>|z|)``, ``Conf. Int. Low`` and
            ``Cont. Int. Hi.`` (statsmodels' spelling).
        """
        ci = self.conf_int(alpha)
        return pd.DataFrame({"dy/dx": self.margeff, "Std. Err.": self.margeff_se,
                             "z": self.tvalues, "Pr(>|z|)": self.pvalues,
                             "Conf. Int. Low": ci[:, 0], "Cont. Int. Hi.": ci[:, 1]},
                            index=self.names)

    def summary(self, alpha: float = 0.05):
        """A statsmodels ``Summary`` of the effects.

        Parameters
        ----------
        alpha : float
            Intervals at level ``1 - alpha``.

        Returns
        -------
        dpreg.results.tables.Summary
            The table of :meth:`summary_frame` and where the effects were evaluated.
        """
        from dpreg.results.tables import Summary

        smry = Summary()
        smry.add_title("Marginal effects (dy/dx)")
        smry.add_df(self.summary_frame(alpha), float_format="%.4f")
        where = "zero (intercept 1)" if isinstance(self.at, str) else "the given public rows"
        smry.add_text(f"Evaluated at {where}; inference: {self.method}.")
        return smry


def _rows(results, at, atexog) -> np.ndarray:
    names = list(results.params.index)
    if isinstance(at, str):
        if at in _PRIVATE_AT:
            raise PrivateStatisticError(
                f"get_margeff(at={at!r}) would evaluate the effects at statistics of the "
                "private rows (their average, mean or median), which no mechanism paid "
                "for. Pass public covariate values instead: at=pandas.DataFrame({...}) "
                "with the formula's variables (or a design matrix), or at='zero' with "
                "atexog={name: value}")
        if at != "zero":
            raise OptionError(f"at must be 'zero' or public covariate values, got {at!r}")
        X = np.zeros((1, len(names)))
        X[0, [i for i, n in enumerate(names) if n in _INTERCEPTS]] = 1.0
    else:
        X, _ = results.exog_matrix(at, name="at")
        X = X.copy()
    if atexog is not None:
        if not isinstance(atexog, dict):
            raise OptionError("atexog must be a dict {column name or index: value}")
        for key, value in atexog.items():
            j = key if isinstance(key, (int, np.integer)) else (
                names.index(key) if key in names else None)
            if j is None or not 0 <= j < len(names):
                raise OptionError(f"atexog names {key!r}, not a column of {names}")
            X[:, j] = value
    return X


def margins(results, *, at="overall", method="dydx", atexog=None, dummy=False, count=False,
            inference=None) -> Margins:
    """:class:`Margins` of ``results`` (see the module docstring and
    :meth:`dpreg.DPRegressionResults.get_margeff`)."""
    if method != "dydx":
        raise OptionError(f"method must be 'dydx' (elasticities are not supported), got "
                          f"{method!r}")
    if dummy or count:
        raise OptionError("dummy=True and count=True are not supported: pass the public "
                          "rows at which to compare instead and use predict()")
    X = _rows(results, at, atexog)
    names = list(results.params.index)
    keep = [i for i, n in enumerate(names) if n not in _INTERCEPTS]
    theta = results.params.to_numpy()
    p = len(theta)
    link = results.family.inverse_link
    if link is not None:
        # d mean / d x_k = g'(x' theta) theta_k; its Jacobian in theta is
        # g' I + theta (g'' x)' (averaged over the rows)
        _, w, w2 = link(X @ theta)
        effect = (w.mean() * theta)[keep]
        jac = (np.mean(w) * np.eye(p)
               + np.outer(theta, w2 @ X / X.shape[0]))[keep]
    else:
        effect = theta[keep]
        jac = np.eye(p)[keep]
    from dpreg.results.hypothesis import contrast_scales

    scale, law, method_name, is_se = contrast_scales(results, jac, inference)
    return Margins(margeff=effect, scale=scale, law=law, names=[names[i] for i in keep],
                   method=method_name, is_standard_error=is_se, at=at)
