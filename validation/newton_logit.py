"""A study for issue 30, item 2 (other families): does a noisy Newton method, built on
released gradients and Hessians, beat DP-SGD's interval length for logistic regression
at an equal budget? A prototype estimator in this script, not an engine of the package.

The estimator (after Avella-Medina, Bradshaw and Loh 2023, "Differentially private
inference via noisy optimization", Ann. Statist., noisy Newton): the design in the
package's public coordinates (each bounded column mapped into ``[-1, 1]`` by its
declared box, :func:`dpreg.design.conditioning.default_conditioning`), so every row has
``||z_i|| <= B`` (the map's public norm bound). From ``theta_0 = 0``, ``K`` steps

    theta_{k+1} = theta_k - floor(H~_k)^{-1} g~_k,
    g~_k = n^-1 sum_i z_i (p_i - y_i) + N(0, s_g,k^2 I),   s_g,k = 2 B / (n mu_g,k),
    H~_k = n^-1 sum_i w_i z_i z_i' + E_k,                  E_k symmetric, iid upper
                                                           triangle N(0, s_H,k^2),
                                                           s_H,k = B^2 / (2 n mu_H,k),

(replace-one adjacency: one row moves the mean gradient by at most ``2B/n`` in L2 and
the mean Hessian, ``w_i <= 1/4``, by at most ``B^2/(2n)`` in Frobenius norm), the
Hessian's eigenvalues floored at ``3 s_H sqrt(p)`` (public). At the last step the score
covariance ``S = n^-1 sum_i g_i g_i'`` is released too (``s_S = 2 B^2 / (n mu_S)``), and
the plug-in covariance of ``theta_K`` is ``H~^-1 (S~+ / n + s_g,K^2 I) H~^-1`` (the
sampling variance and the last gradient's noise; earlier steps' errors shrink
quadratically). Gaussian mechanisms compose exactly in Gaussian DP:
``mu^2 = sum_k (mu_g,k^2 + mu_H,k^2) + mu_S^2``.

Compared, on the textbook study's two logits (``participation``, 30% ones;
``approval``, 10%; :mod:`dpreg.studies.textbook`), in the declared codebook boxes: the
noisy Newton plug-in and DP-SGD's plug-in at its defaults (``ranges="declared"``, the
same boxes), with the non-private Logit's interval as the yardstick. Per cell: coverage
of the true coefficients, the share of DP-SGD fits that warned, mean length over the
non-private length, and mean fit time.

    python validation/newton_logit.py --reps 50      # the recorded run (results/)

Findings of the recorded run (50 data sets per cell; ``results/newton_logit.txt``): the
prototype is **not adopted**.

* In the codebook boxes it is invalid: coverage 0.00-0.35 with intervals 0.2-0.7 times
  the non-private length. Columns that fill a small part of their box (children under
  6 in [0, 10], income in [0, 200]) give the Hessian eigenvalues under its noise; the
  floor then shrinks those directions, biasing each step, and the plug-in (which
  counts only the last gradient's noise) cannot see it. DP-SGD warns in 34-100% of its
  fits there (its unwarned coverage is what the package reports).
* In each column's own range (not private: the best case for any learned ranges) it
  matches DP-SGD where the privacy noise is small: n = 10,000, mu = 5, coverage
  0.947-0.950 at 1.00-1.01 times the non-private length against DP-SGD's 0.940-0.950 at
  1.03-1.09, about 50 times faster (0.01 s against 0.5 s). At n = 2,000 or mu = 1 it
  undercovers (0.44-0.92, lengths 0.60-1.13) while DP-SGD covers 0.92-0.99 (0.84-0.95
  before its curvature correction of logistic estimates; rerun under its floor check's
  gate).
* What an engine would need: the Hessian noise's delta-method variance and the earlier
  steps' errors in the interval (as SSP's plug-in does for its Gram matrix), a floor
  chosen by that calibration, privately learned ranges, and a budget split studied on
  the textbook designs.

A second prototype, at privately learned ranges (``--boxes private``; the package's
noisy histograms with 5% of ``mu^2``, the design rebuilt with the learned ranges and
mapped into ``[-1, 1]``, as ``ranges="auto"`` does for DP-SGD). The first release is
the gradient at ``theta = 0``: its intercept's entry is ``1/2 - ybar`` (the intercept's
column is 1), so the start is the intercept-only fit ``logit(ybar~)``, with no Hessian.
Then ``K = 8`` Newton steps, each with a released gradient, and a Hessian released at
steps 1 and 5 only (each reused until the next; a Hessian's noise, not the gradient's,
limits how fast the steps contract, so two well-paid Hessians beat one per step), the
score covariance at the end, and the plug-in ``H~^-1 (S~ / n + s_g^2 I) H~^-1`` from the
last Hessian and the last gradient's noise ``s_g``. Shares of what the ranges leave:
0.29 for the first eight gradients (equal), 0.31 for the last, 0.15 for each Hessian,
0.10 for ``S``; Hessian eigenvalues floored at ``2 sqrt(p)`` noise sd (the operator
norm of the noise, the package's floor for its private second moment) and capped at
``B^2 / 4``. Per cell: coverage of the true coefficients, the non-private MLE's
coverage on the same data sets (the yardstick: a rare outcome's MLE undercovers too),
the share of fits whose last Hessian had an eigenvalue floored, the unfloored fits'
coverage, and the mean length over the non-private length. ``--fair`` adds statsmodels'
``fair`` logit of any affair (n = 6,366, p = 8, the benchmark's formula) as a
parametric design: fair's rows, the outcome drawn from statsmodels' fitted logit, the
fitted coefficients as the truth, and DP-SGD at the defaults on the same data sets.

    python validation/newton_logit.py --reps 60 --boxes private --mu 1 2 5 10 --fair \\
        --append                               # after the run above: the recorded file

Findings of that run (60 data sets per cell, appended to ``results/newton_logit.txt``;
4.2 min beside other jobs): still **not adopted**.

* Where ``n mu`` is large it is as good as the non-private fit, and 7 times faster than
  DP-SGD: participation at n = 10,000, mu >= 2 and at n = 2,000, mu = 10, approval at
  n = 10,000, mu >= 5, and fair at mu = 2, 5 and 10 cover within MC error of the MLE on
  the same data sets (0.915-0.972 against 0.917-0.975) at 0.99-1.09 times its length
  (fair at mu = 2: 1.18, against DP-SGD's 1.15), in 0.04-0.05 s a fit (fair: 0.05 s
  against DP-SGD's 0.38 s, whose intervals are 1.02-1.04 times the MLE's at mu = 5-10).
* Below that it undercovers, by 3-67 points against the MLE: every cell at n = 2,000
  and mu <= 5, approval at n = 2,000, mu = 10 (0.914 against 0.944), participation and
  approval at n = 10,000, mu = 1 (0.906 and 0.836 against 0.950 and 0.939), fair at
  mu = 1 (0.906 against 0.946). A floored last Hessian marks some of these fits but not
  the others: the unfloored fits cover 0.957 at participation, n = 10,000, mu = 1, but
  0.913 at approval, n = 2,000, mu = 10, and 0.875 at fair, mu = 1 (a chi-square test of
  the last step against the last two gradients' noise, tried in the prototype, had no
  power either).
* So an engine would need a check with power where ``n mu`` is moderate, or a rule on
  public quantities that keeps it where it covers (about ``n mu >= 20,000`` at p = 6-8
  here, but the rule's margin depends on the outcome's rate and p, which this grid
  cannot set). DP-SGD at its defaults covers and warns in these cells (the textbook
  study), so the logistic default stays DP-SGD.

The package's engine (``--engine``: ``engine="newton"``, :mod:`dpreg.engines.newton`),
the second prototype with a covariance that also carries the earlier gradients' noise
through the noisy Hessian's steps, and a warning where the last Hessian is floored; at
the package's defaults (private ranges), 100 data sets per cell, the MLE's coverage on
the same data sets as the yardstick, and with ``--versus-dpsgd`` DP-SGD at its defaults
on the same data sets:

    python validation/newton_logit.py --engine --reps 100 --n 2000 3000 5000 10000 \
        20000 --mu 1 2 5 10 --fair --append    # the recorded run (11.2 min)
    python validation/newton_logit.py --engine --versus-dpsgd --reps 60 --n 5000 10000 \
        --mu 5 --fair --append                 # against DP-SGD where it is the default

Findings (the logistic family's user guide page has them in full): where ``n mu >=
25,000`` (18 cells) 98-100% of fits are unwarned and cover 0.910-0.953 (the MLE on the
same data sets 0.913-0.963) at 0.98-1.12 times the non-private length, so logistic
regression's default is noisy Newton there (p <= 8, the largest p studied:
:func:`dpreg.fits.engine_choice.newton_reason`). Below it the warning has power where
the Hessian is floored in most fits, but between 10,000 and 20,000 some unwarned fits
undercover (the 10%-ones logit at n = 10,000, mu = 2: 0.909 against the MLE's 0.958),
and DP-SGD stays the default.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time
import warnings

import numpy as np
from scipy import special, stats

import dpreg
from dpreg.design.conditioning import default_conditioning
from dpreg.exceptions import ConvergenceWarning
from dpreg.frontend.model import DPRegression
from dpreg.studies.textbook import simulate_design

OUT = pathlib.Path(__file__).parent / "results" / "newton_logit.txt"

#: Shares of mu^2: K = 5 gradients (most on the last, whose noise stays in the estimate),
#: 5 Hessians, the score covariance.
GRAD_SHARES = (0.02, 0.03, 0.05, 0.10, 0.45)
HESS_SHARES = (0.02, 0.02, 0.03, 0.03, 0.15)
SCORE_SHARE = 0.10


def noisy_newton(Z: np.ndarray, y: np.ndarray, B: float, mu: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(theta, cov)`` in the engine's coordinates (see the module notes)."""
    assert math.isclose(sum(GRAD_SHARES) + sum(HESS_SHARES) + SCORE_SHARE, 1.0)
    n, p = Z.shape
    theta = np.zeros(p)
    iu = np.triu_indices(p)
    for k, (g_share, h_share) in enumerate(zip(GRAD_SHARES, HESS_SHARES, strict=True)):
        prob = special.expit(Z @ theta)
        s_g = 2 * B / (n * mu * math.sqrt(g_share))
        s_h = B ** 2 / (2 * n * mu * math.sqrt(h_share))
        grad = Z.T @ (prob - y) / n + rng.normal(0, s_g, p)
        noise = np.zeros((p, p))
        noise[iu] = rng.normal(0, s_h, len(iu[0]))
        noise = noise + np.triu(noise, 1).T
        hess = (Z * (prob * (1 - prob))[:, None]).T @ Z / n + noise
        vals, vecs = np.linalg.eigh(hess)
        vals = np.maximum(vals, 3 * s_h * math.sqrt(p))
        if k == len(GRAD_SHARES) - 1:
            scores = Z * (prob - y)[:, None]
            s_s = 2 * B ** 2 / (n * mu * math.sqrt(SCORE_SHARE))
            noise_s = np.zeros((p, p))
            noise_s[iu] = rng.normal(0, s_s, len(iu[0]))
            S = scores.T @ scores / n + noise_s + np.triu(noise_s, 1).T
            sv, su = np.linalg.eigh(S)
            S = (su * np.maximum(sv, 0)) @ su.T
            h_inv = (vecs / vals) @ vecs.T
            cov = h_inv @ (S / n + s_g ** 2 * np.eye(p)) @ h_inv
        theta = theta - (vecs / vals) @ vecs.T @ grad
    return theta, cov


