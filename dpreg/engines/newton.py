"""Noisy Newton steps for logistic regression: the releases, the steps, the covariance.

After Avella-Medina, Bradshaw and Loh (2023), "Differentially private inference via noisy
optimization", Ann. Statist. (noisy Newton). The rows ``z_i`` are in the engine's
coordinates (bounded columns mapped into ``[-1, 1]`` by their ranges), clipped to the
public norm bound ``B`` (``x_bound``); ``y_i`` in ``[0, 1]``. Every release is a mean over
the ``n`` rows with Gaussian noise (replace-one adjacency, ``n`` public):

* a gradient ``g(theta) = n^-1 sum_i z_i (expit(z_i' theta) - y_i)``, each row's term at
  most ``B`` in norm, so sensitivity ``2 B / n`` (:data:`MECHANISMS` ``"gradients"``, one
  release per step, and ``"last"``, the last step's, which stays in the estimate);
* the Hessian ``n^-1 sum_i w_i z_i z_i'``, ``w_i = p_i (1 - p_i) <= 1/4``: sensitivity
  ``B^2 / (2 n)`` in Frobenius norm (the package's ``"Hessian A"``, twice);
* the score covariance ``n^-1 sum_i g_i g_i'`` at the last estimate: ``2 B^2 / n`` (the
  package's ``"score covariance S"``).

The path. The first gradient is taken at ``theta = 0``, where the intercept's entry is
``1/2 - ybar``: the start is the intercept-only fit ``logit(ybar~)`` (no intercept: the
start is 0 and that gradient is the first step's). Then :data:`STEPS` Newton steps
``theta_k = theta_{k-1} - H~^-1 g~(theta_{k-1})``, each on its own released gradient,
with a Hessian released at the steps in :data:`HESSIAN_AT` (each reused until the next:
a Hessian's noise limits how fast the steps contract, so two well-paid Hessians beat one
per step), its eigenvalues moved into ``[2 sqrt(p) s_H, B^2 / 4]`` (the noise's operator
norm; the largest a Hessian can be).

The covariance of the last estimate, in the engine's coordinates, adds to the sandwich
``H~^-1 S~ H~^-1 / n`` the privacy part ``Sigma_K`` of the steps. Near the maximum of the
likelihood ``theta^`` a step's error ``e_k = theta_k - theta^`` is
``(I - H~^-1 H) e_{k-1} - H~^-1 xi_k = H~^-1 E e_{k-1} - H~^-1 xi_k``, with ``E = H~ - H``
the Hessian's noise (entries of variance ``s_H^2``) and ``xi_k`` the gradient's
(``s_k^2 I``). For symmetric Gaussian ``E``, ``E[E M E] = s_H^2 (M + tr(M) I)``, so

    Sigma_k = H~^-1 (s_H^2 (Sigma_{k-1} + tr(Sigma_{k-1}) I) + s_k^2 I) H~^-1,

from ``Sigma_0 = 0``: the last gradient's noise, and the earlier gradients' noise that
the noisy Hessian did not contract away (the first prototype counted only the former,
and undercovered where the Hessian's noise is large against its curvature;
``validation/newton_logit.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import special

from dpreg.inference.plugin import clip_rows, floor_eigenvalues
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.mechanisms import symmetric_gaussian_noise

__all__ = ["NewtonSettings", "NewtonOutput", "newton_events", "run_newton", "mean_gradient",
           "MECHANISMS", "STEPS", "HESSIAN_AT", "SHARES"]

#: Newton steps after the start, and the steps at which a Hessian is released.
STEPS = 8
HESSIAN_AT = (1, 5)
#: Shares of ``mu^2`` (or ``rho``) of what the private ranges leave: every gradient but
#: the last (equal), the last gradient, each Hessian, the score covariance (the second
#: prototype's split in ``validation/newton_logit.py``).
SHARES = {"gradients": 0.29, "last": 0.31, "hessians": 0.30, "score": 0.10}
#: Ledger names of the releases (the Hessian and the score covariance under the names of
#: the package's other releases of the same statistics).
MECHANISMS = {"gradients": "Newton gradients", "last": "Newton last gradient",
              "hessians": "Hessian A", "score": "score covariance S"}


@dataclass(frozen=True)
class NewtonSettings:
    """Public constants of a noisy Newton fit.

    Attributes
    ----------
    n : int
        Rows (public).
    p : int
        Columns.
    x_bound : float
        ``B``: the norm bound of a row in the engine's coordinates.
    intercept : int or None
        The intercept's column (``None``: none).
    """

    n: int
    p: int
    x_bound: float
    intercept: int | None

    @property
    def early_gradients(self) -> int:
        """Gradients released before the last: the start's and steps ``1..K-1``'s (the
        start's is the first step's without an intercept)."""
        return STEPS if self.intercept is not None else STEPS - 1

    def sensitivities(self) -> dict[str, float]:
        """Replace-one L2 (Frobenius) sensitivities of the four kinds of release."""
        B, n = self.x_bound, self.n
        return {"gradients": 2 * B / n, "last": 2 * B / n, "hessians": B ** 2 / (2 * n),
                "score": 2 * B ** 2 / n}


def newton_events(settings: NewtonSettings, mu_scale: float) -> list[GaussianMechanismEvent]:
    """The Gaussian mechanisms at GDP scale ``mu_scale`` (in the order of
    :data:`MECHANISMS`): a kind's share of ``mu_scale^2`` is split equally over its
    releases, so the total is ``mu_scale``.

    Parameters
    ----------
    settings : NewtonSettings
    mu_scale : float

    Returns
    -------
    list of GaussianMechanismEvent
    """
    counts = {"gradients": settings.early_gradients, "last": 1,
              "hessians": len(HESSIAN_AT), "score": 1}
    sens = settings.sensitivities()
    out = []
    for key, name in MECHANISMS.items():
        mu_each = mu_scale * math.sqrt(SHARES[key] / counts[key])
        out.append(GaussianMechanismEvent(name=name, sensitivity=sens[key],
                                          noise_std=sens[key] / mu_each,
                                          adjacency="replace-one", count=counts[key]))
    return out


@dataclass(frozen=True)
class NewtonOutput:
    """What a noisy Newton fit returns, in the engine's coordinates.

    Attributes
    ----------
    params : ndarray (p,)
    cov : ndarray (p, p)
        Sandwich plus the steps' privacy part (module notes).
    hessian : ndarray (p, p)
        The last released Hessian, floored.
    floored : int
        Eigenvalues of the last Hessian moved to its floor or cap.
    floor : float
        That floor.
    start_rate : float or None
        ``ybar~`` read off the first gradient (``None`` without an intercept).
    """

    params: np.ndarray
    cov: np.ndarray
    hessian: np.ndarray
    floored: int
    floor: float
    start_rate: float | None


def mean_gradient(Z: np.ndarray, y: np.ndarray, theta: np.ndarray,
                  x_bound: float) -> np.ndarray:
    """``n^-1 sum_i z~_i (expit(z~_i' theta) - y_i)``, the rows ``z~_i`` clipped to norm
    ``x_bound``: each row's term is at most ``x_bound`` in norm (``|p - y| <= 1`` for
    ``y`` in ``[0, 1]``), the bound the gradients' sensitivity assumes."""
    Zc = clip_rows(Z, x_bound)
    return Zc.T @ (special.expit(Zc @ theta) - y) / Z.shape[0]


def run_newton(Z: np.ndarray, y: np.ndarray, settings: NewtonSettings,
               events: list[GaussianMechanismEvent],
               matrix: Callable[[str, np.ndarray], np.ndarray],
               rng: np.random.Generator) -> NewtonOutput:
    """The start, :data:`STEPS` noisy Newton steps and the covariance (module notes).

    Parameters
    ----------
    Z : ndarray (n, p)
        Rows in the engine's coordinates.
    y : ndarray (n,)
        Outcome in ``[0, 1]``.
    settings : NewtonSettings
    events : list of GaussianMechanismEvent
        :func:`newton_events`' calibrated releases.
    matrix : callable
        ``matrix(which, theta)``: the Hessian (``"A"``) or score covariance (``"S"``) of
        the rows at ``theta``, each row's term within the bound the sensitivity assumes
        (:meth:`dpreg.fits.common.Problem.matrix_statistic`).
    rng : numpy.random.Generator

    Returns
    -------
    NewtonOutput
    """
    n, p = Z.shape
    sd = {key: e.noise_std for key, e in zip(MECHANISMS, events, strict=True)}
    B = settings.x_bound

    def gradient(theta: np.ndarray, key: str) -> np.ndarray:
        return mean_gradient(Z, y, theta, B) + rng.normal(0.0, sd[key], p)

    theta = np.zeros(p)
    start_rate = None
    g = gradient(theta, "gradients")  # at theta = 0
    if settings.intercept is not None:
        # the intercept's entry of the gradient at 0 is 1/2 - ybar
        j = settings.intercept
        start_rate = min(max(0.5 - float(g[j]), 1.0 / n), 1.0 - 1.0 / n)
        theta[j] = math.log(start_rate / (1.0 - start_rate))
        g = None
    floor, cap = 2.0 * math.sqrt(p) * sd["hessians"], B ** 2 / 4
    sigma = np.zeros((p, p))
    H_inv = hessian = None
    floored = 0
    eye = np.eye(p)
    for k in range(1, STEPS + 1):
        key = "last" if k == STEPS else "gradients"
        if g is None:
            g = gradient(theta, key)
        if k in HESSIAN_AT:
            noisy = matrix("A", theta) + symmetric_gaussian_noise(p, sd["hessians"], rng)
            hessian, floored = floor_eigenvalues(noisy, floor, cap)
            H_inv = np.linalg.inv(hessian)
        theta = theta - H_inv @ g
        inner = sd["hessians"] ** 2 * (sigma + np.trace(sigma) * eye) + sd[key] ** 2 * eye
        sigma = H_inv @ inner @ H_inv
        g = None
    noisy_s = matrix("S", theta) + symmetric_gaussian_noise(p, sd["score"], rng)
    score, _ = floor_eigenvalues(noisy_s, 0.0, B ** 2)
    cov = H_inv @ score @ H_inv / n + sigma
    return NewtonOutput(params=theta, cov=(cov + cov.T) / 2, hessian=hessian,
                        floored=floored, floor=floor, start_rate=start_rate)
