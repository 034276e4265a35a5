"""Noisy Newton steps: the releases, the steps, the covariance.

After Avella-Medina, Bradshaw and Loh (2023), "Differentially private inference via noisy
optimization", Ann. Statist. (noisy Newton). The rows ``z_i`` are in the engine's
coordinates (bounded columns mapped into ``[-1, 1]`` by their ranges). Every release is a
mean over the ``n`` rows with Gaussian noise (replace-one adjacency, ``n`` public), each
row's term bounded as the package's other releases of the same statistic bound it
(:meth:`dpreg.fits.common.Problem.matrix_sensitivity`):

* a gradient ``n^-1 sum_i g~_i`` of the per-row gradients clipped at ``clip`` (for the
  logistic family ``clip = B``, the rows' norm bound, so nothing is clipped), sensitivity
  ``2 clip / n`` (:data:`MECHANISMS` ``"gradients"``, one release per step, and
  ``"last"``, the last step's, which stays in the estimate);
* the Hessian ``n^-1 sum_i h_i z_i z_i'``, ``h_i <= hess_bound`` (the package's
  ``"Hessian A"``, twice; three times for the location families):
  ``2 hess_bound B^2 / n`` in Frobenius norm (``B^2 / (2n)`` for the logistic family);
* the score covariance ``n^-1 sum_i g~_i g~_i'`` at the last estimate: ``2 clip^2 / n``
  (the package's ``"score covariance S"``).

The path. For the logistic family with an intercept the first gradient is taken at
``theta = 0``, where the intercept's entry is ``1/2 - ybar``: the start is the
intercept-only fit ``logit(ybar~)``. Otherwise the start is public (the location
families': the intercept at the outcome's private median, as DP-SGD starts) and that
gradient is the first step's. Then :data:`STEPS` Newton steps
``theta_k = theta_{k-1} - H~^-1 g~(theta_{k-1})``, each on its own released gradient,
with a Hessian released at the steps in :data:`HESSIAN_AT` (:data:`LOCATION_HESSIAN_AT`
for the location families, :data:`WEIGHTED_HESSIAN_AT` for logits with Mallows
weights; each reused until the next: a Hessian's noise limits how fast
the steps contract, so two well-paid Hessians beat one per step), its eigenvalues moved
into ``[2 sqrt(p) s_H, hess_bound B^2]`` (the noise's operator norm; the largest a
Hessian can be). For the location families the first is the
loss's majorizer ``hess_bound n^-1 sum_i w_i z_i z_i'`` (the same sensitivity): from a
start far from the optimum most residuals lie beyond ``c``, the Hessian there understates
the curvature at the optimum, and plain Newton steps on it overshoot (on the robustness
study's design with p = 15 they ended 30-36 standard errors away even without noise);
steps on the majorizer lower the loss each time, and the Hessian at step 5 is taken near
the optimum; a third, at the last step, is the covariance's.

The covariance of the last estimate, in the engine's coordinates, adds to the sandwich
``H~^-1 S~ H~^-1 / n`` the privacy part ``Sigma_K`` of the steps. Near the minimum
``theta^`` of the loss a step's error ``e_k = theta_k - theta^`` is
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

from dpreg.inference.plugin import floor_eigenvalues
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.mechanisms import symmetric_gaussian_noise

__all__ = ["NewtonSettings", "NewtonOutput", "newton_events", "run_newton", "MECHANISMS",
           "STEPS", "HESSIAN_AT", "LOCATION_HESSIAN_AT", "WEIGHTED_HESSIAN_AT", "SHARES"]

#: Newton steps after the start, and the steps at which a Hessian is released.
STEPS = 8
HESSIAN_AT = (1, 5)
#: The steps at which the location families (Huber, expectile: ``majorize_first``)
#: release a Hessian: :data:`HESSIAN_AT` and the last step, whose Hessian, taken at
#: ``theta_{K-1}`` next to the estimate, also enters the covariance. Their Hessian counts
#: the rows whose residual lies within ``c``, a step function of ``theta`` where the
#: outcome is discrete: the step-5 Hessian (at ``theta_4``) left statsmodels' randhie
#: Huber intervals (visits, ``c = 1.345``) 3-20% short of the sandwich at the estimate,
#: even without noise.
LOCATION_HESSIAN_AT = (1, 5, 8)
#: The steps at which logistic fits with Mallows weights release a Hessian: as
#: :data:`LOCATION_HESSIAN_AT`, for the same reason. From the intercept-only start the
#: weighted steps converge slowly on the first Hessian, and without noise the step-5
#: Hessian left the weighted sandwich 9-57% short on the textbook approval logits
#: (kidslt6, a rare count); with noise, in a one-off comparison on shared data sets
#: (the logistic family's user guide page), their unwarned intervals covered 0.910
#: pooled, the three-Hessian schedule's 0.944 (the non-private fit's 0.948); the
#: recorded run is ``validation/newton_logit.py --engine --weights mallows``. Unweighted
#: logits keep :data:`HESSIAN_AT`: there the third Hessian's thinner share raised the
#: warned fits (the approval logit at ``n mu = 25,000`` from 2-3% to 14-15%) for a
#: coverage gain within the Monte Carlo error (0.943 to 0.945).
WEIGHTED_HESSIAN_AT = (1, 5, 8)
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
    gradient_sensitivity, hessian_sensitivity, score_sensitivity : float
        Replace-one L2 (Frobenius) sensitivities of a gradient, a Hessian and the score
        covariance (module notes).
    hessian_cap, score_cap : float
        The largest eigenvalue a Hessian and the score covariance can have (one row's
        term at most: ``hess_bound B^2`` and ``clip^2``).
    intercept : int or None
        The intercept's column (``None``: none).
    start_from_rate : bool
        Start at the intercept-only logistic fit read off the first gradient (logistic
        family with an intercept); otherwise the start is given.
    weighted : bool
        Rows carry Mallows weights (their Hessians are released at
        :data:`WEIGHTED_HESSIAN_AT`).
    majorize_first : bool
        The first Hessian is the loss's majorizer ``hess_bound n^-1 sum_i w_i z_i z_i'``
        (``statistic("M")``), not its Hessian at the start (the location families, whose
        curvature at a start far from the optimum, with most residuals beyond ``c``,
        understates the curvature there: the steps on it overshoot and need not
        converge; on the majorizer each step lowers the loss).
    """

    n: int
    p: int
    gradient_sensitivity: float
    hessian_sensitivity: float
    score_sensitivity: float
    hessian_cap: float
    score_cap: float
    intercept: int | None
    start_from_rate: bool = False
    majorize_first: bool = False
    weighted: bool = False

    @property
    def hessian_steps(self) -> tuple[int, ...]:
        """The steps that release a Hessian: :data:`LOCATION_HESSIAN_AT` for the
        location families (``majorize_first``), :data:`WEIGHTED_HESSIAN_AT` for other
        fits with Mallows weights, else :data:`HESSIAN_AT`."""
        if self.majorize_first:
            return LOCATION_HESSIAN_AT
        return WEIGHTED_HESSIAN_AT if self.weighted else HESSIAN_AT

    @property
    def early_gradients(self) -> int:
        """Gradients released before the last: the start's and steps ``1..K-1``'s (with
        a given start, the start's is the first step's)."""
        return STEPS if self.start_from_rate else STEPS - 1

    def sensitivities(self) -> dict[str, float]:
        """Sensitivities of the four kinds of release, by key of :data:`MECHANISMS`."""
        return {"gradients": self.gradient_sensitivity, "last": self.gradient_sensitivity,
                "hessians": self.hessian_sensitivity, "score": self.score_sensitivity}


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
              "hessians": len(settings.hessian_steps), "score": 1}
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
        ``ybar~`` read off the first gradient (``None`` unless the start was read off
        the rate: a logit with an intercept).
    previous : ndarray (p,)
        The estimate before the last step (``theta_{K-1}``): the last step is
        ``params - previous``.
    """

    params: np.ndarray
    cov: np.ndarray
    hessian: np.ndarray
    floored: int
    floor: float
    start_rate: float | None
    previous: np.ndarray


def run_newton(settings: NewtonSettings, events: list[GaussianMechanismEvent],
               statistic: Callable[[str, np.ndarray], np.ndarray], theta0: np.ndarray,
               rng: np.random.Generator) -> NewtonOutput:
    """The start, :data:`STEPS` noisy Newton steps and the covariance (module notes).

    Parameters
    ----------
    settings : NewtonSettings
    events : list of GaussianMechanismEvent
        :func:`newton_events`' calibrated releases.
    statistic : callable
        ``statistic(which, theta)``: the mean clipped gradient (``"g"``), the Hessian
        (``"A"``), its majorizer (``"M"``, ``hess_bound`` times the weighted second
        moment, whose sensitivity is the Hessian's) or the score covariance (``"S"``) of
        the rows at ``theta`` (engine coordinates), each row's term within the bound its
        sensitivity assumes.
    theta0 : ndarray (p,)
        The public start (zeros for the logistic family's start from the rate).
    rng : numpy.random.Generator

    Returns
    -------
    NewtonOutput
    """
    p, n = settings.p, settings.n
    sd = {key: e.noise_std for key, e in zip(MECHANISMS, events, strict=True)}

    def gradient(theta: np.ndarray, key: str) -> np.ndarray:
        return statistic("g", theta) + rng.normal(0.0, sd[key], p)

    theta = np.array(theta0, dtype=float)
    start_rate = None
    g = gradient(theta, "gradients")  # at the start (the first step's, or the rate's)
    if settings.start_from_rate:
        # at theta = 0 the intercept's entry of the logistic gradient is 1/2 - ybar
        j = settings.intercept
        start_rate = min(max(0.5 - float(g[j]), 1.0 / n), 1.0 - 1.0 / n)
        theta[:] = 0.0
        theta[j] = math.log(start_rate / (1.0 - start_rate))
        g = None
    floor, cap = 2.0 * math.sqrt(p) * sd["hessians"], settings.hessian_cap
    sigma = np.zeros((p, p))
    H_inv = hessian = None
    floored = 0
    eye = np.eye(p)
    for k in range(1, STEPS + 1):
        key = "last" if k == STEPS else "gradients"
        if g is None:
            g = gradient(theta, key)
        if k in settings.hessian_steps:
            which = "M" if settings.majorize_first and k == settings.hessian_steps[0] else "A"
            noisy = statistic(which, theta) + symmetric_gaussian_noise(p, sd["hessians"], rng)
            hessian, floored = floor_eigenvalues(noisy, floor, cap)
            H_inv = np.linalg.inv(hessian)
        previous = theta
        theta = theta - H_inv @ g
        inner = sd["hessians"] ** 2 * (sigma + np.trace(sigma) * eye) + sd[key] ** 2 * eye
        sigma = H_inv @ inner @ H_inv
        g = None
    noisy_s = statistic("S", theta) + symmetric_gaussian_noise(p, sd["score"], rng)
    score, _ = floor_eigenvalues(noisy_s, 0.0, settings.score_cap)
    cov = H_inv @ score @ H_inv / n + sigma
    return NewtonOutput(params=theta, cov=(cov + cov.T) / 2, hessian=hessian,
                        floored=floored, floor=floor, start_rate=start_rate,
                        previous=previous)
