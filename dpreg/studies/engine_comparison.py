"""The engine comparison: at a user's n, p and budget, which valid interval is shortest?

Linear regression on the robustness study's natural-units design (covariates as an
economist writes them, inside honest but loose declared boxes;
:func:`dpreg.studies.robustness.natural_units_design`), homoskedastic (``"normal"``) or
heteroskedastic (``"hetero"``) errors, fitted at the package's defaults by every engine
that offers intervals: DP-SGD (plug-in and random scaling), DP-GD (batch means and
checkpoints), the sufficient-statistics engine ``ssp`` (analytic and parametric
bootstrap) when it is installed, and AdaSSP (its interval is for OLS on the sample, so it
is scored but never chosen). Every fit spends the same total budget.

Each interval is scored against the **population** coefficients, the question a user
asks; DP-GD's intervals are built for the minimizer of its clipped objective on the data,
so its rows are scored against that target too (``target = "clipped"``), which tells a
failure of the engine from a difference of estimand. The replication's fit time is kept
(``seconds``).

For the other families (Huber, the robust expectile at ``tau = 0.5``, logistic), DP-SGD
against DP-GD, the two engines that fit them both, on the same design
(:data:`FAMILY_GRIDS`): there the family is a factor of the cell, the truth is the
population coefficient of the family (the regression line for the symmetric errors of
Huber and expectile, the logistic index for ``logistic``) and DP-GD's rows are scored
against its clipped target as for the linear family. The linear cells carry no
``family`` factor, so that their cache keys are those of the linear-only study.

:func:`comparison_table` gives, per cell and interval, coverage (all fits and the fits
that did not warn), the share of fits that warned, mean length, fit time and the verdict
(covers within 3 Monte Carlo s.e., as in the robustness study);
:func:`shortest_valid` the shortest passing interval of each cell and its ratio to the
next best.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from dpreg.exceptions import ConvergenceWarning
from dpreg.studies.records import result_rows
from dpreg.studies.robustness import FAMILY_FITS, clipped_target, natural_units_design

__all__ = ["draw_engines", "comparison_replicate", "comparison_table", "shortest_valid",
           "choice_rows", "CHOOSABLE_TARGET", "NOT_POPULATION", "TIE", "MOSTLY_WARNED",
           "FAMILY_GRIDS", "OTHER_FAMILIES", "LINEAR_GRID", "ranges_grids",
           "HETEROSKEDASTICITY_ROBUST", "ROBUST_LABEL"]

#: Share of warned fits above which an interval is not a user's choice in its cell.
MOSTLY_WARNED = 0.5

#: The intervals a user choosing an engine compares: those for the population.
CHOOSABLE_TARGET = "population"

#: The families compared beyond the linear one: DP-SGD against DP-GD.
OTHER_FAMILIES = ("huber", "expectile", "logistic")

#: The grid of the other families (``family`` a factor; the linear grids have none).
#: Chosen from measured fit times: at n = 10,000, p = 3 a DP-GD fit takes 2-5 s (Huber
#: the slowest), 3-9 times a DP-SGD fit, and 3-7 s at p = 10, so p = 10 and
#: heteroskedastic errors are left out (and the recorded run gives DP-GD at n = 10,000
#: fewer replications). ``errors`` does not enter a logistic outcome.
FAMILY_GRIDS = (
    dict(family=list(OTHER_FAMILIES), n=[2000, 10_000], p=[3], budget=["mu=1", "mu=5"],
         errors=["normal"], engine=["dpsgd", "dpgd"]),
)


#: The linear cells (no ``family`` factor: their cache keys predate the other families).
LINEAR_GRID = dict(n=[500, 2000, 10_000, 100_000], p=[3, 10],
                   budget=["mu=0.5", "mu=1", "mu=2", "mu=5"], errors=["normal", "hetero"])
#: The linear cell of an (epsilon, delta) request.
EPSILON_GRID = dict(n=[2000], p=[3], budget=["eps=1,delta=1e-5"],
                    errors=["normal", "hetero"])


def ranges_grids(engines) -> list[dict]:
    """The linear cells fitted with ``ranges="auto"`` (the default) by ``engines``, those
    that learn ranges privately: a ``ranges`` factor of their own, so that the cells in
    the declared boxes keep their cache keys; SSP also with ``robust=True`` (its
    sandwich interval, which needs the released meat: a ``robust`` factor)."""
    engines = list(engines)
    if not engines:
        return []
    grids = [dict(grid, engine=engines, ranges=["auto"]) for grid in (LINEAR_GRID,
                                                                        EPSILON_GRID)]
    if "ssp" in engines:
        grids += [dict(grid, engine=["ssp"], ranges=["auto"], robust=[True])
                  for grid in (LINEAR_GRID, EPSILON_GRID)]
    return grids


def _with_family(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with rows of the linear cells (which have no ``family`` factor) labelled
    ``"linear"`` where a ``family`` column exists; unchanged otherwise."""
    if "family" in frame and frame["family"].isna().any():
        frame = frame.copy()
        frame["family"] = frame["family"].fillna("linear")
    return frame


