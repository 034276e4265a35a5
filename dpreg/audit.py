"""Empirical privacy audits: statistical lower bounds on the epsilon of a mechanism.

An audit runs a mechanism many times on two neighbouring data sets ``D`` (with a
*canary* row chosen to be as easy to detect as possible) and ``D'`` (the canary
replaced or removed), builds a threshold test between the two output distributions on a
one-dimensional statistic, and turns the test's false-positive and false-negative rates
into a lower bound on epsilon that holds with probability at least ``1 - alpha``.

A rigorous accountant gives an *upper* bound on the privacy loss; an audit gives a
*lower* bound. If the lower bound ever exceeds the claimed epsilon, the mechanism (or
its accounting) is broken. If it comes close, the accounting is nearly tight for that
canary. A small lower bound proves nothing: it may be the test, not the mechanism.

Notes
-----
For an (epsilon, delta)-DP mechanism and any test with false-positive rate FPR (says
``D`` on ``D'``) and false-negative rate FNR (says ``D'`` on ``D``),
``FPR + e^eps FNR >= 1 - delta`` and ``FNR + e^eps FPR >= 1 - delta`` (Wasserman and
Zhou 2010, JASA 105(489), Thm 2.4; Kairouz, Oh and Viswanath 2015, ICML, Thm 2.1). With
one-sided Clopper-Pearson upper bounds ``fpr_u``, ``fnr_u`` at level ``1 - alpha/2``
each (a union bound gives ``1 - alpha`` jointly),

    eps_lower = max(log((1 - delta - fnr_u) / fpr_u), log((1 - delta - fpr_u) / fnr_u), 0)

is an epsilon the mechanism cannot have (at that delta) except with probability
``alpha``. The threshold is chosen on one half of the runs and the rates are estimated
on the other half, so the choice does not bias the bound. This is the method of
Jagielski, Ullman and Oprea (2020), "Auditing differentially private machine learning:
how private is private SGD?", NeurIPS, and of Nasr, Song, Thakurta, Papernot and
Carlini (2021), "Adversary instantiation: lower bounds for differentially private
machine learning", IEEE S&P. Clopper and Pearson (1934), Biometrika 26(4), 404-413.

The audits here cover the Gaussian vector mechanism, the Gaussian matrix mechanism of
:mod:`dpreg.privacy.mechanisms`, the DP-SGD engine (:func:`dpreg.engines.run_dpsgd`),
one person's release in LDP-SGD (:class:`dpreg.LDPStream`) and full-batch DP-GD
(:func:`dpreg.engines.dpgd.run_dpgd`).
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from dpreg.engines.dpsgd import SGDSettings, run_dpsgd
from dpreg.exceptions import OptionError
from dpreg.families import Objective, get_family, mallows_weights
from dpreg.privacy.accountants import rigorous_epsilon
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import calibrate_dpsgd, mu_to_epsilon

__all__ = [
    "AuditResult", "AuditReport", "clopper_pearson", "epsilon_lower_bound",
    "audit_gaussian_mechanism", "audit_matrix_mechanism", "audit_dpsgd", "audit_ldp_step",
    "audit_dpgd",
]

# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class AuditResult:
    """The outcome of one threshold test between two output distributions.

    Attributes
    ----------
    epsilon_lower : float
        Lower bound on epsilon at ``delta``, valid with probability ``1 - alpha``.
    threshold : float
        The threshold chosen on the selection half of the runs.
    direction : {"greater", "less"}
        The test says "D" when ``score > threshold`` (``"greater"``) or
        ``score < threshold`` (``"less"``).
    fpr, fnr : float
        Empirical false-positive rate (says "D" on runs of ``D'``) and false-negative
        rate (says "D'" on runs of ``D``) on the evaluation half.
    fpr_upper, fnr_upper : float
        Their one-sided Clopper-Pearson upper bounds at level ``1 - alpha/2`` each.
    n_runs : int
        Mechanism runs behind the result: both data sets, both halves.
    n_eval : int
        Runs the rates are estimated from (the evaluation halves of both data sets).
    delta : float
    alpha : float
    """

    epsilon_lower: float
    threshold: float
    direction: str
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    n_runs: int
    n_eval: int
    delta: float
    alpha: float


@dataclass(frozen=True)
class AuditReport:
    """An audit of one mechanism: the audited lower bound beside what is claimed.

    Attributes
    ----------
    mechanism : str
        What was audited.
    result : AuditResult
        The threshold test and its lower bound.
    epsilon_claimed : float
        The rigorous epsilon at ``result.delta``: dp_accounting's bound for the
        mechanism's event (the number dpreg reports).
    epsilon_gdp : float
        The epsilon of the event's mu-GDP (exact for unsampled Gaussians, the central
        limit theorem approximation for subsampled steps).
    accountant : str
        The accountant behind ``epsilon_claimed``.
    mu : float
        The event's GDP parameter.
    epsilon_pair : float or None
        The exact epsilon separating the two audited output distributions if the
        mechanism adds the noise it claims (known in closed form for the Gaussian
        audits, ``None`` for DP-SGD): the most any test on this canary pair can certify.
    event : GaussianMechanismEvent
        The claim that was audited.
    seconds : float
        Wall time of the runs and the test.
    settings : dict
        The audit's public settings (for the record).
    """

    mechanism: str
    result: AuditResult
    epsilon_claimed: float
    epsilon_gdp: float
    accountant: str
    mu: float
    epsilon_pair: float | None
    event: GaussianMechanismEvent
    seconds: float
    settings: dict = field(default_factory=dict)

    @property
    def epsilon_lower(self) -> float:
        """The audited lower bound (``result.epsilon_lower``)."""
        return self.result.epsilon_lower

    @property
    def ratio(self) -> float:
        """``epsilon_lower / epsilon_claimed``: how close the audit comes (1 = tight)."""
        return self.result.epsilon_lower / self.epsilon_claimed

    @property
    def violated(self) -> bool:
        """True when the lower bound exceeds the claimed (rigorous) epsilon."""
        return self.result.epsilon_lower > self.epsilon_claimed

    def as_row(self) -> dict:
        """One flat row for a table (rounded for reading)."""
        r = self.result
        return {
            "mechanism": self.mechanism,
            "mu": round(self.mu, 4),
            "delta": r.delta,
            "eps_claimed_rigorous": round(self.epsilon_claimed, 3),
            "eps_claimed_gdp": round(self.epsilon_gdp, 3),
            "eps_pair_exact": (round(self.epsilon_pair, 3)
                               if self.epsilon_pair is not None else float("nan")),
            "eps_audited_lower": round(r.epsilon_lower, 3),
            "ratio_to_rigorous": round(self.ratio, 3),
            "runs_per_dataset": r.n_runs // 2,
            "fpr": r.fpr,
            "fnr": r.fnr,
            "seconds": round(self.seconds, 1),
        }


# ------------------------------------------------------------------ the lower bound
def clopper_pearson(k, n, alpha=0.05):
    """Clopper-Pearson ("exact") confidence interval for a binomial proportion.

    Parameters
    ----------
    k : int or array_like
        Successes, ``0 <= k <= n``.
    n : int or array_like
        Trials, ``n >= 1``.
    alpha : float
        The interval has coverage at least ``1 - alpha``; each end is a one-sided
        bound at level ``1 - alpha/2``.

    Returns
    -------
    (lower, upper) : floats or ndarrays
        ``lower = 0`` when ``k = 0`` and ``upper = 1`` when ``k = n``.

    Notes
    -----
    ``lower = Beta^{-1}(alpha/2; k, n - k + 1)`` and
    ``upper = Beta^{-1}(1 - alpha/2; k + 1, n - k)`` (Clopper and Pearson 1934),
    computed by ``statsmodels.stats.proportion.proportion_confint(method="beta")``.
    """
    k_arr = np.asarray(k)
    n_arr = np.asarray(n)
    if not (0.0 < float(alpha) < 1.0):
        raise OptionError(f"alpha must be in (0, 1); got {alpha!r}")
    if np.any(n_arr < 1) or np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise OptionError(f"need 0 <= k <= n and n >= 1; got k={k!r}, n={n!r}")
    low, upp = proportion_confint(k_arr, n_arr, alpha=float(alpha), method="beta")
    if np.ndim(low) == 0:
        return float(low), float(upp)
    return np.asarray(low, dtype=float), np.asarray(upp, dtype=float)


def _epsilon_from_upper(fpr_u, fnr_u, delta):
    """max(log((1 - delta - fnr_u)/fpr_u), log((1 - delta - fpr_u)/fnr_u), 0), vectorized."""
    fpr_u, fnr_u = np.asarray(fpr_u, float), np.asarray(fnr_u, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr_u, 0.0)) - np.log(fpr_u)
        b = np.log(np.maximum(1.0 - delta - fpr_u, 0.0)) - np.log(fnr_u)
    a = np.nan_to_num(a, nan=0.0, neginf=0.0)
    b = np.nan_to_num(b, nan=0.0, neginf=0.0)
    return np.maximum(np.maximum(a, b), 0.0)


def _gaps(pooled):
    """Thresholds midway between consecutive distinct pooled scores.

    A midpoint, not a score itself: the rule "D if score > t" makes the same errors on
    the selection half for any t in the gap, and the gap's centre favours neither
    sample on the evaluation half.
    """
    u = np.unique(pooled)
    return 0.5 * (u[:-1] + u[1:]) if u.size > 1 else u


def _counts(pos_sorted, neg_sorted, t):
    """False negatives (#pos <= t) and false positives (#neg > t) of 'pos if > t'."""
    fn = np.searchsorted(pos_sorted, t, side="right")
    fp = neg_sorted.size - np.searchsorted(neg_sorted, t, side="right")
    return fn, fp


def _check_scores(name, scores):
    s = np.asarray(scores, dtype=float).ravel()
    if s.size < 2:
        raise OptionError(f"{name} needs at least 2 runs; got {s.size}")
    if not np.all(np.isfinite(s)):
        raise OptionError(f"{name} must be finite")
    return s


def epsilon_lower_bound(scores_d, scores_dprime, delta, alpha=0.05, rng=None):
    """Lower bound on epsilon from runs of a mechanism on two neighbouring data sets.

    Parameters
    ----------
    scores_d : array_like
        A one-dimensional statistic of the output of each run on ``D`` (with the
        canary), e.g. the projection of the output on the canary's direction.
    scores_dprime : array_like
        The same statistic on runs on the neighbour ``D'``.
    delta : float
        The delta of the claim, in ``[0, 1)``.
    alpha : float
        The bound holds with probability at least ``1 - alpha``.
    rng : numpy.random.Generator, int or None
        Shuffles the runs before they are split; ``None`` splits them in order (valid
        when the runs are independent and identically distributed, as here).

    Returns
    -------
    AuditResult

    Notes
    -----
    The runs of each data set are split in halves. On the first halves every threshold
    midway between consecutive pooled scores and both directions are tried, and the one
    with the largest bound (the same formula on the first halves) is kept. The rates of
    that single test on the second halves, with Clopper-Pearson upper bounds at
    ``1 - alpha/2`` each, give
    ``max(log((1 - delta - fnr_u)/fpr_u), log((1 - delta - fpr_u)/fnr_u), 0)``; see the
    module notes (Jagielski, Ullman and Oprea 2020; Nasr et al. 2021).
    """
    sd = _check_scores("scores_d", scores_d)
    sdp = _check_scores("scores_dprime", scores_dprime)
    delta = float(delta)
    if not 0.0 <= delta < 1.0:
        raise OptionError(f"delta must be in [0, 1); got {delta!r}")
    if not 0.0 < float(alpha) < 1.0:
        raise OptionError(f"alpha must be in (0, 1); got {alpha!r}")
    if rng is not None:
        gen = np.random.default_rng(rng)
        sd, sdp = gen.permutation(sd), gen.permutation(sdp)
    hd, hdp = sd.size // 2, sdp.size // 2
    sel_d, ev_d = sd[:hd], sd[hd:]
    sel_dp, ev_dp = sdp[:hdp], sdp[hdp:]

    # Clopper-Pearson upper bounds for every possible count, computed once: every
    # threshold is then scored by table look-up.
    upper_fp = clopper_pearson(np.arange(sel_dp.size + 1), sel_dp.size, alpha)[1]
    upper_fn = clopper_pearson(np.arange(sel_d.size + 1), sel_d.size, alpha)[1]
    best = (-1.0, 0.0, "greater")
    for direction, sign in (("greater", 1.0), ("less", -1.0)):
        pos, neg = np.sort(sign * sel_d), np.sort(sign * sel_dp)
        cand = _gaps(np.concatenate([pos, neg]))
        fn, fp = _counts(pos, neg, cand)
        eps = _epsilon_from_upper(upper_fp[fp], upper_fn[fn], delta)
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), float(sign * cand[i]), direction)
    _, threshold, direction = best
    sign = 1.0 if direction == "greater" else -1.0
    fn, fp = _counts(np.sort(sign * ev_d), np.sort(sign * ev_dp), sign * threshold)
    fpr_u = clopper_pearson(int(fp), ev_dp.size, alpha)[1]
    fnr_u = clopper_pearson(int(fn), ev_d.size, alpha)[1]
    eps = _epsilon_from_upper(fpr_u, fnr_u, delta)
    return AuditResult(epsilon_lower=float(eps), threshold=threshold, direction=direction,
                       fpr=float(fp / ev_dp.size), fnr=float(fn / ev_d.size),
                       fpr_upper=float(fpr_u), fnr_upper=float(fnr_u),
                       n_runs=sd.size + sdp.size, n_eval=ev_d.size + ev_dp.size,
                       delta=delta, alpha=float(alpha))


