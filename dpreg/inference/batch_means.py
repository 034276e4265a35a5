"""Batch-means inference on an SGD path with growing batches (Chen et al. 2020, s.4).

With step decay ``alpha``, the iterates decorrelate on a time scale that grows like
``t^alpha``, so equal batches are wrong; Chen et al. end batch ``k`` at
``e_k = ((k + 1) N)^{1/(1-alpha)}``, ``k = 0..M``, with ``N`` such that ``e_M = n``, drop
batch 0 and estimate the long-run covariance by

    Sigma_hat = M^-1 sum_{k=1}^M n_k (xbar_k - xbar)(xbar_k - xbar)',

``n_k`` the batch length, ``xbar_k`` the batch's mean iterate, ``xbar`` the mean of all
iterates after batch 0. Chen et al. use ``theta_bar +/- z sqrt(Sigma_hat_jj / n)``, which
is right as ``M`` grows; at the ``M ~ n^0.25`` batches anyone can afford (12 at
``n = 20,000``) it is not. Once the batches are long enough to be independent, with
means ``N(theta, Sigma / n_k)``, ``sum_k n_k (xbar_k - xbar)^2`` is exactly ``Sigma_jj``
times a chi-square with ``M - 1`` degrees of freedom, independent of ``theta_bar`` (the
deviations are orthogonal to the weighted mean, and batch 0 is not among them), so

    (theta_bar - theta) / sqrt(Sigma_hat_jj / n)  ~  sqrt(M / (M - 1)) t_{M-1}

and dpreg uses that critical value (:func:`batch_means_critical_value`): 2.30 instead
of 1.96 at ``M = 12``. Normal critical values cover at most ``P(|t_11| < 1.96 *
sqrt(11/12)) = 0.91`` there even with perfect batches. On the
LDP path this is post-processing (the ldp-sgd paper's PBM); ``M ~ n^0.25`` (their s.5
uses ``M = 20`` at ``n = 200,000``). The estimator converges more slowly than the plug-in
(Chen et al., Thm 4.3), and the ldp-sgd paper's Table 1 shows it undercovering at
``n = 40,000``; dpreg reproduces that rather than hides it.

Batch ends are rounded to the steps at which the running average was recorded (a
geometric grid with ratio 1.01), so the batches are the paper's up to 1% of their length.
"""

from __future__ import annotations

import numpy as np

from dpreg.exceptions import OptionError
from dpreg.inference.base import Inference, StudentLaw

__all__ = ["batch_ends", "batch_layout", "batch_means_covariance", "batch_means_critical_value",
           "batch_means_inference", "default_n_batches"]


def default_n_batches(n: int) -> int:
    """``M = round(n^{1/4})``, at least 2 (Chen et al. 2020; ldp-sgd paper s.5)."""
    return max(2, int(round(n ** 0.25)))


def batch_ends(n: int, n_batches: int, lr_decay: float) -> np.ndarray:
    """``e_0 < ... < e_M = n`` with ``e_k = ((k + 1) N)^{1/(1-alpha)}`` (real numbers)."""
    k = np.arange(n_batches + 1, dtype=float)
    big_n = n ** (1.0 - lr_decay) / (n_batches + 1)
    return ((k + 1) * big_n) ** (1.0 / (1.0 - lr_decay))


def _end_positions(steps: np.ndarray, n_batches: int, lr_decay: float) -> np.ndarray:
    """Positions in ``steps`` of the batch ends :func:`batch_ends` (each the nearest
    recorded step; duplicates merged)."""
    n = int(steps[-1])
    ends = batch_ends(n, n_batches, lr_decay)
    idx = np.searchsorted(steps, ends, side="left").clip(0, len(steps) - 1)
    # nearest recorded step to each end (the grid is fine, so this moves ends by <= 1%)
    lower = (idx - 1).clip(0)
    idx = np.where(np.abs(steps[lower] - ends) < np.abs(steps[idx] - ends), lower, idx)
    idx[-1] = len(steps) - 1
    idx = np.unique(idx)
    if len(idx) < 3:
        raise OptionError(f"batch means need at least 2 batches after the first; the path "
                          f"of {n} steps is too short for {n_batches} batches")
    return idx