#: The second prototype (``--boxes private``): Newton steps after the start, the steps
#: at which a Hessian is released (each reused until the next), and shares of what the
#: ranges leave: the first ``STEPS`` gradients (equal), the last, each Hessian, ``S``.
STEPS, HESSIAN_AT = 8, (1, 5)
EARLY_GRADIENTS, LAST_GRADIENT, EACH_HESSIAN, SCORE = 0.29, 0.31, 0.15, 0.10
#: The private ranges' share of mu^2 (the package's default).
RANGES_SHARE = 0.05


def newton_from_start(Z: np.ndarray, y: np.ndarray, B: float, mu: float, icol: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """The second prototype (module notes): ``(theta, cov, floored)`` in the engine's
    coordinates, ``floored`` the eigenvalues of the last Hessian raised to the floor."""
    from dpreg.inference.plugin import floor_eigenvalues
    from dpreg.privacy.mechanisms import symmetric_gaussian_noise

    assert math.isclose(EARLY_GRADIENTS + LAST_GRADIENT + len(HESSIAN_AT) * EACH_HESSIAN
                        + SCORE, 1.0)
    n, p = Z.shape
    theta = np.zeros(p)

    def gradient(share: float) -> tuple[np.ndarray, float]:
        sd = 2 * B / (n * mu * math.sqrt(share))  # replace-one: 2 B / n
        return Z.T @ (special.expit(Z @ theta) - y) / n + rng.normal(0, sd, p), sd

    g0, _ = gradient(EARLY_GRADIENTS / STEPS)  # at theta = 0: its intercept is 1/2 - ybar
    ybar = min(max(0.5 - g0[icol], 1.0 / n), 1.0 - 1.0 / n)
    theta[icol] = math.log(ybar / (1.0 - ybar))
    sd_h = B ** 2 / (2 * n * mu * math.sqrt(EACH_HESSIAN))  # replace-one: B^2 / (2 n)
    floor, cap = 2 * math.sqrt(p) * sd_h, B ** 2 / 4
    for k in range(1, STEPS + 1):
        share = LAST_GRADIENT if k == STEPS else EARLY_GRADIENTS / STEPS
        g, sd_g = gradient(share)
        if k in HESSIAN_AT:
            prob = special.expit(Z @ theta)
            H = (Z * (prob * (1 - prob))[:, None]).T @ Z / n
            H, floored = floor_eigenvalues(H + symmetric_gaussian_noise(p, sd_h, rng),
                                           floor, cap)
            H_inv = np.linalg.inv(H)
        theta = theta - H_inv @ g
    scores = Z * (special.expit(Z @ theta) - y)[:, None]
    sd_s = 2 * B ** 2 / (n * mu * math.sqrt(SCORE))  # replace-one: 2 B^2 / n
    S, _ = floor_eigenvalues(scores.T @ scores / n + symmetric_gaussian_noise(p, sd_s, rng),
                             0.0, B ** 2)
    cov = H_inv @ (S / n + sd_g ** 2 * np.eye(p)) @ H_inv
    return theta, (cov + cov.T) / 2, floored


def private_fit(formula: str, data, bounds: dict, levels, mu: float,
                rng: np.random.Generator):
    """The second prototype at privately learned ranges: ``(estimate, cov, floored)`` in
    the user's coordinates. The model is built again with the learned ranges as the
    bounds of their columns, as ``ranges="private"`` does."""
    from dpreg.privacy.ranges import ranges_event, release_ranges

    columns = DPRegression.from_formula(formula, data, family="logistic", bounds=bounds,
                                        levels=levels).range_columns()
    event = ranges_event(len(columns), mu * math.sqrt(RANGES_SHARE), "replace-one")
    learned = release_ranges(columns, event, rng).ranges
    design = DPRegression.from_formula(formula, data, family="logistic",
                                       bounds={**bounds, **learned}, levels=levels).design
    cond = default_conditioning(design)
    theta, cov, floored = newton_from_start(
        cond.design(design.exog), design.endog, cond.norm_bound,
        mu * math.sqrt(1 - RANGES_SHARE), list(design.exog_names).index("Intercept"), rng)
    return cond.params(theta), cond.covariance(cov), floored


def private_lines(label: str, reps: int, got: dict) -> list[str]:
    """One cell's lines: the prototype against the MLE on the same data sets."""
    cover, floored = np.array(got["cover"]), np.array(got["floored"])
    quiet = f"{cover[~floored].mean():.3f}" if (~floored).any() else "-"
    lines = [f"{label}, private ranges, {reps} data sets (MC s.e. "
             f"{math.sqrt(0.05 * 0.95 / reps):.3f})",
             f"  newton  covers {cover.mean():.3f} (MLE {np.mean(got['mle']):.3f})  length / "
             f"non-private {np.mean(got['length']):.2f}  floored {floored.mean():.2f} "
             f"(unfloored cover {quiet})  {np.mean(got['seconds']):.3f} s"]
    if got.get("dpsgd"):
        lines.append(f"  dpsgd   covers {np.mean(got['dpsgd']):.3f}  length / non-private "
                     f"{np.mean(got['dpsgd_length']):.2f}  {np.mean(got['dpsgd_seconds']):.3f} s  "
                     f"warned {np.mean(got['warned']):.2f}")
    return lines


def _record(got: dict, est, cov, floored, nonprivate, beta, seconds) -> None:
    z = stats.norm.ppf(0.975)
    half = z * np.sqrt(np.diag(cov))
    se = nonprivate.bse.to_numpy()
    got["cover"].append(np.mean(np.abs(est - beta) <= half))
    got["mle"].append(np.mean(np.abs(nonprivate.params.to_numpy() - beta) <= z * se))
    got["length"].append(np.mean(half / (z * se)))
    got["floored"].append(floored > 0)
    got["seconds"].append(seconds)


def private_cell(design: str, n: int, mu: float, reps: int, seed: int) -> list[str]:
    """The second prototype on a textbook logit at the private ranges."""
    rng = np.random.default_rng([seed, n, int(mu * 10), len(design), 1])
    got = {k: [] for k in ("cover", "mle", "length", "floored", "seconds")}
    for _ in range(reps):
        data, formula, bounds, levels, truth = simulate_design(design, n, rng)
        model = DPRegression.from_formula(formula, data, family="logistic", bounds=bounds,
                                          levels=levels or None)
        beta = np.array([truth[name] for name in model.design.exog_names])
        start = time.perf_counter()
        est, cov, floored = private_fit(formula, data, bounds, levels or None, mu, rng)
        _record(got, est, cov, floored, model.fit_oracle(), beta,
                time.perf_counter() - start)
    return private_lines(f"{design}, n = {n}, mu = {mu:g}", reps, got)


FAIR_LOGIT = "any_affair ~ np.log(yrs_married) + age + educ + children + C(religious)"
FAIR_LOGIT_BOUNDS = {"any_affair": (0, 1), "age": (17.5, 42), "educ": (9, 20),
                     "children": (0, 5.5), "yrs_married": (0.5, 23)}


def fair_cell(mu: float, reps: int, seed: int) -> list[str]:
    """The second prototype and DP-SGD at the defaults on fair's rows with the outcome
    drawn from statsmodels' fitted logit (the benchmark's formula and bounds)."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    fair = sm.datasets.fair.load_pandas().data
    fair["any_affair"] = (fair["affairs"] > 0).astype(float)
    fitted = smf.logit(FAIR_LOGIT, fair).fit(disp=0)
    prob, beta = 1 / (1 + np.exp(-fitted.fittedvalues.to_numpy())), fitted.params.to_numpy()
    levels = {"religious": [1, 2, 3, 4]}
    rng = np.random.default_rng([seed, int(mu * 10), 2])
    got = {k: [] for k in ("cover", "mle", "length", "floored", "seconds", "dpsgd",
                           "dpsgd_length", "dpsgd_seconds", "warned")}
    z = stats.norm.ppf(0.975)
    for _ in range(reps):
        data = fair.assign(any_affair=(rng.random(len(fair)) < prob).astype(float))
        model = DPRegression.from_formula(FAIR_LOGIT, data, family="logistic",
                                          bounds=FAIR_LOGIT_BOUNDS, levels=levels)
        nonprivate = model.fit_oracle()
        start = time.perf_counter()
        est, cov, floored = private_fit(FAIR_LOGIT, data, FAIR_LOGIT_BOUNDS, levels, mu, rng)
        _record(got, est, cov, floored, nonprivate, beta, time.perf_counter() - start)
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpreg.dp_logit(FAIR_LOGIT, data, bounds=FAIR_LOGIT_BOUNDS, levels=levels,
                                 mu=mu, engine="dpsgd",
                                 random_state=int(rng.integers(2 ** 31)))
        got["dpsgd_seconds"].append(time.perf_counter() - start)
        ci = res.conf_int().to_numpy()
        got["dpsgd"].append(np.mean((ci[:, 0] <= beta) & (beta <= ci[:, 1])))
        got["dpsgd_length"].append(np.mean((ci[:, 1] - ci[:, 0])
                                           / (2 * z * nonprivate.bse.to_numpy())))
        got["warned"].append(any(issubclass(w.category, ConvergenceWarning) for w in caught))
    return private_lines(f"fair (parametric), n = {len(fair)}, mu = {mu:g}", reps, got)


def _fit_and_record(into: dict, beta, se, formula: str, data, **options):
    """``dp_logit(formula, data, **options)``; appends to ``into`` whether its default
    intervals cover ``beta`` (the mean over coefficients), their length over the
    non-private interval (standard errors ``se``) and whether it warned. Returns the fit."""
    z = stats.norm.ppf(0.975)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dpreg.dp_logit(formula, data, **options)
    ci = res.conf_int().to_numpy()
    into["cover"].append(np.mean((ci[:, 0] <= beta) & (beta <= ci[:, 1])))
    into["length"].append(np.mean((ci[:, 1] - ci[:, 0]) / (2 * z * se)))
    into["warned"].append(any(issubclass(w.category, ConvergenceWarning) for w in caught))
    return res


def engine_cell(label: str, draw, reps: int, mu: float, versus: bool = False,
                weights: str | None = None) -> list[str]:
    """The package's ``engine="newton"`` at its defaults (private ranges): per fit its
    default interval, whether it warned, and the MLE's interval on the same data; with
    ``versus``, DP-SGD at its defaults on the same data too; ``weights`` is passed to
    both (``"mallows"``: the weighted score still has mean zero at the true coefficients,
    so they stay the target; the yardstick stays the unweighted MLE's length).
    ``draw()`` returns ``(data, formula, bounds, levels, truth, seed)``."""
    z = stats.norm.ppf(0.975)
    got = {k: [] for k in ("cover", "mle", "length", "warned", "seconds")}
    other = {k: [] for k in ("cover", "length", "warned", "seconds")}

    def record(into: dict, engine: str, data, formula, bounds, levels, seed, beta, se):
        start = time.perf_counter()
        _fit_and_record(into, beta, se, formula, data, bounds=bounds,
                        levels=levels or None, mu=mu, engine=engine, random_state=seed,
                        weights=weights)
        into["seconds"].append(time.perf_counter() - start)

    for _ in range(reps):
        data, formula, bounds, levels, truth, seed = draw()
        model = DPRegression.from_formula(formula, data, family="logistic", bounds=bounds,
                                          levels=levels or None)
        beta = np.array([truth[name] for name in model.design.exog_names])
        nonprivate = model.fit_oracle()
        se = nonprivate.bse.to_numpy()
        record(got, "newton", data, formula, bounds, levels, seed, beta, se)
        got["mle"].append(np.mean(np.abs(nonprivate.params.to_numpy() - beta) <= z * se))
        if versus:
            record(other, "dpsgd", data, formula, bounds, levels, seed, beta, se)
    lines = engine_lines(label, reps, got)
    if versus:
        lines += ["  " + engine_lines("dpsgd", reps, other)[1].strip().replace(
            "all fits", "dpsgd: all fits")]
    return lines


def default_cell(design: str, n: int, mu: float, reps: int, seed: int) -> list[str]:
    """The default engine (no ``engine=``), which at ``n mu >= 25,000`` counts the
    outcome's rate and keeps noisy Newton only where ``n mu r (1 - r) >= 2,000``, against
    ``engine="newton"`` on the same data sets: per side the share of fits by noisy
    Newton, the unwarned share, the unwarned fits' coverage and their length over the
    non-private interval; the MLE's coverage on the same data sets."""
    z = stats.norm.ppf(0.975)
    rng = np.random.default_rng([seed, n, int(mu * 10), len(design), 5])
    sides = {k: {"newton": [], "cover": [], "length": [], "warned": []}
             for k in ("default", "newton")}
    mle = []
    for _ in range(reps):
        data, formula, bounds, levels, truth = simulate_design(design, n, rng)
        fit_seed = int(rng.integers(2 ** 31))
        model = DPRegression.from_formula(formula, data, family="logistic", bounds=bounds,
                                          levels=levels or None)
        beta = np.array([truth[name] for name in model.design.exog_names])
        nonprivate = model.fit_oracle()
        se = nonprivate.bse.to_numpy()
        mle.append(np.mean(np.abs(nonprivate.params.to_numpy() - beta) <= z * se))
        for side, engine in (("default", None), ("newton", "newton")):
            res = _fit_and_record(sides[side], beta, se, formula, data, bounds=bounds,
                                  levels=levels or None, mu=mu, random_state=fit_seed,
                                  **({"engine": engine} if engine else {}))
            sides[side]["newton"].append(res.engine == "Noisy Newton")
    lines = [f"{design}, n = {n}, mu = {mu:g}, the default engine against engine='newton', "
             f"{reps} data sets (MC s.e. {math.sqrt(0.05 * 0.95 / reps):.3f}; MLE covers "
             f"{np.mean(mle):.3f})"]
    for side, got in sides.items():
        quiet = ~np.array(got["warned"], bool)
        cover, length = np.array(got["cover"]), np.array(got["length"])
        lines.append(f"  {side}: by noisy Newton {np.mean(got['newton']):.2f}  unwarned "
                     f"{quiet.mean():.2f}: covers "
                     + (f"{cover[quiet].mean():.3f}  length / non-private "
                        f"{length[quiet].mean():.3f}" if quiet.any() else "-")
                     + f"  (all fits cover {cover.mean():.3f})")
    return lines


def engine_lines(label: str, reps: int, got: dict) -> list[str]:
    """A cell's two lines: coverage of all fits (and the MLE's, if recorded), the share
    unwarned, the unwarned fits' coverage and length over the non-private one, time."""
    cover, warned = np.array(got["cover"]), np.array(got["warned"], bool)
    quiet = ~warned

    def fmt(values):
        return f"{values[quiet].mean():.3f}" if quiet.any() else "-"
    mle = got.get("mle")
    return [f"{label}, engine='newton', {reps} data sets (MC s.e. "
            f"{math.sqrt(0.05 * 0.95 / reps):.3f})",
            f"  all fits covers {cover.mean():.3f}"
            + (f" (MLE {np.mean(mle):.3f})" if mle else "")
            + f"  unwarned {quiet.mean():.2f}: covers {fmt(cover)}"
            + (f" (MLE {fmt(np.array(mle))})" if mle else "")
            + f"  length / non-private {fmt(np.array(got['length']))}  "
            f"{np.mean(got['seconds']):.3f} s"]


def engine_design_cell(design: str, n: int, mu: float, reps: int, seed: int,
                       versus: bool = False, weights: str | None = None) -> list[str]:
    rng = np.random.default_rng([seed, n, int(mu * 10), len(design), 3])

    def draw():
        data, formula, bounds, levels, truth = simulate_design(design, n, rng)
        return data, formula, bounds, levels, truth, int(rng.integers(2 ** 31))
    label = f"{design}, n = {n}, mu = {mu:g}" + (", Mallows weights" if weights else "")
    return engine_cell(label, draw, reps, mu, versus, weights)


def engine_fair_cell(mu: float, reps: int, seed: int, versus: bool = False) -> list[str]:
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    fair = sm.datasets.fair.load_pandas().data
    fair["any_affair"] = (fair["affairs"] > 0).astype(float)
    fitted = smf.logit(FAIR_LOGIT, fair).fit(disp=0)
    prob = 1 / (1 + np.exp(-fitted.fittedvalues.to_numpy()))
    names = DPRegression.from_formula(FAIR_LOGIT, fair, family="logistic",
                                      bounds=FAIR_LOGIT_BOUNDS,
                                      levels={"religious": [1, 2, 3, 4]}).design.exog_names
    truth = dict(zip(names, fitted.params.to_numpy(), strict=True))  # patsy's order
    rng = np.random.default_rng([seed, int(mu * 10), 4])

    def draw():
        data = fair.assign(any_affair=(rng.random(len(fair)) < prob).astype(float))
        return (data, FAIR_LOGIT, FAIR_LOGIT_BOUNDS, {"religious": [1, 2, 3, 4]}, truth,
                int(rng.integers(2 ** 31)))
    return engine_cell(f"fair (parametric), n = {len(fair)}, mu = {mu:g}", draw, reps, mu,
                       versus)


def data_boxes(data, bounds):
    """Each bounded column's own min and max: NOT private, the best boxes any private
    method could learn; both estimators get the same boxes (a study of estimators)."""
    return {c: (float(data[c].min()), float(data[c].max())) for c in bounds}


def cell(design: str, n: int, mu: float, reps: int, seed: int, boxes: str) -> list[str]:
    rng = np.random.default_rng([seed, n, int(mu * 10), len(design)])
    z = stats.norm.ppf(0.975)
    out = {k: dict(cover=[], length=[], seconds=[]) for k in ("newton", "dpsgd")}
    warned = []
    for _ in range(reps):
        data, formula, bounds, levels, truth = simulate_design(design, n, rng)
        if boxes == "data":
            bounds = data_boxes(data, bounds)
        model = DPRegression.from_formula(formula, data, family="logistic", bounds=bounds,
                                          levels=levels or None)
        names = model.design.exog_names
        beta = np.array([truth[name] for name in names])
        nonprivate = model.fit_oracle()
        np_len = 2 * z * nonprivate.bse.to_numpy()
        start = time.perf_counter()
        cond = default_conditioning(model.design)
        theta_z, cov_z = noisy_newton(cond.design(model.design.exog), model.design.endog,
                                      cond.norm_bound, mu, rng)
        est, cov = cond.params(theta_z), cond.covariance(cov_z)
        seconds = time.perf_counter() - start
        half = z * np.sqrt(np.diag(cov))
        out["newton"]["cover"].append(np.mean(np.abs(est - beta) <= half))
        out["newton"]["length"].append(np.mean(2 * half / np_len))
        out["newton"]["seconds"].append(seconds)
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpreg.dp_logit(formula, data, bounds=bounds, levels=levels or None,
                                 mu=mu, ranges="declared",
                                 random_state=int(rng.integers(2 ** 31)))
        seconds = time.perf_counter() - start
        ci = res.conf_int().to_numpy()
        out["dpsgd"]["cover"].append(np.mean((ci[:, 0] <= beta) & (beta <= ci[:, 1])))
        out["dpsgd"]["length"].append(np.mean((ci[:, 1] - ci[:, 0]) / np_len))
        out["dpsgd"]["seconds"].append(seconds)
        warned.append(any(issubclass(w.category, ConvergenceWarning) for w in caught))
    mcse = math.sqrt(0.05 * 0.95 / reps)
    lines = [f"{design}, n = {n}, mu = {mu:g}, {boxes} boxes, {reps} data sets "
             f"(MC s.e. {mcse:.3f})"]
    for name, got in out.items():
        extra = f"  warned {np.mean(warned):.2f}" if name == "dpsgd" else ""
        lines.append(f"  {name:<7} covers {np.mean(got['cover']):.3f}  length / non-private "
                     f"{np.mean(got['length']):.2f}  {np.mean(got['seconds']):.3f} s{extra}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--design", nargs="+", default=["participation", "approval"])
    parser.add_argument("--n", type=int, nargs="+", default=[2000, 10_000])
    parser.add_argument("--mu", type=float, nargs="+", default=[1.0, 5.0])
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--boxes", nargs="+", default=["codebook", "data"],
                        choices=("codebook", "data", "private"),
                        help="declared codebook boxes, or each column's own range (not "
                             "private: the best case, the same for both estimators), or "
                             "ranges learned privately (the second prototype)")
    parser.add_argument("--fair", action="store_true",
                        help="also fair's logit as a parametric design (second prototype "
                             "and DP-SGD), at each --mu")
    parser.add_argument("--engine", action="store_true",
                        help="the package's engine='newton' at its defaults instead of the "
                             "prototypes (each --design, --n, --mu; with --fair, fair too)")
    parser.add_argument("--versus-dpsgd", action="store_true",
                        help="with --engine: DP-SGD at its defaults on the same data sets")
    parser.add_argument("--default-engine", action="store_true",
                        help="the default engine (with the outcome's rate) against "
                             "engine='newton' (each --design, --n, --mu)")
    parser.add_argument("--weights", choices=("mallows",), default=None,
                        help="with --engine: dp_logit's weights (Mallows weights)")
    parser.add_argument("--append", action="store_true", help="append to --out")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    start = time.perf_counter()
    lines = []
    for boxes in ([] if args.engine or args.default_engine else args.boxes):
        for design in args.design:
            for n in args.n:
                for mu in args.mu:
                    new = (private_cell(design, n, mu, args.reps, args.seed)
                           if boxes == "private"
                           else cell(design, n, mu, args.reps, args.seed, boxes))
                    lines += new
                    print("\n".join(new), flush=True)
    if args.default_engine:
        for design in args.design:
            for n in args.n:
                for mu in args.mu:
                    new = default_cell(design, n, mu, args.reps, args.seed)
                    lines += new
                    print("\n".join(new), flush=True)
    if args.engine:
        for design in args.design:
            for n in args.n:
                for mu in args.mu:
                    new = engine_design_cell(design, n, mu, args.reps, args.seed,
                                             args.versus_dpsgd, args.weights)
                    lines += new
                    print("\n".join(new), flush=True)
    if args.fair:
        for mu in args.mu:
            new = (engine_fair_cell(mu, args.reps, args.seed, args.versus_dpsgd)
                   if args.engine else fair_cell(mu, args.reps, args.seed))
            lines += new
            print("\n".join(new), flush=True)
    lines.append(f"({(time.perf_counter() - start) / 60:.1f} min: python "
                 f"validation/newton_logit.py {' '.join(sys.argv[1:])})")
    out = pathlib.Path(args.out)
    before = out.read_text() if args.append and out.exists() else ""
    out.write_text(before + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
