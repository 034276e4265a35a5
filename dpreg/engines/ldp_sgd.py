"""LDP-SGD: one pass, one row per step, each row's gradient privatized by its owner.

The driver keeps the whole state of a pass in O(p^2) numbers (iterate, random-scaling
sums, optional plug-in sums) plus a sparse record of the running average at a
geometric grid of steps (``marks``), from which batch means and trajectories are
computed after the fact. Rows can arrive in chunks of any size: noise is drawn in
fixed blocks of :data:`NOISE_BLOCK` rows aligned to the global row index and the
random-scaling sums are re-centred only at block ends, so the numbers do not depend on
how the stream was cut (tested).

Privacy (ldp-sgd paper, Prop. 5): row ``i`` is used once, at step ``i``, through
``g_i + (2 B0 / mu) xi_i`` with ``||g_i|| <= B0``: a Gaussian mechanism with
sensitivity ``2 B0`` and noise ``2 B0 / mu``, i.e. mu-GDP for that person, computed
where the row lives. The order of the rows is public (it is the order of arrival);
shuffling it first changes nothing about the guarantee, which holds for every order,
but makes the path's time series free of trends in the data (a stream sorted by a
covariate violates the i.i.d. arrival the functional CLT assumes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpreg.engines import _kernels, _ldp_kernels
from dpreg.engines.dpsgd import recentre
from dpreg.exceptions import ConvergenceError

__all__ = ["LDPSettings", "LDPPath", "LDPSnapshot", "NOISE_BLOCK", "MARK_RATIO"]

#: Rows per block of pre-drawn noise (and per re-centring of the random-scaling sums).
NOISE_BLOCK = 4096
#: The running average is recorded at every step up to MARK_DENSE and then at steps
#: ``ceil(MARK_DENSE * MARK_RATIO^k)``: about 1,600 marks for 10^7 rows.
MARK_DENSE = 100
MARK_RATIO = 1.01


@dataclass(frozen=True)
class LDPSettings:
    """Public constants of an LDP-SGD pass.

    Attributes
    ----------
    lr, lr_decay : float
        Step ``gamma_t = lr * (t + step_offset)^(-lr_decay)`` (the paper's
        ``gamma i^-alpha`` when ``step_offset`` is 0).
    clip : float
        ``B0``: every row's gradient is clipped to this norm by its owner.
    noise_scale : float
        Standard deviation ``2 B0 / mu`` of the noise each owner adds per coordinate.
    plugin : bool
        Accumulate the (central) plug-in sums of s.4.1.
    hess_cap : float
        Cap of a row's Hessian weight (the family's bound).
    x_bound : float or None
        Declared bound on ``||x||``: rows are clipped to it inside the plug-in Hessian.
    code : int
        Family code the kernels dispatch on.
    c, tau : float
        The family's truncation constant and expectile location.
    step_offset : float
        ``t0 >= 0`` in the step ``lr (t + t0)^-alpha``: a public shift that caps the first
        steps (asymptotically the same schedule). Default 0.
    row_sq_bound : float or None
        Public bound on ``w ||x||^2`` that the plug-in Hessian's sensitivity assumes
        (:meth:`dpreg.fits.common.Problem.weighted_row_bounds`): rows are also clipped
        so that it holds. Default ``None`` (only ``x_bound``).
    """

    lr: float
    lr_decay: float
    clip: float
    noise_scale: float
    plugin: bool
    hess_cap: float
    x_bound: float | None
    code: int
    c: float
    tau: float
    step_offset: float = 0.0
    row_sq_bound: float | None = None


@dataclass(frozen=True, eq=False)
class LDPSnapshot:
    """What a pass has produced so far (copies; the pass can go on).

    Attributes
    ----------
    nobs : int
        Rows seen (steps taken).
    params : ndarray (p,)
        Running average ``theta_bar``.
    last : ndarray (p,)
        Current iterate.
    rs_q : ndarray (p, p)
        ``n^-3 sum_b D_b D_b'`` with ``D_b = sum_{i<=b} (theta_i - theta_bar)``: the
        paper's ``V_n / n`` (s.4.2).
    mark_steps : ndarray (K,)
        Steps at which the running average was recorded.
    mark_avg : ndarray (K, p)
        Running averages at those steps.
    mark_q : ndarray (K, p)
        Diagonal of the random-scaling matrix of the path up to each mark (mapped by
        ``qmap`` when the path was given one: then in the user's coordinates).
    a_sum, s_sum : ndarray (p, p) or None
        Plug-in sums ``sum_i h_i x~_i x~_i'`` and ``sum_i g_i g_i'`` (NOT private).
    """

    nobs: int
    params: np.ndarray
    last: np.ndarray
    rs_q: np.ndarray
    mark_steps: np.ndarray
    mark_avg: np.ndarray
    mark_q: np.ndarray
    a_sum: np.ndarray | None
    s_sum: np.ndarray | None


class LDPPath:
    """State of one LDP-SGD pass; feed rows with :meth:`update`.

    Parameters
    ----------
    p : int
        Number of coefficients.
    settings : LDPSettings
    theta0 : ndarray (p,)
        Public starting point.
    rng : numpy.random.Generator
        Source of every noise draw of the pass.
    qmap : ndarray (p, p), optional
        ``M^-1`` of a public conditioning ``X = Z M`` when the rows fed are ``Z``: the
        marks then record the diagonal of ``M^-1 Q M^-T``, the random-scaling matrix
        in the user's coordinates (``mark_q``); everything else stays in the engine's
        coordinates. Default: no map.
    """

    def __init__(self, p: int, settings: LDPSettings, theta0: np.ndarray,
                 rng: np.random.Generator, qmap: np.ndarray | None = None):
        self.p = int(p)
        if qmap is None or np.array_equal(qmap, np.eye(self.p)):
            self._qmap = np.empty((0, 0))
        else:
            self._qmap = np.ascontiguousarray(qmap, dtype=float)
            if self._qmap.shape != (self.p, self.p):
                raise ValueError(f"qmap must be {self.p} x {self.p}, got {self._qmap.shape}")
        self.settings = settings
        self._rng = rng
        self._t = 0
        self._theta = np.array(theta0, dtype=float)
        self._ref = self._theta.copy()
        self._s_run = np.zeros(p)
        self._m_acc = np.zeros((p, p))
        self._l_acc = np.zeros(p)
        self._a_acc = np.zeros((p, p))
        self._s_acc = np.zeros((p, p))
        self._noise = np.empty((NOISE_BLOCK, p))
        self._noise_state = None  # rng state before the current block was drawn
        self._marks: list[int] = []
        self._mark_avg: list[np.ndarray] = []
        self._mark_q: list[np.ndarray] = []
        self._mark_k = 0

    @property
    def nobs(self) -> int:
        """Rows (steps) taken so far."""
        return self._t

    # ------------------------------------------------------------------ marks
    def _mark_value(self, k: int) -> int:
        if k < MARK_DENSE:
            return k + 1
        return int(math.ceil(MARK_DENSE * MARK_RATIO ** (k - MARK_DENSE + 1)))

    def _marks_until(self, t_end: int) -> np.ndarray:
        """The marks in ``(t, t_end]`` (advances the mark pointer)."""
        out = []
        while True:
            v = self._mark_value(self._mark_k)
            if v > t_end:
                break
            if not out or v > out[-1]:
                if v > self._t:
                    out.append(v)
            self._mark_k += 1
        return np.asarray(out, dtype=np.int64)

    # ------------------------------------------------------------------ update
    def _state(self):
        arrays = (self._theta, self._ref, self._s_run, self._m_acc, self._l_acc,
                  self._a_acc, self._s_acc)
        return (self._t, [a.copy() for a in arrays], self._rng.bit_generator.state,
                self._noise_state, len(self._marks), self._mark_k)

    def _restore(self, saved) -> None:
        t, arrays, rng_state, noise_state, n_marks, mark_k = saved
        for dst, src in zip((self._theta, self._ref, self._s_run, self._m_acc, self._l_acc,
                             self._a_acc, self._s_acc), arrays, strict=True):
            dst[...] = src
        if noise_state is not None and t % NOISE_BLOCK:
            self._rng.bit_generator.state = noise_state
            self._rng.standard_normal(out=self._noise)
        self._rng.bit_generator.state = rng_state
        self._t, self._noise_state, self._mark_k = t, noise_state, mark_k
        del self._marks[n_marks:], self._mark_avg[n_marks:], self._mark_q[n_marks:]

    def update(self, X: np.ndarray, y: np.ndarray, weights: np.ndarray) -> None:
        """Take one step per row of ``X`` (in order).

        All or nothing: if the path diverges the state is restored and
        :class:`~dpreg.exceptions.ConvergenceError` is raised.

        Parameters
        ----------
        X : ndarray (k, p)
            The rows, in the engine's coordinates.
        y : ndarray (k,)
            Their outcomes.
        weights : ndarray (k,)
            Their row weights (Mallows weights, or ones).
        """
        saved = self._state()
        try:
            self._update(X, y, weights)
        except BaseException:
            self._restore(saved)
            raise

    def _update(self, X, y, weights) -> None:
        s = self.settings
        X = np.ascontiguousarray(X, dtype=float)
        y = np.ascontiguousarray(y, dtype=float)
        w = np.ascontiguousarray(weights, dtype=float)
        xnorm = np.sqrt(np.einsum("ij,ij->i", X, X))
        # the plug-in Hessian's rows: norm at most x_bound and w ||x~||^2 <= row_sq_bound
        xscale = np.ones(len(y)) if s.x_bound is None \
            else np.minimum(1.0, s.x_bound / np.maximum(xnorm, np.finfo(float).tiny))
        if s.row_sq_bound is not None:
            term = w * (xnorm * xscale) ** 2
            over = term > s.row_sq_bound
            xscale[over] *= np.sqrt(s.row_sq_bound / term[over])
        start = 0
        n = len(y)
        while start < n:
            pos = self._t % NOISE_BLOCK
            if pos == 0:
                self._noise_state = self._rng.bit_generator.state
                self._rng.standard_normal(out=self._noise)
            stop = min(n, start + NOISE_BLOCK - pos)
            marks = self._marks_until(self._t + stop - start)
            mark_avg = np.empty((len(marks), self.p))
            mark_q = np.empty((len(marks), self.p))
            status, done = _ldp_kernels.ldp_sgd_rows(
                X[start:stop], y[start:stop], xnorm[start:stop], w[start:stop],
                xscale[start:stop], s.code, s.c, s.tau, self._noise[pos:], self._t,
                s.lr, s.lr_decay, s.clip, s.noise_scale, s.hess_cap, self._theta, self._ref,
                self._s_run, self._m_acc, self._l_acc, s.plugin, self._a_acc, self._s_acc,
                marks, mark_avg, mark_q, self._qmap, float(s.step_offset))
            if status != _kernels.STATUS_OK:
                raise ConvergenceError(
                    f"LDP-SGD diverged (non-finite iterate) at row {self._t + done + 1}: the "
                    f"step size lr={s.lr:g} is too large; lower lr")
            self._marks.extend(int(v) for v in marks)
            self._mark_avg.extend(mark_avg)
            self._mark_q.extend(mark_q)
            self._t += stop - start
            start = stop
            if self._t % NOISE_BLOCK == 0:
                recentre(self._ref, self._s_run, self._m_acc, self._l_acc, self._t)

    # ------------------------------------------------------------------ output
    def snapshot(self) -> LDPSnapshot:
        """Everything the pass has produced so far, without changing its state.

        Returns
        -------
        LDPSnapshot
            Copies of the estimate, the random-scaling matrix, the plug-in sums and the
            marks of the running average.
        """
        t = self._t
        ref, s_run = self._ref.copy(), self._s_run.copy()
        m_acc, l_acc = self._m_acc.copy(), self._l_acc.copy()
        recentre(ref, s_run, m_acc, l_acc, t)  # sums about the running average
        q = np.triu(m_acc) + np.triu(m_acc, 1).T
        q /= float(t) ** 3

        def sym(a):
            return np.triu(a) + np.triu(a, 1).T

        plugin = self.settings.plugin
        return LDPSnapshot(
            nobs=t, params=ref, last=self._theta.copy(), rs_q=q,
            mark_steps=np.asarray(self._marks, dtype=np.int64),
            mark_avg=np.asarray(self._mark_avg).reshape(-1, self.p),
            mark_q=np.asarray(self._mark_q).reshape(-1, self.p),
            a_sum=sym(self._a_acc) if plugin else None,
            s_sum=sym(self._s_acc) if plugin else None)