def comparison_replicate(seed, *, n: int, p: int, budget: str, errors: str, engine: str,
                         alpha: float, family: str = "linear",
                         ranges: str = "declared", robust: bool = False) -> list[dict]:
    """One data set, one fit by ``engine`` at its defaults, rows for every interval.

    Parameters
    ----------
    seed : numpy.random.SeedSequence
    n, p : int
        Rows and coefficients (intercept included).
    budget : str
        ``"mu=<value>"`` or ``"eps=<e>,delta=<d>"``.
    errors : {"normal", "hetero"}
        Ignored by the logistic family (its outcome is a Bernoulli draw).
    engine : str
        A registered engine name.
    alpha : float
        Nominal miscoverage.
    family : {"linear", "huber", "expectile", "logistic"}
        Fitted by the family's front end (``dp_ols``, ``dp_huber``, ``dp_expectile`` at
        ``tau = 0.5``, ``dp_logit``) at its defaults. A keyword with a default, not a
        factor of the linear grids, so that their cells' cache keys stay those of the
        linear-only study.
    ranges : {"declared", "auto"}
        The fit's ``ranges=``; a keyword with a default for the same reason. The cells
        in the declared boxes were the recorded run before ``ranges="auto"`` became the
        default; :func:`ranges_grids` adds the same cells at the default.
    robust : bool
        SSP's ``robust=True`` (the meat is released; its ``"sandwich"`` interval is
        scored). :func:`comparison_table` labels its engine ``"ssp:robust"``
        (:data:`ROBUST_LABEL`).

    Returns
    -------
    list of dict
        :func:`dpreg.studies.result_rows` with the keys ``target`` (``"population"``,
        and ``"clipped"`` for DP-GD's own target), ``warned`` and ``seconds``.
    """
    data_seed, fit_seed = seed.spawn(2)
    rng = np.random.default_rng(data_seed)
    data, formula, bounds, truth = natural_units_design(n, p, rng, family=family,
                                                        errors=errors)
    options = dict(bounds=bounds, engine=engine, ranges=ranges,
                   **({"robust": True} if robust else {}),
                   random_state=int(fit_seed.generate_state(1)[0]))
    for part in budget.split(","):
        key, value = part.split("=")
        options[{"eps": "epsilon"}.get(key, key)] = float(value)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = FAMILY_FITS[family](formula, data, **options)
    seconds = time.perf_counter() - start
    warned = int(any(issubclass(w.category, ConvergenceWarning) for w in caught))
    rows = result_rows(res, truth, alpha=alpha, warned=warned, seconds=seconds,
                       target=CHOOSABLE_TARGET)
    if engine == "dpgd":
        from dpreg.frontend.model import DPRegression

        model = DPRegression.from_formula(formula, data, family=family, bounds=bounds)
        clipped = clipped_target(model, float(res.settings.value("clip")))
        rows += result_rows(res, clipped, alpha=alpha, warned=warned, seconds=seconds,
                            target="clipped")
    return rows


