"""The lower bound of an audit: a threshold test between two output distributions and
what its error rates prove about epsilon, beside the epsilon that is claimed.

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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from dpreg._checks import number_in
from dpreg.exceptions import OptionError
from dpreg.privacy.accountants import rigorous_epsilon
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import mu_to_epsilon

__all__ = ["AuditResult", "AuditReport", "clopper_pearson", "epsilon_lower_bound"]


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
    number_in("alpha", float(alpha), 0, 1)
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
    delta = number_in("delta", float(delta), 0, 1, low_closed=True)
    number_in("alpha", float(alpha), 0, 1)
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


# ------------------------------------------------------------ shared by the audits
#: The fewest runs per data set: two for each half (selection and evaluation).
MIN_RUNS = 4


def claimed_epsilons(event, delta):
    """The rigorous epsilon of ``event`` at ``delta``, the epsilon of its mu-GDP, and the
    rigorous accountant's name (the claims an :class:`AuditReport` holds)."""
    eps, accountant = rigorous_epsilon([event], delta)
    return eps, float(mu_to_epsilon(event.mu(), delta)), accountant
