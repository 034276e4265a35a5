"""Intervals from bootstrap replicates: percentile and basic (pivotal), p-values by inversion.

A bootstrap record keeps the ``B x p`` replicates ``theta*_1, ..., theta*_B`` of the
estimate (drawn by post-processing of released quantities: see
:func:`dpreg.inference.ssp_estimator.pboot_replicates`) and computes from them, for each
coefficient, with ``q_a`` the ``a``-quantile of the replicates (numpy's default linear
interpolation):

* ``"percentile"``: ``[q_{alpha/2}, q_{1-alpha/2}]`` (Efron's percentile interval; the
  construction of Ferrando, Wang and Sheldon 2022);
* ``"basic"``: ``[2 theta~ - q_{1-alpha/2}, 2 theta~ - q_{alpha/2}]`` (the basic or
  pivotal interval of Davison and Hinkley 1997, ch. 5), which moves against a bias of
  the replicates about the estimate;
* the p-value of ``H0: theta_j = v``: the smallest ``alpha`` at which the interval
  excludes ``v``. For the percentile interval that is ``2 min(#{theta*_b <= v},
  #{theta*_b >= v}) / B``; it is reported as ``min(1, 2 min(1 + #{...}, 1 + #{...}) /
  (B + 1))`` so that it is never 0 with finitely many replicates (the Monte Carlo
  p-value convention of Davison and Hinkley 1997, ch. 4). For the basic interval ``v``
  is replaced by ``2 theta~ - v``;
* the standard error: the standard deviation of the replicates (``ddof=1``).

The interval is not symmetric about the estimate, so ``params -/+ c * scale`` of
:class:`~dpreg.inference.base.Inference` does not apply: the record overrides
``conf_int`` and ``pvalues``. ``statistic`` stays ``params / scale`` (the ``z`` column of
a summary); its p-value is the inverted interval's, not the normal law's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpreg.exceptions import OptionError
from dpreg.inference.base import Inference, NormalLaw

__all__ = ["BootstrapInference", "bootstrap_inference", "KINDS"]

#: The bootstrap intervals.
KINDS = ("percentile", "basic")


@dataclass(frozen=True, eq=False)
class BootstrapInference(Inference):
    """An interval from bootstrap replicates (see the module notes).

    Attributes
    ----------
    replicates : ndarray (B, p)
        The replicates ``theta*_b``, in the coordinates of the estimate.
    center : ndarray (p,)
        The estimate ``theta~`` the replicates were drawn about (the basic interval
        reflects the quantiles about it).
    kind : {"percentile", "basic"}
    """

    replicates: np.ndarray | None = None
    center: np.ndarray | None = None
    kind: str = "percentile"

    def _centre(self, params: np.ndarray) -> np.ndarray:
        return np.asarray(params if self.center is None else self.center, dtype=float)

    def conf_int(self, params: np.ndarray, alpha: float) -> np.ndarray:
        """Percentile or basic intervals at level ``1 - alpha``.

        Parameters
        ----------
        params : ndarray (p,)
            The estimate (used when the record has no ``center``).
        alpha : float
            Level ``1 - alpha``.

        Returns
        -------
        ndarray (p, 2)
            Lower and upper end for each coefficient.
        """
        lo, hi = np.quantile(self.replicates, [alpha / 2, 1 - alpha / 2], axis=0)
        if self.kind == "percentile":
            return np.column_stack([lo, hi])
        c = self._centre(params)
        return np.column_stack([2 * c - hi, 2 * c - lo])

    def pvalues_at(self, params: np.ndarray, value) -> np.ndarray:
        """The p-values of ``H0: theta_j = value_j``, by inverting the interval.

        Parameters
        ----------
        params : ndarray (p,)
            The estimate (used when the record has no ``center``).
        value : float or ndarray (p,)
            The null values.

        Returns
        -------
        ndarray (p,)
            The smallest ``alpha`` whose interval excludes ``value`` (module notes).
        """
        v = np.broadcast_to(np.asarray(value, dtype=float), self.replicates.shape[1:])
        if self.kind == "basic":
            v = 2 * self._centre(params) - v
        reps = self.replicates
        below = np.sum(reps <= v, axis=0)
        above = np.sum(reps >= v, axis=0)
        b = reps.shape[0]
        return np.minimum(1.0, 2.0 * (1.0 + np.minimum(below, above)) / (b + 1.0))

    def pvalues(self, params: np.ndarray) -> np.ndarray:
        """Two-sided p-values of ``H0: theta_j = 0`` by inverting the interval.

        Parameters
        ----------
        params : ndarray (p,)
            The estimate.

        Returns
        -------
        ndarray (p,)
            See :meth:`pvalues_at`.
        """
        return self.pvalues_at(params, 0.0)

    def contrast(self, R: np.ndarray, params: np.ndarray) -> "BootstrapInference":
        """The record of ``R theta`` (its replicates are ``R theta*_b``).

        Parameters
        ----------
        R : ndarray (q, p)
        params : ndarray (p,)
            The estimate (used when the record has no ``center``).

        Returns
        -------
        BootstrapInference
        """
        R = np.atleast_2d(np.asarray(R, dtype=float))
        return bootstrap_inference(self.method, self.replicates @ R.T, R @ self._centre(params),
                                   self.kind, self.note)


def bootstrap_inference(method: str, replicates, center, kind: str,
                        note: str = "") -> BootstrapInference:
    """A :class:`BootstrapInference` from replicates.

    Parameters
    ----------
    method : str
        Its name (``"pboot"``, ``"pboot_basic"``).
    replicates : array-like (B, p)
        At least 2 replicates.
    center : array-like (p,)
        The estimate.
    kind : {"percentile", "basic"}
    note : str
        One line for the summary.

    Returns
    -------
    BootstrapInference
        ``scale`` the replicates' standard deviations, ``cov`` their covariance matrix,
        law normal (what tests of several restrictions use).
    """
    if kind not in KINDS:
        raise OptionError(f"kind must be one of {KINDS}, got {kind!r}")
    reps = np.asarray(replicates, dtype=float)
    if reps.ndim != 2 or reps.shape[0] < 2:
        raise OptionError(f"a bootstrap interval needs at least 2 replicates; got shape "
                          f"{reps.shape}")
    cov = np.atleast_2d(np.cov(reps, rowvar=False))
    return BootstrapInference(method=method, scale=np.sqrt(np.diag(cov)), law=NormalLaw(),
                              is_standard_error=True, note=note, cov=cov, replicates=reps,
                              center=np.asarray(center, dtype=float), kind=kind)
