"""The robustness study: intervals where users fit, not only in the papers' designs.

Covariates in natural units (an age, years of schooling, a log income, a dummy, a count,
cycling for larger ``p``), each inside an honest but loose declared box; heteroskedastic
or heavy-tailed errors; every family; batch sizes above one and step counts below the
default; budgets from ``mu = 0.5`` to 10 and an ``(epsilon, delta)`` request. Each
replication records, beside the intervals, whether the fit's free diagnostics warned
(``warned``): the package's promise is that every interval it prints without a warning
covers, and that a cell whose intervals do not cover warns in (nearly) every
replication.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import optimize, stats

from dpreg.exceptions import ConvergenceWarning
from dpreg.frontend.api import dp_expectile, dp_huber, dp_logit, dp_ols
from dpreg.studies.warning_rates import CELL_FACTORS, fit_rows

__all__ = ["natural_units_design", "robustness_replicate", "expectile_of", "clipped_target",
           "FAMILY_FITS"]

#: Covariate kinds cycled through for ``p - 1`` covariates: (name, simulate, declared box).
_KINDS = (
    ("age", lambda rng, n: rng.uniform(20, 60, n), (18.0, 90.0)),
    ("educ", lambda rng, n: np.clip(rng.normal(13, 2.5, n), 6, 20), (0.0, 25.0)),
    ("loginc", lambda rng, n: rng.normal(10, 0.7, n), (5.0, 15.0)),
    ("female", lambda rng, n: (rng.random(n) < 0.4).astype(float), (0.0, 1.0)),
    ("kids", lambda rng, n: np.minimum(rng.poisson(1.5, n), 10).astype(float), (0.0, 10.0)),
)
#: The front end that fits each family at its defaults.
FAMILY_FITS = {"linear": dp_ols, "huber": dp_huber, "expectile": dp_expectile,
               "logistic": dp_logit}


def expectile_of(dist, tau: float, c: float = np.inf) -> float:
    """The robust ``tau``-expectile of a scipy distribution: the root ``m`` of
    ``(1 - tau) E[min(m - e, c); e < m] = tau E[min(e - m, c); e > m]`` (the population
    score of dpreg's expectile loss with truncation ``c``)."""
    def score(m):
        below = dist.expect(lambda x: np.minimum(m - x, c), ub=m)
        above = dist.expect(lambda x: np.minimum(x - m, c), lb=m)
        return (1 - tau) * below - tau * above
    return float(optimize.brentq(score, -20, 20))


def natural_units_design(n: int, p: int, rng: np.random.Generator, *, family: str,
                         errors: str, tau: float = 0.5):
    """Simulate one data set: ``(data, formula, bounds, truth)``.

    ``p - 1`` covariates cycle through the kinds of ``_KINDS`` (numbered from the second
    round: ``age2``, ...); each slope moves the linear index by 0.3 standard deviations
    of its covariate. Errors: ``"hetero"`` (normal, s.d. from 0.5 to 1.5 with the first
    covariate), ``"t3"`` (Student t with 3 degrees of freedom, unit variance),
    ``"normal"`` (homoskedastic N(0, 1)). The
    outcome's bounds are the index's range over the boxes' centres plus 12.
    """
    cols, bounds, slopes = {}, {}, []
    for j in range(p - 1):
        name, draw, box = _KINDS[j % len(_KINDS)]
        name = name if j < len(_KINDS) else f"{name}{j // len(_KINDS) + 1}"
        x = draw(rng, n)
        cols[name] = x
        bounds[name] = box
        sd = {"age": 11.5, "educ": 2.4, "loginc": 0.7, "female": 0.49, "kids": 1.2}[
            name.rstrip("0123456789")]
        slopes.append((0.3 if j % 2 == 0 else -0.3) / sd)
    data = pd.DataFrame(cols)
    X = data.to_numpy()
    centre = X.mean(axis=0) if n else np.zeros(p - 1)
    intercept = -float(np.dot(slopes, centre)) + (0.0 if family == "logistic" else 2.0)
    eta = intercept + X @ np.asarray(slopes)
    truth = np.r_[intercept, slopes]
    if family == "logistic":
        y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    else:
        if errors == "t3":
            dist = stats.t(3, scale=1 / np.sqrt(3))
            e = dist.rvs(size=n, random_state=rng)
        elif errors == "normal":
            dist = stats.norm()
            e = rng.standard_normal(n)
        else:
            u = (X[:, 0] - X[:, 0].min()) / max(np.ptp(X[:, 0]), 1e-12)
            e = rng.standard_normal(n) * (0.5 + u)
            dist = stats.norm()
        if family == "expectile" and tau != 0.5:
            if errors != "t3":
                raise ValueError("expectile cells with tau != 0.5 use t3 errors (a "
                                 "location shift of a homoskedastic law)")
            truth = truth.copy()
            truth[0] += expectile_of(dist, tau, c=1.345)  # dp_expectile's default c
        y = eta + e
        bounds["y"] = (2.0 - 12.0, 2.0 + 12.0)
    data["y"] = y
    formula = "y ~ " + " + ".join(cols)
    return data, formula, bounds, truth


def clipped_target(model, clip: float, *, tol: float = 1e-10,
                   max_steps: int = 100) -> np.ndarray:
    """What DP-GD's intervals are for: the minimizer of the model's objective with every
    per-example gradient clipped to norm ``clip`` in the engine's coordinates (the
    public map of :mod:`dpreg.design.conditioning`), in the coordinates of the design.

    Clipping a convex loss's per-example gradient gives the gradient of a convex
    Huber-type loss (dpgd paper, s.2.5), so damped Newton steps from the non-private fit
    reach the minimizer (the Hessian counts the unclipped rows only). Where no row is
    clipped at the non-private fit, that fit is the target.

    Parameters
    ----------
    model : dpreg.DPRegression
    clip : float
        The fit's ``clip`` (its settings table).
    tol, max_steps : float, int
        Stop when the largest Newton step is below ``tol``; fail after ``max_steps``.
    """
    from dpreg.families import dispatch

    cond, obj, y = model.conditioning, model.objective, model.design.endog
    Z = np.ascontiguousarray(cond.design(model.design.exog))
    n, p = Z.shape
    zn = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    w = np.ascontiguousarray(obj.weights, dtype=float)
    args = (obj.family.code, float(obj.c), float(obj.tau))
    theta = np.asarray(cond.to_engine(model.fit_oracle().params.to_numpy()), dtype=float)
    grads, h = np.empty((n, p)), np.empty(n)

    def gradient(t):
        dispatch.clipped_gradients(Z, y, zn, w, *args, t, clip, grads)
        return grads.mean(axis=0)

    g = gradient(theta)
    for _ in range(max_steps):
        dispatch.hessian_weights(Z, y, zn, w, *args, theta, clip, h)
        H = (Z * h[:, None]).T @ Z / n + 1e-12 * np.eye(p)
        step = np.linalg.lstsq(H, g, rcond=None)[0]
        scale = 1.0
        while True:  # halve the step until the gradient's norm falls
            g_new = gradient(theta - scale * step)
            if np.linalg.norm(g_new) < np.linalg.norm(g) or scale < 1e-6:
                break
            scale /= 2
        theta, g = theta - scale * step, g_new
        if np.max(np.abs(scale * step)) < tol:
            return np.asarray(cond.params(theta), dtype=float)
    raise RuntimeError("Newton steps on the clipped objective did not converge")


def robustness_replicate(seed, *, family: str, n: int, p: int, budget: str, batch: int,
                         steps_per_n: int, errors: str, sampling: str, engine: str,
                         tau: float, alpha: float, ranges: str = "declared") -> list[dict]:
    """One data set, one private fit at the package's defaults except what the cell sets.

    ``budget`` is ``"mu=<value>"`` or ``"eps=<e>,delta=<d>"``; ``batch = 0`` and
    ``steps_per_n = 0`` mean the defaults. ``ranges`` is the fit's option: the study's
    recorded cells (without a ``ranges`` factor) are those of the declared boxes, the
    default before ``ranges="auto"``. Rows: every interval the fit offers, its default
    interval again as ``"default"`` (what ``conf_int()`` returns), with the grouping key
    ``warned`` (1 when the fit raised a ``ConvergenceWarning``), the checks that fired
    (``checks``, joined by ``+``) and whether they named the row's coefficient
    (``flagged``), as :func:`dpreg.studies.warning_rates.fired_checks` reads them.
    """
    data_seed, fit_seed = seed.spawn(2)
    rng = np.random.default_rng(data_seed)
    data, formula, bounds, truth = natural_units_design(n, p, rng, family=family,
                                                        errors=errors, tau=tau)
    options = dict(bounds=bounds, random_state=int(fit_seed.generate_state(1)[0]),
                   engine=engine, ranges=ranges)
    for part in budget.split(","):
        key, value = part.split("=")
        options[{"eps": "epsilon"}.get(key, key)] = float(value)
    if family == "expectile":
        options["tau"] = tau
    if batch:
        options["batch_size"] = batch
    if steps_per_n:
        options["steps"] = steps_per_n * n
    if engine == "dpsgd":
        options["sampling"] = sampling
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = FAMILY_FITS[family](formula, data, **options)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    if engine == "dpgd":
        # DP-GD's intervals are for the clipped empirical minimizer on these data
        from dpreg.frontend.model import DPRegression

        model = DPRegression.from_formula(formula, data, family=family, bounds=bounds,
                                          **({"tau": tau} if family == "expectile" else {}))
        truth = clipped_target(model, float(res.settings.value("clip")))
    return fit_rows(res, truth, messages, alpha=alpha)


def robustness_table(raw: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Per cell and interval method (``"default"``: the interval ``conf_int()`` returns):
    coverage over all replications, over those that did not warn (``coverage_unwarned``,
    with its MC s.e.) and over those that did (``coverage_warned``), the share of
    replications that warned, mean length, and the verdict.

    A cell passes when its unwarned intervals cover ``1 - alpha`` within 3 Monte Carlo
    standard errors (or more), or when the package warned in at least 95% of its
    replications.

    Parameters
    ----------
    raw : pandas.DataFrame
        :func:`dpreg.studies.run_replicates` of the ``robustness`` study.
    alpha : float
        The intervals' nominal miscoverage.
    """
    factors = [c for c in CELL_FACTORS if c in raw]
    raw = raw[raw["method"] != "oracle"].copy()
    raw["covered"] = (raw["lower"] <= raw["truth"]) & (raw["truth"] <= raw["upper"])
    raw["length"] = raw["upper"] - raw["lower"]
    rows = []
    for key, g in raw.groupby(factors + ["method"], sort=False, dropna=False):
        per_rep = g.groupby("rep").agg(covered=("covered", "mean"), warned=("warned", "max"),
                                       length=("length", "mean"))
        reps = len(per_rep)
        quiet = per_rep[per_rep["warned"] == 0]
        cov_quiet = float(quiet["covered"].mean()) if len(quiet) else float("nan")
        loud = per_rep[per_rep["warned"] == 1]
        cov_loud = float(loud["covered"].mean()) if len(loud) else float("nan")
        # the MC s.e. of a coverage share over replications (coefficients within one
        # replication share the data, so the replication is the unit)
        mcse = (np.sqrt((1 - alpha) * alpha / len(quiet)) if len(quiet) else float("nan"))
        warned = float(per_rep["warned"].mean())
        ok = warned >= 0.95 or (len(quiet) > 0 and cov_quiet >= 1 - alpha - 3 * mcse)
        rows.append(dict(zip(factors + ["method"], key, strict=True),
                         reps=reps, coverage=float(per_rep["covered"].mean()),
                         coverage_unwarned=cov_quiet, mcse=mcse,
                         coverage_warned=cov_loud, warned=warned,
                         length=float(per_rep["length"].mean()), passes=bool(ok)))
    return pd.DataFrame(rows)


def draw_robustness(summary: pd.DataFrame, path=None, *, coef: str = "(average)"):
    """Coverage of the unwarned intervals per cell (bars: 1.96 MC s.e.), with each cell's
    share of warned replications beside it, one panel per interval method.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`dpreg.studies.summarize` of the study (grouped by ``warned`` among others).
    path : str or Path, optional
    coef : str
        Which coefficient rows to draw (default the per-replication average).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    factors = [c for c in ("design", "engine", "family", "ranges", "n", "p", "budget", "mu",
                           "batch", "steps_per_n", "errors", "sampling", "tau")
               if c in summary]
    data = summary[(summary["coef"] == coef)
                   & ~summary["method"].isin(["oracle", "nonprivate"])]
    methods = sorted(data["method"].unique())
    cells = data[factors].drop_duplicates().reset_index(drop=True)
    labels = [" ".join(f"{k}={v}" for k, v in row.items()) for _, row in cells.iterrows()]
    fig = Figure(figsize=(7 * len(methods), 0.28 * len(cells) + 1.5), layout="constrained")
    axes = fig.subplots(1, len(methods), squeeze=False)[0]
    for ax, method in zip(axes, methods, strict=True):
        sub = data[data["method"] == method]
        for i, (_, cell) in enumerate(cells.iterrows()):
            rows = sub.merge(cell.to_frame().T.astype(sub[factors].dtypes), on=factors)
            quiet = rows[rows["warned"] == 0]
            share = rows.loc[rows["warned"] == 1, "reps"].sum() / max(rows["reps"].sum(), 1)
            if len(quiet):
                ax.errorbar(quiet["coverage"], [i] * len(quiet),
                            xerr=1.96 * quiet["coverage_mcse"], fmt="o", color="C0",
                            capsize=2)
            if len(rows):  # the engine of this cell offers this method
                ax.text(1.005, i, f"warned {share:.0%}", va="center", fontsize=7,
                        transform=ax.get_yaxis_transform())
        ax.axvline(0.95, color="grey", lw=1)
        ax.set_yticks(range(len(cells)), labels if ax is axes[0] else [""] * len(cells),
                      fontsize=7)
        ax.set_xlim(0.5, 1.0)
        ax.set_xlabel(f"{method}: coverage of unwarned 95% intervals")
        ax.set_ylim(len(cells) - 0.5, -0.5)  # every panel on the same rows, top down
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig
