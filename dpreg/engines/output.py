"""What an engine returns: the private path summarized, nothing else."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["EngineOutput"]


@dataclass(frozen=True, eq=False)
class EngineOutput:
    """Result of one engine run.

    Everything here is a function of the private (noisy) iterates only, except
    ``clip_count``, which counts clipped per-example gradients along the path: it is
    data-dependent and not privatized, so the model does not put it into a private
    Results object unless the user asks for diagnostics.

    Attributes
    ----------
    params : ndarray (p,)
        The averaged iterate ``theta_bar = T^{-1} sum_t theta_t`` (the estimate).
    last : ndarray (p,)
        The last iterate.
    rs_q : ndarray (p, p)
        Random-scaling matrix ``Q = T^{-3} sum_t D_t D_t^T`` with
        ``D_t = sum_{s<=t} (theta_s - theta_bar)`` (dpsgd-inference paper, Prop. 3; user
        guide, Corrections to the papers: "Random-scaling normalization").
    steps : int
        Number of steps T.
    trajectory_steps : ndarray (K,)
        Steps at which snapshots were taken.
    trajectory_avg, trajectory_iter : ndarray (K, p)
        Running average and iterate at those steps.
    clip_count : int
        Per-example gradients that were clipped (not private; see above).
    grad_evals : int
        Per-example gradients evaluated.
    """

    params: np.ndarray
    last: np.ndarray
    rs_q: np.ndarray
    steps: int
    trajectory_steps: np.ndarray
    trajectory_avg: np.ndarray
    trajectory_iter: np.ndarray
    clip_count: int
    grad_evals: int
