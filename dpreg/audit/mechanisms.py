"""Audits of the Gaussian mechanisms of :mod:`dpreg.privacy.mechanisms`: the vector
mechanism on a sum of rows and the matrix mechanism on ``X'X / n``."""

from __future__ import annotations

import time

import numpy as np

from dpreg._checks import integer_at_least, positive_number
from dpreg.audit.bounds import MIN_RUNS, AuditReport, claimed_epsilons, epsilon_lower_bound
from dpreg.exceptions import OptionError
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import mu_to_epsilon

__all__ = ["audit_gaussian_mechanism", "audit_matrix_mechanism"]


def audit_gaussian_mechanism(mu=1.0, runs=200_000, delta=1e-5, rng=None, *, dim=3,
                             noise_scale=1.0, alpha=0.05) -> AuditReport:
    """Audit the Gaussian vector mechanism on a sum of rows with L2 sensitivity 1.

    Parameters
    ----------
    mu : float
        Claimed GDP: noise std ``1 / mu`` on a sum with sensitivity 1.
    runs : int
        Runs on each of the two data sets (all drawn at once).
    delta : float
    rng : numpy.random.Generator, int or None
    dim : int
        Dimension of the rows.
    noise_scale : float
        The noise actually added, as a multiple of the claimed std. ``1`` is the
        correct mechanism; ``0.5`` simulates a broken one (half the noise it claims),
        which the audit should catch.
    alpha : float
        Confidence level of the bound is ``1 - alpha``.

    Returns
    -------
    AuditReport

    Notes
    -----
    ``D'`` holds 9 public rows of norm at most 1; ``D`` adds the canary ``e_1``
    (add/remove adjacency: the canary is at the full sensitivity). The statistic is
    the projection of the noisy sum on the canary's direction, which for two Gaussians
    with equal covariances is the likelihood-ratio (Neyman-Pearson) statistic, so the
    audit is limited only by the number of runs. The claim is exact here:
    ``epsilon_claimed`` (PLD) and ``epsilon_gdp`` (Dong, Roth and Su 2022, Cor. 2.13)
    agree to the PLD discretization.
    """
    mu = positive_number("mu", mu)
    runs = integer_at_least("runs", runs, MIN_RUNS)
    noise_scale = positive_number("noise_scale", noise_scale)
    gen = np.random.default_rng(rng)
    t0 = time.perf_counter()
    event = GaussianMechanismEvent(name="sum of rows", sensitivity=1.0, noise_std=1.0 / mu,
                                   adjacency="add/remove")
    rows = gen.normal(size=(9, dim))
    rows /= np.maximum(1.0, np.linalg.norm(rows, axis=1))[:, None]
    canary = np.zeros(dim)
    canary[0] = 1.0
    sum_dprime = rows.sum(axis=0)
    sum_d = sum_dprime + canary
    std = noise_scale * event.noise_std
    out_d = sum_d + std * gen.standard_normal((runs, dim))
    out_dp = sum_dprime + std * gen.standard_normal((runs, dim))
    result = epsilon_lower_bound(out_d @ canary, out_dp @ canary, delta, alpha, rng=gen)
    eps, eps_gdp, accountant = claimed_epsilons(event, delta)
    return AuditReport(
        mechanism="Gaussian vector (sum, add/remove)", result=result, epsilon_claimed=eps,
        epsilon_gdp=eps_gdp, accountant=accountant, mu=event.mu(),
        epsilon_pair=float(mu_to_epsilon(np.linalg.norm(canary) / event.noise_std, delta)),
        event=event, seconds=time.perf_counter() - t0,
        settings={"dim": dim, "noise_scale": noise_scale, "alpha": alpha})