# --------------------------------------------------------------------------- audits
def _check_runs(runs):
    if isinstance(runs, bool) or not isinstance(runs, numbers.Integral) or runs < 4:
        raise OptionError(f"runs must be an integer >= 4; got {runs!r}")
    return int(runs)


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            math.isfinite(value) and value > 0):
        raise OptionError(f"{name} must be a positive finite number; got {value!r}")
    return float(value)


def _claims(event, delta):
    eps, accountant = rigorous_epsilon([event], delta)
    return eps, float(mu_to_epsilon(event.mu(), delta)), accountant


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
    mu = _check_positive("mu", mu)
    runs = _check_runs(runs)
    noise_scale = _check_positive("noise_scale", noise_scale)
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
    eps, eps_gdp, accountant = _claims(event, delta)
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
    mu = _check_positive("mu", mu)
    runs = _check_runs(runs)
    x_bound = _check_positive("x_bound", x_bound)
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
    eps, eps_gdp, accountant = _claims(event, delta)
    return AuditReport(
        mechanism=f"Gaussian matrix X'X/n (replace-one, {neighbour} neighbour)",
        result=result, epsilon_claimed=eps, epsilon_gdp=eps_gdp, accountant=accountant,
        mu=event.mu(),
        epsilon_pair=float(mu_to_epsilon(np.linalg.norm(diff) / event.noise_std, delta)),
        event=event, seconds=time.perf_counter() - t0,
        settings={"n": n, "p": p, "x_bound": x_bound, "neighbour": neighbour,
                  "mechanism": "vectorized" if mechanism is None else
                  getattr(mechanism, "__name__", repr(mechanism)), "alpha": alpha})


