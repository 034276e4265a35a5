"""IV-2SLS by sufficient-statistics perturbation: the releases (``dpreg.dp_iv2sls``).

Two-stage least squares needs, of the rows ``(w_i, x_i, y_i)`` (``w`` the instruments:
exogenous regressors and excluded instruments; ``x`` the regressors: exogenous and
endogenous), the cross-products ``W'W``, ``W'X``, ``W'y`` for the estimate and
``X'X``, ``X'y``, ``y'y`` for the residual variance. Six Gaussian mechanisms release
them once, from the clipped rows; everything else (estimate, first-stage F, intervals)
is post-processing: :mod:`dpreg.inference.iv_estimator`.

Clipping (public bounds only), as in :mod:`dpreg.engines.ssp`: each row of ``W`` and of
``X``, in the engine's coordinates, is scaled down to norm at most ``w_bound`` and
``x_bound`` (each on its own), and the outcome less a public shift to ``|y - y_shift|
<= y_bound``.

Sensitivities under replace-one adjacency with ``n`` public (row ``a`` replaced by row
``b``; L2 norm of the released entries: the upper triangle with the diagonal for the
symmetric Gram matrices, every entry of ``W'X``):

* ``W'W``: ``sqrt(2) w_bound^2`` (``w_bound^2`` for one column), the argument of
  :func:`dpreg.engines.ssp.ssp_sensitivities`; ``X'X`` likewise with ``x_bound``;
* ``W'X``: ``||w_a x_a' - w_b x_b'||_F <= ||w_a|| ||x_a|| + ||w_b|| ||x_b|| <= 2 w_bound
  x_bound``;
* ``W'y``: ``2 w_bound y_bound``; ``X'y``: ``2 x_bound y_bound``;
* ``y'y``: ``y_bound^2``.

Release ``k`` is ``Delta_k / s_k``-GDP and the fit ``sqrt(sum_k mu_k^2)``-GDP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from dpreg.inference.iv_estimator import IVRelease
from dpreg.inference.ssp_estimator import gram_floor
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.mechanisms import symmetric_gaussian_noise

__all__ = ["IVSettings", "IVSums", "MECHANISMS", "iv_sensitivities", "iv_events", "iv_sums",
           "release_iv"]

#: Ledger names of the releases by budget-split key, in the order they are drawn.
MECHANISMS = {"ww": "IV W'W", "wx": "IV W'X", "wy": "IV W'y", "xx": "IV X'X",
              "xy": "IV X'y", "yy": "IV y'y"}
_BLOCK = 1 << 16


@dataclass(frozen=True)
class IVSettings:
    """Public constants of an IV fit (engine coordinates).

    Attributes
    ----------
    w_bound : float
        Bound on the L2 norm of an instrument row (rows are clipped to it).
    x_bound : float
        Bound on the L2 norm of a regressor row.
    y_bound : float
        Bound on ``|y - y_shift|``.
    y_shift : float
        Public shift of the outcome (the midpoint of its bounds with an intercept).
    """

    w_bound: float
    x_bound: float
    y_bound: float
    y_shift: float = 0.0


@dataclass(frozen=True, eq=False)
class IVSums:
    """Exact cross-products of the clipped rows (never released as such)."""

    ww: np.ndarray
    wx: np.ndarray
    wy: np.ndarray
    xx: np.ndarray
    xy: np.ndarray
    yy: float
    nobs: int


def iv_sensitivities(settings: IVSettings, n_w: int, n_x: int) -> dict[str, float]:
    """Replace-one L2 sensitivities of the six releases (module notes).

    Parameters
    ----------
    settings : IVSettings
    n_w, n_x : int
        Columns of ``W`` and of ``X``.

    Returns
    -------
    dict
        By the keys of :data:`MECHANISMS`.
    """
    bw, bx, by = settings.w_bound, settings.x_bound, settings.y_bound
    root2 = math.sqrt(2.0)
    return {"ww": (root2 if n_w >= 2 else 1.0) * bw * bw, "wx": 2.0 * bw * bx,
            "wy": 2.0 * bw * by, "xx": (root2 if n_x >= 2 else 1.0) * bx * bx,
            "xy": 2.0 * bx * by, "yy": by * by}


def iv_events(settings: IVSettings, n_w: int, n_x: int, split: Mapping[str, float],
              mu_scale: float) -> list[GaussianMechanismEvent]:
    """The six Gaussian mechanisms at GDP scale ``mu_scale``.

    Parameters
    ----------
    settings : IVSettings
    n_w, n_x : int
        Columns of ``W`` and of ``X``.
    split : dict
        Shares of ``mu^2`` by release (every key of :data:`MECHANISMS`, summing to 1).
    mu_scale : float

    Returns
    -------
    list of GaussianMechanismEvent
        In the order of :data:`MECHANISMS`; release ``k`` is ``mu_scale sqrt(w_k)``-GDP,
        so that the total is ``mu_scale``.
    """
    sens = iv_sensitivities(settings, n_w, n_x)
    out = []
    for key, name in MECHANISMS.items():
        mu_k = mu_scale * math.sqrt(split[key])
        out.append(GaussianMechanismEvent(name=name, sensitivity=sens[key],
                                          noise_std=sens[key] / mu_k, adjacency="replace-one"))
    return out


def _clip_rows(Z: np.ndarray, bound: float) -> np.ndarray:
    norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    scale = np.ones_like(norms)
    over = norms > bound
    scale[over] = bound / norms[over]
    return Z * scale[:, None]


def iv_sums(ZW: np.ndarray, ZX: np.ndarray, y: np.ndarray, settings: IVSettings) -> IVSums:
    """The six cross-products of the clipped rows, by blocks of rows.

    Parameters
    ----------
    ZW : ndarray (n, L)
        Instrument rows in the engine's coordinates.
    ZX : ndarray (n, k)
        Regressor rows in the engine's coordinates.
    y : ndarray (n,)
        Outcome.
    settings : IVSettings

    Returns
    -------
    IVSums
    """
    ZW, ZX, y = (np.asarray(a, dtype=float) for a in (ZW, ZX, y))
    n, L = ZW.shape
    k = ZX.shape[1]
    ww, wx, wy = np.zeros((L, L)), np.zeros((L, k)), np.zeros(L)
    xx, xy, yy = np.zeros((k, k)), np.zeros(k), 0.0
    for s in range(0, n, _BLOCK):
        w = _clip_rows(ZW[s:s + _BLOCK], settings.w_bound)
        x = _clip_rows(ZX[s:s + _BLOCK], settings.x_bound)
        yc = np.clip(y[s:s + _BLOCK] - settings.y_shift, -settings.y_bound, settings.y_bound)
        ww += w.T @ w
        wx += w.T @ x
        wy += w.T @ yc
        xx += x.T @ x
        xy += x.T @ yc
        yy += float(yc @ yc)
    return IVSums(ww=ww, wx=wx, wy=wy, xx=xx, xy=xy, yy=yy, nobs=n)


def _upper_mirrored(M: np.ndarray) -> np.ndarray:
    return np.triu(M) + np.triu(M, 1).T


def release_iv(sums: IVSums, events: list[GaussianMechanismEvent],
               rng: np.random.Generator) -> IVRelease:
    """Add the noise that ``events`` describe (in the order of :data:`MECHANISMS`).

    Parameters
    ----------
    sums : IVSums
    events : list of GaussianMechanismEvent
        From :func:`iv_events` (already in the ledger).
    rng : numpy.random.Generator
        Draws, in order: the upper triangle of ``W'W``'s noise (an ``L x L`` array),
        ``L x k`` normals for ``W'X``, ``L`` for ``W'y``, the upper triangle of
        ``X'X``'s (``k x k``), ``k`` for ``X'y``, one for ``y'y``.

    Returns
    -------
    IVRelease
        With the public floor of ``W'W`` (:func:`dpreg.inference.ssp_estimator.gram_floor`).
    """
    s = {key: e.noise_std for key, e in zip(MECHANISMS, events, strict=True)}
    L, k = sums.wx.shape
    ww = _upper_mirrored(sums.ww) + symmetric_gaussian_noise(L, s["ww"], rng)
    wx = sums.wx + s["wx"] * rng.standard_normal((L, k))
    wy = sums.wy + s["wy"] * rng.standard_normal(L)
    xx = _upper_mirrored(sums.xx) + symmetric_gaussian_noise(k, s["xx"], rng)
    xy = sums.xy + s["xy"] * rng.standard_normal(k)
    yy = sums.yy + s["yy"] * float(rng.standard_normal())
    return IVRelease(ww=ww, wx=wx, wy=wy, xx=xx, xy=xy, yy=yy, nobs=int(sums.nobs),
                     s_ww=s["ww"], s_wx=s["wx"], s_wy=s["wy"], s_xx=s["xx"], s_xy=s["xy"],
                     s_yy=s["yy"], floor=gram_floor(s["ww"], L))