def audit_matrix_mechanism(mu=1.0, runs=200_000, delta=1e-5, rng=None, *, n=50, p=3,
                           x_bound=1.0, neighbour="orthogonal", mechanism=None,
                           alpha=0.05) -> AuditReport:
    """Audit the Gaussian matrix mechanism on ``M = X'X / n`` (replace-one).

    Parameters
    ----------
    mu : float
        Claimed GDP of the release.
    runs : int
        Runs on each of the two data sets.
    delta : float
    rng : numpy.random.Generator, int or None
    n, p : int
        Rows and columns of ``X`` (``p >= 2`` for ``neighbour="orthogonal"``).
    x_bound : float
        Public bound ``||x_i|| <= x_bound``; the event's sensitivity is
        ``2 x_bound^2 / n`` (:func:`~dpreg.privacy.mechanisms.gaussian_matrix_mechanism`).
    neighbour : {"orthogonal", "zero"}
        ``D'`` replaces the canary ``x_bound e_1`` by ``x_bound e_2`` (the most
        distant replacement) or by a zero row. Replacing it by ``-canary`` would not
        change ``X'X`` at all.
    mechanism : callable, optional
        ``mechanism(matrix, event, rng) -> (noisy, event)``, run once per release (about
        25 microseconds each), e.g. :func:`~dpreg.privacy.mechanisms.gaussian_matrix_mechanism`
        or a deliberately broken variant. ``None`` (default) draws all releases at once
        with the noise the event describes: the upper triangle (with diagonal) plus iid
        ``N(0, noise_std^2)``, as ``gaussian_matrix_mechanism`` does.
    alpha : float

    Returns
    -------
    AuditReport

    Notes
    -----
    The statistic is the projection of the released upper triangle on the difference of
    the two data sets' upper triangles (the likelihood-ratio statistic for Gaussian
    noise). The claimed sensitivity ``2B/n`` (``B = x_bound^2``) is the triangle
    inequality; the largest actual change of the upper triangle when one row is
    replaced is ``sqrt(2) B / n`` (rows ``sqrt(B) e_1`` and ``sqrt(B) e_2``:
    ``||xx' - zz'||_F^2 = ||x||^4 + ||z||^4 - 2 (x'z)^2 <= 2 B^2``, and the upper
    triangle of a diagonal difference has the same norm). So no canary can make this
    audit tight: ``epsilon_pair`` is the epsilon of ``mu / sqrt(2)``-GDP (``mu / 2``
    with the zero neighbour). The bound in the mechanism's docstring is conservative,
    not wrong.
    """
    mu = positive_number("mu", mu)
    runs = integer_at_least("runs", runs, MIN_RUNS)
    x_bound = positive_number("x_bound", x_bound)
    if neighbour not in ("orthogonal", "zero"):
        raise OptionError(f"neighbour must be 'orthogonal' or 'zero'; got {neighbour!r}")
    if p < (2 if neighbour == "orthogonal" else 1) or n < 2:
        raise OptionError(f"need n >= 2 and p >= 2 (orthogonal neighbour); got n={n}, p={p}")
    gen = np.random.default_rng(rng)
    t0 = time.perf_counter()
    sens = 2.0 * x_bound ** 2 / n
    event = GaussianMechanismEvent(name="X'X/n", sensitivity=sens, noise_std=sens / mu,
                                   adjacency="replace-one")
    rows = gen.normal(size=(n - 1, p))
    rows *= x_bound / np.maximum(1.0, np.linalg.norm(rows, axis=1))[:, None]
    canary = np.zeros(p)
    canary[0] = x_bound
    other = np.zeros(p)
    if neighbour == "orthogonal":
        other[1] = x_bound
    m_d = (rows.T @ rows + np.outer(canary, canary)) / n
    m_dp = (rows.T @ rows + np.outer(other, other)) / n
    iu = np.triu_indices(p)
    diff = m_d[iu] - m_dp[iu]
    direction = diff / np.linalg.norm(diff)

    def releases(matrix):
        if mechanism is None:
            return matrix[iu] + event.noise_std * gen.standard_normal((runs, iu[0].size))
        return np.array([mechanism(matrix, event, gen)[0][iu] for _ in range(runs)])

    scores_d = releases(m_d) @ direction
    scores_dp = releases(m_dp) @ direction
    result = epsilon_lower_bound(scores_d, scores_dp, delta, alpha, rng=gen)
    eps, eps_gdp, accountant = claimed_epsilons(event, delta)
    return AuditReport(
        mechanism=f"Gaussian matrix X'X/n (replace-one, {neighbour} neighbour)",
        result=result, epsilon_claimed=eps, epsilon_gdp=eps_gdp, accountant=accountant,
        mu=event.mu(),
        epsilon_pair=float(mu_to_epsilon(np.linalg.norm(diff) / event.noise_std, delta)),
        event=event, seconds=time.perf_counter() - t0,
        settings={"n": n, "p": p, "x_bound": x_bound, "neighbour": neighbour,
                  "mechanism": "vectorized" if mechanism is None else
                  getattr(mechanism, "__name__", repr(mechanism)), "alpha": alpha})
