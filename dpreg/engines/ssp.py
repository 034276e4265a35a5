"""SSP: sufficient-statistics perturbation for linear regression (``engine="ssp"``).

Plain (non-adaptive) sufficient-statistics perturbation aimed at the population
coefficients (design memo ``design/ssp-engine.md``): three Gaussian mechanisms release
``G = X'X``, ``c = X'y`` and ``q = y'y`` of the clipped rows once, and, for the
sandwich, a fourth releases the meat ``M = sum_i g_i g_i'`` of the clipped scores at the
released estimate. :func:`release_ssp` makes the whole release (the sums' noise, then
the meat at the estimate of the first three releases, post-processing). Everything else
(estimate, residual variance, intervals, bootstrap, checks) is post-processing:
:mod:`dpreg.inference.ssp_estimator`.

Clipping (public bounds only). Design rows, in the engine's coordinates, are clipped to
``||x|| <= x_bound`` and the outcome, less a public shift ``y_shift``, to ``|y -
y_shift| <= y_bound``. The meat uses the per-row scores ``g_i = r_i x_i`` of the clipped
row at the released ``beta~``, ``r_i = y_i - y_shift - x_i' beta~``, clipped to norm
``clip``.

Sensitivities under replace-one adjacency with ``n`` public (row ``a`` replaced by row
``b``; L2 norm of the upper triangle with the diagonal for matrices, on which the noise
is drawn, which is at most the Frobenius norm):

* ``X'X``: ``||a a' - b b'||_F = sqrt(||a||^4 + ||b||^4 - 2 (a'b)^2) <= sqrt(2)
  x_bound^2``, attained by orthogonal rows of norm ``x_bound`` (the upper triangle keeps
  both diagonal entries), so tight for ``p >= 2``; for ``p = 1`` it is ``|a^2 - b^2| <=
  x_bound^2``;
* ``X'y``: ``||a y_a - b y_b|| <= 2 x_bound y_bound`` (``b = -a``, ``y_b = y_a``);
* ``y'y``: ``|y_a^2 - y_b^2| <= y_bound^2`` (the range of ``y^2`` on ``[-y_bound,
  y_bound]``);
* meat: ``||g_a g_a' - g_b g_b'||_F <= sqrt(2) clip^2`` (``clip^2`` for ``p = 1``), the
  argument of ``X'X`` with ``||g|| <= clip``. The meat is released after ``beta~``
  (adaptive composition; ``beta~`` is post-processing of the first three releases), and
  its event is built from public constants before any data is touched.

Clusters as the privacy unit (``groups=``, ``max_group_size=K``). Each cluster keeps
its first ``K`` rows in the data's order (:func:`first_rows`; the rest are not read, a
rule that publishes nothing), and two data sets are neighbours when one whole cluster
(at most ``K`` rows) is replaced by another of at most ``K`` rows, the number of
clusters ``G`` public; the rows used ``n`` are not (a cluster's size is protected, and
no release here depends on it). A cluster adds
``A = sum_{i<=K} a_i a_i'`` to ``X'X`` with ``||a_i|| <= x_bound``; for the replacing
cluster's ``B = sum_i b_i b_i'``, both positive semi-definite,

    ||A - B||_F^2 = ||A||_F^2 + ||B||_F^2 - 2 tr(AB) <= ||A||_F^2 + ||B||_F^2,

since ``tr(AB) >= 0``, and ``||A||_F <= tr(A) = sum_i ||a_i||^2 <= K x_bound^2``, so

* ``X'X``: ``||A - B||_F <= sqrt(2) K x_bound^2``, attained by ``K`` copies of a row
  against ``K`` copies of an orthogonal row (``K x_bound^2`` for ``p = 1``: ``A, B``
  in ``[0, K x_bound^2]``);
* ``X'y``: ``||sum_i a_i y_i - sum_i b_i y'_i|| <= 2 K x_bound y_bound`` (triangle
  inequality; attained by ``K`` copies of ``(a, y)`` against ``K`` of ``(-a, y)``);
* ``y'y``: ``|sum_i y_i^2 - sum_i y'_i^2| <= K y_bound^2`` (two sums in ``[0, K
  y_bound^2]``);
* meat: one score per cluster, ``h_g = sum_{i in g} r_i x_i`` of the clipped rows,
  clipped to norm ``clip`` (:func:`cluster_meat_sum`), so a cluster adds one rank-one
  term and the row argument gives ``sqrt(2) clip^2`` (``clip^2`` for ``p = 1``).

The sensitivities are ``K`` times the row's (the meat's unchanged, with its own
``clip``); the events' adjacency is :func:`dpreg.privacy.events.cluster_adjacency`.

Each release is ``Delta_k / s_k``-GDP and the fit is ``sqrt(sum_k mu_k^2)``-GDP. (The
docstring of :func:`dpreg.privacy.mechanisms.gaussian_matrix_mechanism` bounds the
Frobenius change of a mean of ``m m'`` terms by ``2B/n``; for a sum the tight constant
is ``sqrt(2) B``, as here and in AdaSSP.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Mapping

import numpy as np

from dpreg.engines.adassp import adassp_sensitivities
from dpreg.inference.ssp_estimator import SSPRelease, gram_floor, ssp_estimate
from dpreg.privacy.events import GaussianMechanismEvent, cluster_adjacency
from dpreg.privacy.mechanisms import symmetric_gaussian_noise

__all__ = ["SSPSettings", "SSPSums", "MECHANISMS", "ssp_sensitivities", "ssp_events",
           "ssp_sums", "add_sums", "meat_sum", "release_sums", "release_meat", "first_rows",
           "cluster_meat_sum", "SSPOutput", "release_ssp"]

#: Ledger names of the releases by budget-split key, in the order they are drawn.
MECHANISMS = {"gram": "SSP X'X", "xty": "SSP X'y", "yty": "SSP y'y",
              "meat": "SSP meat sum g g'"}
_BLOCK = 1 << 16


@dataclass(frozen=True)
class SSPSettings:
    """Public constants of an SSP fit (engine coordinates).

    Attributes
    ----------
    x_bound : float
        Bound on the L2 norm of a design row (rows are clipped to it).
    y_bound : float
        Bound on ``|y - y_shift|`` (the outcome is clipped to it).
    y_shift : float
        Public shift of the outcome (the midpoint of its declared bounds when the
        design has an intercept, which absorbs it; else 0).
    clip : float or None
        Norm bound of the meat's scores (``None``: no meat is released): per row, or
        per cluster with ``max_group_size``.
    max_group_size : int or None
        ``K``: clusters are the privacy unit, each of at most ``K`` rows (module
        notes); ``None``: rows are.
    """

    x_bound: float
    y_bound: float
    y_shift: float = 0.0
    clip: float | None = None
    max_group_size: int | None = None


@dataclass(frozen=True, eq=False)
class SSPSums:
    """Exact sums of the clipped rows (never released as such).

    Attributes
    ----------
    gram : ndarray (p, p)
    xty : ndarray (p,)
    yty : float
    nobs : int
        Rows summed.
    rows_clipped : int
        Rows whose norm exceeded ``x_bound`` (a non-private count for
        ``diagnostics=True``).
    """

    gram: np.ndarray
    xty: np.ndarray
    yty: float
    nobs: int
    rows_clipped: int = 0


def ssp_sensitivities(settings: SSPSettings, p: int) -> dict[str, float]:
    """Replace-one L2 sensitivities of the releases (module notes).

    Parameters
    ----------
    settings : SSPSettings
    p : int
        Number of columns.

    Returns
    -------
    dict
        ``{"gram": sqrt(2) x_bound^2, "xty": 2 x_bound y_bound, "yty": y_bound^2}``
        (``x_bound^2`` for the Gram matrix when ``p = 1``), each times ``K =
        max_group_size`` for clusters, and ``"meat": sqrt(2) clip^2`` (``clip^2`` for
        ``p = 1``) when ``settings.clip`` is set.
    """
    _, gram, xty = adassp_sensitivities(settings.x_bound, settings.y_bound)
    k = 1 if settings.max_group_size is None else int(settings.max_group_size)
    out = {"gram": k * (gram if p >= 2 else settings.x_bound ** 2), "xty": k * xty,
           "yty": k * settings.y_bound ** 2}
    if settings.clip is not None:
        c2 = settings.clip ** 2
        out["meat"] = math.sqrt(2.0) * c2 if p >= 2 else c2
    return out


def ssp_events(settings: SSPSettings, p: int, split: Mapping[str, float],
               mu_scale: float) -> list[GaussianMechanismEvent]:
    """The Gaussian mechanisms at GDP scale ``mu_scale``.

    Parameters
    ----------
    settings : SSPSettings
    p : int
    split : dict
        Shares of ``mu^2`` by release (keys of :data:`MECHANISMS`, summing to 1).
    mu_scale : float

    Returns
    -------
    list of GaussianMechanismEvent
        In the order of :data:`MECHANISMS`; release ``k`` is ``mu_scale sqrt(w_k)``-GDP
        with noise ``Delta_k / (mu_scale sqrt(w_k))``, so the total is ``mu_scale``.
    """
    sens = ssp_sensitivities(settings, p)
    adjacency = ("replace-one" if settings.max_group_size is None
                 else cluster_adjacency(settings.max_group_size))
    out = []
    for key, name in MECHANISMS.items():
        if key not in split:
            continue
        mu_k = mu_scale * math.sqrt(split[key])
        out.append(GaussianMechanismEvent(name=name, sensitivity=sens[key],
                                          noise_std=sens[key] / mu_k, adjacency=adjacency))
    return out


def _shrink(norms: np.ndarray, bound: float) -> np.ndarray:
    """Factors ``min(1, bound / norm)`` that bring each norm within ``bound``."""
    scale = np.ones_like(norms)
    over = norms > bound
    scale[over] = bound / norms[over]
    return scale


def _clipped(Z: np.ndarray, y: np.ndarray, settings: SSPSettings):
    norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    yc = np.clip(y - settings.y_shift, -settings.y_bound, settings.y_bound)
    return (Z * _shrink(norms, settings.x_bound)[:, None], yc,
            int(np.sum(norms > settings.x_bound)))


def ssp_sums(Z: np.ndarray, y: np.ndarray, settings: SSPSettings) -> SSPSums:
    """``X'X``, ``X'y`` and ``y'y`` of the clipped rows (module notes), by blocks of rows.

    Parameters
    ----------
    Z : ndarray (n, p)
        Design rows in the engine's coordinates.
    y : ndarray (n,)
        Outcome.
    settings : SSPSettings

    Returns
    -------
    SSPSums
    """
    Z = np.asarray(Z, dtype=float)
    y = np.asarray(y, dtype=float)
    n, p = Z.shape
    gram, xty, yty, clipped = np.zeros((p, p)), np.zeros(p), 0.0, 0
    for start in range(0, n, _BLOCK):
        Zc, yc, k = _clipped(Z[start:start + _BLOCK], y[start:start + _BLOCK], settings)
        gram += Zc.T @ Zc
        xty += Zc.T @ yc
        yty += float(yc @ yc)
        clipped += k
    return SSPSums(gram=gram, xty=xty, yty=yty, nobs=n, rows_clipped=clipped)


def add_sums(parts) -> SSPSums:
    """The sums of several blocks of rows (e.g. the partitions of a Dask frame).

    Parameters
    ----------
    parts : iterable of SSPSums

    Returns
    -------
    SSPSums
    """
    parts = list(parts)
    return SSPSums(gram=sum(s.gram for s in parts), xty=sum(s.xty for s in parts),
                   yty=float(sum(s.yty for s in parts)), nobs=sum(s.nobs for s in parts),
                   rows_clipped=sum(s.rows_clipped for s in parts))


def meat_sum(Z: np.ndarray, y: np.ndarray, settings: SSPSettings,
             theta: np.ndarray) -> tuple[np.ndarray, int]:
    """``sum_i g_i g_i'`` with ``g_i = r_i x_i`` of the clipped rows at ``theta``, each
    clipped to norm ``settings.clip``.

    Parameters
    ----------
    Z, y : ndarray
        As for :func:`ssp_sums`.
    settings : SSPSettings
        With ``clip`` set.
    theta : ndarray (p,)
        The released estimate, in the engine's coordinates (shifted outcome).

    Returns
    -------
    (ndarray (p, p), int)
        The meat and the number of scores clipped (non-private).
    """
    Z = np.asarray(Z, dtype=float)
    y = np.asarray(y, dtype=float)
    theta = np.asarray(theta, dtype=float)
    n, p = Z.shape
    out, clipped = np.zeros((p, p)), 0
    for start in range(0, n, _BLOCK):
        Zc, yc, _ = _clipped(Z[start:start + _BLOCK], y[start:start + _BLOCK], settings)
        r = yc - Zc @ theta
        gn = np.abs(r) * np.sqrt(np.einsum("ij,ij->i", Zc, Zc))
        g = Zc * (r * _shrink(gn, settings.clip))[:, None]
        out += g.T @ g
        clipped += int(np.sum(gn > settings.clip))
    return out, clipped


def first_rows(codes: np.ndarray, max_group_size: int) -> np.ndarray:
    """Which rows each cluster keeps: its first ``max_group_size`` in the data's order.

    Parameters
    ----------
    codes : ndarray of int (n,)
        Cluster of each row (``0 .. G-1``).
    max_group_size : int
        ``K``.

    Returns
    -------
    ndarray of bool (n,)
    """
    codes = np.asarray(codes)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    start = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1]
    sizes = np.diff(np.r_[start, codes.size])
    rank = np.empty(codes.size, dtype=np.int64)
    rank[order] = np.arange(codes.size) - np.repeat(start, sizes)
    return rank < int(max_group_size)


def cluster_meat_sum(Z: np.ndarray, y: np.ndarray, settings: SSPSettings,
                     theta: np.ndarray, codes: np.ndarray,
                     n_groups: int) -> tuple[np.ndarray, int]:
    """``sum_g h_g h_g'`` with ``h_g = sum_{i in g} r_i x_i`` of the clipped rows at
    ``theta``, each cluster's score clipped to norm ``settings.clip``.

    Parameters
    ----------
    Z, y : ndarray
        As for :func:`ssp_sums` (the rows kept by :func:`first_rows`).
    settings : SSPSettings
        With ``clip`` set.
    theta : ndarray (p,)
        The released estimate, in the engine's coordinates (shifted outcome).
    codes : ndarray of int (n,)
        Cluster of each row, ``0 .. n_groups-1``.
    n_groups : int
        ``G``.

    Returns
    -------
    (ndarray (p, p), int)
        The meat and the number of cluster scores clipped (non-private).
    """
    Z = np.asarray(Z, dtype=float)
    y = np.asarray(y, dtype=float)
    theta = np.asarray(theta, dtype=float)
    codes = np.asarray(codes)
    p = Z.shape[1]
    H = np.zeros((int(n_groups), p))
    for start in range(0, Z.shape[0], _BLOCK):
        Zc, yc, _ = _clipped(Z[start:start + _BLOCK], y[start:start + _BLOCK], settings)
        np.add.at(H, codes[start:start + _BLOCK], Zc * (yc - Zc @ theta)[:, None])
    hn = np.sqrt(np.einsum("ij,ij->i", H, H))
    H = H * _shrink(hn, settings.clip)[:, None]
    return H.T @ H, int(np.sum(hn > settings.clip))


def _upper_mirrored(M: np.ndarray) -> np.ndarray:
    """The symmetric matrix of ``M``'s upper triangle with the diagonal (what is
    released)."""
    return np.triu(M) + np.triu(M, 1).T


def release_sums(sums: SSPSums, events: list[GaussianMechanismEvent],
                 rng: np.random.Generator) -> SSPRelease:
    """Add the noise that ``events`` (gram, xty, yty) describe.

    Parameters
    ----------
    sums : SSPSums
    events : list of GaussianMechanismEvent
        The first three of :func:`ssp_events` (already in the ledger).
    rng : numpy.random.Generator
        Draws, in order: the upper triangle of the Gram noise (a ``p x p`` standard
        normal array, as :func:`dpreg.privacy.mechanisms.symmetric_gaussian_noise`),
        ``p`` normals for ``X'y``, one for ``y'y``.

    Returns
    -------
    SSPRelease
        With the public floor :func:`dpreg.inference.ssp_estimator.gram_floor`.
    """
    s_g, s_c, s_q = (e.noise_std for e in events[:3])
    p = sums.xty.shape[0]
    gram = _upper_mirrored(sums.gram) + symmetric_gaussian_noise(p, s_g, rng)
    xty = sums.xty + s_c * rng.standard_normal(p)
    yty = sums.yty + s_q * float(rng.standard_normal())
    return SSPRelease(gram=gram, xty=xty, yty=yty, nobs=int(sums.nobs), s_gram=s_g,
                      s_xty=s_c, s_yty=s_q, floor=gram_floor(s_g, p))


def release_meat(meat: np.ndarray, event: GaussianMechanismEvent,
                 rng: np.random.Generator) -> np.ndarray:
    """``M~``: the meat with the symmetric noise of ``event`` (drawn after the sums').

    Parameters
    ----------
    meat : ndarray (p, p)
    event : GaussianMechanismEvent
    rng : numpy.random.Generator

    Returns
    -------
    ndarray (p, p)
    """
    return _upper_mirrored(meat) + symmetric_gaussian_noise(meat.shape[0], event.noise_std,
                                                            rng)


@dataclass(frozen=True, eq=False)
class SSPOutput:
    """What :func:`release_ssp` returns: the release and the engine's clipping counts.

    Attributes
    ----------
    release : SSPRelease
        ``G~``, ``c~``, ``q~`` (and ``M~`` when the meat was released) with their public
        constants.
    rows_clipped : int
        Rows whose norm exceeded ``x_bound`` (non-private, for ``diagnostics=True``).
    scores_clipped : int or None
        Scores (per row, or per cluster) clipped in the meat (non-private); ``None``
        without the meat.
    """

    release: SSPRelease
    rows_clipped: int
    scores_clipped: int | None = None


def release_ssp(sums: SSPSums, events: list[GaussianMechanismEvent],
                rng: np.random.Generator,
                meat: Callable[[np.ndarray], tuple[np.ndarray, int]] | None = None
                ) -> SSPOutput:
    """The whole SSP release: the sums' noise, then the meat at the released estimate.

    Parameters
    ----------
    sums : SSPSums
        The exact sums of the clipped rows.
    events : list of GaussianMechanismEvent
        :func:`ssp_events` (already in the ledger): three, or four with the meat.
    rng : numpy.random.Generator
        The mechanisms' stream: the draws of :func:`release_sums`, then those of
        :func:`release_meat`.
    meat : callable, optional
        ``theta -> (meat, scores clipped)``: the meat of the clipped scores at ``theta``
        (:func:`meat_sum` or :func:`cluster_meat_sum` of the same rows, or a pass over a
        Dask frame). It is called once, at ``beta~`` of the first three releases
        (:func:`dpreg.inference.ssp_estimator.ssp_estimate`, post-processing), and
        released with ``events[3]``. ``None``: no meat.

    Returns
    -------
    SSPOutput
    """
    rel = release_sums(sums, events, rng)
    scores_clipped = None
    if meat is not None:
        matrix, scores_clipped = meat(ssp_estimate(rel).params)
        rel = replace(rel, meat=release_meat(matrix, events[3], rng))
    return SSPOutput(release=rel, rows_clipped=int(sums.rows_clipped),
                     scores_clipped=None if scores_clipped is None else int(scores_clipped))
