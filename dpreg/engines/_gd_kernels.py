"""numba kernel of full-batch DP-GD (dpgd-linear-regression paper, Algorithm 1).

Pure arithmetic on arrays and noise drawn in advance by the Python driver
(:mod:`dpreg.engines.dpgd`). The loss derivative comes from the family dispatch of
:mod:`dpreg.families.dispatch` (``linear_index`` and ``dloss``), so derivatives exist
once; the clipping rule is that of :func:`dpreg.families.dispatch.clipped_psi` (tested
equal to :func:`dpreg.families.dispatch.clipped_gradients`). The pass is split in two
loops, per-row scores then ``X' psi``, which runs about three times faster than one
fused loop (measured: 0.12 versus 0.37 ms per step at n = 10^4, p = 10). No
``fastmath``: a non-finite iterate must show, so that divergence is reported.
"""

from numba import njit

from dpreg.engines._kernels import STATUS_NONFINITE, STATUS_OK, descend
from dpreg.families.dispatch import dloss, linear_index

__all__ = ["dpgd_block"]


@njit(cache=True)
def dpgd_block(X, y, xnorm, w, code, c, tau, noise, lr, clip, noise_std, precond, theta,
               path, t0, psi, gbuf, dbuf, clip_count):
    """Run ``noise.shape[0]`` steps of full-batch DP-GD, writing every iterate to ``path``.

    Step ``t = t0 + b + 1`` (Algorithm 1, lines 3-5) computes the mean of the per-example
    gradients over all ``n`` rows, each clipped to norm ``clip``,

        g_t = n^{-1} sum_i CLIP_clip(w_i dloss(y_i, x_i' theta_{t-1}) x_i),

    and updates ``theta_t = theta_{t-1} - lr * P (g_t + noise_std * z_t)`` with
    ``z_t = noise[b]`` standard normal (the sign of symmetric noise is immaterial) and
    ``P = precond`` a fixed preconditioner (an empty 0 x 0 array means the identity; a
    function of the released gradient, so post-processing). ``path[t] = theta_t``;
    ``clip_count[0]`` counts clipped per-example gradients; ``psi`` (n,), ``gbuf`` and
    ``dbuf`` (p,) are work arrays.

    Returns ``(status, steps_done)``: ``STATUS_NONFINITE`` stops at the first
    non-finite iterate.
    """
    n, p = X.shape
    inv_n = 1.0 / n
    for b in range(noise.shape[0]):
        # pass 1: the clipped score of every row, psi_i x_i = CLIP(w_i l'(y_i, x_i'theta) x_i)
        for i in range(n):
            g = w[i] * dloss(code, y[i], linear_index(X, i, theta), c, tau)
            gn = abs(g) * xnorm[i]
            if gn > clip:
                g *= clip / gn
                clip_count[0] += 1
            psi[i] = g
        # pass 2: the full-batch sum X' psi
        for j in range(p):
            gbuf[j] = 0.0
        for i in range(n):
            g = psi[i]
            for j in range(p):
                gbuf[j] += g * X[i, j]
        finite = descend(theta, gbuf, inv_n, noise, b, noise_std, precond, lr, dbuf)
        row = t0 + b + 1
        for j in range(p):
            path[row, j] = theta[j]
        if not finite:
            return STATUS_NONFINITE, b
    return STATUS_OK, noise.shape[0]
