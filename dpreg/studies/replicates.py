"""Replicate functions of the shipped studies: simulate one data set, fit, return rows.

Each function has the signature ``replicate(seed, **params) -> list of dict`` of
:class:`dpreg.studies.Study`: ``seed`` is a :class:`numpy.random.SeedSequence`, split
into one stream for the data and one per fit, and the fits use dpreg's public API
(:class:`dpreg.DPRegression`, :func:`dpreg.dp_huber`). Non-private reference
estimators come from :mod:`dpreg.studies.reference` and statsmodels (through
:meth:`dpreg.DPRegression.fit_oracle`) and are labelled "non-private".
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from dpreg.datasets import simulate_ldp_design, simulate_linear, simulate_logistic
from dpreg.frontend.api import dp_huber
from dpreg.frontend.model import DPRegression
from dpreg.studies.records import estimate_rows, result_rows
from dpreg.studies.reference import averaged_sgd, clipped_minimizer, ols

__all__ = ["smoke_replicate", "dpsgd_mse_replicate", "dpsgd_coverage_replicate",
           "dpsgd_vs_dpgd_replicate", "ldp_coverage_replicate", "dpgd_intervals_replicate",
           "LDP_LABELS"]

#: DP-SGD as the dpsgd-inference paper runs it: one row per step and no change of
#: coordinates (its covariates are standardized already). dpreg's defaults condition the
#: design and take batches of n/200 rows (user guide, "Convergence"); the papers'
#: studies pin the paper's algorithm so that their recorded runs stay reproducible.
PAPER_DPSGD = {"batch_size": 1, "condition": "none"}
#: The dpgd paper's algorithm: the design as given, no private preconditioner.
PAPER_DPGD = {"condition": "none"}
#: The ldp-sgd paper's names of dpreg's interval methods.
LDP_LABELS = {"plugin": "PPI", "batch_means": "PBM", "rs": "PRS"}


def _streams(seed: np.random.SeedSequence, fits: int):
    """A data Generator and ``fits`` integer seeds, all from ``seed``."""
    data, *rest = seed.spawn(1 + fits)
    return np.random.default_rng(data), [int(s.generate_state(1)[0]) for s in rest]


def _xy(sim):
    cols = [c for c in sim.data.columns if c != "y"]
    return sim.data[cols].to_numpy(float), sim.data["y"].to_numpy(float)


# ---------------------------------------------------------------------------- smoke
def smoke_replicate(seed, *, n: int, p: int, steps_per_n: int, mu: float, x_bound: float,
                    clip: float, alpha: float) -> list[dict]:
    """A quick DP-SGD coverage check: linear model, short run, oracle beside it.

    Data: :func:`dpreg.datasets.simulate_linear` (identity design, theta ~ U[0, 1]^p).
    Fits: DP-SGD with ``steps = steps_per_n * n`` (plug-in and random scaling) and the
    non-private oracle (statsmodels OLS t interval).
    """
    rng, (fit_seed,) = _streams(seed, 1)
    sim = simulate_linear(n, p, random_state=rng)
    model = DPRegression.from_formula(sim.formula, sim.data)
    res = model.fit(mu=mu, steps=steps_per_n * n, x_bound=x_bound, clip=clip,
                    random_state=fit_seed, **PAPER_DPSGD)
    truth = sim.params.to_numpy()
    return (result_rows(model.fit_oracle(), truth, alpha=alpha)
            + result_rows(res, truth, alpha=alpha))


# ---------------------------------------------------------------------------- dpsgd paper
def dpsgd_mse_replicate(seed, *, n: int, p: int, mu: float, kappas: tuple, lr: float,
                        lr_decay: float, x_bound: float, clip: float) -> list[dict]:
    """dpsgd-inference paper, Figure 1: estimation error against the number of steps.

    One data set (s.6.1 linear design, identity covariance) and, on it: OLS and cyclic
    averaged SGD (one pass, ``T = n``; both NOT private and independent of ``T``), and
    for each ``T = round(n^kappa)`` randomized averaged SGD (NOT private) and DP-SGD
    (``mu``-GDP, all of the budget on the path). The three SGDs share the step sizes
    ``lr * t^-lr_decay``; DP-SGD also clips gradients at ``clip``.
    """
    rng, fit_seeds = _streams(seed, len(kappas))
    sim = simulate_linear(n, p, random_state=rng)
    X, y = _xy(sim)
    truth = sim.params.to_numpy()
    names = list(sim.params.index)
    nan = float("nan")
    rows = estimate_rows("OLS (non-private)", truth, ols(X, y)[0], names=names,
                         steps=nan, kappa=nan)
    cyc = averaged_sgd(X, y, n, lr=lr, lr_decay=lr_decay, sampling="cyclic")
    rows += estimate_rows("SGD-cyc (non-private, one pass)", truth, cyc, names=names,
                          steps=nan, kappa=nan)
    model = DPRegression(y, X)
    for kappa, fit_seed in zip(kappas, fit_seeds, strict=True):
        steps = int(round(n ** kappa))
        ran = averaged_sgd(X, y, steps, lr=lr, lr_decay=lr_decay, sampling="random",
                           rng=rng)
        rows += estimate_rows("SGD-ran (non-private)", truth, ran, names=names,
                              steps=steps, kappa=kappa)
        res = model.fit(mu=mu, steps=steps, lr=lr, lr_decay=lr_decay, x_bound=x_bound,
                        clip=clip, budget_split={"path": 1.0}, random_state=fit_seed,
                        **PAPER_DPSGD)
        rows += estimate_rows("DP-SGD", truth, res.params.to_numpy(), names=names,
                              steps=steps, kappa=kappa)
    return rows


def dpsgd_coverage_replicate(seed, *, family: str, design: str, n: int, mu: float,
                             steps_power: float, x_bound: float, clip: float,
                             alpha: float) -> list[dict]:
    """dpsgd-inference paper, Figure 2: coverage and length of plug-in and RS intervals.

    Section 6.1: p = 3, ``x ~ N(0, Sigma)`` with Sigma the identity or Toeplitz 0.5,
    theta ~ U[0, 1]^3 (linear, N(0, 1) errors) or U[0, 1/2]^3 (logistic), drawn per
    replication; ``T = n^steps_power`` steps, batch size 1, ``mu``-GDP. Rows: the
    non-private oracle (statsmodels OLS / Logit), DP-SGD plug-in and random scaling
    (both with the finite-sample correction).
    """
    rng, (fit_seed,) = _streams(seed, 1)
    simulate = simulate_linear if family == "linear" else simulate_logistic
    sim = simulate(n, 3, cov=design, random_state=rng)
    model = DPRegression.from_formula(sim.formula, sim.data, family=family)
    res = model.fit(mu=mu, steps=int(round(n ** steps_power)), x_bound=x_bound,
                    clip=clip if family == "linear" else None, random_state=fit_seed,
                    **PAPER_DPSGD)
    truth = sim.params.to_numpy()
    return (result_rows(model.fit_oracle(), truth, alpha=alpha)
            + result_rows(res, truth, alpha=alpha))


def dpsgd_vs_dpgd_replicate(seed, *, n: int, p: int, mu: float, kappas: tuple,
                            gd_steps: tuple, gd_lr: float, gd_runs: int, x_bound: float,
                            clip: float, alpha: float) -> list[dict]:
    """dpsgd-inference paper, Figure 3: DP-SGD against DP-GD as iterations grow.

    One data set (s.6.1 linear design, identity covariance, n = 1000) and, on it:

    * ``"DP-SGD plug-in"``: DP-SGD with ``T1 = n^kappa`` steps, plug-in interval with
      all variance parts (the paper's plug-in with finite-sample correction);
    * ``"DP-GD last-step plug-in"``: the last iterate of DP-GD (``T2`` full-batch steps,
      ``mu``-GDP, step ``gd_lr``) with the interval the paper describes for DP-GD, whose
      privacy part "only considers noise added at the final iteration":
      variance ``s^2 (X'X)^{-1} + (gd_lr * lambda)^2``. Its statistical part is the
      NON-PRIVATE OLS one (favourable to DP-GD);
    * ``"DP-GD runs (t)"``: dpreg's independent-runs t interval (``gd_runs`` runs of
      ``T2`` steps, last iterates), built for the minimizer of the clipped objective.

    Coverage and RMSE are against the true theta, as in the paper's figure.
    """
    rng, fit_seeds = _streams(seed, len(kappas) + 2 * len(gd_steps))
    seeds = iter(fit_seeds)
    sim = simulate_linear(n, p, random_state=rng)
    X, y = _xy(sim)
    truth = sim.params.to_numpy()
    names = list(sim.params.index)
    model = DPRegression(y, X)
    stat_var = ols(X, y)[1] ** 2
    z = stats.norm.isf(alpha / 2)
    rows = []
    for kappa in kappas:
        steps = int(round(n ** kappa))
        res = model.fit(mu=mu, steps=steps, x_bound=x_bound, clip=clip,
                        random_state=next(seeds), **PAPER_DPSGD)
        rows += result_rows(res, truth, methods=["plugin"], alpha=alpha,
                            labels={"plugin": "DP-SGD plug-in"}, kappa=kappa,
                            iterations=steps)
    gd = dict(engine="dpgd", mu=mu, clip=clip, lr=gd_lr, x_bound=x_bound, **PAPER_DPGD)
    for t2 in gd_steps:
        res = model.fit(steps=t2, burn_in=0, n_estimates=min(5, t2), aggregate="last",
                        random_state=next(seeds), **gd)
        lam = res.settings.value("noise_std")
        est = res.params.to_numpy()
        sd = np.sqrt(stat_var + (gd_lr * lam) ** 2)
        rows += estimate_rows("DP-GD last-step plug-in", truth, est, names=names,
                              lower=est - z * sd, upper=est + z * sd,
                              pvalue=2 * stats.norm.sf(np.abs(est - truth) / sd),
                              alpha=alpha, kappa=float("nan"), iterations=t2)
        res = model.fit(steps=t2, cov_type="runs", runs=gd_runs, n_estimates=gd_runs,
                        aggregate="last", random_state=next(seeds), **gd)
        rows += result_rows(res, truth, methods=["runs"], alpha=alpha,
                            labels={"runs": "DP-GD runs (t)"}, kappa=float("nan"),
                            iterations=t2)
    return rows


# ---------------------------------------------------------------------------- ldp paper
def ldp_coverage_replicate(seed, *, n: int, p: int, mu: float, c: float, alphas: tuple,
                           methods: tuple) -> list[dict]:
    """ldp-sgd paper, Table 1 and Figure 3: PPI, PBM and PRS intervals of LDP-SGD.

    Section 5: ``x = (1, s)``, ``s ~ N(0, I_p)``, ``y = x' 1 + e``, ``e ~ N(0, 0.5^2)``;
    Huber loss (``c``) with Mallows weights, step decay 0.51, one pass. The path and
    the two plug-in matrices each get ``mu`` (their Thm 3), so the fit asks for
    ``sqrt(3) mu`` with dpreg's equal split. Rows for each method and each level
    ``1 - alpha`` in ``alphas`` (labels PPI, PBM, PRS as in the paper).
    """
    rng, (fit_seed,) = _streams(seed, 1)
    sim = simulate_ldp_design(n, family="huber", p=p, random_state=rng)
    res = dp_huber(sim.formula, sim.data, c=c, engine="ldp_sgd", mu=math.sqrt(3) * mu,
                   cov_type="plugin", random_state=fit_seed)
    return result_rows(res, sim.params.to_numpy(), methods=list(methods), alpha=alphas,
                       labels=LDP_LABELS)


# ---------------------------------------------------------------------------- dpgd paper
def dpgd_intervals_replicate(seed, *, n: int, p: int, rho: float, clip_per_sqrt_p: float,
                             lr: float, burn_in: int, m: int, totals: tuple,
                             alpha: float) -> list[dict]:
    """dpgd paper, Figures 5 and 6: batch means, checkpoints and independent runs.

    Section 4: p = 10, theta* uniform on the unit sphere (per replication),
    ``x ~ N(0, I)``, N(0, 1) errors; clip ``gamma = clip_per_sqrt_p * sqrt(p)``, step
    ``lr``, ``rho``-zCDP, ``m`` estimates, burn-in ``burn_in``. For each total number of
    gradient iterations ``N`` in ``totals``: one run of ``N`` steps gives batch means
    and checkpoints; ``m`` runs of ``N / m`` steps give independent runs (only when
    ``N / m > burn_in``). Rows with ``target="clipped minimizer"`` score the intervals
    against what they are for, the empirical minimizer of the clipped objective
    (computed NON-PRIVATELY by noiseless clipped GD); rows with ``target="theta*"``
    against the population parameter. ``"OLS (non-private)"`` is the textbook t
    interval for theta* (the dashed line of Figure 6).
    """
    rng, fit_seeds = _streams(seed, 2 * len(totals))
    theta = rng.normal(size=p)
    theta /= np.linalg.norm(theta)
    X = rng.normal(size=(n, p))
    y = X @ theta + rng.normal(size=n)
    model = DPRegression(y, X)
    names = list(model.exog_names)
    gamma = clip_per_sqrt_p * math.sqrt(p)
    target = clipped_minimizer(X, y, gamma, lr=lr)
    oracle = model.fit_oracle()
    nan = float("nan")
    rows = result_rows(oracle, theta, alpha=alpha, labels={"oracle": "OLS (non-private)"},
                       target="theta*", total_iters=nan, steps_per_run=nan)
    common = dict(engine="dpgd", rho=rho, clip=gamma, lr=lr, x_bound=gamma,
                  burn_in=burn_in, n_estimates=m, **PAPER_DPGD)
    for i, total in enumerate(totals):
        fits = [(total, model.fit(steps=total, random_state=fit_seeds[2 * i], **common))]
        if total // m > burn_in:
            fits.append((total // m, model.fit(steps=total // m, cov_type="runs", runs=m,
                                               random_state=fit_seeds[2 * i + 1],
                                               **common)))
        for per_run, res in fits:
            for method, inf in res.inferences.items():
                ci = res.conf_int(alpha, method=method).to_numpy()
                est = inf.center
                pval = inf.law.two_sided_pvalue
                for label, truth in (("clipped minimizer", target), ("theta*", theta)):
                    rows += estimate_rows(method, truth, est, names=names,
                                          lower=ci[:, 0], upper=ci[:, 1],
                                          pvalue=pval((est - truth) / inf.scale),
                                          alpha=alpha,
                                          target=label, total_iters=total,
                                          steps_per_run=per_run)
    return rows
