"""numba kernels: pure arithmetic on arrays and pre-drawn randomness.

Kernels take contiguous float64/int64 arrays, mutate the state arrays they are given,
and return a status code instead of raising. All random numbers are drawn by the
Python driver from one ``numpy.random.Generator``. No ``fastmath``: the kernels must
propagate NaN/Inf faithfully so that divergence is detected.

The families' numerics (loss, score, Hessian weight, clipped per-example gradients)
come from :mod:`dpreg.families.dispatch`. Per-example gradients are
``w_i * dloss(y_i, x_i' theta) * x_i`` with row weights ``w`` (Mallows weights, or ones).
"""

import numpy as np
from numba import njit, prange

from dpreg.families.dispatch import clipped_psi

STATUS_OK = 0
STATUS_NONFINITE = 1
#: Batches of at least this many rows sum their gradients in :data:`CHUNKS` fixed
#: chunks on all cores (:func:`chunked_gradient`); smaller ones in one serial loop.
PARALLEL_ROWS = 4096
#: Fixed chunks of a parallel batch, summed in order: the result does not depend on the
#: number of threads.
CHUNKS = 16


@njit(cache=True)
def rs_accumulate(theta, ref, s_run, m_acc, l_acc, t):
    """Random-scaling sums after step ``t`` (dpsgd-inference paper, Prop. 3), relative to
    ``ref``: ``s_run += theta - ref``, ``l_acc += t s_run``, ``m_acc += s_run s_run'`` (upper)."""
    p = theta.shape[0]
    for j in range(p):
        s_run[j] += theta[j] - ref[j]
        l_acc[j] += t * s_run[j]
    for a in range(p):
        sa = s_run[a]
        for b in range(a, p):
            m_acc[a, b] += sa * s_run[b]


@njit(cache=True)
def descend(theta, gbuf, inv_denom, noise, b, noise_scale, precond, step, dbuf):
    """One step ``theta <- theta - step * P (inv_denom * gbuf + noise_scale * noise[b])``
    (``P = precond``; an empty 0 x 0 array means the identity), shared by the DP-SGD and
    DP-GD kernels; ``dbuf`` is a work array. Returns whether every coordinate is finite."""
    p = theta.shape[0]
    if precond.shape[0] == 0:
        for j in range(p):
            theta[j] -= step * (inv_denom * gbuf[j] + noise_scale * noise[b, j])
    else:
        for j in range(p):
            dbuf[j] = inv_denom * gbuf[j] + noise_scale * noise[b, j]
        for j in range(p):
            d = 0.0
            for k in range(p):
                d += precond[j, k] * dbuf[k]
            theta[j] -= step * d
    finite = True
    for j in range(p):
        if not np.isfinite(theta[j]):
            finite = False
    return finite


@njit(cache=True)
def gather_row(X, aux, i, r, xb, yb, nb, wb):
    """Copy row ``i`` of the data into row ``r`` of the batch's buffers: ``X[i]`` and
    ``aux[i] = (y_i, ||x_i||, w_i)``."""
    yb[r] = aux[i, 0]
    nb[r] = aux[i, 1]
    wb[r] = aux[i, 2]
    for j in range(X.shape[1]):
        xb[r, j] = X[i, j]


@njit(parallel=True, cache=True)
def chunked_gradient(X, aux, code, c, tau, perm, k, theta, clip, xb, yb, nb, wb, chunk_g,
                     chunk_clipped):
    """The clipped gradients of the rows ``perm[0:k]``, summed in ``chunk_g.shape[0]``
    fixed chunks of consecutive positions, the chunks in parallel (each gathers its own
    rows into its part of the buffers); ``chunk_clipped`` counts each chunk's clipped
    gradients. The caller sums the chunks in order."""
    n_chunks, p = chunk_g.shape
    for ch in prange(n_chunks):
        lo = ch * k // n_chunks
        hi = (ch + 1) * k // n_chunks
        for r in range(lo, hi):
            gather_row(X, aux, perm[r], r, xb, yb, nb, wb)
        for j in range(p):
            chunk_g[ch, j] = 0.0
        count = 0
        for r in range(lo, hi):
            g, clipped = clipped_psi(xb, yb, nb, wb, r, code, c, tau, theta, clip)
            if clipped:
                count += 1
            for j in range(p):
                chunk_g[ch, j] += g * xb[r, j]
        chunk_clipped[ch] = count


