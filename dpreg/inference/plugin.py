"""Plug-in inference with private Hessian and score matrices (dpsgd-inference paper, s.4.1).

The Hessian ``A`` and the score covariance ``S`` at the estimate are computed with
public bounds enforced by clipping, which the sensitivity ``2B/n`` of the Gaussian matrix
mechanism needs (ldp-sgd paper, Prop. 4): ``A`` from design rows clipped to the declared
norm bound times the family's Hessian-weight bound, ``S`` from per-example gradients
clipped at ``clip``. The model privatizes them with the Gaussian matrix
mechanism; the functions here are pure arithmetic.
"""

from __future__ import annotations

import numpy as np

from dpreg.families import dispatch
from dpreg.inference.base import Inference, NormalLaw

__all__ = ["hessian_matrix", "mean_gradient", "score_matrix", "cluster_score_matrix",
           "second_moment_matrix",
           "floor_eigenvalues", "path_variance", "plugin_inference"]


def clip_rows(X: np.ndarray, bound: float | None, weights: np.ndarray | None = None,
              row_sq: float | None = None) -> np.ndarray:
    """Rows of ``X`` scaled down to L2 norm at most ``bound`` and, given ``weights`` and
    ``row_sq``, so that ``w_i ||x~_i||^2 <= row_sq``: the per-row bound a release's
    sensitivity assumes (:meth:`dpreg.fits.common.Problem.weighted_row_bounds`) holds
    by construction, whatever coordinates and weights the rows come in."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    tiny = np.finfo(float).tiny
    scale = (np.ones(len(norms)) if bound is None
             else np.minimum(1.0, bound / np.maximum(norms, tiny)))
    if row_sq is not None and weights is not None:
        term = np.asarray(weights, float) * (norms * scale) ** 2  # w ||x~||^2
        over = term > row_sq
        scale[over] *= np.sqrt(row_sq / term[over])
    return X * scale[:, None]


def hessian_matrix(X, y, theta, objective, x_bound: float | None, clip: float,
                   row_sq: float | None = None) -> np.ndarray:
    """Hessian of the clipped, weighted objective, ``n^{-1} sum_i h_i x~_i x~_i^T``.

    ``h_i = w_i l''(y_i, x_i' theta)`` for rows whose gradient is not clipped at ``clip``
    and 0 for the others (see :func:`dpreg.families.dispatch.hessian_weights`). Rows are
    clipped to norm ``x_bound`` when one is given and so that ``w_i ||x~_i||^2 <=
    row_sq`` (:func:`clip_rows`), so the per-row term is at most ``hess_bound * row_sq``
    (``row_sq`` from :meth:`dpreg.fits.common.Problem.weighted_row_bounds`).
    """
    theta = np.asarray(theta, float)
    out = np.zeros((X.shape[1], X.shape[1]))
    for rows in _blocks(X.shape[0]):  # by blocks of rows: no full-size temporaries
        Xb = X[rows]
        Xc = clip_rows(Xb, x_bound, objective.weights[rows], row_sq)
        xnorm = np.sqrt(np.einsum("ij,ij->i", Xb, Xb))
        h = np.empty(Xb.shape[0])
        dispatch.hessian_weights(Xb, y[rows], xnorm, objective.weights[rows],
                                 objective.family.code, objective.c, objective.tau, theta,
                                 clip, h)
        h = np.clip(h, 0.0, objective.hess_bound)
        out += (Xc * h[:, None]).T @ Xc
    return out / X.shape[0]


def second_moment_matrix(X, weights, x_bound: float | None,
                         row_sq: float | None = None) -> np.ndarray:
    """``n^{-1} sum_i w_i x~_i x~_i^T`` with rows clipped like :func:`hessian_matrix`'s
    (norm ``x_bound``, ``w_i ||x~_i||^2 <= row_sq``): the curvature of the weighted
    objective up to the family's Hessian weight (the DP-SGD preconditioner)."""
    out = np.zeros((X.shape[1], X.shape[1]))
    weights = np.asarray(weights, float)
    for rows in _blocks(X.shape[0]):
        Xb = clip_rows(X[rows], x_bound, weights[rows], row_sq)
        out += (Xb * weights[rows, None]).T @ Xb
    return out / X.shape[0]


def _blocks(n: int, size: int = 1 << 16):
    return (slice(start, start + size) for start in range(0, n, size))


def _clipped_gradient_blocks(X, y, theta, objective, clip: float):
    """``(rows, g)`` by blocks of rows: the weighted per-example gradients at ``theta``,
    each clipped at ``clip``."""
    theta = np.asarray(theta, float)
    for rows in _blocks(X.shape[0]):
        Xb = X[rows]
        xnorm = np.sqrt(np.einsum("ij,ij->i", Xb, Xb))
        g = np.empty_like(Xb)
        dispatch.clipped_gradients(Xb, y[rows], xnorm, objective.weights[rows],
                                   objective.family.code, objective.c, objective.tau, theta,
                                   clip, g)
        yield rows, g


def mean_gradient(X, y, theta, objective, clip: float) -> np.ndarray:
    """``n^{-1} sum_i g~_i``: the mean of the weighted per-example gradients clipped at
    ``clip`` (each term at most ``clip`` in norm)."""
    out = np.zeros(X.shape[1])
    for _, g in _clipped_gradient_blocks(X, y, theta, objective, clip):
        out += g.sum(axis=0)
    return out / X.shape[0]


def score_matrix(X, y, theta, objective, clip: float) -> np.ndarray:
    """``n^{-1} sum_i g~_i g~_i^T`` with weighted per-example gradients clipped at ``clip``."""
    out = np.zeros((X.shape[1], X.shape[1]))
    for _, g in _clipped_gradient_blocks(X, y, theta, objective, clip):
        out += g.T @ g
    return out / X.shape[0]


def cluster_score_matrix(X, y, theta, objective, clip: float,
                         codes: np.ndarray) -> np.ndarray:
    """``n^{-1} sum_g s_g s_g^T`` with ``s_g`` the sum of cluster ``g``'s weighted
    per-example gradients, each clipped at ``clip`` (``codes``: the cluster ``0 .. G-1``
    of each row): the meat of the cluster-robust sandwich, whose per-cluster term is at
    most ``(K clip)^2`` for clusters of at most ``K`` rows."""
    codes = np.asarray(codes, dtype=np.int64)
    n_groups = int(codes.max()) + 1 if codes.size else 0
    sums = np.zeros((n_groups, X.shape[1]))
    for rows, g in _clipped_gradient_blocks(X, y, theta, objective, clip):
        for j in range(X.shape[1]):
            sums[:, j] += np.bincount(codes[rows], weights=g[:, j], minlength=n_groups)
    return sums.T @ sums / X.shape[0]


def floor_eigenvalues(M: np.ndarray, floor: float,
                      cap: float = np.inf) -> tuple[np.ndarray, int]:
    """Symmetrize and move eigenvalues into ``[floor, cap]``; return how many moved.

    This projects a noisy symmetric matrix onto ``{M : floor I <= M <= cap I}`` in
    Frobenius norm (the thresholding of Chen et al. 2020, used by the ldp-sgd paper);
    ``cap`` is a public upper bound (what the matrix can be at most), so a noisy
    eigenvalue above it is known to be wrong. Post-processing of a private matrix.
    """
    sym = (M + M.T) / 2
    vals, vecs = np.linalg.eigh(sym)
    moved = int(np.sum((vals < floor) | (vals > cap)))
    vals = np.clip(vals, floor, cap)
    return (vecs * vals) @ vecs.T, moved


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
                     note: str = "", cov_replicates: np.ndarray | None = None,
                     law=None) -> tuple[Inference, np.ndarray]:
    """Normal intervals from ``Var(theta_bar) = V/n + W/T`` (Theorem 2).

    With ``T = k n`` this is ``[V (1 + 1/(k m)) + sigma_1^2 A^{-2} / k] / n``: the
    statistical, sampling and privacy parts. The paper's (4.2) drops the sampling part
    ``V/(k m)``; it is kept here (user guide, Corrections to the papers: "Plug-in
    variance"). ``cov_replicates`` (:func:`covariance_replicates`) is kept for the
    reference law of joint tests. ``law`` is the reference law of the intervals
    (normal by default; ``t(G - 1)`` with ``G`` clusters as the unit).
    """
    cov = V / n + W / steps
    cov = (cov + cov.T) / 2
    scale = np.sqrt(np.diag(cov))
    return Inference("plugin", scale, NormalLaw() if law is None else law, True, note,
                     cov_replicates=cov_replicates), cov


