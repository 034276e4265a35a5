"""numba kernel of LDP-SGD: one step per row, in the order the rows arrive.

Same conventions as :mod:`dpreg.engines._kernels` (contiguous float64 arrays, state
mutated in place, a status code instead of exceptions, randomness drawn by the driver).
"""

import numpy as np
from numba import njit

from dpreg.engines._kernels import (
    STATUS_NONFINITE,
    STATUS_OK,
    d2loss,
    dloss,
    linear_index,
    rs_accumulate,
)


@njit(cache=True)
def ldp_sgd_rows(X, y, xnorm, w, xscale, code, c, tau, noise, t0, lr, lr_decay, clip,
                 noise_scale, hess_cap, theta, ref, s_run, m_acc, l_acc, plugin, a_acc,
                 s_acc, marks, mark_avg, mark_q):
    """Run one LDP-SGD step (ldp-sgd paper, (2.3)) for each row of ``X`` in order.

    Row ``i`` is step ``t = t0 + i + 1``. Its owner computes the weighted score at the
    current iterate, clips it to norm ``clip`` (a no-op when ``clip`` bounds the
    family's gradients) and adds ``noise_scale * noise[i]`` (``noise_scale = 2 B0 / mu``)
    before the update

        theta <- theta - lr * t^(-lr_decay) * (g_i + noise_scale * xi_i).

    Random-scaling sums are kept relative to ``ref`` exactly as in
    :func:`dpreg.engines._kernels.dpsgd_block`.

    With ``plugin`` the (not yet private) plug-in sums of s.4.1 are accumulated at the
    iterate each row saw: ``a_acc += h_i x~_i x~_i'`` (``h_i`` the Hessian weight of the
    clipped loss, capped at ``hess_cap``; ``x~_i = xscale_i x_i`` the row clipped to the
    declared norm bound) and ``s_acc += g_i g_i'``, upper triangles only.

    At each global step listed in ``marks`` (increasing), row ``k`` of ``mark_avg`` gets
    the running average and row ``k`` of ``mark_q`` the diagonal of the random-scaling
    matrix ``t^-3 sum_b D_b D_b'`` of the path so far. Returns ``(status, rows_done)``.
    """
    n, p = X.shape
    mk = 0
    for i in range(n):
        t = t0 + i + 1
        eta = linear_index(X, i, theta)
        g = w[i] * dloss(code, y[i], eta, c, tau)
        gn = abs(g) * xnorm[i]
        h = 0.0
        if gn > clip:
            g *= clip / gn
        elif plugin:
            h = w[i] * d2loss(code, y[i], eta, c, tau)
            h = min(max(h, 0.0), hess_cap)
        if plugin:
            hs = h * xscale[i] * xscale[i]
            for a in range(p):
                xa = X[i, a]
                for b in range(a, p):
                    a_acc[a, b] += hs * xa * X[i, b]
                    s_acc[a, b] += g * g * xa * X[i, b]
        step = lr * t ** (-lr_decay)
        finite = True
        for j in range(p):
            theta[j] -= step * (g * X[i, j] + noise_scale * noise[i, j])
            if not np.isfinite(theta[j]):
                finite = False
        if not finite:
            return STATUS_NONFINITE, i
        rs_accumulate(theta, ref, s_run, m_acc, l_acc, t)
        if mk < marks.shape[0] and t == marks[mk]:
            sum_sq = t * (t + 1.0) * (2.0 * t + 1.0) / 6.0
            for j in range(p):
                d = s_run[j] / t
                mark_avg[mk, j] = ref[j] + d
                # sum_b (S_b - b d)^2 = M_jj - 2 d L_j + d^2 sum b^2, S_b relative to ref
                mark_q[mk, j] = (m_acc[j, j] - 2.0 * d * l_acc[j] + d * d * sum_sq) / (
                    float(t) ** 3)
            mk += 1
    return STATUS_OK, n
