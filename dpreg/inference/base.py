"""The record every inference method returns: a scale per coefficient and a law.

A confidence interval is ``params -/+ law.critical_value(alpha) * scale`` and a p-value
for ``H0: theta_j = 0`` is ``law.two_sided_pvalue(params_j / scale_j)``. Methods are
functions ``(inputs) -> Inference``; Results only read these records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Inference", "NormalLaw", "StudentLaw"]


class NormalLaw:
    """Standard normal reference law."""

    name = "normal"

    def critical_value(self, alpha):
        return stats.norm.isf(np.asarray(alpha) / 2)

    def two_sided_pvalue(self, stat):
        return 2 * stats.norm.sf(np.abs(stat))


class StudentLaw:
    """Student t reference law with ``df`` degrees of freedom."""

    def __init__(self, df: float):
        self.df = float(df)
        self.name = f"t({self.df:g})"

    def critical_value(self, alpha):
        return stats.t.isf(np.asarray(alpha) / 2, self.df)

    def two_sided_pvalue(self, stat):
        return 2 * stats.t.sf(np.abs(stat), self.df)


@dataclass(frozen=True, eq=False)
class Inference:
    """Scale, reference law and a description of one interval construction.

    Attributes
    ----------
    method : str
        ``"plugin"``, ``"rs"``, ``"oracle"``, ...
    scale : ndarray (p,)
        Per-coefficient scale; for plug-in and oracle it is the standard error.
    law : object
        Has ``critical_value(alpha)`` and ``two_sided_pvalue(stat)``.
    is_standard_error : bool
        Whether ``scale`` estimates the standard deviation of the estimate.
    note : str
        One line for the summary (which correction was applied, eigenvalue floors).
    cov : ndarray (p, p) or None
        The method's covariance matrix of the estimate, when it has its own (tests of
        restrictions then use it whatever the fit's ``cov_type``); ``None`` for methods
        that use the fit's ``cov_params()`` or have none.
    cov_replicates : ndarray (B, p, p) or None
        A private covariance re-released ``B`` times from its own released matrices
        with its mechanisms' noise (a parametric bootstrap of the released statistics,
        post-processing): the reference law of joint tests, whose quadratic form a noisy
        covariance's small eigenvalues inflate (:mod:`dpreg.results.hypothesis`).
    """

    method: str
    scale: np.ndarray
    law: object
    is_standard_error: bool
    note: str = ""
    cov: np.ndarray | None = None
    cov_replicates: np.ndarray | None = None

    def conf_int(self, params: np.ndarray, alpha: float) -> np.ndarray:
        """Intervals ``params -/+ law.critical_value(alpha) * scale``.

        Parameters
        ----------
        params : ndarray (p,)
            The estimate.
        alpha : float
            Level ``1 - alpha``.

        Returns
        -------
        ndarray (p, 2)
            Lower and upper end for each coefficient.
        """
        half = self.law.critical_value(alpha) * self.scale
        return np.column_stack([params - half, params + half])

    def statistic(self, params: np.ndarray) -> np.ndarray:
        """The Wald-type statistic ``params / scale``.

        Parameters
        ----------
        params : ndarray (p,)
            The estimate.

        Returns
        -------
        ndarray (p,)
            The statistic, whose law is ``law`` under ``H0: theta_j = 0``.
        """
        return params / self.scale

    def pvalues(self, params: np.ndarray) -> np.ndarray:
        """Two-sided p-values of ``H0: theta_j = 0``.

        Parameters
        ----------
        params : ndarray (p,)
            The estimate.

        Returns
        -------
        ndarray (p,)
            ``law.two_sided_pvalue(statistic(params))``.
        """
        return self.law.two_sided_pvalue(self.statistic(params))
