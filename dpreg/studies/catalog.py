"""The shipped studies: the simulation figures and tables of the papers behind dpreg.

=================  =========================================================================
name               what
=================  =========================================================================
``smoke``          a quick DP-SGD coverage check (seconds; used by the tests and the CLI)
``dpsgd-fig1``     dpsgd-inference paper, Figure 1: MSE against T for DP-SGD, randomized
                   SGD, cyclic SGD and OLS
``dpsgd-fig2``     dpsgd-inference paper, Figure 2: coverage and length against n (500 to
                   1500), linear and logistic, identity and Toeplitz, mu = 2
``dpsgd-fig3``     dpsgd-inference paper, Figure 3: DP-SGD against DP-GD (needs ``dpgd``)
``ldp-table1``     ldp-sgd paper, Table 1: PPI, PBM, PRS coverage and length
``ldp-fig3``       ldp-sgd paper, Figure 3: coverage against the nominal level (p = 5)
``dpgd-fig5-6``    dpgd paper, Figures 5 and 6: batch means, checkpoints, independent runs
                   (needs ``dpgd``)
``robustness``     natural units in loose boxes, every family, engine, batch and budget
``engines``        the engines' intervals compared on linear regression, and DP-SGD
                   against DP-GD for the other families (docs: studies/engines)
``textbook``       textbook regressions in natural units with codebook bounds: declared
                   against privately learned ranges, DP-SGD against SSP, every family
``clusters``       linear regression on 30-500 clusters of unequal sizes, clusters the
                   privacy unit: cluster-robust intervals against statsmodels' CR1
                   (docs: studies/clusters_iv)
``iv``             private 2SLS at strong, moderate and weak instruments against
                   linearmodels' IV2SLS (docs: studies/clusters_iv)
=================  =========================================================================

:func:`get_study` returns a :class:`~dpreg.studies.Study`; run it with
:func:`~dpreg.studies.run_study` or ``python -m dpreg study NAME``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from dpreg.exceptions import OptionError
from dpreg.studies import clusters as cl
from dpreg.studies import engine_comparison as ec
from dpreg.studies import iv as ivs
from dpreg.studies import replicates as rp
from dpreg.studies import robustness as rb
from dpreg.studies import textbook as tb
from dpreg.studies.plots import plot_coverage, plot_length, plot_metric
from dpreg.studies.spec import FigureSpec, Study
from dpreg.studies.summaries import AVERAGE, nominal_band

__all__ = ["get_study", "list_studies", "register_study", "LDP_TABLE1_PAPER"]

_REGISTRY: dict[str, Callable[[], Study]] = {}


def register_study(factory: Callable[[], Study]) -> Callable[[], Study]:
    """Register a function returning a :class:`Study` under the study's name.

    Parameters
    ----------
    factory : callable
        ``factory() -> Study``; called by :func:`get_study` (so definitions cost nothing
        at import).

    Returns
    -------
    callable
        ``factory`` (usable as a decorator).
    """
    _REGISTRY[factory().name] = factory
    return factory


def get_study(name: str) -> Study:
    """The shipped (or registered) study called ``name``.

    Parameters
    ----------
    name : str
        One of :func:`list_studies`.

    Returns
    -------
    Study
    """
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise OptionError(f"unknown study {name!r}; available: {list_studies()}") from None


def list_studies() -> list[str]:
    """Names of the registered studies."""
    return list(_REGISTRY)


# ---------------------------------------------------------------------------- smoke
@register_study
def _smoke() -> Study:
    return Study(
        name="smoke", replicate=rp.smoke_replicate, grid={"n": [200, 400]},
        constants=dict(p=3, steps_per_n=200, mu=2.0, x_bound=4.0, clip=6.0, alpha=0.05),
        reps=50, seed=7,
        title="Smoke test: DP-SGD coverage, linear model, T = 200 n, mu = 2",
        description="A quick check that a study runs end to end (seconds per replication "
                    "batch); not a replication of a paper.",
        figures=(FigureSpec("coverage", plot_coverage, {"x": "n"}),
                 FigureSpec("length", plot_length, {"x": "n"})))


# ---------------------------------------------------------------------------- robustness
def _cells(**factors):
    """One sub-grid of the robustness study: every factor named, defaults filled."""
    base = dict(family=["linear"], n=[1000], p=[3], budget=["mu=5"], batch=[0],
                steps_per_n=[0], errors=["hetero"], sampling=["uniform"], engine=["dpsgd"],
                tau=[0.5])
    return base | {k: list(v) for k, v in factors.items()}


@register_study
def _robustness() -> Study:
    return Study(
        name="robustness", replicate=rb.robustness_replicate,
        grid=[
            # every family at the defaults, two sizes, two dimensions, two budgets
            _cells(family=["linear", "huber", "logistic"], n=[1000, 5000], p=[3, 10],
                   budget=["mu=1", "mu=5"]),
            # curved asymmetric score
            _cells(family=["expectile"], n=[5000], errors=["t3"], tau=[0.5, 0.8]),
            # batch sizes above one and fewer steps than the default
            _cells(batch=[1, 10, 50], steps_per_n=[20]),
            _cells(batch=[50]),
            # small n, large and small budgets
            _cells(n=[500], p=[3, 10], budget=["mu=0.5", "mu=10"]),
            # p = 20
            _cells(n=[20000], p=[20], budget=["mu=1", "mu=10"]),
            # an (epsilon, delta) request, Poisson sampling, heavy tails
            _cells(n=[2000], p=[5], budget=["eps=1,delta=1e-5"]),
            _cells(sampling=["poisson"]),
            _cells(n=[5000], p=[10], errors=["t3"]),
            # the other engines: full-batch DP-GD (intervals for the clipped empirical
            # minimizer on the data) and one-pass LDP-SGD
            _cells(engine=["dpgd"], family=["linear", "huber", "logistic"], n=[5000],
                   p=[3, 10], budget=["mu=1"]),
            _cells(engine=["ldp_sgd"], family=["linear", "huber", "logistic"], n=[20000],
                   budget=["mu=2"]),
            _cells(engine=["ldp_sgd"], n=[50000], p=[10], budget=["mu=5"]),
            # the sufficient-statistics engine (linear family): intervals for the
            # population coefficients
            _cells(engine=["ssp"], n=[500, 1000, 5000, 20000], p=[3, 10],
                   budget=["mu=1", "mu=5"]),
            _cells(engine=["ssp"], n=[2000], p=[5], budget=["eps=1,delta=1e-5"]),
            _cells(engine=["ssp"], n=[5000], p=[10], errors=["t3"]),
            _cells(engine=["ssp"], n=[20000], p=[20], budget=["mu=1", "mu=10"]),
            # the largest n, and Poisson sampling at a small budget with p = 10
            _cells(n=[50000], p=[10], budget=["mu=1"]),
            _cells(sampling=["poisson"], n=[5000], p=[10], budget=["mu=1"]),
            # the default since ranges="auto": DP-SGD and SSP learn the ranges privately
            # (the cells above, without a ranges factor, are in the declared boxes)
            _cells(ranges=["auto"], family=["linear", "huber", "logistic"],
                   n=[1000, 5000], p=[3, 10], budget=["mu=1", "mu=5"]),
            _cells(ranges=["auto"], n=[5000], p=[10], errors=["t3"]),
            _cells(ranges=["auto"], engine=["ssp"], n=[1000, 5000], p=[3, 10],
                   budget=["mu=1", "mu=5"]),
        ],
        constants=dict(alpha=0.05), reps=200, seed=20261124,
        revision="2",  # 2: the default interval, the checks and the named coefficients
        title="Robustness: natural units in loose boxes, every family, batches, budgets",
        description="Coverage of the truth (DP-GD: of the clipped empirical minimizer, its "
                    "target) by every printed interval of DP-SGD, DP-GD and LDP-SGD, with "
                    "the share of replications in which the package warned "
                    "(ConvergenceWarning).",
        figures=(FigureSpec("coverage", rb.draw_robustness),))


# ---------------------------------------------------------------------------- textbook
@register_study
def _textbook() -> Study:
    common = dict(ranges=["declared", "private"], n=[500, 2000, 10_000], mu=[1.0, 5.0, 10.0])
    return Study(
        name="textbook", replicate=tb.textbook_replicate,
        grid=[dict(design=["wage", "fertility"], family=["linear"], engine=["dpsgd", "ssp"],
                   **common),
              dict(design=["participation", "approval"], family=["logistic"],
                   engine=["dpsgd"], **common),
              dict(design=["wage_t3"], family=["huber", "expectile"], engine=["dpsgd"],
                   **common)],
        constants=dict(alpha=0.05), reps=200, seed=20261126,
        title="Textbook regressions: codebook bounds, declared or private ranges",
        description="Per cell and interval: the share of fits that do not warn, the "
                    "coverage of the unwarned fits' intervals, and their length relative "
                    "to the non-private interval.",
        figures=(FigureSpec("coverage", rb.draw_robustness),))


# ---------------------------------------------------------------------------- engines
#: The engines of the comparison study (``ssp`` joins when it is registered).
COMPARISON_ENGINES = ("dpsgd", "dpgd", "ssp", "adassp")


@register_study
def _engine_comparison() -> Study:
    from dpreg.fits.registry import ENGINES

    engines = [e for e in COMPARISON_ENGINES if e in ENGINES]
    return Study(
        name="engines", replicate=ec.comparison_replicate,
        grid=[
            # every engine in the declared boxes (ranges="declared")
            dict(ec.LINEAR_GRID, engine=engines),
            dict(ec.EPSILON_GRID, engine=engines),
            # Huber, expectile, logistic: DP-SGD against DP-GD (a family factor of their
            # own; the linear grids above have none, which keeps their cache keys)
            *ec.FAMILY_GRIDS,
            # the same linear cells at the default ranges="auto" for the engines that
            # learn ranges (for the others "auto" is the declared boxes): the rule of
            # engine="auto" is read from these
            *ec.ranges_grids([e for e in engines if ENGINES[e].learns_ranges]),
        ],
        constants=dict(alpha=0.05), reps=200, seed=20261125,
        title="Engines compared: linear regression, natural units, same total budget",
        description="Coverage of the population coefficients and mean length of every "
                    "interval of DP-SGD, DP-GD, the sufficient-statistics engine and "
                    "AdaSSP, at the package's defaults, with fit times; for Huber, "
                    "expectile and logistic regression, DP-SGD against DP-GD.",
        figures=(FigureSpec("coverage", ec.draw_engines),))


# ---------------------------------------------------------------------------- clusters, iv
@register_study
def _clusters() -> Study:
    return Study(
        name="clusters", replicate=cl.clusters_replicate,
        grid=dict(engine=list(cl.ENGINES), G=[30, 100, 500], mu=[1.0, 2.0, 5.0]),
        constants=dict(max_group_size=cl.MAX_GROUP_SIZE, icc=cl.ICC, alpha=0.05),
        reps=200, seed=20261127, revision="2",  # 2: cluster sizes protected (G K)
        title="Clusters: linear regression on clusters of unequal sizes, clusters the "
              "privacy unit",
        description="Per cell, interval and slope: the share of fits that do not warn, "
                    "the coverage of the unwarned fits' intervals with its MC s.e., the "
                    "overall coverage, and the length over statsmodels' CR1 cluster "
                    "interval on the same data.",
        figures=(FigureSpec("coverage", cl.draw_clusters),))


@register_study
def _iv() -> Study:
    return Study(
        name="iv", replicate=ivs.iv_replicate,
        grid=dict(strength=list(ivs.STRENGTHS), n=[2000, 10_000], mu=[1.0, 5.0]),
        constants=dict(alpha=0.05), reps=200, seed=20261128,
        title="IV-2SLS: strong, moderate and weak instruments",
        description="Per cell and interval: the share of fits that warn (weak "
                    "instruments or another check), the coverage of the endogenous "
                    "regressor's coefficient by the unwarned fits' intervals with its MC "
                    "s.e., the overall coverage, and the length over linearmodels' "
                    "IV2SLS interval on the same data.",
        figures=(FigureSpec("coverage", ivs.draw_iv),))


# ---------------------------------------------------------------------------- dpsgd paper
@register_study
def _dpsgd_fig1() -> Study:
    return Study(
        name="dpsgd-fig1", replicate=rp.dpsgd_mse_replicate, grid={"n": [1000]},
        constants=dict(p=3, mu=2.0, kappas=tuple(np.round(np.arange(1.0, 2.01, 0.1), 2)),
                       lr=0.5, lr_decay=0.501, x_bound=4.0, clip=6.0),
        reps=200, seed=20251201,
        title="dpsgd-inference paper, Figure 1: MSE against T (n = 1000, p = 3, mu = 2)",
        description="MSE of DP-SGD, randomized SGD (non-private), cyclic SGD (one pass, "
                    "non-private) and OLS (non-private) for T = n^kappa steps.",
        figures=(FigureSpec("mse", plot_metric, {
            "metric": "mse", "x": "steps", "logx": True, "logy": True, "errorbars": "mcse",
            "xlabel": "steps T", "ylabel": "MSE (average over coefficients)"}),))


@register_study
def _dpsgd_fig2() -> Study:
    facets = {"row": "family", "col": "design"}
    return Study(
        name="dpsgd-fig2", replicate=rp.dpsgd_coverage_replicate,
        grid={"family": ["linear", "logistic"], "design": ["identity", "toeplitz"],
              "n": [500, 750, 1000, 1250, 1500]},
        constants=dict(mu=2.0, steps_power=2.0, x_bound=4.0, clip=6.0, alpha=0.05),
        reps=200, seed=20251202,
        title="dpsgd-inference paper, Figure 2: coverage and length (T = n^2, mu = 2)",
        description="Oracle (non-private), DP-SGD plug-in and random-scaling 95% "
                    "intervals, linear and logistic models, identity and Toeplitz designs.",
        figures=(FigureSpec("coverage", plot_coverage, {"x": "n", **facets}),
                 FigureSpec("length", plot_length, {"x": "n", **facets})))


def draw_dpsgd_vs_dpgd(summary: pd.DataFrame, path=None, *, coef: str = AVERAGE):
    """The layout of Figure 3 of the dpsgd-inference paper: RMSE, coverage and length;
    DP-SGD against kappa in ``T1 = n^kappa`` (top axis), DP-GD against ``T2`` (bottom).

    Parameters
    ----------
    summary : pandas.DataFrame
        Summary of the ``dpsgd-fig3`` study.
    path : str or Path, optional
    coef : str

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    data = summary[summary["coef"] == coef]
    fig = Figure(figsize=(13.5, 4.4), layout="constrained")
    axes = fig.subplots(1, 3)
    sgd = data[data["method"] == "DP-SGD plug-in"].sort_values("kappa")
    gd_styles = {"DP-GD last-step plug-in": ("C3", "s"), "DP-GD runs (t)": ("C1", "^")}
    tops = []
    for ax, metric in zip(axes, ("rmse", "coverage", "length"), strict=True):
        for method, (color, marker) in gd_styles.items():
            g = data[data["method"] == method].sort_values("iterations")
            ax.errorbar(g["iterations"], g[metric], yerr=1.96 * g[f"{metric}_mcse"],
                        color=color, marker=marker, capsize=2.5, label=method)
        ax.set_xlabel("DP-GD iterations T2")
        top = ax.twiny()
        top.errorbar(sgd["kappa"], sgd[metric], yerr=1.96 * sgd[f"{metric}_mcse"],
                     color="C0", marker="o", capsize=2.5, label="DP-SGD plug-in")
        top.set_xlabel("DP-SGD: kappa in T1 = n^kappa")
        tops.append(top)
        if metric == "coverage":
            reps = float(data["reps"].min())
            lo, hi = nominal_band(0.95, reps)
            ax.axhspan(float(lo), float(hi), color="grey", alpha=0.25, lw=0,
                       label="0.95 ± 1.96 MC s.e.")
            ax.set_ylim(0, 1.02)
            ax.set_ylabel("coverage of theta* (95% nominal)")
        else:
            ax.set_yscale("log")
            ax.set_ylabel({"rmse": "RMSE", "length": "average interval length"}[metric])
        ax.grid(alpha=0.3)
    handles, labels = axes[1].get_legend_handles_labels()
    h2, l2 = tops[1].get_legend_handles_labels()
    fig.legend(handles + h2, labels + l2, loc="outside lower center", ncols=4, fontsize=9,
               frameon=False)
    fig.suptitle(f"DP-SGD vs DP-GD, linear model, n = 1000, p = 3, mu = 2 "
                 f"({int(data['reps'].min())} replications)", fontsize=11)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