def _with_ranges(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the rows of cells without a ``ranges`` factor labelled
    ``"declared"`` where a ``ranges`` column exists, and the engine of rows fitted with
    ``robust=True`` labelled by :data:`ROBUST_LABEL` (the ``robust`` column dropped);
    unchanged otherwise."""
    if "ranges" in frame and frame["ranges"].isna().any():
        frame = frame.copy()
        frame["ranges"] = frame["ranges"].fillna("declared")
    if "robust" in frame:
        robust = frame["robust"].eq(True)
        frame = frame.drop(columns="robust")
        frame.loc[robust, "engine"] = frame.loc[robust, "engine"].map(
            lambda e: ROBUST_LABEL.get(e, e))
    return frame


def comparison_table(raw: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Per cell, engine, interval method and target: coverage, warnings, length, time.

    The replication is the unit (coefficients of one fit share its data): coverage is
    the share of a fit's coefficients covered, averaged over fits. An interval
    ``passes`` when the fits that did not warn cover ``1 - alpha`` within 3 Monte Carlo
    standard errors (or more) and at most :data:`MOSTLY_WARNED` of the fits warned. A pass
    by warnings alone (the robustness study's other way to pass) is not a valid interval
    for a user to choose, and neither is one the package warns about in most fits (its
    few unwarned fits cannot show that it covers).

    Parameters
    ----------
    raw : pandas.DataFrame
        :func:`dpreg.studies.run_replicates` of the ``engines`` study.
    alpha : float

    Returns
    -------
    pandas.DataFrame
        Columns: the cell's factors (``family`` first when ``raw`` has cells of another
        family than the linear one; the linear cells' rows are then labelled
        ``"linear"``), ``engine``, ``method``, ``target``, ``reps``,
        ``coverage``, ``coverage_unwarned``, ``mcse``, ``warned``, ``length`` (the
        geometric mean over coefficients of each one's mean length: the coefficients'
        scales cancel in a ratio of two intervals' lengths), ``seconds`` (mean fit time),
        ``passes``.
    """
    raw = _with_ranges(_with_family(raw)).copy()
    factors = [c for c in ("family", "ranges", "n", "p", "budget", "errors") if c in raw]
    raw["covered"] = (raw["lower"] <= raw["truth"]) & (raw["truth"] <= raw["upper"])
    raw["length"] = raw["upper"] - raw["lower"]
    rows = []
    for key, g in raw.groupby(factors + ["engine", "method", "target"], sort=False):
        per_rep = g.groupby("rep").agg(covered=("covered", "mean"), warned=("warned", "max"),
                                       seconds=("seconds", "first"))
        # coefficients in natural units differ in scale: the geometric mean over them of
        # each one's mean length, so that ratios between intervals are scale-free
        length = float(np.exp(np.mean(np.log(g.groupby("coef")["length"].mean()))))
        quiet = per_rep[per_rep["warned"] == 0]
        cov_quiet = float(quiet["covered"].mean()) if len(quiet) else float("nan")
        mcse = float(np.sqrt(alpha * (1 - alpha) / len(quiet))) if len(quiet) else float("nan")
        warned = float(per_rep["warned"].mean())
        passes = bool(len(quiet) and warned <= MOSTLY_WARNED
                      and cov_quiet >= 1 - alpha - 3 * mcse)
        rows.append(dict(zip(factors + ["engine", "method", "target"], key, strict=True),
                         reps=len(per_rep), coverage=float(per_rep["covered"].mean()),
                         coverage_unwarned=cov_quiet, mcse=mcse,
                         warned=warned,
                         length=length,
                         seconds=float(per_rep["seconds"].mean()), passes=passes))
    return pd.DataFrame(rows)


def shortest_valid(table: pd.DataFrame, *, exclude_engines=("adassp",)) -> pd.DataFrame:
    """The shortest interval for the population coefficients that passes, per cell.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`comparison_table`.
    exclude_engines : sequence of str
        Engines whose intervals are not for the population (AdaSSP's covers OLS on the
        sample), never chosen.

    Returns
    -------
    pandas.DataFrame
        One row per cell (its factors, ``family`` included when the table has it):
        ``engine``, ``method``, ``length`` and ``coverage_unwarned`` of
        the shortest passing interval, the runner-up's ``next_engine``,
        ``next_method`` and ``ratio`` (its length over the shortest's), and
        ``failing``, the intervals that did not pass (``engine/method``).
    """
    factors = [c for c in ("family", "ranges", "n", "p", "budget", "errors") if c in table]
    pool = table[(table["target"] == CHOOSABLE_TARGET)
                 & ~table["engine"].isin(list(exclude_engines))]
    rows = []
    for key, g in pool.groupby(factors, sort=False):
        ok = g[g["passes"]].sort_values("length")
        bad = g[~g["passes"]]
        row = dict(zip(factors, key, strict=True))
        row["failing"] = ", ".join(f"{e}/{m}" for e, m in zip(bad["engine"], bad["method"],
                                                                strict=True))
        if len(ok):
            best = ok.iloc[0]
            row.update(engine=best["engine"], method=best["method"], length=best["length"],
                       coverage_unwarned=best["coverage_unwarned"])
            if len(ok) > 1:
                nxt = ok.iloc[1]
                row.update(next_engine=nxt["engine"], next_method=nxt["method"],
                           ratio=nxt["length"] / best["length"])
        rows.append(row)
    return pd.DataFrame(rows)


#: Engines whose intervals are not built for the population coefficients: AdaSSP's
#: covers OLS on the sample, DP-GD's the minimizer of its clipped objective on the data
#: (they leave out the sampling variance; in the study DP-GD's batch means covered the
#: population 0.76-0.86 at n = 2,000, mu = 5, where privacy noise no longer dominates).
NOT_POPULATION = ("adassp", "dpgd")


#: The engine label of the rows fitted with ``robust=True``.
ROBUST_LABEL = {"ssp": "ssp:robust"}

#: The intervals the rule may choose: those valid without homoskedastic errors (the
#: sandwich forms), since whether a user's errors are homoskedastic is not public. SSP's
#: plug-in and bootstrap intervals rest on one common error variance: under strong
#: heteroskedasticity they cover 0.84, as OLS's non-robust interval does
#: (``python validation/heteroskedastic_intervals.py``); the study's ``"hetero"`` errors
#: are too mild to show it.
HETEROSKEDASTICITY_ROBUST = (("dpsgd", "plugin"), ("dpsgd", "rs"),
                             ("ssp:robust", "sandwich"))

#: Relative difference in length below which two intervals count as tied (the rule
#: then takes the faster engine: a 2% difference in length is worth less than a fit
#: 2-100 times faster).
TIE = 0.02


def choice_rows(table: pd.DataFrame, *, exclude_engines=NOT_POPULATION,
                ranges: str = "auto",
                candidates=HETEROSKEDASTICITY_ROBUST) -> list[dict]:
    """The rule of ``engine="auto"``: per ``(n, p, budget)`` of the linear family, the
    shortest interval that passes under **both** error laws (whether the errors are
    heteroskedastic is not public), its length being the longer of the two.

    Rows of other families (a ``family`` column other than ``"linear"``) are left out:
    the rule is for the linear family, and the other families keep DP-SGD, the one
    engine there whose intervals are built for the population (:data:`NOT_POPULATION`).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`comparison_table` with cells under ``errors`` ``"normal"`` and
        ``"hetero"``.
    exclude_engines : sequence of str
        Never chosen (:data:`NOT_POPULATION`).
    ranges : str
        Where ``table`` has a ``ranges`` column, only its cells fitted with this
        ``ranges=`` are read (the default's, ``"auto"``).
    candidates : sequence of (engine, method), optional
        The intervals that may be chosen (:data:`HETEROSKEDASTICITY_ROBUST`); ``None``:
        every interval of the table.

    Returns
    -------
    list of dict
        One per cell, ``{"n", "p", "budget", "engine", "method", "coverage", "reps",
        "next", "ratio"}`` (``engine`` and ``method`` empty where no interval passed).
        Intervals within :data:`TIE` of the shortest count as tied; among them the
        fastest engine (mean fit time) is chosen, and within an engine its default
        interval. ``coverage`` is the lower unwarned coverage of the two laws, ``next``
        the runner-up ``"engine/method"`` (the shortest of the others) or ``""``,
        ``ratio`` its length over the winner's (below 1 where the winner won a tie on
        time), or ``None``.
    """
    table = _with_family(table)
    if "family" in table:
        table = table[table["family"] == "linear"]
    if "ranges" in table:
        # the defaults' cells: ranges="auto" (the engines chosen from learn ranges)
        table = table[table["ranges"] == ranges]
    pool = table[(table["target"] == CHOOSABLE_TARGET)
                 & ~table["engine"].isin(list(exclude_engines))]
    if candidates is not None:
        allowed = set(map(tuple, candidates))
        pool = pool[[(e, m) in allowed for e, m in zip(pool["engine"], pool["method"],
                                                      strict=True)]]
    rows = []
    for (n, p, budget), g in pool.groupby(["n", "p", "budget"], sort=True):
        laws = set(g["errors"])
        cand = (g.groupby(["engine", "method"], sort=False)
                .agg(passes=("passes", "all"), laws=("errors", "nunique"),
                     length=("length", "max"), coverage=("coverage_unwarned", "min"),
                     reps=("reps", "min"), seconds=("seconds", "mean"))
                .reset_index())
        cand = cand[cand["passes"] & (cand["laws"] == len(laws))].sort_values("length")
        row = dict(n=int(n), p=int(p), budget=str(budget), engine="", method="",
                   coverage=None, reps=int(g["reps"].min()), next="", ratio=None)
        if len(cand):
            best = cand.iloc[0]
            # a near tie (within TIE) goes to the fastest engine, and within an engine to
            # its default interval (analytic, deterministic, cheaper than a bootstrap)
            tied = cand[cand["length"] <= (1 + TIE) * best["length"]].assign(
                other=lambda t: [m != _default_method(e)
                                 for e, m in zip(t["engine"], t["method"], strict=True)])
            best = tied.sort_values(["seconds", "other", "length"], kind="stable").iloc[0]
            rest = cand.drop(index=best.name)
            row.update(engine=str(best["engine"]), method=str(best["method"]),
                       coverage=round(float(best["coverage"]), 4), reps=int(best["reps"]))
            if len(rest):
                nxt = rest.iloc[0]
                row.update(next=f"{nxt['engine']}/{nxt['method']}",
                           ratio=round(float(nxt["length"] / best["length"]), 3))
        rows.append(row)
    return rows


def _default_method(engine: str) -> str | None:
    from dpreg.fits.registry import ENGINES

    return ENGINES[engine].cov_types[0] if engine in ENGINES else None


def draw_engines(summary: pd.DataFrame, path=None):
    """The robustness study's figure (:func:`dpreg.studies.robustness.draw_robustness`)
    for the intervals' population rows: coverage of the unwarned fits per cell, one panel
    per interval method, with each cell's share of warned fits (the linear cells labelled
    ``family=linear`` when other families are in the summary).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`dpreg.studies.summarize` of the ``engines`` study.
    path : str or Path, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from dpreg.studies.robustness import draw_robustness

    summary = _with_family(summary)
    rows = summary[summary["target"] == CHOOSABLE_TARGET] if "target" in summary else summary
    return draw_robustness(rows, path)
