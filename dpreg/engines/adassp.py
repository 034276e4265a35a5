"""AdaSSP: adaptive sufficient-statistics perturbation for linear regression, Gaussian form.

Wang (2018), "Revisiting differentially private linear regression: optimal and adaptive
prediction & estimation in unbounded domain", UAI, Algorithm 2. Three Gaussian
mechanisms release the smallest eigenvalue of ``X'X``, the matrix ``X'X`` and the vector
``X'y``; the estimate is the ridge solution ``(X'X~ + lambda I)^{-1} X'y~`` with a ridge
``lambda`` chosen from the private eigenvalue so that the noisy Gram matrix is positive
definite with high probability. Everything after the three releases is post-processing.

Gaussian form. Wang calibrates each release to (epsilon/3, delta/3)-DP with noise
``sqrt(log(6/delta)) / (epsilon/3)`` times the sensitivity; here each release gets a
third of the budget in mu^2 (GDP) or rho (zCDP) and noise ``sensitivity / mu_i``, and
the two high-probability constants of the algorithm are written in units of the noise
standard deviations (see :func:`adassp_estimate`). Bounds are public: rows are clipped
to ``||x|| <= x_bound`` and the outcome to ``|y| <= y_bound`` before anything is computed.

Sensitivities under replace-one adjacency (the package's default for full-batch
releases): ``lambda_min(X'X)`` moves by at most ``x_bound^2`` (Weyl: removing a row
lowers it by at most ``||x||^2``, adding one raises it by at most that); ``X'X`` by
``||a a' - b b'||_F = sqrt(||a||^4 + ||b||^4 - 2 (a'b)^2) <= sqrt(2) x_bound^2`` (the
upper triangle with the diagonal, on which the noise is drawn, is no longer); ``X'y`` by
``||a y_a - b y_b|| <= 2 x_bound y_bound``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpreg.inference.plugin import clip_rows, floor_eigenvalues
from dpreg.inference.ssp_estimator import privacy_term
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.mechanisms import symmetric_gaussian_noise

__all__ = ["AdaSSPSettings", "AdaSSPOutput", "adassp_events", "adassp_estimate",
           "adassp_covariance", "adassp_sensitivities", "MECHANISMS", "FAILURE_PROB"]

#: Ledger names of the three releases, in the order they are drawn.
MECHANISMS = ("AdaSSP lambda_min(X'X)", "AdaSSP X'X", "AdaSSP X'y")
#: Wang's failure probability rho (0.05, the value of his experiments and code).
FAILURE_PROB = 0.05


@dataclass(frozen=True)
class AdaSSPSettings:
    """Public constants of an AdaSSP fit.

    Attributes
    ----------
    x_bound : float
        Public bound on the L2 norm of a design row (rows are clipped to it).
    y_bound : float
        Public bound on ``|y|`` (the outcome is clipped to it).
    failure_prob : float
        Wang's rho: the probability allowed for the private eigenvalue to overshoot.
    """

    x_bound: float
    y_bound: float
    failure_prob: float = FAILURE_PROB


@dataclass(frozen=True, eq=False)
class AdaSSPOutput:
    """The released statistics and the estimate (all private: post-processing only).

    Attributes
    ----------
    params : ndarray (p,)
        ``(gram + ridge I)^{-1} xty``.
    gram : ndarray (p, p)
        Noisy ``X'X`` (symmetric).
    xty : ndarray (p,)
        Noisy ``X'y``.
    lambda_min : float
        Private lower bound of ``lambda_min(X'X)`` (``max(0, .)`` of the shifted release).
    ridge : float
        The ridge ``lambda`` of Algorithm 2, step 3.
    """

    params: np.ndarray
    gram: np.ndarray
    xty: np.ndarray
    lambda_min: float
    ridge: float


def adassp_sensitivities(x_bound: float, y_bound: float) -> tuple[float, float, float]:
    """Replace-one L2 sensitivities of ``(lambda_min(X'X), X'X, X'y)``: ``x_bound^2``,
    ``sqrt(2) x_bound^2`` and ``2 x_bound y_bound`` (see the module notes)."""
    b2 = float(x_bound) ** 2
    return b2, math.sqrt(2.0) * b2, 2.0 * float(x_bound) * float(y_bound)


def adassp_events(settings: AdaSSPSettings, mu_scale: float) -> list[GaussianMechanismEvent]:
    """The three Gaussian mechanisms at GDP scale ``mu_scale`` (equal split of mu^2:
    each release is ``mu_scale / sqrt(3)``-GDP)."""
    mu_i = mu_scale / math.sqrt(3.0)
    return [GaussianMechanismEvent(name=name, sensitivity=s, noise_std=s / mu_i,
                                   adjacency="replace-one")
            for name, s in zip(MECHANISMS, adassp_sensitivities(settings.x_bound,
                                                                 settings.y_bound),
                                 strict=True)]


def adassp_estimate(X: np.ndarray, y: np.ndarray, settings: AdaSSPSettings,
                    events: list[GaussianMechanismEvent],
                    rng: np.random.Generator) -> AdaSSPOutput:
    """Run Algorithm 2 of Wang (2018) with the noise that ``events`` describe.

    Parameters
    ----------
    X, y : ndarray
        Design and outcome; clipped here to the public bounds.
    settings : AdaSSPSettings
    events : list of GaussianMechanismEvent
        From :func:`adassp_events` (already recorded in the ledger).
    rng : numpy.random.Generator

    Returns
    -------
    AdaSSPOutput

    Notes
    -----
    With noise standard deviations ``s1, s2, s3`` of the three releases, ``d = p`` and
    ``beta`` = ``settings.failure_prob`` (Wang's rho):

    1. ``lambda~ = max(0, lambda_min(X'X) + s1 Z - s1 sqrt(2 log(3/beta)))``: the shift
       makes ``lambda~ <= lambda_min`` except with probability ``beta/3`` (Wang shifts
       by ``s1 sqrt(log(6/delta))``; in GDP form there is no delta, and
       ``P(Z > sqrt(2 log(3/beta))) <= beta/3``);
    2. ``lambda = max(0, s2 sqrt(d log(2 d^2 / beta)) - lambda~)`` (Wang's step 3 with
       his noise scale written as ``s2``): a high-probability bound on the operator norm
       of the symmetric noise matrix, less the private eigenvalue;
    3. ``X'X~ = X'X + E``, ``E`` symmetric with iid ``N(0, s2^2)`` upper triangle;
       ``X'y~ = X'y + N(0, s3^2 I)``;
    4. ``theta = (X'X~ + lambda I)^{-1} X'y~`` (a least-squares solve; a pseudo-inverse
       if the matrix is singular, as in the reference implementations).
    """
    Xc = clip_rows(np.asarray(X, dtype=float), settings.x_bound)
    yc = np.clip(np.asarray(y, dtype=float), -settings.y_bound, settings.y_bound)
    p = Xc.shape[1]
    s1, s2, s3 = (e.noise_std for e in events)
    beta = settings.failure_prob
    gram = Xc.T @ Xc
    lam_min = float(np.linalg.eigvalsh(gram)[0])
    lam_priv = max(0.0, lam_min + s1 * rng.standard_normal()
                   - s1 * math.sqrt(2.0 * math.log(3.0 / beta)))
    ridge = max(0.0, s2 * math.sqrt(p * math.log(2.0 * p * p / beta)) - lam_priv)
    gram_priv = gram + symmetric_gaussian_noise(p, s2, rng)
    xty_priv = Xc.T @ yc + s3 * rng.standard_normal(p)
    params = np.linalg.lstsq(gram_priv + ridge * np.eye(p), xty_priv, rcond=None)[0]
    return AdaSSPOutput(params=params, gram=gram_priv, xty=xty_priv, lambda_min=lam_priv,
                        ridge=ridge)


def adassp_covariance(out: AdaSSPOutput, events: list[GaussianMechanismEvent]) -> \
        tuple[np.ndarray, int]:
    """Delta-method covariance of the privacy noise in the AdaSSP estimate.

    From released quantities only (post-processing). With ``G = X'X`` and
    ``theta_hat = G^{-1} X'y`` (OLS on the clipped data),

        theta~ - theta_hat ~= (G + E)^{-1} (e - E theta_hat)      (ridge 0),

    and for ``E`` symmetric with iid ``N(0, s2^2)`` upper triangle,
    ``Cov(E theta) = s2^2 (||theta||^2 I + theta theta' - diag(theta^2))``
    (:func:`dpreg.inference.ssp_estimator.privacy_term`, shared with ``engine="ssp"``), so

        Cov(theta~ | data) ~= M^{-1} [s3^2 I + s2^2 C(theta)] M^{-1},

    estimated with ``M = X'X~ + lambda I`` (eigenvalues floored at ``s2``) and
    ``theta = theta~``. This is the privacy noise only: the target is OLS on these
    (clipped) data, not the population parameter (the residual variance is not
    released). The ridge bias ``-lambda M^{-1} theta`` (zero when ``lambda = 0``) is
    not included.

    Returns
    -------
    (ndarray (p, p), int)
        The covariance and the number of eigenvalues of ``M`` raised to the floor.
    """
    p = out.params.shape[0]
    s2, s3 = events[1].noise_std, events[2].noise_std
    M, raised = floor_eigenvalues(out.gram + out.ridge * np.eye(p), s2)
    Minv = np.linalg.inv(M)
    cov = Minv @ privacy_term(out.params, s2, s3) @ Minv
    return (cov + cov.T) / 2.0, raised