@register_study
def _dpsgd_fig3() -> Study:
    return Study(
        name="dpsgd-fig3", replicate=rp.dpsgd_vs_dpgd_replicate, grid={"n": [1000]},
        constants=dict(p=3, mu=2.0, kappas=(1.5, 1.6, 1.7, 1.8, 1.9, 2.0),
                       gd_steps=(5, 10, 15, 20, 25, 30), gd_lr=0.5, gd_runs=10,
                       x_bound=4.0, clip=6.0, alpha=0.05),
        reps=200, seed=20251203, requires=("dpgd",),
        title="dpsgd-inference paper, Figure 3: DP-SGD against DP-GD (n = 1000, mu = 2)",
        description="RMSE, coverage and length of DP-SGD plug-in intervals (T1 = n^kappa) "
                    "and DP-GD intervals (T2 full-batch steps).",
        figures=(FigureSpec("rmse-coverage-length", draw_dpsgd_vs_dpgd),))


# ---------------------------------------------------------------------------- ldp paper
_LDP_NS = (40_000, 80_000, 120_000, 160_000, 200_000)
#: Table 1 of the ldp-sgd paper (p = 3, 200 replications): CP (%) and AL (x 1e-2).
_LDP_PAPER = {
    (1.0, "PPI"): ([91.38, 93.50, 92.13, 93.75, 93.25], [11.49, 7.68, 6.10, 5.19, 4.60]),
    (1.0, "PBM"): ([85.38, 92.00, 91.63, 93.25, 92.88], [11.09, 7.83, 6.49, 5.49, 4.77]),
    (1.0, "PRS"): ([94.38, 95.75, 94.88, 95.38, 95.50], [16.01, 10.96, 8.64, 7.21, 6.50]),
    (2.0, "PPI"): ([90.75, 90.50, 91.25, 92.63, 92.13], [4.99, 3.45, 2.81, 2.42, 2.16]),
    (2.0, "PBM"): ([84.63, 87.88, 89.75, 90.25, 90.88], [4.70, 3.42, 2.87, 2.47, 2.15]),
    (2.0, "PRS"): ([92.75, 92.50, 93.50, 94.00, 94.88], [6.77, 4.82, 3.94, 3.30, 2.93]),
}
#: The same numbers in the summary's units (coverage as a fraction, length as is).
LDP_TABLE1_PAPER = pd.DataFrame(
    [{"mu": mu, "n": n, "method": method, "alpha": 0.05, "coef": AVERAGE,
      "coverage": cp / 100, "length": al / 100}
     for (mu, method), (cps, als) in _LDP_PAPER.items()
     for n, cp, al in zip(_LDP_NS, cps, als, strict=True)])