def audit_dpsgd(mu=1.0, runs=2000, delta=1e-5, rng=None, *, n=50, p=2, batch_size=5,
                steps=100, sampling="uniform", clip=1.0, lr=1.0, lr_decay=0.0,
                statistic="average", neighbour=None, y_canary=1e6, noise_scale=1.0,
                alpha=0.05) -> AuditReport:
    """Audit a short DP-SGD run (:func:`dpreg.engines.run_dpsgd`, linear family).

    Parameters
    ----------
    mu : float
        Target GDP (central limit theorem) of the path: the noise multiplier is
        :func:`~dpreg.privacy.calibrate_dpsgd`'s, as in a fit with ``mu=``.
    runs : int
        Runs on each data set (one ``run_dpsgd`` call each; about 0.1 ms for the
        default sizes).
    delta : float
    rng : numpy.random.Generator, int or None
    n, p : int
        Rows and columns of the toy data.
    batch_size, steps : int
        m and T.
    sampling : {"uniform", "poisson"}
        Fixed-size batches (replace-one) or Poisson sampling (add/remove).
    clip, lr, lr_decay : float
        Clipping norm and step size ``lr * t^(-lr_decay)`` (constant by default).
    statistic : {"average", "last"}
        First coordinate of the averaged iterate (the estimate a fit releases) or of the
        last iterate.
    neighbour : {"opposite", "zero"}, optional
        ``D'`` replaces the canary ``(x, y) = (e_1, y_canary)`` by ``(e_1, -y_canary)``
        (its clipped gradient is the opposite: the replace-one sensitivity ``2 clip``) or
        by a zero row (the only choice, and the default, under Poisson sampling:
        removing the canary). Default ``"opposite"`` for uniform sampling.
    y_canary : float
        Large enough that the canary's gradient is always clipped.
    noise_scale : float
        Noise actually added as a multiple of the calibrated noise (``1``: correct).
    alpha : float

    Returns
    -------
    AuditReport

    Notes
    -----
    Every row but the canary is zero, so only the canary moves theta: each time it is
    sampled it pushes theta_1 by ``lr_t clip / m`` (up on ``D``, down on ``D'``), and
    every step adds Gaussian noise. The accountant charges for the *whole path* of T
    noisy gradients; the statistic sees only their weighted sum (the averaged iterate),
    which hides when the canary was sampled. The audit is therefore loose by design
    (Jagielski, Ullman and Oprea 2020 and Nasr et al. 2021 find the same for final-model
    audits); the rigorous RDP bound for uniform sampling is in addition about twice the
    CLT epsilon (:mod:`dpreg.privacy.accountants`).
    """
    mu = _check_positive("mu", mu)
    runs = _check_runs(runs)
    clip = _check_positive("clip", clip)
    noise_scale = _check_positive("noise_scale", noise_scale)
    if sampling not in ("uniform", "poisson"):
        raise OptionError(f"sampling must be 'uniform' or 'poisson'; got {sampling!r}")
    if neighbour is None:
        neighbour = "opposite" if sampling == "uniform" else "zero"
    if neighbour not in ("opposite", "zero"):
        raise OptionError(f"neighbour must be 'opposite' or 'zero'; got {neighbour!r}")
    if sampling == "poisson" and neighbour != "zero":
        raise OptionError("Poisson sampling is analysed under add/remove: the neighbour "
                          "must remove the canary (neighbour='zero')")
    if statistic not in ("average", "last"):
        raise OptionError(f"statistic must be 'average' or 'last'; got {statistic!r}")
    gen = np.random.default_rng(rng)
    t0 = time.perf_counter()
    adjacency = "replace-one" if sampling == "uniform" else "add/remove"
    sens = (2.0 if adjacency == "replace-one" else 1.0) * clip
    s = calibrate_dpsgd(mu, n, batch_size, steps, sampling=sampling)
    event = GaussianMechanismEvent(name="DP-SGD path", sensitivity=sens, noise_std=s * sens,
                                   adjacency=adjacency, sampling=sampling,
                                   sample_size=batch_size, population=n, count=steps)
    settings = SGDSettings(batch_size=batch_size, sampling=sampling, steps=steps, clip=clip,
                           lr=lr, lr_decay=lr_decay,
                           noise_scale=noise_scale * event.noise_std / batch_size,
                           noise_multiplier=event.noise_multiplier)
    X_d = np.zeros((n, p))
    X_d[0, 0] = 1.0
    y_d = np.zeros(n)
    y_d[0] = y_canary
    X_dp, y_dp = X_d.copy(), y_d.copy()
    if neighbour == "opposite":
        y_dp[0] = -y_canary
    else:
        X_dp[0, 0], y_dp[0] = 0.0, 0.0
    objective = Objective(get_family("linear"), np.inf, 0.5, np.ones(n), False)
    theta0 = np.zeros(p)

    def scores(X, y):
        out = np.empty(runs)
        for r in range(runs):
            res = run_dpsgd(X, y, objective=objective, settings=settings, theta0=theta0,
                            rng=gen)
            out[r] = (res.params if statistic == "average" else res.last)[0]
        return out

    result = epsilon_lower_bound(scores(X_d, y_d), scores(X_dp, y_dp), delta, alpha, rng=gen)
    eps, eps_gdp, accountant = _claims(event, delta)
    return AuditReport(
        mechanism=f"DP-SGD ({statistic} iterate, {sampling}, n={n}, m={batch_size}, "
                  f"T={steps})",
        result=result, epsilon_claimed=eps, epsilon_gdp=eps_gdp, accountant=accountant,
        mu=event.mu(), epsilon_pair=None, event=event, seconds=time.perf_counter() - t0,
        settings={"n": n, "p": p, "batch_size": batch_size, "steps": steps,
                  "sampling": sampling, "clip": clip, "lr": lr, "lr_decay": lr_decay,
                  "statistic": statistic, "neighbour": neighbour,
                  "noise_multiplier": event.noise_multiplier, "noise_scale": noise_scale,
                  "alpha": alpha})


