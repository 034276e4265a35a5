"""Inference and aggregation from the iterates of a private path (post-processing).

Interval constructions of the dpgd-linear-regression paper (Brown et al. 2024, s.3.1):
each gives ``m`` estimates ``theta^(1), ..., theta^(m)`` and the t interval

    theta_bar_j +/- t_{alpha/2, m-1} s_j / sqrt(m),    (3.1)

with ``theta_bar`` their mean and ``s_j`` their sample standard deviation:

* batch means: the post-burn-in iterates of one run cut into ``m`` consecutive batches
  of length ``L``, each averaged;
* checkpoints: the last iterate of each of those batches (every ``L``-th iterate);
* independent runs: one estimate per run (each run pays its own budget).

Checkpoint aggregation of the recycling-scraps paper (Shejwalkar et al. 2022, s.2.1.1):
the exponential moving average with warm-up and the uniform past-k average, and the
sample variance of the last checkpoints as an estimate of the variance of the last
iterate (their s.3.1). All of it reads released iterates only: no privacy cost.

Iterates are passed as ``(T, p)`` arrays ``theta_1, ..., theta_T`` (without the start).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpreg._checks import number_in
from dpreg.exceptions import OptionError
from dpreg.inference.base import Inference, StudentLaw

__all__ = ["IterateInference", "batch_layout", "batch_means", "checkpoint_estimates",
           "ema", "upa", "aggregate", "t_inference", "AGGREGATES"]

AGGREGATES = ("last", "mean", "ema", "upa")


@dataclass(frozen=True, eq=False)
class IterateInference(Inference):
    """A t interval (3.1) centred at the mean of its ``m`` estimates.

    The interval and the p-value are about ``center`` (``theta_bar`` of the
    construction), whatever point estimate a Results object reports: with
    ``aggregate="mean"`` the two coincide; with another aggregate (last iterate, EMA,
    past-k average) the reported estimate differs from ``theta_bar`` and the interval
    stays the paper's.

    Attributes
    ----------
    center : ndarray (p,)
        ``theta_bar``, the mean of the estimates.
    estimates : ndarray (m, p)
        The ``m`` estimates.
    """

    center: np.ndarray | None = None
    estimates: np.ndarray | None = None

    def conf_int(self, params: np.ndarray, alpha: float) -> np.ndarray:
        return super().conf_int(self.center if self.center is not None else params, alpha)

    def statistic(self, params: np.ndarray) -> np.ndarray:
        return super().statistic(self.center if self.center is not None else params)


def _as_iterates(iterates) -> np.ndarray:
    it = np.asarray(iterates, dtype=float)
    if it.ndim != 2 or it.shape[0] < 1:
        raise OptionError(f"iterates must be a (T, p) array with T >= 1; got shape {it.shape}")
    return it


def batch_layout(steps: int, burn_in: int, m: int) -> tuple[int, int]:
    """``(start, L)``: the iterates ``start, ..., start + m L - 1`` (0-based) form ``m``
    batches of length ``L = floor((steps - burn_in) / m)``, ending at the last iterate.

    The ``(steps - burn_in) mod m`` iterates that do not fill a batch are dropped at the
    front (a slightly longer burn-in), so the last checkpoint is the final iterate.

    Raises
    ------
    OptionError
        If fewer than ``m`` iterates follow the burn-in (names ``steps``, ``burn_in``
        and ``n_estimates``).
    """
    if burn_in < 0 or m < 2:
        raise OptionError(f"burn_in must be >= 0 and n_estimates >= 2; got burn_in={burn_in}, "
                          f"n_estimates={m}")
    length = (steps - burn_in) // m
    if length < 1:
        raise OptionError(f"steps = {steps} leaves {max(steps - burn_in, 0)} iterates after "
                          f"burn_in = {burn_in}: fewer than n_estimates = {m}; increase steps "
                          "or lower burn_in / n_estimates")
    return steps - m * length, length


def batch_means(iterates, burn_in: int, m: int) -> np.ndarray:
    """``(m, p)`` means of ``m`` consecutive batches of the post-burn-in iterates (s.3.1,
    "All Iterates/Batched Means")."""
    it = _as_iterates(iterates)
    start, length = batch_layout(it.shape[0], burn_in, m)
    return it[start:].reshape(m, length, it.shape[1]).mean(axis=1)


def checkpoint_estimates(iterates, burn_in: int, m: int) -> np.ndarray:
    """``(m, p)`` checkpoints: the last iterate of each batch of :func:`batch_means`, i.e.
    every ``L``-th post-burn-in iterate, the last being the final iterate (s.3.1,
    "Checkpoints").

    When the burn-in and the spacing are long against the mixing time the checkpoints are
    nearly independent draws from the stationary law, so their sample variance estimates
    the variance of the last iterate about its stationary mean (recycling-scraps paper,
    Theorem 3.1); :func:`t_inference` turns them into the checkpoint interval."""
    it = _as_iterates(iterates)
    start, length = batch_layout(it.shape[0], burn_in, m)
    return it[start + length - 1::length][:m]


def ema(iterates, beta: float) -> np.ndarray:
    """Exponential moving average with warm-up (recycling-scraps paper, s.2.1.1).

    ``e_0 = theta_(0)`` (the first iterate given) and for ``k = 1, 2, ...``

        beta_k = min(beta, (1 + k) / (10 + k)),   e_k = beta_k e_{k-1} + (1 - beta_k) theta_(k).

    ``beta_k`` weighs the *old* average, as in TensorFlow's ExponentialMovingAverage with
    ``num_updates``, whose warm-up the paper cites (Tan and Le 2019). The paper prints
    ``(1 - beta_t) e_{t-1} + beta_t theta_t``, which with ``beta = 0.999`` would return
    almost exactly the last iterate and make the warm-up pointless: a slip.

    Parameters
    ----------
    iterates : array-like (K, p)
        The iterates to average, oldest first (the post-burn-in iterates in dpreg).
    beta : float
        In (0, 1); dpreg's default 0.999.
    """
    it = _as_iterates(iterates)
    number_in("ema_beta", beta, 0, 1)
    k = np.arange(1, it.shape[0], dtype=float)
    b = np.minimum(beta, (1.0 + k) / (10.0 + k))
    # e_K = prod_k b_k * theta_0 + sum_k (1 - b_k) prod_{l > k} b_l * theta_k, computed as
    # weights so that no Python loop runs over the iterates
    tail = np.concatenate([np.cumprod(b[::-1])[::-1][1:], [1.0]]) if b.size else np.empty(0)
    weights = np.concatenate([[np.prod(b)], (1.0 - b) * tail])
    return weights @ it


def upa(iterates, k: int) -> np.ndarray:
    """Uniform past-k average: the mean of the last ``k`` iterates (recycling-scraps paper,
    s.2.1.1, ``theta_upa^{t,k} = k^{-1} sum_{i=t-k+1}^t theta^i``)."""
    it = _as_iterates(iterates)
    if not 1 <= k <= it.shape[0]:
        raise OptionError(f"upa_k must be between 1 and the {it.shape[0]} post-burn-in "
                          f"iterates, got {k!r}")
    return it[-k:].mean(axis=0)


def aggregate(iterates, how: str, *, beta: float = 0.999, k: int | None = None) -> np.ndarray:
    """Point estimate from iterates: ``"last"``, ``"mean"``, ``"ema"`` or ``"upa"``.

    Parameters
    ----------
    iterates : array-like (K, p)
        Post-burn-in iterates, oldest first.
    how : {"last", "mean", "ema", "upa"}
    beta : float
        EMA coefficient (see :func:`ema`).
    k : int, optional
        Window of the past-k average (required for ``"upa"``).

    Returns
    -------
    ndarray (p,)
        The aggregated estimate.
    """
    it = _as_iterates(iterates)
    if how == "last":
        return it[-1].copy()
    if how == "mean":
        return it.mean(axis=0)
    if how == "ema":
        return ema(it, beta)
    if how == "upa":
        if k is None:
            raise OptionError("aggregate='upa' needs upa_k")
        return upa(it, k)
    raise OptionError(f"aggregate must be one of {AGGREGATES}, got {how!r}")


def t_inference(estimates, method: str, note: str = "") -> IterateInference:
    """The t interval (3.1) from ``m`` estimates.

    Parameters
    ----------
    estimates : array-like (m, p)
        ``m >= 2`` estimates (batch means, checkpoints or runs).
    method : str
        ``"batch_means"``, ``"checkpoints"`` or ``"runs"``.
    note : str
        One line for the summary.

    Returns
    -------
    IterateInference
        ``scale = s_j / sqrt(m)`` (the standard error of ``theta_bar``), law
        ``t(m - 1)``, ``center = theta_bar``.
    """
    est = np.asarray(estimates, dtype=float)
    if est.ndim != 2 or est.shape[0] < 2:
        raise OptionError(f"a t interval needs at least 2 estimates; got shape {est.shape}")
    m = est.shape[0]
    scale = est.std(axis=0, ddof=1) / np.sqrt(m)
    return IterateInference(method=method, scale=scale, law=StudentLaw(m - 1),
                            is_standard_error=True, note=note, center=est.mean(axis=0),
                            estimates=est)