@register_study
def _ldp_table1() -> Study:
    return Study(
        name="ldp-table1", replicate=rp.ldp_coverage_replicate,
        grid={"mu": [1.0, 2.0], "n": list(_LDP_NS)},
        constants=dict(p=3, c=1.345, alphas=(0.05,), methods=("plugin", "batch_means", "rs")),
        reps=100, seed=20251204, reference=LDP_TABLE1_PAPER,
        title="ldp-sgd paper, Table 1: LDP-SGD intervals, Huber, p = 3",
        description="Coverage and average length of the PPI, PBM and PRS 95% intervals "
                    "under local DP, n = 40,000 to 200,000, mu in {1, 2}.",
        figures=(FigureSpec("coverage", plot_coverage, {
                     "x": "n", "col": "mu", "reference": LDP_TABLE1_PAPER}),
                 FigureSpec("length", plot_length, {
                     "x": "n", "col": "mu", "logy": True, "reference": LDP_TABLE1_PAPER})))


@register_study
def _ldp_fig3() -> Study:
    return Study(
        name="ldp-fig3", replicate=rp.ldp_coverage_replicate,
        grid={"mu": [1.0, 2.0], "n": [200_000]},
        constants=dict(p=5, c=1.345, alphas=tuple(np.round(np.arange(0.01, 0.101, 0.01), 2)),
                       methods=("plugin", "rs")),
        reps=100, seed=20251205,
        title="ldp-sgd paper, Figure 3: coverage against the nominal level (p = 5, "
              "n = 200,000)",
        description="PPI and PRS intervals at levels 1 - alpha0, alpha0 = 0.01, ..., 0.10.",
        figures=(FigureSpec("coverage", plot_coverage, {
            "x": "nominal", "col": "mu", "xlabel": "nominal level 1 - alpha0"}),))


