"""The numba dispatch of the families' numerics: per-row loss, score and Hessian weight.

Families own their numerics: each family module defines ``loss``, ``dloss`` and
``d2loss`` as numba functions of ``(y, eta, c, tau)`` and an integer ``CODE``; this
module dispatches on the code (numba's cache needs plain functions, not objects) and
builds the per-row quantities that the engines' kernels, the plug-in inference and the
oracle share: the linear index, the clipped score, the per-example clipped gradients,
the Hessian weights of the clipped objective and the oracle's objective terms.

No ``fastmath``: NaN/Inf must propagate so that divergence is detected. numba's cache
does not see edits of the family modules called from here; clear ``__pycache__`` (or
set ``NUMBA_CACHE_DIR``) after changing a family.
"""

import numpy as np
from numba import njit

from dpreg.families import expectile, huber, linear, logistic

__all__ = ["loss", "dloss", "d2loss", "linear_index", "clipped_psi", "clipped_gradients",
           "hessian_weights", "objective_terms"]


@njit(cache=True)
def dloss(code, y, eta, c, tau):
    """Derivative of the family's loss in the linear index."""
    if code == linear.CODE:
        return linear.dloss(y, eta, c, tau)
    if code == huber.CODE:
        return huber.dloss(y, eta, c, tau)
    if code == logistic.CODE:
        return logistic.dloss(y, eta, c, tau)
    if code == expectile.CODE:
        return expectile.dloss(y, eta, c, tau)
    return np.nan


@njit(cache=True)
def d2loss(code, y, eta, c, tau):
    """Second derivative of the family's loss in the linear index."""
    if code == linear.CODE:
        return linear.d2loss(y, eta, c, tau)
    if code == huber.CODE:
        return huber.d2loss(y, eta, c, tau)
    if code == logistic.CODE:
        return logistic.d2loss(y, eta, c, tau)
    if code == expectile.CODE:
        return expectile.d2loss(y, eta, c, tau)
    return np.nan


@njit(cache=True)
def loss(code, y, eta, c, tau):
    """The family's loss in the linear index."""
    if code == linear.CODE:
        return linear.loss(y, eta, c, tau)
    if code == huber.CODE:
        return huber.loss(y, eta, c, tau)
    if code == logistic.CODE:
        return logistic.loss(y, eta, c, tau)
    if code == expectile.CODE:
        return expectile.loss(y, eta, c, tau)
    return np.nan


@njit(cache=True)
def linear_index(X, i, theta):
    """``x_i' theta``, the linear index of row ``i``."""
    eta = 0.0
    for j in range(X.shape[1]):
        eta += X[i, j] * theta[j]
    return eta


@njit(cache=True)
def clipped_psi(X, y, xnorm, w, i, code, c, tau, theta, clip):
    """``(psi, clipped)``: the weighted loss derivative of row ``i`` at ``theta``, scaled so
    that the per-example gradient ``psi * x_i`` has norm at most ``clip``."""
    g = w[i] * dloss(code, y[i], linear_index(X, i, theta), c, tau)
    gn = abs(g) * xnorm[i]
    if gn > clip:
        return g * (clip / gn), True
    return g, False


@njit(cache=True)
def clipped_gradients(X, y, xnorm, w, code, c, tau, theta, clip, out):
    """Per-example gradients at ``theta``, each clipped to norm ``clip`` (rows of ``out``)."""
    n, p = X.shape
    for i in range(n):
        g, _ = clipped_psi(X, y, xnorm, w, i, code, c, tau, theta, clip)
        for j in range(p):
            out[i, j] = g * X[i, j]


@njit(cache=True)
def hessian_weights(X, y, xnorm, w, code, c, tau, theta, clip, out):
    """Hessian weight of the *clipped*, weighted objective for every row.

    ``out[i] = w_i d2loss(y_i, x_i' theta)`` where the per-example gradient is not
    clipped, and 0 where it is: a clipped gradient ``clip * sign(psi) x / ||x||`` does
    not change with theta, so DP-SGD solves a clipped M-estimation problem whose Hessian
    only counts unclipped rows (clipping turns the squared loss into a Huber loss, dpgd
    paper s.2.5).
    """
    for i in range(X.shape[0]):
        eta = linear_index(X, i, theta)
        if abs(w[i] * dloss(code, y[i], eta, c, tau)) * xnorm[i] > clip:
            out[i] = 0.0
        else:
            out[i] = w[i] * d2loss(code, y[i], eta, c, tau)


@njit(cache=True)
def objective_terms(X, y, w, code, c, tau, theta, grad, hess):
    """Weighted loss, gradient and Hessian of ``sum_i w_i l(y_i, x_i' theta)`` (oracles)."""
    n, p = X.shape
    total = 0.0
    for a in range(p):
        grad[a] = 0.0
        for b in range(p):
            hess[a, b] = 0.0
    for i in range(n):
        eta = linear_index(X, i, theta)
        total += w[i] * loss(code, y[i], eta, c, tau)
        d1 = w[i] * dloss(code, y[i], eta, c, tau)
        d2 = w[i] * d2loss(code, y[i], eta, c, tau)
        for a in range(p):
            grad[a] += d1 * X[i, a]
            for b in range(a, p):
                hess[a, b] += d2 * X[i, a] * X[i, b]
    for a in range(p):
        for b in range(a):
            hess[a, b] = hess[b, a]
    return total
