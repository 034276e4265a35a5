"""numba kernel of LDP-SGD: one step per row, in the order the rows arrive.

Same conventions as :mod:`dpreg.engines._kernels` (contiguous float64 arrays, state
mutated in place, a status code instead of exceptions, randomness drawn by the driver).
"""

import numpy as np
from numba import njit

from dpreg.engines._kernels import STATUS_NONFINITE, STATUS_OK, rs_accumulate
from dpreg.families.dispatch import d2loss, dloss, linear_index


@njit(cache=True)
def ldp_sgd_rows(X, y, xnorm, w, xscale, code, c, tau, noise, t0, lr, lr_decay, clip,
                 noise_scale, hess_cap, theta, ref, s_run, m_acc, l_acc, plugin, a_acc,
                 s_acc, marks, mark_avg, mark_q, qmap, step_offset):
    """Run one LDP-SGD step (ldp-sgd paper, (2.3)) for each row of ``X`` in order.

    Row ``i`` is step ``t = t0 + i + 1``. Its owner computes the weighted score at the
    current iterate, clips it to norm ``clip`` (a no-op when ``clip`` bounds the
    family's gradients) and adds ``noise_scale * noise[i]`` (``noise_scale = 2 B0 / mu``)
    before the update

        theta <- theta - lr * (t + step_offset)^(-lr_decay) * (g_i + noise_scale * xi_i).

    Random-scaling sums are kept relative to ``ref`` exactly as in
    :func:`dpreg.engines._kernels.dpsgd_block`.

    With ``plugin`` the (not yet private) plug-in sums of s.4.1 are accumulated at the
    iterate each row saw: ``a_acc += h_i x~_i x~_i'`` (``h_i`` the Hessian weight of the
    clipped loss, capped at ``hess_cap``; ``x~_i = xscale_i x_i`` the row clipped to the
    declared norm bound) and ``s_acc += g_i g_i'``, upper triangles only.

    At each global step listed in ``marks`` (increasing), row ``k`` of ``mark_avg`` gets
    the running average and row ``k`` of ``mark_q`` the diagonal of the random-scaling
    matrix ``t^-3 sum_b D_b D_b'`` of the path so far. With a non-empty ``qmap``
    (``p x p``; the inverse ``M^-1`` of the public conditioning ``X = Z M``) the mark
    records the diagonal of ``qmap Q qmap'`` instead: the random-scaling matrix in the
    user's coordinates, exactly (the diagonal of ``Q`` alone does not determine it).
    Returns ``(status, rows_done)``.
    """
    n, p = X.shape
    mk = 0
    mapped = qmap.shape[0] > 0
    qfull = np.empty((p, p))
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
        step = lr * (t + step_offset) ** (-lr_decay)
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
            t3 = float(t) ** 3
            for j in range(p):
                d = s_run[j] / t
                mark_avg[mk, j] = ref[j] + d
                # sum_b (S_b - b d)^2 = M_jj - 2 d L_j + d^2 sum b^2, S_b relative to ref
                mark_q[mk, j] = (m_acc[j, j] - 2.0 * d * l_acc[j] + d * d * sum_sq) / t3
            if mapped:
                # sum_b (S_b - b d)_a (S_b - b d)_b = M_ab - d_a L_b - d_b L_a + d_a d_b sum b^2
                for a in range(p):
                    da = s_run[a] / t
                    for b in range(a, p):
                        db = s_run[b] / t
                        v = (m_acc[a, b] - da * l_acc[b] - db * l_acc[a]
                             + da * db * sum_sq) / t3
                        qfull[a, b] = v
                        qfull[b, a] = v
                for j in range(p):
                    acc = 0.0
                    for a in range(p):
                        row = 0.0
                        for b in range(p):
                            row += qfull[a, b] * qmap[j, b]
                        acc += qmap[j, a] * row
                    mark_q[mk, j] = acc
            mk += 1
    return STATUS_OK, n
