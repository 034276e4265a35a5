"""Random scaling for several linear restrictions at once: the matrix and the joint law.

A test of ``H0: R theta = r`` with ``q`` rows uses the random-scaling Wald statistic

    F = (R theta_bar - r)' (R Q~ R')^{-1} (R theta_bar - r) / q,

with ``Q~`` the random-scaling matrix of the estimate (``E Q``, epochs times the path's
``Q``; see :mod:`dpreg.inference.random_scaling`). Its limit law is

    F_q = W(1)' ( int_0^1 B(r) B(r)' dr )^{-1} W(1) / q,   B(r) = W(r) - r W(1),

``W`` a q-dimensional standard Brownian motion: the ``F*`` law of Kiefer, Vogelsang and
Bunzel (2000) and of Lee, Liao, Seo and Shin (2022, s.4). It is not ``chi2_q / q``. For
``q = 1``, ``F_1 = R^2`` with ``R`` the scalar pivot, whose law :data:`rs_pivot` computes
exactly; for ``q >= 2`` the quantiles are read from a simulated table
(:mod:`dpreg.inference._rs_joint_table`, made by
``tests/results/make_rs_joint_table.py``).

The finite-sample correction of the scalar pivot (the half-width times ``sqrt(rho_j)``)
becomes a matrix correction for a contrast matrix ``R``: with ``S_t = R (V/n + W/T) R'``
(the target variance, Theorem 2) and ``S_p = R (m W / n) R'`` (what ``E Q`` estimates up
to the random factor ``int B B'``),

    R Q~ R'  ->  K (R Q~ R') K',    K = (S_t S_p^{-1})^{1/2}

(the principal square root; ``K S_p K' = S_t``). For one restriction this is
``rho_R R Q~ R'`` with ``rho_R = S_t / S_p``, and for ``R = e_j`` exactly the scalar
correction ``rho_j``, so a joint test of one coefficient agrees with the coefficient's
random-scaling p-value. Because ``K`` is equivariant (``A R`` gives ``A K A^{-1}``), the
corrected statistic does not depend on how the same hypothesis is written (rows
reordered or combined).

References
----------
N. M. Kiefer, T. J. Vogelsang and H. Bunzel (2000), "Simple robust testing of regression
hypotheses", Econometrica 68(3), 695-714.
S. Lee, Y. Liao, M. H. Seo and Y. Shin (2022), "Fast and robust online inference with
stochastic gradient descent via random scaling", AAAI 36(7), 7381-7389.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpreg.exceptions import OptionError
from dpreg.inference._rs_joint_table import Q_MAX, QUANTILES, REPS, TAILS
from dpreg.inference.base import Inference
from dpreg.inference.pivot import rs_pivot

__all__ = ["RSInference", "RSJointLaw", "rs_joint_law", "contrast_scale_matrix"]

_TAILS = np.asarray(TAILS, dtype=float)
_QUANT = np.asarray(QUANTILES, dtype=float)
#: Smallest tabulated upper-tail probability: smaller p-values are reported as this bound.
P_FLOOR = float(_TAILS.min())


@dataclass(frozen=True, eq=False)
class RSInference(Inference):
    """A random-scaling record that keeps the ``p x p`` matrices joint tests need.

    Attributes
    ----------
    matrix : ndarray (p, p) or None
        ``E Q``: the random-scaling matrix of the estimate (``scale`` before correction
        is ``sqrt(diag(matrix))``).
    target, path_cov : ndarray (p, p) or None
        ``V/n + W/T`` and ``m W / n`` from the private plug-in matrices, for the
        finite-sample correction; ``None`` when no plug-in matrices were paid for.
    """

    matrix: np.ndarray | None = None
    target: np.ndarray | None = None
    path_cov: np.ndarray | None = None


def contrast_scale_matrix(inf: RSInference, R: np.ndarray) -> np.ndarray:
    """``q x q`` random-scaling matrix of ``R theta_bar``, corrected when possible.

    Parameters
    ----------
    inf : RSInference
    R : ndarray (q, p)

    Returns
    -------
    ndarray (q, q)
        ``R E Q R'``, with the finite-sample correction of the module's Notes when the
        record carries the plug-in matrices.
    """
    if inf.matrix is None:
        raise OptionError("this random-scaling record carries no matrix Q: joint tests "
                          "with random scaling need a fit made by this version of dpreg")
    R = np.atleast_2d(np.asarray(R, dtype=float))
    G = R @ inf.matrix @ R.T
    if inf.target is None or inf.path_cov is None:
        return (G + G.T) / 2
    St, Sp = R @ inf.target @ R.T, R @ inf.path_cov @ R.T
    vals, vecs = np.linalg.eigh((Sp + Sp.T) / 2)
    if not np.all(vals > 0):
        raise OptionError("the restriction matrix is rank deficient: its rows must be "
                          "linearly independent")
    sp_half = (vecs * np.sqrt(vals)) @ vecs.T
    sp_ihalf = (vecs / np.sqrt(vals)) @ vecs.T
    C = sp_ihalf @ St @ sp_ihalf
    cvals, cvecs = np.linalg.eigh((C + C.T) / 2)
    c_half = (cvecs * np.sqrt(np.clip(cvals, 0.0, None))) @ cvecs.T
    K = sp_half @ c_half @ sp_ihalf  # principal square root of St Sp^{-1}
    out = K @ G @ K.T
    return (out + out.T) / 2


class RSJointLaw:
    r"""Law of ``F_q = W(1)' (int_0^1 B B')^{-1} W(1) / q`` (see the module docstring).

    ``q = 1`` is exact (through the scalar pivot); ``2 <= q <=`` :data:`Q_MAX` reads a
    Monte Carlo table of quantiles (``REPS = 10^6`` replicates, Karhunen-Loeve series;
    relative standard error of a quantile under 0.5% for tail probabilities above 0.01)
    and interpolates ``log P(F_q > x)`` linearly in ``x``. P-values below the table's
    smallest tail probability (``1e-4``) are reported as ``1e-4``.
    """

    name = "random-scaling F* law W(1)'(int B B')^{-1} W(1)/q"
    q_max = Q_MAX
    reps = REPS

    def _column(self, q: int) -> np.ndarray:
        if isinstance(q, bool) or int(q) != q or not 1 <= q <= Q_MAX:
            raise OptionError(f"random-scaling joint tests are tabulated for 1 to {Q_MAX} "
                              f"restrictions, got {q!r}; test fewer restrictions at once or "
                              "use method='plugin'")
        return _QUANT[:, int(q) - 1]

    def sf(self, x, q: int):
        """``P(F_q > x)``, vectorized over ``x`` (floored at :data:`P_FLOOR` for q >= 2).

        Parameters
        ----------
        x : float or array_like
            Values of ``F_q``.
        q : int
            Number of restrictions, 1 to :data:`Q_MAX`.

        Returns
        -------
        float or ndarray
            Tail probabilities, shaped like ``x``.
        """
        x = np.asarray(x, dtype=float)
        if q == 1:
            self._column(q)
            return rs_pivot.two_sided_pvalue(np.sqrt(np.maximum(x, 0.0)))
        col = self._column(q)  # increasing in x as the tail probability decreases
        xs = np.concatenate([[0.0], col[::-1]])
        logp = np.concatenate([[0.0], np.log(_TAILS[::-1])])
        out = np.exp(np.interp(x, xs, logp, left=0.0, right=np.log(P_FLOOR)))
        return np.where(np.isnan(x), np.nan, out)[()]

    def isf(self, alpha, q: int):
        """``x`` with ``P(F_q > x) = alpha`` (for ``q >= 2``, ``alpha`` within the table).

        Parameters
        ----------
        alpha : float or array_like
            Tail probabilities.
        q : int
            Number of restrictions, 1 to :data:`Q_MAX`.

        Returns
        -------
        float or ndarray
            Critical values, shaped like ``alpha``.
        """
        alpha = np.asarray(alpha, dtype=float)
        if q == 1:
            self._column(q)
            return np.asarray(rs_pivot.critical_value(alpha)) ** 2
        col = self._column(q)
        if np.any((alpha < P_FLOOR) | (alpha > _TAILS.max())):
            raise OptionError(f"alpha must lie in [{P_FLOOR:g}, {_TAILS.max():g}] for the "
                              f"tabulated random-scaling law, got {alpha!r}")
        return np.interp(np.log(alpha), np.log(_TAILS), col)[()]

    def __repr__(self):
        return f"RSJointLaw(q_max={Q_MAX}, reps={REPS})"


rs_joint_law = RSJointLaw()