@njit(cache=True)
def dpsgd_block(X, aux, code, c, tau, counts, u, noise, t0, lr, lr_decay, clip,
                inv_denom, noise_scale, precond, perm, unit_rows, unit_start, theta, ref,
                s_run, m_acc, l_acc, gbuf, dbuf, traj_stride, traj_avg, traj_iter,
                clip_count):
    """Run ``len(counts)`` DP-SGD steps (Algorithm 1 with the clipping of (5.1)).

    Step ``t = t0 + b + 1`` samples ``counts[b]`` units without replacement by a partial
    Fisher-Yates shuffle of ``perm`` (one entry per unit) driven by the uniforms ``u``
    (consumed in order), clips each per-example gradient to norm ``clip``, and updates

        theta <- theta - lr * t^(-lr_decay) * P (inv_denom * sum_i g_i + noise_scale * z_t)

    where ``z_t = noise[b]`` is standard normal. ``inv_denom`` is ``1/m`` (fixed-size
    sampling) or ``1/(q n)`` (Poisson sampling: the public expected batch size). ``P`` is
    a fixed preconditioner (``precond``; an empty 0 x 0 array means the identity)
    applied to the privatized gradient: post-processing, so it changes the speed of
    convergence, not the privacy, and the averaged iterate's limiting covariance does
    not depend on it (Polyak and Juditsky 1992).

    A unit is a row when ``unit_start`` is empty. With clusters as the privacy unit,
    unit ``g`` is the rows ``unit_rows[unit_start[g]:unit_start[g + 1]]``: a step sums the
    clipped gradients of every row of its sampled clusters, so one cluster of at most
    ``K`` rows moves the sum by at most ``K clip``.

    ``aux`` holds each row's outcome, norm and weight side by side (``aux[i] = (y_i,
    ||x_i||, w_i)``, see :func:`dpreg.engines.dpsgd.row_companions`): a sampled row is
    then two reads of memory, its ``X`` row and one ``aux`` row, instead of four.

    ``clip_count`` counts the clipped gradients and the gradients evaluated.

    Random-scaling sums are kept relative to the reference point ``ref`` (see
    :func:`dpreg.engines.dpsgd.recentre`): ``s_run = sum_{s<=t} (theta_s - ref)``,
    ``m_acc += s_run s_run^T`` (upper triangle), ``l_acc += t * s_run``. Returns
    ``(status, steps_done)``.
    """
    p = X.shape[1]
    n = perm.shape[0]  # units: rows, or clusters
    clustered = unit_start.shape[0] > 0
    pos = 0
    # steps until the next trajectory snapshot (a countdown, not a modulo per step)
    to_snap = traj_stride - t0 % traj_stride if traj_stride > 0 else -1
    # The batch's rows are gathered into contiguous buffers before the gradient loop:
    # a tight copy loop keeps many cache misses in flight, where the fused loop waited
    # for each row (3x faster at n = 10^6; same arithmetic in the same order).
    kmax = 0
    for b in range(counts.shape[0]):
        kmax = max(kmax, counts[b])
    if clustered:  # rows per unit at most the largest cluster's
        largest = 0
        for g in range(n):
            largest = max(largest, unit_start[g + 1] - unit_start[g])
        kmax *= largest
    xb = np.empty((kmax, p))
    yb = np.empty(kmax)
    nb = np.empty(kmax)
    wb = np.empty(kmax)
    chunk_g = np.empty((CHUNKS, p))
    chunk_clipped = np.empty(CHUNKS, dtype=np.int64)
    for b in range(counts.shape[0]):
        t = t0 + b + 1
        k = counts[b]
        for r in range(k):
            # partial Fisher-Yates: a uniform k-subset of rows in perm[0:k]
            jj = r + int(u[pos] * (n - r))
            pos += 1
            if jj >= n:
                jj = n - 1
            tmp = perm[r]
            perm[r] = perm[jj]
            perm[jj] = tmp
        if k >= PARALLEL_ROWS and not clustered:  # a large batch of rows: all cores
            chunked_gradient(X, aux, code, c, tau, perm, k, theta, clip, xb, yb, nb, wb,
                             chunk_g, chunk_clipped)
            clip_count[1] += k
            for j in range(p):
                gbuf[j] = 0.0
            for ch in range(CHUNKS):
                clip_count[0] += chunk_clipped[ch]
                for j in range(p):
                    gbuf[j] += chunk_g[ch, j]
            step = lr * t ** (-lr_decay)
            if not descend(theta, gbuf, inv_denom, noise, b, noise_scale, precond, step,
                           dbuf):
                return STATUS_NONFINITE, b
            rs_accumulate(theta, ref, s_run, m_acc, l_acc, t)
            to_snap = snapshot(theta, ref, s_run, t, to_snap, traj_stride, traj_avg,
                               traj_iter)
            continue
        rows = 0
        for r in range(k):
            if clustered:
                g = perm[r]
                for q in range(unit_start[g], unit_start[g + 1]):
                    gather_row(X, aux, unit_rows[q], rows, xb, yb, nb, wb)
                    rows += 1
            else:
                gather_row(X, aux, perm[r], rows, xb, yb, nb, wb)
                rows += 1
        clip_count[1] += rows
        for j in range(p):
            gbuf[j] = 0.0
        for r in range(rows):
            g, clipped = clipped_psi(xb, yb, nb, wb, r, code, c, tau, theta, clip)
            if clipped:
                clip_count[0] += 1
            for j in range(p):
                gbuf[j] += g * xb[r, j]
        step = lr * t ** (-lr_decay)
        if not descend(theta, gbuf, inv_denom, noise, b, noise_scale, precond, step, dbuf):
            return STATUS_NONFINITE, b
        rs_accumulate(theta, ref, s_run, m_acc, l_acc, t)
        to_snap = snapshot(theta, ref, s_run, t, to_snap, traj_stride, traj_avg, traj_iter)
    return STATUS_OK, counts.shape[0]


@njit(cache=True)
def snapshot(theta, ref, s_run, t, to_snap, traj_stride, traj_avg, traj_iter):
    """Count down to the next trajectory snapshot and take it (the averaged and the last
    iterate after step ``t``); returns the new countdown."""
    to_snap -= 1
    if to_snap == 0:
        to_snap = traj_stride
        row = t // traj_stride - 1
        if row < traj_avg.shape[0]:
            for j in range(theta.shape[0]):
                traj_avg[row, j] = ref[j] + s_run[j] / t
                traj_iter[row, j] = theta[j]
    return to_snap