#: Replicates of the plug-in covariance kept for the reference law of joint tests.
COV_REPLICATES = 200


def covariance_replicates(A: np.ndarray, S: np.ndarray, sd_a: float, sd_s: float,
                          floors: tuple[float, float, float], to_cov,
                          rng: np.random.Generator,
                          B: int = COV_REPLICATES) -> np.ndarray:
    """The plug-in covariance re-released ``B`` times: ``A* = A + E_A``, ``S* = S + E_S``
    with the release mechanisms' symmetric Gaussian noise, floored into the same public
    ranges, and mapped to a covariance by ``to_cov(A*, S*)``.

    A parametric bootstrap of the released statistics (post-processing of ``A`` and
    ``S``, which are released): it carries the noise of the private covariance into the
    reference law of a joint test. A quadratic form ``d' C~^{-1} d`` in a noisy ``C~``
    is inflated by ``C~``'s underestimated small eigenvalues; marginal variances are not
    (measured: 12 restrictions, n = 1,000, mu = 5, size 0.23 against the chi-square).

    Parameters
    ----------
    A, S : ndarray (p, p)
        The released (floored) Hessian and score covariance, engine coordinates.
    sd_a, sd_s : float
        Their mechanisms' noise standard deviations.
    floors : tuple of float
        ``(a_floor, a_cap, s_cap)``: the public eigenvalue ranges of the release.
    to_cov : callable
        ``(A, S) -> covariance`` in the user's coordinates, as the fit computes it.
    rng : numpy.random.Generator
    B : int
        Replicates.

    Returns
    -------
    ndarray (B, p, p)
    """
    from dpreg.privacy.mechanisms import symmetric_gaussian_noise

    a_floor, a_cap, s_cap = floors
    p = A.shape[0]
    out = np.empty((B, p, p))
    for b in range(B):
        A_b, _ = floor_eigenvalues(A + symmetric_gaussian_noise(p, sd_a, rng), a_floor, a_cap)
        S_b, _ = floor_eigenvalues(S + symmetric_gaussian_noise(p, sd_s, rng), 0.0, s_cap)
        out[b] = to_cov(A_b, S_b)
    return out
