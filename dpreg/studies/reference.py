"""Non-private reference estimators for the studies (NOT private; labelled as such).

The papers compare DP estimators with non-private ones: ordinary least squares,
averaged SGD with randomized or cyclic sampling (dpsgd-inference paper, Figure 1), the
textbook OLS interval (dpgd paper, Figure 6) and the empirical minimizer of the clipped
objective that DP-GD intervals are for (dpgd paper, s.2.5). These helpers compute them
on the raw data, for studies only: nothing here may be released.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["averaged_sgd", "clipped_minimizer", "ols"]


@njit(cache=True)
def _averaged_sgd(X, y, order, lr, lr_decay):
    """Averaged SGD on the squared loss visiting rows ``order[0], order[1], ...``."""
    n, p = X.shape
    theta = np.zeros(p)
    avg = np.zeros(p)
    for t in range(order.shape[0]):
        i = order[t]
        r = -y[i]
        for j in range(p):
            r += X[i, j] * theta[j]
        step = lr * (t + 1.0) ** (-lr_decay)
        for j in range(p):
            theta[j] -= step * r * X[i, j]
            avg[j] += (theta[j] - avg[j]) / (t + 1.0)
    return avg


def averaged_sgd(X: np.ndarray, y: np.ndarray, steps: int, *, lr: float, lr_decay: float,
                 sampling: str = "random", rng: np.random.Generator | None = None
                 ) -> np.ndarray:
    r"""Averaged SGD for least squares, without clipping or noise (NOT private).

    Parameters
    ----------
    X, y : ndarray
        Design (n, p) and outcome (n,).
    steps : int
        Number of single-row steps ``T``.
    lr, lr_decay : float
        Step size ``eta_t = lr * t^(-lr_decay)``, as in dpreg's DP-SGD.
    sampling : {"random", "cyclic"}
        ``"random"``: each step uses a row drawn uniformly (the randomized rule of the
        dpsgd-inference paper with batch size 1); ``"cyclic"``: rows in their order,
        ``0, 1, ..., n - 1, 0, ...``.
    rng : numpy.random.Generator
        Needed for ``sampling="random"``.

    Returns
    -------
    ndarray (p,)
        :math:`\bar\theta_T = T^{-1}\sum_{t=1}^T \theta_t`, started at zero.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 2)); y = X @ np.array([1.0, -1.0]) + rng.normal(size=500)
    >>> est = averaged_sgd(X, y, 250_000, lr=0.5, lr_decay=0.501, rng=rng)
    >>> bool(np.abs(est - ols(X, y)[0]).max() < 0.01)  # T = n^2 steps: close to OLS
    True
    """
    n = X.shape[0]
    if sampling == "random":
        if rng is None:
            raise ValueError("sampling='random' needs rng")
        order = rng.integers(0, n, size=int(steps))
    elif sampling == "cyclic":
        order = np.arange(int(steps), dtype=np.int64) % n
    else:
        raise ValueError(f"sampling must be 'random' or 'cyclic', got {sampling!r}")
    return _averaged_sgd(np.ascontiguousarray(X, dtype=float),
                         np.ascontiguousarray(y, dtype=float), order.astype(np.int64),
                         float(lr), float(lr_decay))


def ols(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS estimate and its usual standard errors ``sqrt(s^2 diag (X'X)^{-1})``.

    Parameters
    ----------
    X, y : ndarray

    Returns
    -------
    (params, bse) : tuple of ndarray
    """
    params, *_ = np.linalg.lstsq(X, y, rcond=None)
    n, p = X.shape
    s2 = float(np.sum((y - X @ params) ** 2)) / (n - p)
    bse = np.sqrt(s2 * np.diag(np.linalg.inv(X.T @ X)))
    return params, bse


def clipped_minimizer(X: np.ndarray, y: np.ndarray, clip: float, *, lr: float,
                      tol: float = 1e-12, max_steps: int = 1_000_000) -> np.ndarray:
    r"""Minimizer of the clipped least-squares objective (noiseless clipped GD).

    The per-example gradient ``(x'theta - y) x`` clipped to norm ``clip`` is the
    gradient of a Huber-type loss (dpgd paper, s.2.5); DP-GD intervals are for its
    empirical minimizer. Gradient descent with step ``lr`` runs until the largest step
    is below ``tol``.

    Parameters
    ----------
    X, y : ndarray
    clip : float
    lr : float
    tol : float
    max_steps : int

    Returns
    -------
    ndarray (p,)

    Raises
    ------
    RuntimeError
        If it does not converge in ``max_steps``.
    """
    theta = np.zeros(X.shape[1])
    xn = np.linalg.norm(X, axis=1)
    for _ in range(max_steps):
        r = X @ theta - y
        scale = np.minimum(1.0, clip / np.maximum(np.abs(r) * xn, 1e-300))
        step = lr * (X.T @ (r * scale)) / X.shape[0]
        theta -= step
        if np.max(np.abs(step)) < tol:
            return theta
    raise RuntimeError("noiseless clipped gradient descent did not converge")
