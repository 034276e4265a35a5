"""Plug-in inference with private Hessian and score matrices (dpsgd-inference paper, s.4.1).

The Hessian ``A`` and the score covariance ``S`` at the estimate are computed with
public bounds enforced by clipping (MATH.md s.4): ``A`` from design rows clipped to the
declared norm bound times the family's Hessian-weight bound, ``S`` from per-example
gradients clipped at ``clip``. The model privatizes them with the Gaussian matrix
mechanism; the functions here are pure arithmetic.
"""

from __future__ import annotations

import numpy as np

from dpreg.engines import _kernels
from dpreg.inference.base import Inference, NormalLaw

__all__ = ["hessian_matrix", "score_matrix", "floor_eigenvalues", "path_variance",
           "plugin_inference"]


def clip_rows(X: np.ndarray, bound: float) -> np.ndarray:
    """Rows of ``X`` scaled down to L2 norm at most ``bound``."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    scale = np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))
    return X * scale[:, None]


def hessian_matrix(X, y, theta, family, x_bound: float, clip: float) -> np.ndarray:
    """Hessian of the clipped objective, ``n^{-1} sum_i w_i x~_i x~_i^T``.

    ``w_i = l''(y_i, x_i' theta)`` for rows whose gradient is not clipped at ``clip`` and
    0 for the others (see :func:`dpreg.engines._kernels.hessian_weights`); rows are
    clipped to norm ``x_bound`` so that the sensitivity is ``2 hess_bound x_bound^2 / n``.
    """
    Xc = clip_rows(X, x_bound)
    xnorm = np.sqrt(np.einsum("ij,ij->i", X, X))
    w = np.empty(X.shape[0])
    _kernels.hessian_weights(X, y, xnorm, family.code, 0.0, np.asarray(theta, float), clip, w)
    w = np.clip(w, 0.0, family.hess_bound)
    return (Xc * w[:, None]).T @ Xc / X.shape[0]


def score_matrix(X, y, theta, family, clip: float) -> np.ndarray:
    """``n^{-1} sum_i g~_i g~_i^T`` with per-example gradients clipped at ``clip``."""
    xnorm = np.sqrt(np.einsum("ij,ij->i", X, X))
    g = np.empty_like(X)
    _kernels.clipped_gradients(X, y, xnorm, family.code, 0.0, np.asarray(theta, float), clip, g)
    return g.T @ g / X.shape[0]


def floor_eigenvalues(M: np.ndarray, floor: float) -> tuple[np.ndarray, int]:
    """Symmetrize and raise eigenvalues below ``floor`` to ``floor``; return the count raised.

    This projects a noisy symmetric matrix onto ``{M : M >= floor I}`` in Frobenius norm
    (the thresholding of Chen et al. 2020, used by the ldp-sgd paper); it is
    post-processing of a private matrix.
    """
    sym = (M + M.T) / 2
    vals, vecs = np.linalg.eigh(sym)
    raised = int(np.sum(vals < floor))
    vals = np.maximum(vals, floor)
    return (vecs * vals) @ vecs.T, raised


def path_variance(A: np.ndarray, S: np.ndarray, noise_scale: float,
                  batch_size: float) -> tuple[np.ndarray, np.ndarray]:
    """``V = A^{-1} S A^{-1}`` and the per-step covariance ``W = V/m + sigma_1^2 A^{-2}``.

    ``W`` is the long-run covariance of the iterates' fluctuation (Proposition 3): the
    sampling part ``V/m`` and the privacy part ``sigma_1^2 A^{-2}``.
    """
    Ainv = np.linalg.inv(A)
    V = Ainv @ S @ Ainv
    W = V / batch_size + noise_scale ** 2 * (Ainv @ Ainv)
    return V, W


def plugin_inference(V: np.ndarray, W: np.ndarray, n: int, steps: int,
                     note: str = "") -> tuple[Inference, np.ndarray]:
    """Normal intervals from ``Var(theta_bar) = V/n + W/T`` (Theorem 2).

    With ``T = k n`` this is ``[V (1 + 1/(k m)) + sigma_1^2 A^{-2} / k] / n``: the
    statistical, sampling and privacy parts. The paper's (4.2) drops the sampling part
    ``V/(k m)``; it is kept here (MATH.md s.1).
    """
    cov = V / n + W / steps
    cov = (cov + cov.T) / 2
    scale = np.sqrt(np.diag(cov))
    return Inference("plugin", scale, NormalLaw(), True, note), cov
