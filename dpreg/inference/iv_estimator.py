"""IV-2SLS from released cross-products: estimate, covariance, first-stage F, bootstrap.

Everything here is post-processing of the releases of :mod:`dpreg.engines.iv`: the
noisy ``G~ = W'W + E_G`` (symmetric noise), ``A~ = W'X + E_A`` (iid noise), ``b~ = W'y +
e_b``, ``X'X~``, ``X'y~``, ``y'y~``, their public noise standard deviations and the
public ``n``.

Estimate. ``G~+ = floor(G~, tau)`` (eigenvalues raised to the public floor ``tau`` of
:func:`dpreg.inference.ssp_estimator.gram_floor`, as SSP floors ``X'X``); ``H = A~' G~+^{-1} A~``
(the released ``X'P_W X``, positive semi-definite by construction) and

    beta~ = H^{-1} A~' G~+^{-1} b~.

The residual variance uses ``X``, not the projected regressors:
``RSS~ = y'y~ - 2 beta~' X'y~ + beta~' X'X~ beta~ - tr(X'X~ V_priv)``, the last term
removing the first-order bias ``E[d' X'X d]`` of evaluating the residual sum of squares
at the noisy ``beta~ = beta^ + d`` (``V_priv`` the privacy part of the covariance below;
our derivation), and ``sigma~^2 = max(RSS~, s_yy) / max(n - k, 1)`` (floor flagged).

Covariance (delta method; our derivation). With ``v = G^{-1}(b - A beta)`` (zero for an
exactly identified model), perturbing the releases moves the estimate by

    d beta = H^{-1} [A' G^{-1} (e_b - E_A beta - E_G v) + E_A' v]

to first order. For iid ``E_A`` entries of variance ``s_A^2``: ``Cov(E_A beta) = s_A^2
||beta||^2 I``, ``Cov(E_A' v) = s_A^2 ||v||^2 I`` and ``Cov(E_A beta, E_A' v) = s_A^2 v
beta'``; ``Cov(E_G v) = s_G^2 C(v)`` (:func:`dpreg.inference.ssp_estimator.privacy_term`). The
plug-in covariance adds the sampling part of 2SLS under homoskedastic errors:

    V = sigma~^2 H^{-1} + H^{-1} T H^{-1},
    T = A'G^{-1} [(s_b^2 + s_A^2 ||beta||^2) I + s_G^2 C(v)] G^{-1} A
        + s_A^2 ||v||^2 I - s_A^2 (A'G^{-1} v beta' + beta v' G^{-1} A).

Parametric bootstrap (the IV analogue of SSP's, after Ferrando, Wang and Sheldon 2022):
given the released ``G~+`` and ``A~``, ``W'y = A beta + W'u`` with ``W'u ~ N(0, sigma^2
W'W)``; replicate ``b_b = A~ beta~ + Z_b + e_b``, ``A_b = A~ + E_A``, ``G_b = floor(G~+ +
E_G, tau)`` and the estimator (:func:`iv_pboot_replicates`).

First-stage F (:func:`first_stage_f`): for each endogenous regressor, the F statistic of
the excluded instruments in its first-stage regression on ``W``, from ``W'W``, ``W'd``
and ``d'd`` (released) only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpreg.inference.plugin import floor_eigenvalues
from dpreg.inference.ssp_estimator import privacy_term

__all__ = ["IVRelease", "IVEstimate", "iv_estimate", "iv_covariance", "first_stage_f",
           "iv_pboot_replicates"]


@dataclass(frozen=True, eq=False)
class IVRelease:
    """What an IV fit released, with the public constants of the release.

    Attributes
    ----------
    ww : ndarray (L, L)
        ``G~``, symmetric.
    wx : ndarray (L, k)
        ``A~``.
    wy : ndarray (L,)
    xx : ndarray (k, k)
        Symmetric.
    xy : ndarray (k,)
    yy : float
    nobs : int
        ``n`` (public).
    s_ww, s_wx, s_wy, s_xx, s_xy, s_yy : float
        Noise standard deviations of the releases.
    floor : float
        The public eigenvalue floor ``tau`` of ``G~``.
    """

    ww: np.ndarray
    wx: np.ndarray
    wy: np.ndarray
    xx: np.ndarray
    xy: np.ndarray
    yy: float
    nobs: int
    s_ww: float
    s_wx: float
    s_wy: float
    s_xx: float
    s_xy: float
    s_yy: float
    floor: float


@dataclass(frozen=True, eq=False)
class IVEstimate:
    """The estimate and what was derived with it (post-processing of a release).

    Attributes
    ----------
    params : ndarray (k,)
        ``beta~``.
    gram : ndarray (L, L)
        ``G~+``.
    xpx : ndarray (k, k)
        ``H = A~' G~+^{-1} A~``.
    n_floored : int
        Eigenvalues of ``G~`` raised to the floor.
    v : ndarray (L,)
        ``G~+^{-1}(b~ - A~ beta~)``.
    privacy_cov : ndarray (k, k)
        ``H^{-1} T H^{-1}``, the privacy noise's part of the covariance.
    rss : float
        The bias-corrected ``RSS~`` (may be negative).
    sigma2 : float
    sigma2_floored : bool
    """

    params: np.ndarray
    gram: np.ndarray
    xpx: np.ndarray
    n_floored: int
    v: np.ndarray
    privacy_cov: np.ndarray
    rss: float
    sigma2: float
    sigma2_floored: bool


def _sym(a: np.ndarray) -> np.ndarray:
    return (a + a.T) / 2


def _privacy_cov(A: np.ndarray, G: np.ndarray, H: np.ndarray, beta: np.ndarray,
                 v: np.ndarray, rel: IVRelease) -> np.ndarray:
    GA = np.linalg.solve(G, A)  # G^{-1} A
    k = A.shape[1]
    L = A.shape[0]
    middle = ((rel.s_wy ** 2 + rel.s_wx ** 2 * float(beta @ beta)) * np.eye(L)
              + privacy_term(v, rel.s_ww, 0.0))
    cross = np.outer(GA.T @ v, beta)  # A'G^{-1} v beta'
    T = (GA.T @ middle @ GA + rel.s_wx ** 2 * float(v @ v) * np.eye(k)
         - rel.s_wx ** 2 * (cross + cross.T))
    Hinv = _sym(np.linalg.inv(H))
    return _sym(Hinv @ T @ Hinv)


def iv_estimate(rel: IVRelease) -> IVEstimate:
    """``beta~``, ``sigma~^2`` and the privacy covariance from a release (module notes).

    Parameters
    ----------
    rel : IVRelease

    Returns
    -------
    IVEstimate
    """
    L, k = rel.wx.shape
    G, moved = floor_eigenvalues(rel.ww, rel.floor)
    G = _sym(G)
    A = rel.wx
    GA = np.linalg.solve(G, A)
    H = _sym(A.T @ GA)
    beta = np.linalg.solve(H, GA.T @ rel.wy)
    v = np.linalg.solve(G, rel.wy - A @ beta)
    priv = _privacy_cov(A, G, H, beta, v, rel)
    rss = (float(rel.yy) - 2.0 * float(beta @ rel.xy) + float(beta @ rel.xx @ beta)
           - float(np.trace(rel.xx @ priv)))
    floored = rss < rel.s_yy
    sigma2 = max(rss, rel.s_yy) / max(rel.nobs - k, 1)
    return IVEstimate(params=beta, gram=G, xpx=H, n_floored=moved, v=v, privacy_cov=priv,
                      rss=rss, sigma2=sigma2, sigma2_floored=bool(floored))


def iv_covariance(est: IVEstimate) -> np.ndarray:
    """The plug-in covariance ``sigma~^2 H^{-1} + H^{-1} T H^{-1}`` (module notes).

    Parameters
    ----------
    est : IVEstimate

    Returns
    -------
    ndarray (k, k)
    """
    return _sym(est.sigma2 * np.linalg.inv(est.xpx) + est.privacy_cov)


def first_stage_f(ww: np.ndarray, wx: np.ndarray, xx: np.ndarray, exog_rows, endog_cols,
                  nobs: int) -> np.ndarray:
    """First-stage F statistics of the excluded instruments, one per endogenous regressor.

    Parameters
    ----------
    ww : ndarray (L, L)
        ``W'W`` (positive definite: the floored release, mapped to natural units).
    wx : ndarray (L, k)
        ``W'X``.
    xx : ndarray (k, k)
        ``X'X`` (only its diagonal entries of the endogenous columns are used).
    exog_rows : sequence of int
        Rows of ``W`` that are exogenous regressors (the others are the excluded
        instruments, ``q`` of them).
    endog_cols : sequence of int
        Columns of ``X`` that are endogenous.
    nobs : int

    Returns
    -------
    ndarray
        ``F_j = ((RSS_r - RSS_f) / q) / (RSS_f / (n - L))`` with ``RSS_f = d'd - a' G^{-1}
        a`` (regression of ``d`` on all of ``W``) and ``RSS_r`` the same on the exogenous
        rows only (``d'd`` when there are none); ``nan`` where the noisy ``RSS_f`` is not
        positive.
    """
    L = ww.shape[0]
    e = np.asarray(exog_rows, dtype=int)
    q = L - e.size
    out = []
    for j in endog_cols:
        a = wx[:, j]
        dd = float(xx[j, j])
        rss_f = dd - float(a @ np.linalg.solve(ww, a))
        if e.size:
            ae = a[e]
            rss_r = dd - float(ae @ np.linalg.solve(ww[np.ix_(e, e)], ae))
        else:
            rss_r = dd
        if not rss_f > 0 or q <= 0:
            out.append(math.nan)
            continue
        out.append(((rss_r - rss_f) / q) / (rss_f / max(nobs - L, 1)))
    return np.asarray(out, dtype=float)


def iv_pboot_replicates(est: IVEstimate, rel: IVRelease, n_boot: int,
                        rng: np.random.Generator) -> np.ndarray:
    """Parametric-bootstrap replicates of the IV estimate (released quantities only).

    Parameters
    ----------
    est : IVEstimate
    rel : IVRelease
    n_boot : int
        ``B``.
    rng : numpy.random.Generator
        A stream of its own (never the mechanisms').

    Returns
    -------
    ndarray (B, k)
        ``beta_b = (A_b' G_b^{-1} A_b)^{-1} A_b' G_b^{-1} b_b`` with ``G_b = floor(G~+ +
        E_G, tau)``, ``A_b = A~ + E_A``, ``b_b = A~ beta~ + Z_b + e_b``, ``Z_b ~ N(0,
        sigma~^2 G~+)``. Draws, in order: ``E_G`` (``B x L x L``, upper triangle),
        ``E_A`` (``B x L x k``), ``e_b`` (``B x L``), then ``Z`` (``B x L`` standard
        normals times the Cholesky factor of ``sigma~^2 G~+``).
    """
    G, A, beta = est.gram, rel.wx, est.params
    L, k = A.shape
    B = int(n_boot)
    upper = np.triu(rng.standard_normal((B, L, L)) * rel.s_ww)
    EG = upper + np.swapaxes(np.triu(upper, 1), -1, -2)
    EA = rng.standard_normal((B, L, k)) * rel.s_wx
    eb = rng.standard_normal((B, L)) * rel.s_wy
    Z = rng.standard_normal((B, L)) @ np.linalg.cholesky(est.sigma2 * G).T
    vals, vecs = np.linalg.eigh(G[None, :, :] + EG)
    vals = np.maximum(vals, rel.floor)
    Ab = A[None, :, :] + EA
    bb = (A @ beta)[None, :] + Z + eb
    # G_b^{-1} M = V diag(1/vals) V' M
    GinvA = vecs @ ((np.swapaxes(vecs, -1, -2) @ Ab) / vals[:, :, None])
    Hb = np.swapaxes(Ab, -1, -2) @ GinvA
    rhs = np.einsum("bli,bl->bi", GinvA, bb)
    return np.linalg.solve(Hb, rhs[:, :, None])[:, :, 0]
