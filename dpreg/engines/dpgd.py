"""Driver of the full-batch DP-GD engine (dpgd-linear-regression paper, Algorithm 1).

The driver validates nothing (the model did), draws the Gaussian noise of every step
from one ``numpy.random.Generator`` (one spawned child per independent run), calls the
numba kernel :func:`dpreg.engines._gd_kernels.dpgd_block` on blocks of steps, and keeps
every iterate: DP-GD releases the whole path ``theta_1, ..., theta_T`` (Algorithm 1,
line 7), and the interval constructions of Section 3.1 read it
(:mod:`dpreg.inference.iterates`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from dpreg.engines import _gd_kernels
from dpreg.engines._kernels import STATUS_OK
from dpreg.exceptions import ConvergenceError

__all__ = ["GDSettings", "GDOutput", "run_dpgd", "default_gd_steps", "BLOCK_STEPS"]

#: Steps per kernel call (noise for a block is drawn at once: bounded memory, progress).
BLOCK_STEPS = 2048
#: Default batch length (steps per estimate) is ``MIXING_MULTIPLE / lr``, within
#: ``[MIN_BATCH, MAX_BATCH]``: see :func:`default_gd_steps`.
MIXING_MULTIPLE = 100.0
MIN_BATCH, MAX_BATCH = 1000, 10_000


@dataclass(frozen=True)
class GDSettings:
    """Public tuning constants of a DP-GD fit (all printed in the summary).

    Attributes
    ----------
    steps : int
        ``T``, steps of each run.
    clip : float
        ``gamma``, the per-example gradient clipping norm (``inf`` only in tests).
    lr : float
        ``eta``, the constant step size.
    noise_std : float
        ``lambda``, the standard deviation per coordinate of the Gaussian noise added to
        the mean clipped gradient at every step (0 only in tests).
    runs : int
        Independent runs (``cov_type="runs"``), each with its own noise.
    precond : ndarray (p, p), optional
        A fixed preconditioner ``P`` of the privatized gradient (post-processing).
    """

    steps: int
    clip: float
    lr: float
    noise_std: float
    runs: int = 1
    precond: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class GDOutput:
    """What a DP-GD run returns.

    Attributes
    ----------
    paths : ndarray (runs, steps + 1, p)
        ``paths[r, t]`` is ``theta_t`` of run ``r``; ``paths[r, 0]`` is the public start.
        Everything here is released by the mechanism (post-processing is free).
    clip_count : int
        Per-example gradients that were clipped, over all runs and steps. Data-dependent
        and not privatized: the model shows it only when it is released through its own
        mechanism or with ``diagnostics=True``.
    grad_evals : int
        Per-example gradients evaluated (``runs * steps * n``).
    """

    paths: np.ndarray
    clip_count: int
    grad_evals: int

    @property
    def steps(self) -> int:
        return self.paths.shape[1] - 1

    @property
    def clip_share(self) -> float:
        """Share of per-example gradients that were clipped (not private)."""
        return self.clip_count / self.grad_evals if self.grad_evals else 0.0


def default_gd_steps(n_estimates: int, burn_in: int, lr: float) -> tuple[int, int]:
    """Default ``(steps, batch_length)`` of a DP-GD run from public settings only.

    The batch length ``L`` (steps per batch mean or between checkpoints) must be long
    against the mixing time of the iterates, ``1 / (lr lambda_min(Sigma))`` for the
    linear model (the contraction ``I - lr Sigma`` of Lemma 2.3). ``Sigma`` is not public,
    so the default assumes covariates on a unit scale (``lambda_min ~ 1``) and takes
    ``L = 100 / lr`` steps, at least 1000 and at most 10,000 (``T`` stays within tens of
    thousands, so every iterate can be kept). ``steps = burn_in + n_estimates * L``. For
    ``cov_type="runs"`` the same ``steps`` is the length of each run.

    More steps cost no accuracy: the noise variance grows like ``T``
    (Lemma 2.1) but the average of ``T`` iterates divides it by ``T``.
    """
    length = int(min(MAX_BATCH, max(MIN_BATCH, math.ceil(MIXING_MULTIPLE / lr))))
    return int(burn_in + n_estimates * length), length


def run_dpgd(X: np.ndarray, y: np.ndarray, *, objective, settings: GDSettings,
             theta0: np.ndarray, rng: np.random.Generator,
             progress: bool = False) -> GDOutput:
    """Run full-batch DP-GD ``settings.runs`` times and return every iterate.

    Parameters
    ----------
    X, y : ndarray
        Design and outcome (float64; made C-contiguous here).
    objective : dpreg.families.Objective
        Family, tuning constants and row weights.
    settings : GDSettings
    theta0 : ndarray (p,)
        Public starting point of every run.
    rng : numpy.random.Generator
        Source of all noise; run ``r`` draws from the ``r``-th child of
        ``rng.spawn(runs)``, so a seed reproduces every run.
    progress : bool
        Show a tqdm progress bar.

    Returns
    -------
    GDOutput

    Raises
    ------
    ConvergenceError
        If an iterate becomes non-finite (the step size is too large for the design).

    Notes
    -----
    Algorithm 1 of Brown et al. (2024): ``theta_t = theta_{t-1} - eta P (g_t + z_t)`` with
    ``g_t`` the mean of the clipped per-example gradients, ``z_t ~ N(0, lambda^2 I)`` and
    ``P = settings.precond`` (the identity when ``None``, as in the paper).
    With ``lambda^2 >= 2 T gamma^2 / (rho n^2)`` a run is rho-zCDP (Lemma 2.1; replace-one
    sensitivity ``2 gamma / n`` of the mean). The noise is calibrated by the model.
    """
    X = np.ascontiguousarray(X, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    n, p = X.shape
    T, R = int(settings.steps), int(settings.runs)
    xnorm = np.sqrt(np.einsum("ij,ij->i", X, X))
    w = np.ascontiguousarray(objective.weights, dtype=float)
    code, c, tau = objective.family.code, float(objective.c), float(objective.tau)
    paths = np.empty((R, T + 1, p))
    clip_count = np.zeros(1, dtype=np.int64)
    gbuf = np.zeros(p)
    dbuf = np.zeros(p)
    precond = (np.zeros((0, 0)) if settings.precond is None
               else np.ascontiguousarray(settings.precond, dtype=float))
    psi = np.empty(n)
    noise_buf = np.empty((min(BLOCK_STEPS, T), p))
    bar = tqdm(total=R * T, disable=not progress, desc="DP-GD", unit="step", leave=False)
    try:
        for r, child in enumerate(rng.spawn(R)):
            theta = np.array(theta0, dtype=float)
            path = paths[r]
            path[0] = theta
            t_done = 0
            while t_done < T:
                b = min(BLOCK_STEPS, T - t_done)
                noise = noise_buf[:b]
                child.standard_normal(out=noise)
                status, done = _gd_kernels.dpgd_block(
                    X, y, xnorm, w, code, c, tau, noise, float(settings.lr),
                    float(settings.clip), float(settings.noise_std), precond, theta, path,
                    t_done, psi, gbuf, dbuf, clip_count)
                if status != STATUS_OK:
                    raise ConvergenceError(
                        f"DP-GD diverged (non-finite iterate) at step {t_done + done + 1} of "
                        f"run {r + 1}: the step size lr={settings.lr:g} is too large for this "
                        "design (full-batch GD needs lr < 2 / lambda_max(X'X/n)); lower lr "
                        "or declare tighter bounds")
                t_done += b
                bar.update(b)
    finally:
        bar.close()
    return GDOutput(paths=paths, clip_count=int(clip_count[0]), grad_evals=R * T * n)