# ---------------------------------------------------------------------------- dpgd paper
@register_study
def _dpgd_fig56() -> Study:
    dp = ["batch_means", "checkpoints", "runs"]
    return Study(
        name="dpgd-fig5-6", replicate=rp.dpgd_intervals_replicate, grid={"n": [10_000]},
        constants=dict(p=10, rho=0.015, clip_per_sqrt_p=5.0, lr=1 / 3, burn_in=20, m=10,
                       totals=(300, 500, 1000, 2000, 4000), alpha=0.05),
        reps=100, seed=20251206, requires=("dpgd",),
        title="dpgd paper, Figures 5 and 6: DP-GD interval constructions (p = 10, "
              "rho = 0.015)",
        description="Coverage and length of batch means, checkpoints and independent "
                    "runs against the total number of gradient iterations.",
        figures=(
            FigureSpec("fig5-coverage", plot_coverage, {
                "x": "total_iters", "logx": True, "errorbars": "coef-range",
                "where": {"target": "clipped minimizer", "method": dp},
                "xlabel": "total gradient iterations", "ylim": (0.5, 1.02),
                "ylabel": "coverage of the clipped minimizer"}),
            FigureSpec("fig6-length", plot_length, {
                "x": "total_iters", "logx": True, "errorbars": "coef-range",
                "where": {"target": "theta*"}, "xlabel": "total gradient iterations"}),
            FigureSpec("coverage-theta-star", plot_coverage, {
                "x": "total_iters", "logx": True, "where": {"target": "theta*",
                                                            "method": dp},
                "xlabel": "total gradient iterations",
                "ylabel": "coverage of theta* (not the target)"}),
        ))
