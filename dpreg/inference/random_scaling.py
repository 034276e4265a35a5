"""Random-scaling inference for averaged SGD (dpsgd-inference paper, s.4.2).

The pivot ``t_j = (theta_bar_j - theta_j) / sqrt(E Q_jj)`` uses the random-scaling
matrix ``Q = T^{-3} sum_t D_t D_t^T`` accumulated along the private path and the number
of epochs ``E = T m / n``. The paper scales by ``k = T/n`` instead, which is valid only
for ``m = 1`` (user guide, Corrections to the papers: "Random-scaling normalization").
Post-processing of the private path: no budget.
"""

from __future__ import annotations

import numpy as np

from dpreg.inference.base import Inference
from dpreg.inference.pivot import rs_pivot
from dpreg.inference.rs_joint import RSInference

__all__ = ["rs_inference"]


def rs_inference(rs_q: np.ndarray, epochs: float, *, V: np.ndarray | None = None,
                 W: np.ndarray | None = None, n: int | None = None, steps: int | None = None,
                 batch_size: float | None = None, note: str | None = None) -> Inference:
    """Random-scaling scale per coefficient, with the finite-sample correction if possible.

    Parameters
    ----------
    rs_q : ndarray (p, p)
        ``Q`` from the engine.
    epochs : float
        ``E = T m / n`` (``m`` the expected batch size under Poisson sampling).
    V, W, n, steps, batch_size : optional
        Private plug-in ``V`` and per-step covariance ``W`` (see
        :func:`dpreg.inference.plugin.path_variance`). When given, the half-width is
        multiplied by ``sqrt(rho_j)`` with

            rho_j = (V_jj + (n/T) W_jj) / (m W_jj),

        the ratio of ``n Var(theta_bar_j)`` (Theorem 2) to the limit of ``n E Q_jj``
        divided by ``int B^2`` (Proposition 3; ``m W = V + m sigma_1^2 A^{-2}``). For
        ``T/n -> infinity`` this is ``V/(V + m sigma_1^2 A^{-2})`` and for
        ``m = 1`` the paper's (4.7).
    note : str, optional
        The summary's line for an uncorrected pivot (LDP-SGD: one pass, one row per
        step, where random scaling needs no correction).

    Notes
    -----
    Critical values and p-values come from the exact law of
    ``W(1) / sqrt(int_0^1 (W(r) - r W(1))^2 dr)`` (:data:`dpreg.inference.pivot.rs_pivot`).
    """
    scale = np.sqrt(epochs * np.diag(rs_q))
    if V is None:
        note = note or ("RS: random scaling without finite-sample correction (no private plug-in "
                "matrices); conservative when the privacy noise is not negligible.")
        return RSInference("rs", scale, rs_pivot, False, note, matrix=epochs * rs_q)
    w = np.diag(W)
    ratio = (np.diag(V) + (n / steps) * w) / (batch_size * w)
    note = ("RS: random-scaling pivot scaled by epochs E = T m / n, finite-sample "
            "correction from the private plug-in matrices (user guide: Corrections to the "
            "papers).")
    return RSInference("rs", scale * np.sqrt(ratio), rs_pivot, False, note,
                       matrix=epochs * rs_q, target=V / n + W / steps,
                       path_cov=batch_size * W / n)
