"""Sufficient-statistics perturbation for linear regression: estimate, covariance, bootstrap.

Everything here is post-processing of released quantities (no function takes data):
the noisy sums ``G~ = X'X + E``, ``c~ = X'y + e``, ``q~ = y'y + eta`` (and, with the
sandwich, ``M~ = sum_i g_i g_i' + E_M``), their public noise standard deviations
``s_G, s_c, s_q`` and the public count ``n`` (see :mod:`dpreg.engines.ssp` for the
releases and their sensitivities).

Estimate (the design memo ``design/ssp-engine.md``, s.2):

* ``G~+ = floor(G~, tau)``: eigenvalues raised to ``tau = s_G sqrt(p log(2 p^2 / rho))``,
  ``rho = 0.05``, the high-probability bound on the noise's operator norm of Wang (2018,
  Algorithm 2, step 3) that AdaSSP uses;
* ``beta~ = G~+^{-1} c~`` (no ridge: no shrinkage bias);
* ``RSS~ = q~ - 2 beta~'c~ + beta~'G~+ beta~ + s_c^2 tr(G~+^{-1})``: the last term removes
  the first-order bias ``E[c~'G^{-1}c~] - c'G^{-1}c = s_c^2 tr(G^{-1})`` (our
  derivation; the bias from ``E`` is of second order and left to the bootstrap);
* ``sigma~^2 = max(RSS~, s_q) / max(n - p, 1)``: a residual sum of squares below the
  noise standard deviation of ``q~`` cannot be told from 0; hitting the floor is
  flagged.

Analytic covariance (memo s.3). To first order ``beta~ - beta^ = G^{-1}(e - E beta^)``
with ``beta^`` OLS on the clipped rows, independent of the sampling error of
``beta^``. For ``E`` symmetric with iid ``N(0, s_G^2)`` upper triangle,
``Cov(E beta) = s_G^2 C(beta)``, ``C(beta) = ||beta||^2 I + beta beta' - diag(beta o
beta)`` (:func:`privacy_term`, shared with AdaSSP), so

    V = G^{-1} [S + s_c^2 I + s_G^2 C(beta)] G^{-1},

with ``S = sigma^2 G`` (classical: homoskedastic linear model) or ``S = M`` (sandwich:
independent rows), estimated by ``G~+``, ``beta~``, ``sigma~^2`` and ``M~+`` (``M~``
with negative eigenvalues raised to 0). It needs ``s_G sqrt(p) << lambda_min(G)``:
:attr:`SSPEstimate.delta_ratio` is the public diagnostic ``2 s_G sqrt(p) /
lambda_min(G~+)`` (``2 s_G sqrt(p)`` is about the operator norm of ``E``).

Parametric bootstrap (Ferrando, Wang and Sheldon 2022, AISTATS, the OLS variant of their
code; memo s.4): conditionally on the released ``G~+``, replicate the whole release and
the estimator, floor included (:func:`pboot_replicates`).

Checks (:func:`ssp_report`): the coefficients whose standard errors the eigenvalue floor
decides, and a residual variance at its floor, each a warning of the fit's
:class:`ReleaseReport`, the report of every one-shot release (SSP, AdaSSP, IV-2SLS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpreg.inference.diagnostics import SSP_FLOOR_SENSITIVITY
from dpreg.inference.plugin import floor_eigenvalues

__all__ = ["SSPRelease", "SSPEstimate", "FAILURE_PROB", "gram_floor", "ssp_estimate",
           "privacy_term", "ssp_covariance", "pboot_replicates", "ReleaseReport",
           "ssp_report"]

#: Wang's failure probability rho of the eigenvalue floor (as AdaSSP's).
FAILURE_PROB = 0.05


def gram_floor(s_gram: float, p: int, failure_prob: float = FAILURE_PROB) -> float:
    """The public eigenvalue floor ``tau = s_G sqrt(p log(2 p^2 / rho))`` of ``G~``.

    Parameters
    ----------
    s_gram : float
        Noise standard deviation of each entry of the upper triangle of ``G~``.
    p : int
        Its dimension.
    failure_prob : float
        ``rho``.

    Returns
    -------
    float
    """
    return float(s_gram) * math.sqrt(p * math.log(2.0 * p * p / failure_prob))


@dataclass(frozen=True, eq=False)
class SSPRelease:
    """What an SSP fit released, with the public constants of the release.

    Attributes
    ----------
    gram : ndarray (p, p)
        ``G~``, symmetric.
    xty : ndarray (p,)
        ``c~``.
    yty : float
        ``q~``.
    nobs : int
        ``n`` (public).
    s_gram, s_xty, s_yty : float
        Noise standard deviations of the three releases.
    floor : float
        The public eigenvalue floor ``tau`` of :func:`gram_floor`.
    meat : ndarray (p, p) or None
        ``M~`` (sandwich only), symmetric.
    """

    gram: np.ndarray
    xty: np.ndarray
    yty: float
    nobs: int
    s_gram: float
    s_xty: float
    s_yty: float
    floor: float
    meat: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class SSPEstimate:
    """The estimate and what was derived with it (post-processing of a release).

    Attributes
    ----------
    params : ndarray (p,)
        ``beta~ = G~+^{-1} c~``.
    gram : ndarray (p, p)
        ``G~+``, the floored Gram matrix.
    n_floored : int
        Eigenvalues of ``G~`` raised to the floor.
    rss : float
        The bias-corrected ``RSS~`` (may be negative).
    sigma2 : float
        ``sigma~^2``.
    sigma2_floored : bool
        Whether ``RSS~`` was below its floor ``s_q``.
    lambda_min : float
        Smallest eigenvalue of ``G~+``.
    delta_ratio : float
        ``2 s_G sqrt(p) / lambda_min``: the delta method is reliable well below 0.1.
    """

    params: np.ndarray
    gram: np.ndarray
    n_floored: int
    rss: float
    sigma2: float
    sigma2_floored: bool
    lambda_min: float
    delta_ratio: float


def _sym(a: np.ndarray) -> np.ndarray:
    return (a + a.T) / 2


def ssp_estimate(rel: SSPRelease) -> SSPEstimate:
    """``beta~``, ``sigma~^2`` and the floored Gram matrix from a release (module notes).

    Parameters
    ----------
    rel : SSPRelease

    Returns
    -------
    SSPEstimate
    """
    p = rel.xty.shape[0]
    G, moved = floor_eigenvalues(rel.gram, rel.floor)
    G = _sym(G)
    beta = np.linalg.solve(G, rel.xty)
    Ginv = np.linalg.inv(G)
    rss = (float(rel.yty) - 2.0 * float(beta @ rel.xty) + float(beta @ G @ beta)
           + rel.s_xty ** 2 * float(np.trace(Ginv)))
    df = max(rel.nobs - p, 1)
    floored = rss < rel.s_yty
    sigma2 = max(rss, rel.s_yty) / df
    lam = float(np.linalg.eigvalsh(G)[0])
    ratio = 2.0 * rel.s_gram * math.sqrt(p) / lam if lam > 0 else math.inf
    return SSPEstimate(params=beta, gram=G, n_floored=moved, rss=rss, sigma2=sigma2,
                       sigma2_floored=bool(floored), lambda_min=lam, delta_ratio=ratio)


def privacy_term(theta: np.ndarray, s_gram: float, s_xty: float) -> np.ndarray:
    """``s_c^2 I + s_G^2 C(theta)``: the covariance of ``e - E theta``.

    Parameters
    ----------
    theta : ndarray (p,)
        The coefficients the Gram noise multiplies.
    s_gram : float
        ``s_G``: standard deviation of the iid upper triangle (with diagonal) of the
        symmetric noise ``E``.
    s_xty : float
        ``s_c``: standard deviation of the iid noise ``e`` on ``X'y``.

    Returns
    -------
    ndarray (p, p)

    Notes
    -----
    ``(E theta)_i = sum_j E_ij theta_j`` with ``E_ij = E_ji``; ``Cov((E theta)_i, (E
    theta)_k)`` is ``s_G^2 ||theta||^2`` for ``i = k`` and ``s_G^2 theta_i theta_k`` for
    ``i != k`` (the one shared entry ``E_ik``), i.e. ``s_G^2 (||theta||^2 I + theta
    theta' - diag(theta o theta))``. The delta-method covariance of SSP estimates is
    ``G^{-1} [.] G^{-1}`` of this term (plus the sampling part).
    """
    th = np.asarray(theta, dtype=float)
    p = th.shape[0]
    C = float(th @ th) * np.eye(p) + np.outer(th, th) - np.diag(th * th)
    return s_xty ** 2 * np.eye(p) + s_gram ** 2 * C


def ssp_covariance(est: SSPEstimate, rel: SSPRelease, sandwich: bool = False,
                   meat_factor: float = 1.0) -> np.ndarray:
    """Delta-method covariance of ``beta~`` about the population coefficients.

    Parameters
    ----------
    est : SSPEstimate
    rel : SSPRelease
        Must hold ``meat`` when ``sandwich``.
    sandwich : bool
        ``S = M~+`` (independent rows, or clusters with a cluster meat) instead of
        ``sigma~^2 G~+`` (homoskedastic linear model).
    meat_factor : float
        Multiplies ``M~+`` (sandwich only): the small-sample factor ``G/(G-1) (n-1)/(n-p)``
        of the cluster-robust CR1 covariance (statsmodels' ``cov_type="cluster"``), 1
        otherwise. The privacy term is not scaled.

    Returns
    -------
    ndarray (p, p)
        ``G~+^{-1} [S + s_c^2 I + s_G^2 C(beta~)] G~+^{-1}`` (module notes), symmetric.
    """
    Ginv = _sym(np.linalg.inv(est.gram))
    middle = privacy_term(est.params, rel.s_gram, rel.s_xty)
    if sandwich:
        if rel.meat is None:
            raise ValueError("the sandwich needs the released meat")
        middle = middle + float(meat_factor) * floor_eigenvalues(rel.meat, 0.0)[0]
    else:
        middle = middle + est.sigma2 * est.gram
    return _sym(Ginv @ middle @ Ginv)


def _psd_root(S: np.ndarray) -> np.ndarray:
    """The symmetric square root of ``S``, its negative eigenvalues and those below the
    round-off of the largest (``p eps max``) taken as 0.

    Unlike ``V sqrt(L)``, whose eigenvectors are arbitrary within an eigenspace and jump
    between nearly equal eigenvalues, the symmetric root is a continuous function of
    ``S``; and round-off eigenvalues of a rank-deficient ``S`` (a meat floored at 0),
    whose square roots would move by orders of magnitude more than they do, are exact
    zeros. So sums added in another order (a Dask frame's partitions) give the same
    replicates to round-off."""
    vals, vecs = np.linalg.eigh(_sym(S))
    tol = S.shape[0] * np.finfo(float).eps * max(float(np.max(np.abs(vals))), 0.0)
    vals = np.where(vals > tol, vals, 0.0)
    return (vecs * np.sqrt(vals)) @ vecs.T


def pboot_replicates(params: np.ndarray, gram: np.ndarray, sampling_cov: np.ndarray,
                     s_gram: float, s_xty: float, floor: float, n_boot: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Parametric-bootstrap replicates of the SSP estimate (released quantities only).

    Parameters
    ----------
    params : ndarray (p,)
        ``beta~``.
    gram : ndarray (p, p)
        ``G~+``, the floored released Gram matrix.
    sampling_cov : ndarray (p, p)
        Covariance of the sampling part of ``X'y``: ``sigma~^2 G~+`` (classical) or the
        released meat ``M~`` (sandwich variant; its negative eigenvalues are taken as 0,
        which makes it ``M~+``).
    s_gram, s_xty : float
        Noise standard deviations of ``G~`` and ``c~``.
    floor : float
        The eigenvalue floor ``tau`` of the estimator.
    n_boot : int
        ``B``.
    rng : numpy.random.Generator
        A stream of its own (never the mechanisms').

    Returns
    -------
    ndarray (B, p)
        ``beta_b = floor(G~+ + E_b, tau)^{-1} (G~+ beta~ + Z_b + e_b)``.

    Notes
    -----
    Ferrando, Wang and Sheldon (2022), "Parametric Bootstrap for Differentially Private
    Confidence Intervals", AISTATS: the OLS variant of their code conditions on the
    private Gram matrix (``X`` is never resampled) and draws ``Z_b ~ N(0, sigma~^2
    G~+)`` and fresh privacy noise ``E_b`` (symmetric, iid ``N(0, s_G^2)`` upper
    triangle) and ``e_b ~ N(0, s_c^2 I)``, in Gaussian rather than Laplace form here.
    Conditioning on ``X`` suffices under the homoskedastic linear model (OLS given
    ``X`` is ``N(beta, sigma^2 G^{-1})``); under heteroskedasticity it does not, and
    ``Z_b ~ N(0, M~+)`` replaces it (our extension, not in the paper). Draws, in order:
    ``E`` (``B x p x p``), ``e`` (``B x p``), then ``Z = U S^{1/2}`` (``U`` a ``B x p``
    standard normal array, ``S^{1/2}`` the symmetric square root of ``sampling_cov``).
    """
    beta = np.asarray(params, dtype=float)
    p = beta.shape[0]
    B = int(n_boot)
    upper = np.triu(rng.standard_normal((B, p, p)) * s_gram)
    E = upper + np.swapaxes(np.triu(upper, 1), -1, -2)
    e = rng.standard_normal((B, p)) * s_xty
    Z = rng.standard_normal((B, p)) @ _psd_root(sampling_cov).T
    perturbed = gram[None, :, :] + E
    rhs = (gram @ beta)[None, :] + Z + e
    try:
        # every replicate's eigenvalues above the floor (a Cholesky factor of
        # G~+ + E_b - tau I exists): the floor is inactive, and a solve is the same
        # estimator as the floored eigen-decomposition, several times faster
        np.linalg.cholesky(perturbed - floor * np.eye(p))
    except np.linalg.LinAlgError:
        vals, vecs = np.linalg.eigh(perturbed)
        vals = np.maximum(vals, floor)
        coef = np.einsum("bji,bj->bi", vecs, rhs) / vals
        return np.einsum("bij,bj->bi", vecs, coef)
    return np.linalg.solve(perturbed, rhs[:, :, None])[:, :, 0]


@dataclass(frozen=True)
class ReleaseReport:
    """What the checks of a one-shot release found (SSP, AdaSSP, IV-2SLS).

    It answers as :class:`dpreg.inference.diagnostics.ConvergenceReport` does (``ok``,
    ``messages(engine)``), so :func:`dpreg.fits.common.build_results` turns each warning
    into a :class:`~dpreg.exceptions.ConvergenceWarning` and a ``WARNING:`` line after
    the summary's notes, as it does for the path engines. It is not kept on the results
    (they have no ``convergence`` attribute: these fits run no path checks).

    Attributes
    ----------
    warnings : tuple of str
        Findings that make intervals unreliable, each a full message that names its
        engine and says what to change.
    notes : tuple of str
        Findings that do not warn: lines for the summary's notes, in order.
    """

    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether nothing warns."""
        return not self.warnings

    def messages(self, engine: str | None = None) -> list[str]:
        """The warnings, one message each.

        Parameters
        ----------
        engine : str, optional
            The engine's label (unused: each message names its engine already).

        Returns
        -------
        list of str
        """
        return list(self.warnings)


def ssp_report(est: SSPEstimate, rel: SSPRelease, names, se_change: np.ndarray,
               uses_sigma2: bool) -> ReleaseReport:
    """The delta-method note and the checks of an SSP fit (post-processing).

    Parameters
    ----------
    est : SSPEstimate
    rel : SSPRelease
    names : sequence of str
        The reported coefficients.
    se_change : ndarray
        Their standard errors' relative change when the floor doubles, in the order of
        ``names`` (``se_change`` of :func:`dpreg.fits.ssp.floor_sensitivity`).
    uses_sigma2 : bool
        Whether the fit's interval uses ``sigma~^2``.

    Returns
    -------
    ReleaseReport
        Its notes: the diagnostic ``2 s_G sqrt(p) / lambda_min(G~+)`` against its cap
        ``2 / sqrt(log(2 p^2 / rho))``; a floor that names no coefficient; a residual
        variance at its floor that no interval uses. Its warnings: the coefficients
        whose standard errors change by more than
        :data:`~dpreg.inference.diagnostics.SSP_FLOOR_SENSITIVITY` when the floor
        doubles, in fits where it raised an eigenvalue; a residual variance at its
        floor that the interval uses.
    """
    p = rel.xty.shape[0]
    ratio = est.delta_ratio
    cap = 2.0 / math.sqrt(math.log(2.0 * p * p / FAILURE_PROB))
    notes = [f"SSP intervals are for the population coefficients (not OLS on these "
             f"rows); the declared bounds must be true bounds (clipping changes the "
             f"target). Delta-method check 2 s_G sqrt(p) / lambda_min(G~+) = "
             f"{ratio:.3g} (the noise's operator norm against the smallest eigenvalue; "
             f"the floor caps it at {cap:.3g})."]
    messages = []
    floor_named = [name for name, change in zip(names, se_change, strict=True)
                   if est.n_floored and change > SSP_FLOOR_SENSITIVITY]
    floored = (f"{est.n_floored} eigenvalue(s) of the released X'X were below the noise "
               f"floor tau = {rel.floor:.4g} and were raised to it (2 s_G sqrt(p) / "
               f"lambda_min(G~+) = {ratio:.3g}, at its cap)")
    if floor_named:
        messages.append(f"SSP: the delta method is unreliable for {floor_named}: "
                        f"{floored}, and the standard errors of these coefficients change "
                        f"by more than {SSP_FLOOR_SENSITIVITY:.0%} when the floor doubles: "
                        "the release is dominated by noise in their directions and their "
                        "intervals may undercover, the bootstrap's more than the "
                        "plug-in's (the other coefficients' intervals do not depend on the "
                        "floor: res.floor_sensitivity). Increase the budget, n or the "
                        "'gram' share of budget_split, or tighten the covariates' bounds")
    elif est.n_floored:
        notes.append(f"SSP: {floored}; no coefficient's standard error changes by more "
                     f"than {SSP_FLOOR_SENSITIVITY:.0%} when the floor doubles "
                     "(res.floor_sensitivity), so no warning.")
    if est.sigma2_floored:
        text = (f"SSP: the private residual sum of squares ({est.rss:.4g}) was below its "
                f"floor s_q = {rel.s_yty:.4g}; sigma~^2 was set from the floor")
        if uses_sigma2:
            messages.append(text + ": the interval's sampling variance is unreliable; "
                            "increase the budget or tighten the outcome's bounds")
        else:
            notes.append(text + ".")
    return ReleaseReport(warnings=tuple(messages), notes=tuple(notes))
