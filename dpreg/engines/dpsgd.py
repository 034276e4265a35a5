"""Driver of the central DP-SGD engine (dpsgd-inference paper, Algorithm 1 and (5.1)).

The driver validates nothing (the model did), draws all randomness in blocks from one
``numpy.random.Generator``, calls the numba kernel per block, re-centres the
random-scaling sums after each block, and returns an :class:`EngineOutput`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from dpreg.engines import _kernels
from dpreg.engines.output import EngineOutput
from dpreg.exceptions import ConvergenceError

__all__ = ["SGDSettings", "run_dpsgd", "default_schedule"]

#: Most per-example gradient evaluations (T * m) of a default schedule.
DEFAULT_WORK = 50_000_000
#: Default rows per batch, n / m: the default batch is m = ceil(n / ROWS_PER_BATCH).
ROWS_PER_BATCH = 200
#: Fewest steps of a default schedule (work permitting): random scaling and the
#: averaged iterate need T large against the mixing time of the iterates.
MIN_STEPS = 200_000
#: Snapshots kept of the path for plots.
TRAJECTORY_POINTS = 2000


@dataclass(frozen=True)
class SGDSettings:
    """Public tuning constants of one DP-SGD run (all printed in the summary).

    ``noise_scale`` is the standard deviation of the Gaussian noise added to the
    gradient *estimate* (the clipped mean for fixed-size sampling, the clipped sum
    divided by the expected batch size ``q n`` for Poisson sampling): ``sigma_1`` of
    Algorithm 1.
    """

    batch_size: int
    sampling: str
    steps: int
    clip: float
    lr: float
    lr_decay: float
    noise_scale: float
    noise_multiplier: float
    precond: np.ndarray | None = None
    #: Rows per sampled unit, public: 1 for rows; the bound ``K`` with clusters as the
    #: privacy unit (their sizes are protected, so the public count of rows is ``G K``).
    rows_per_unit: float = 1.0

    def denominator(self) -> float:
        """The public normalizer of the gradient sum: ``m``, or ``q n`` (= m) for Poisson;
        ``m K`` with clusters (the gradient is then a sum over rows divided by ``m K``)."""
        return float(self.batch_size) * self.rows_per_unit

    def epochs(self, n: int) -> float:
        """``E = T m / n``: passes over the data, the random-scaling normalizer (``T m /
        G`` with clusters, ``n = G K`` there)."""
        return self.steps * self.denominator() / n


def default_schedule(n: int, batch_size: int | None = None,
                     work: int = DEFAULT_WORK) -> tuple[int, int]:
    """Default ``(batch_size, steps)`` from public ``n`` (and a user's batch size).

    The paper's regime is ``c = m sqrt(T) / n = 1``. On conditioned covariates (see
    :mod:`dpreg.design.conditioning`) with a step set for the batch's mean gradient, a batch
    of ``m`` rows cuts the work ``T m = n^2 / m`` by ``m`` at the same ``c`` and the same
    accuracy: the privacy variance is ``sigma_1^2 / T ~ (s / m)^2 / T``, and ``s`` grows
    like ``c``. So ``m = ceil(n / 200)`` (at least ``n^2 / work``, which bounds the work)
    and ``T = (n / m)^2`` (about 40,000). Steps are never fewer than
    ``min(200,000, work / m)``: averaged SGD forgets its start in about
    ``(lr lambda_min)^-2`` steps, and covariates that fill a small part of a loose
    declared box have ``lambda_min`` near 0.01 after conditioning (more steps cost no
    accuracy, as above; a user's large batch would otherwise leave too few).
    """
    if batch_size is None:
        batch_size = max(1, math.ceil(n / ROWS_PER_BATCH), math.ceil(n * n / work))
    m = batch_size
    steps = max(int(round((n / m) ** 2)), min(MIN_STEPS, work // m))
    return m, max(2, steps)


def _block_size(batch_size: int, p: int) -> int:
    # about 2^20 uniforms per block: a large batch gets few steps per block, so the
    # pre-drawn randomness never grows with n (a batch of 2e6 once asked for 4 GiB)
    return int(max(1, min(1 << 15, (1 << 20) // max(batch_size, p, 1))))


def run_dpsgd(X: np.ndarray, y: np.ndarray, *, objective, settings: SGDSettings,
              theta0: np.ndarray, rng: np.random.Generator,
              progress: bool = False, clusters: np.ndarray | None = None) -> EngineOutput:
    """Run DP-SGD and return the averaged iterate with its random-scaling matrix.

    Parameters
    ----------
    X, y : ndarray
        Contiguous float64 design and outcome.
    objective : dpreg.families.Objective
        Family, tuning constants and row weights.
    settings : SGDSettings
    theta0 : ndarray
        Public starting point.
    rng : numpy.random.Generator
        Source of every random number of the run.
    progress : bool
        Show a tqdm progress bar over blocks.
    clusters : ndarray of int, optional
        The cluster (``0 .. G-1``) of each row when clusters are the privacy unit: a
        step then samples ``batch_size`` clusters (out of ``G``) and sums the clipped
        gradients of all their rows.

    Returns
    -------
    EngineOutput
        The averaged iterate, the last iterate, the random-scaling matrix, the
        trajectory and the (non-private) count of clipped gradients.
    """
    n, p = X.shape
    T = settings.steps
    m = settings.batch_size
    aux = row_companions(X, y, objective.weights)
    code, c, tau = objective.family.code, float(objective.c), float(objective.tau)
    theta = np.array(theta0, dtype=float)
    ref = theta.copy()
    s_run = np.zeros(p)
    m_acc = np.zeros((p, p))
    l_acc = np.zeros(p)
    gbuf = np.zeros(p)
    dbuf = np.zeros(p)
    precond = (np.zeros((0, 0)) if settings.precond is None
               else np.ascontiguousarray(settings.precond, dtype=float))
    if clusters is None:
        units = n
        unit_rows = unit_start = np.zeros(0, dtype=np.int64)
    else:
        codes = np.asarray(clusters, dtype=np.int64)
        units = int(codes.max()) + 1 if codes.size else 0
        unit_rows = np.argsort(codes, kind="stable").astype(np.int64)
        unit_start = np.r_[0, np.cumsum(np.bincount(codes, minlength=units))].astype(np.int64)
    perm = np.arange(units, dtype=np.int64)
    clip_count = np.zeros(2, dtype=np.int64)  # clipped, evaluated
    stride = max(1, T // TRAJECTORY_POINTS)
    n_traj = T // stride
    traj_avg = np.empty((n_traj, p))
    traj_iter = np.empty((n_traj, p))
    inv_denom = 1.0 / settings.denominator()
    block = _block_size(m, p)
    noise_buf = np.empty((block, p))
    u_buf = np.empty(block * m)
    t_done = 0
    bar = tqdm(total=T, disable=not progress, desc="DP-SGD", unit="step", leave=False)
    try:
        while t_done < T:
            b = min(block, T - t_done)
            if settings.sampling == "poisson":
                counts = rng.binomial(units, m / units, size=b).astype(np.int64)
            else:
                counts = np.full(b, m, dtype=np.int64)
            total = int(counts.sum())
            if total > u_buf.shape[0]:
                u_buf = np.empty(total)
            u = u_buf[:total]
            rng.random(out=u)  # drawn into reused buffers: no allocation per block
            noise = noise_buf[:b]
            rng.standard_normal(out=noise)
            status, done = _kernels.dpsgd_block(
                X, aux, code, c, tau, counts, u, noise, t_done,
                settings.lr, settings.lr_decay, settings.clip, inv_denom,
                settings.noise_scale, precond, perm, unit_rows, unit_start, theta, ref, s_run,
                m_acc, l_acc, gbuf, dbuf, stride, traj_avg, traj_iter, clip_count)
            if status != _kernels.STATUS_OK:
                raise ConvergenceError(
                    f"DP-SGD diverged (non-finite iterate) at step {t_done + done + 1}: the "
                    f"step size lr={settings.lr:g} is too large for this design; lower lr "
                    "or declare tighter bounds")
            t_done += b
            recentre(ref, s_run, m_acc, l_acc, t_done)
            bar.update(b)
    finally:
        bar.close()
    q = np.triu(m_acc) + np.triu(m_acc, 1).T
    q /= float(T) ** 3
    return EngineOutput(params=ref.copy(), last=theta.copy(), rs_q=q, steps=T,
                        trajectory_steps=stride * np.arange(1, n_traj + 1),
                        trajectory_avg=traj_avg, trajectory_iter=traj_iter,
                        clip_count=int(clip_count[0]), grad_evals=int(clip_count[1]))


def row_companions(X: np.ndarray, y: np.ndarray, weights) -> np.ndarray:
    """``(n, 3)`` array of each row's outcome, norm and weight, side by side.

    DP-SGD reads its sampled rows at random positions; at 10^6 rows each read is a cache
    miss, and the outcome, the norm and the weight in three arrays of their own were
    three more per row. Side by side they are one: the gather alone was about 1.3 times
    faster at n = 10^6, p = 20 (medians of six runs of a micro-benchmark; the whole
    path's time varies more than that from run to run on a shared machine). The values,
    and so the fit, are the same.
    """
    aux = np.empty((X.shape[0], 3))
    aux[:, 0] = y
    aux[:, 1] = np.sqrt(np.einsum("ij,ij->i", X, X))
    aux[:, 2] = weights
    return aux


def recentre(ref, s_run, m_acc, l_acc, t):
    """Move the reference point to the running mean, transforming the sums exactly.

    With ``delta = ref - ref_new`` every partial sum shifts by ``s * delta``, so
    ``M += L delta' + delta L' + (sum s^2) delta delta'`` and ``L += (sum s^2) delta``;
    the running sum becomes zero. Re-centring keeps the sums small, which avoids the
    cancellation of the one-pass formula (forming the sums from raw totals loses about six
    digits at T = n^2; tests/engines/test_dpsgd.py checks the re-centred sums against the
    two-pass formula).
    """
    m_full = np.triu(m_acc) + np.triu(m_acc, 1).T
    delta = -s_run / t
    sum_sq = t * (t + 1.0) * (2.0 * t + 1.0) / 6.0
    m_full += np.outer(l_acc, delta) + np.outer(delta, l_acc) + sum_sq * np.outer(delta, delta)
    l_acc += sum_sq * delta
    ref -= delta
    s_run[:] = 0.0
    m_acc[:] = np.triu(m_full)