def batch_layout(steps, n_batches: int, lr_decay: float) -> np.ndarray:
    """The recorded steps ``e_0 < ... < e_M`` at which :func:`batch_means_covariance`
    cuts the path (its first batch, up to ``e_0``, is dropped).

    Parameters
    ----------
    steps : ndarray (K,)
        Increasing recorded steps; the last is ``n``.
    n_batches : int
        ``M`` requested.
    lr_decay : float
        ``alpha``.

    Returns
    -------
    ndarray of int
    """
    steps = np.asarray(steps, dtype=np.int64)
    return steps[_end_positions(steps, n_batches, lr_decay)]


def batch_means_covariance(steps: np.ndarray, averages: np.ndarray, n_batches: int,
                           lr_decay: float) -> tuple[np.ndarray, int]:
    """Chen et al.'s batch-means covariance from recorded running averages.

    Parameters
    ----------
    steps : ndarray (K,)
        Increasing steps ``t`` at which ``averages`` were recorded; the last is ``n``.
    averages : ndarray (K, p)
        Running averages ``theta_bar_t``; cumulative sums are ``t theta_bar_t``.
    n_batches : int
        ``M``.
    lr_decay : float
        ``alpha`` of the step size.

    Returns
    -------
    (Sigma_hat, M_used) : (ndarray (p, p), int)
        ``M_used`` is the number of non-empty batches after rounding the ends to
        ``steps`` (fewer than ``M`` only for very short paths).
    """
    steps = np.asarray(steps, dtype=np.int64)
    cum = steps[:, None] * np.asarray(averages, dtype=float)
    idx = _end_positions(steps, n_batches, lr_decay)
    e = steps[idx]
    c = cum[idx]
    lengths = np.diff(e).astype(float)
    means = np.diff(c, axis=0) / lengths[:, None]
    overall = (c[-1] - c[0]) / (e[-1] - e[0])
    dev = means - overall
    sigma = (dev * lengths[:, None]).T @ dev / len(lengths)
    return sigma, len(lengths)


def batch_means_critical_value(n_used: int, alpha: float = 0.05) -> float:
    """Two-sided critical value of ``(theta_bar - theta) / sqrt(Sigma_hat_jj / n)`` with
    ``n_used`` batches: ``sqrt(M / (M - 1)) t_{M-1, 1 - alpha/2}`` (see the module)."""
    m = int(n_used)
    return float(np.sqrt(m / (m - 1)) * StudentLaw(m - 1).critical_value(alpha))


def batch_means_inference(steps: np.ndarray, averages: np.ndarray, n_batches: int,
                          lr_decay: float, note: str = "") -> Inference:
    """Intervals ``theta_bar_n +/- sqrt(M/(M-1)) t_{M-1} sqrt(Sigma_hat_jj / n)``.

    See the module notes: the scale is ``sqrt(Sigma_hat_jj / ((M - 1) n / M))`` and the
    law Student's t with ``M - 1`` degrees of freedom.

    Parameters
    ----------
    steps : ndarray (K,)
        Increasing steps at which ``averages`` were recorded; the last is ``n``.
    averages : ndarray (K, p)
        Running averages ``theta_bar_t`` at ``steps``.
    n_batches : int
        ``M``.
    lr_decay : float
        ``alpha`` of the step size (sets the batches' growth).
    note : str
        The summary's line (default: a description of the batches).

    Returns
    -------
    dpreg.inference.base.Inference
        Method ``"batch_means"`` with the scale and law above.
    """
    sigma, used = batch_means_covariance(steps, averages, n_batches, lr_decay)
    n = int(np.asarray(steps)[-1])
    scale = np.sqrt(np.clip(np.diag(sigma), 0.0, None) / n * used / (used - 1))
    text = note or (f"Batch means: {used} batches growing as k^(1/(1-alpha)) (Chen et al. "
                    f"2020), t critical values with {used - 1} degrees of freedom; converges "
                    "more slowly than the plug-in.")
    return Inference("batch_means", scale, StudentLaw(used - 1), True, text)