def audit_ldp_step(mu=1.0, runs=100_000, delta=1e-5, rng=None, *, family="huber",
                   noise_scale=1.0, alpha=0.05) -> AuditReport:
    """Audit one person's release in LDP-SGD, calibrated by :class:`dpreg.LDPStream`.

    Parameters
    ----------
    mu : float
        The stream's budget (all on the local path).
    runs : int
        Releases per data set: ``runs`` people with the canary row, ``runs`` with its
        neighbour, each seen once by one stream.
    delta : float
    rng : numpy.random.Generator, int or None
    family : {"huber", "logistic", "expectile"}
        Family (with its Mallows weights and gradient bound ``B0``).
    noise_scale : float
        Noise actually added as a multiple of the calibrated ``2 B0 / mu``.
    alpha : float

    Returns
    -------
    AuditReport

    Notes
    -----
    The server sees, from person ``i``, the noisy gradient ``g_i + (2 B0/mu) xi_i``,
    which it can read off the path as ``(theta_{i-1} - theta_i) / gamma_i``. The canary
    row ``x = (1, 1)`` (intercept and ``x1 = 1``: ``||x||^2 = 2``, Mallows weight 1,
    ``w ||x|| = sqrt(2)``) with ``y = 1e9`` has a residual beyond ``c``, so its gradient
    is ``-c x``, of norm ``B0 = sqrt(2) c``; the neighbour ``y = -1e9`` has ``+c x``:
    the replace-one sensitivity ``2 B0`` in full. The statistic is the recovered
    release projected on ``x``: the likelihood ratio for two Gaussians, so a correct
    mechanism is audited tightly (``epsilon_pair`` is the exact epsilon between the two
    release distributions). For the logistic family no row attains the bound ``B0``
    (the score ``|y - p|`` is below 1 at any finite index), nor does an expectile pair
    with ``tau != 0.5`` reach ``2 B0``: their audits are loose by construction.
    """
    import pandas as pd

    from dpreg.stream import LDPStream

    mu = _check_positive("mu", mu)
    runs = _check_runs(runs)
    noise_scale = _check_positive("noise_scale", noise_scale)
    gen = np.random.default_rng(rng)
    t0 = time.perf_counter()
    # ||x||^2 = 2 puts the Mallows weight at 1 and w ||x|| at sqrt(2): the bound B0
    x = np.array([[1.0, 1.0]])
    first = pd.DataFrame({"y": [0.0], "x1": [1.0]})

    def releases(y_value):
        stream = LDPStream("y ~ x1", family=family, mu=mu, random_state=gen,
                           x_bound=math.sqrt(2))
        stream.partial_fit(first)  # sets up calibration, ledger and path (public row)
        run = stream._run
        event = run.ledger.events[0]
        path = run.path
        object.__setattr__(path, "settings", type(path.settings)(
            **{**path.settings.__dict__, "noise_scale": noise_scale * event.noise_std}))
        y = np.array([y_value])
        direction = x[0] / np.linalg.norm(x[0])
        out = np.empty(runs)
        for r in range(runs):
            before = path._theta @ direction
            t = path.nobs + 1
            path.update(x, y, mallows_weights(x))
            step = path.settings.lr * t ** -path.settings.lr_decay
            out[r] = (before - path._theta @ direction) / step  # the release, projected
        return out, event

    # far beyond any drift of the path (|x.theta| grows like sum gamma_t ~ 1e3 at 1e6 rows):
    # the canary stays in the clipped zone, at the full sensitivity, for every person
    y_big = 1e9 if family != "logistic" else 1.0
    scores_d, event = releases(y_big)
    scores_dp, _ = releases(-y_big if family != "logistic" else 0.0)
    result = epsilon_lower_bound(-scores_d, -scores_dp, delta, alpha, rng=gen)
    eps, eps_gdp, accountant = _claims(event, delta)
    return AuditReport(
        mechanism=f"LDP-SGD: one person's release ({family}, local, replace-one)",
        result=result, epsilon_claimed=eps, epsilon_gdp=eps_gdp, accountant=accountant,
        # for Huber the canary pair is at the full sensitivity: shift / noise = mu
        mu=event.mu(), epsilon_pair=(float(mu_to_epsilon(event.mu() / noise_scale, delta))
                                     if family == "huber" else None),
        event=event, seconds=time.perf_counter() - t0,
        settings={"family": family, "noise_scale": noise_scale, "alpha": alpha,
                  "B0": event.sensitivity / 2})


def audit_dpgd(mu=1.0, runs=20_000, delta=1e-5, rng=None, *, n=20, p=2, steps=50,
               clip=1.0, lr=0.5, statistic="last", noise_scale=1.0,
               alpha=0.05) -> AuditReport:
    """Audit full-batch DP-GD (:func:`dpreg.engines.dpgd.run_dpgd`, linear family).

    Parameters
    ----------
    mu : float
        Budget of the path; the noise on the mean gradient is
        ``lambda = sqrt(T) (2 clip / n) / mu``, the calibration of
        ``fit(engine="dpgd")`` (Lemma 2.1 of the dpgd paper in GDP form).
    runs : int
        Runs on each data set (one vectorized ``run_dpgd`` call per data set).
    delta : float
    rng : numpy.random.Generator, int or None
    n, p, steps : int
        Rows, columns and T of the toy problem.
    clip, lr : float
        ``gamma`` and ``eta``.
    statistic : {"last", "mean"}
        First coordinate of the last iterate, or of the mean of the iterates.
    noise_scale : float
        Noise actually added as a multiple of the calibrated ``lambda``.
    alpha : float

    Returns
    -------
    AuditReport

    Notes
    -----
    All rows are zero but the canary ``(e_1, +1e6)`` (``D``) or ``(e_1, -1e6)``
    (``D'``), whose gradient is clipped to ``-/+ clip e_1`` at every step: the
    replace-one sensitivity ``2 clip / n`` of the mean, every step. Zero rows have zero
    gradient, so ``theta_T`` is the start minus ``eta`` times the sum of all T noisy mean
    gradients: a sufficient statistic, and the audit of the last iterate is as tight as
    the Gaussian mechanism's (the claimed epsilon is exact for T composed Gaussians).
    """
    from dpreg.engines.dpgd import GDSettings, run_dpgd

    mu = _check_positive("mu", mu)
    runs = _check_runs(runs)
    clip = _check_positive("clip", clip)
    noise_scale = _check_positive("noise_scale", noise_scale)
    if statistic not in ("last", "mean"):
        raise OptionError(f"statistic must be 'last' or 'mean'; got {statistic!r}")
    gen = np.random.default_rng(rng)
    t0 = time.perf_counter()
    sens = 2.0 * clip / n
    event = GaussianMechanismEvent(name="DP-GD path", sensitivity=sens,
                                   noise_std=math.sqrt(steps) * sens / mu,
                                   adjacency="replace-one", count=steps)
    settings = GDSettings(steps=steps, clip=clip, lr=lr,
                          noise_std=noise_scale * event.noise_std, runs=runs)
    objective = Objective(get_family("linear"), np.inf, 0.5, np.ones(n), False)

    def scores(y_canary):
        X = np.zeros((n, p))
        X[0, 0] = 1.0
        y = np.zeros(n)
        y[0] = y_canary
        paths = run_dpgd(X, y, objective=objective, settings=settings,
                         theta0=np.zeros(p), rng=gen).paths
        return paths[:, -1, 0] if statistic == "last" else paths[:, 1:, 0].mean(axis=1)

    result = epsilon_lower_bound(scores(1e6), scores(-1e6), delta, alpha, rng=gen)
    eps, eps_gdp, accountant = _claims(event, delta)
    return AuditReport(
        mechanism=f"DP-GD ({statistic} iterate, n={n}, T={steps})", result=result,
        epsilon_claimed=eps, epsilon_gdp=eps_gdp, accountant=accountant, mu=event.mu(),
        epsilon_pair=float(mu_to_epsilon(event.mu() / noise_scale, delta)),
        event=event, seconds=time.perf_counter() - t0,
        settings={"n": n, "p": p, "steps": steps, "clip": clip, "lr": lr,
                  "statistic": statistic, "noise_scale": noise_scale, "alpha": alpha})
