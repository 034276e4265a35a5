"""The textbook study: the regressions applied researchers run, with codebook bounds.

Each design simulates a data set shaped like a textbook example, in natural units, with
the bounds an analyst can write from a codebook without looking at the data (2 to 10
times the data's range, up to 100 times for a square):

=================  ===========================================================================
design             model
=================  ===========================================================================
``wage``           log wage on schooling, experience and its square, a dummy (OLS)
``fertility``      children ever born on age and its square, schooling and a 7-level year
                   factor; Poisson counts with a linear mean (OLS, heteroskedastic)
``participation``  labour-force participation (about 30% ones) on age and its square,
                   schooling, young children and other income in $1,000 (logit)
``approval``       the same index shifted to about 10% ones (logit)
``rare_approval``  shifted further, to about 3% ones (logit; not in the study's grid: the
                   validation of the long plug-in's note, ``validation/plugin_long_note.py``)
``participation_years``
                   the participation logit with a 7-level year factor (p = 12; not in the
                   study's grid: the Newton rule's width, ``validation/newton_logit.py``)
``wage_t3``        the wage equation with Student-t(3) errors, fitted by Huber regression
                   and by the 0.5-expectile (both target the linear coefficients: the
                   errors are symmetric)
=================  ===========================================================================

Each replication fits the design privately at the package's defaults except the cell's
engine, budget and range option (``"declared"``: the codebook boxes; ``"private"``: the
ranges learned privately, :mod:`dpreg.privacy.ranges`), and fits the same model without
privacy (:meth:`dpreg.DPRegression.fit_oracle`). It records every interval the private
fit offers, the default one again as ``method="default"``, and the non-private interval
as ``method="nonprivate"``, with the grouping key ``warned`` (1 when the private fit
raised a :class:`~dpreg.exceptions.ConvergenceWarning`).

:func:`textbook_table` gives, per cell and interval, the three numbers that judge an
interval together: the share of fits that do not warn, the coverage of the
unwarned fits' intervals, and their mean length relative to the non-private interval;
:func:`dpreg.studies.warning_rates.warning_characteristics` gives each cell's warning rate
where the interval covers (false alarms) and where it does not (power).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dpreg.exceptions import ConvergenceWarning
from dpreg.families import get_family
from dpreg.studies.warning_rates import CELL_FACTORS, fit_rows

__all__ = ["DESIGNS", "simulate_design", "DesignFit", "fit_design", "textbook_replicate",
           "textbook_table"]

#: The codebook: bounds an analyst writes without looking at the data.
CODEBOOK = {"lw": (-3.0, 6.0), "educ": (0.0, 25.0), "exper": (0.0, 60.0),
            "female": (0.0, 1.0), "age": (16.0, 100.0), "kids": (0.0, 20.0),
            "kidslt6": (0.0, 10.0), "nwifeinc": (0.0, 200.0)}
YEARS = (72, 74, 76, 78, 80, 82, 84)


def _schooling(rng, n):
    return np.clip(rng.normal(13, 2.5, n), 6, 20)


def _wage(rng, n, errors):
    educ = _schooling(rng, n)
    exper = np.clip(rng.gamma(3, 6, n), 0, 45)
    female = (rng.random(n) < 0.45).astype(float)
    beta = {"Intercept": 1.0, "educ": 0.08, "exper": 0.04, "I(exper ** 2)": -0.0007,
            "female": -0.2}
    mean = (beta["Intercept"] + beta["educ"] * educ + beta["exper"] * exper
            + beta["I(exper ** 2)"] * exper ** 2 + beta["female"] * female)
    noise = 0.5 * rng.standard_normal(n) if errors == "normal" else \
        0.35 * stats.t(3).rvs(size=n, random_state=rng)
    data = pd.DataFrame({"lw": mean + noise, "educ": educ, "exper": exper,
                         "female": female})
    return data, "lw ~ educ + exper + I(exper ** 2) + female", beta, {}


def _fertility(rng, n):
    age = rng.uniform(18, 45, n)
    educ = _schooling(rng, n)
    year = rng.choice(YEARS, n)
    effects = dict(zip(YEARS, (0.0, -0.05, -0.1, -0.15, -0.2, -0.25, -0.3), strict=True))
    # E[kids] = 2.5 - 0.003 (age - 40)^2 - 0.04 (educ - 13) + year effect  (> 0.3)
    beta = {"Intercept": -2.3 + 0.52, "age": 0.24, "I(age ** 2)": -0.003, "educ": -0.04}
    beta |= {f"C(year)[T.{y}]": effects[y] for y in YEARS[1:]}
    mean = (beta["Intercept"] + beta["age"] * age + beta["I(age ** 2)"] * age ** 2
            + beta["educ"] * educ + np.vectorize(effects.get)(year))
    data = pd.DataFrame({"kids": rng.poisson(mean).astype(float), "age": age,
                         "educ": educ, "year": year})
    return (data, "kids ~ age + I(age ** 2) + educ + C(year)", beta,
            {"year": list(YEARS)})


def _participation(rng, n, intercept, years=False):
    age = rng.uniform(30, 60, n)
    educ = _schooling(rng, n)
    kidslt6 = np.minimum(rng.poisson(0.3, n), 4).astype(float)
    nwifeinc = np.clip(rng.lognormal(np.log(20), 0.6, n), 0, 150)
    beta = {"Intercept": intercept, "age": 0.15, "I(age ** 2)": -0.002, "educ": 0.2,
            "kidslt6": -0.9, "nwifeinc": -0.02}
    eta = (beta["Intercept"] + beta["age"] * age + beta["I(age ** 2)"] * age ** 2
           + beta["educ"] * educ + beta["kidslt6"] * kidslt6 + beta["nwifeinc"] * nwifeinc)
    formula, levels, extra = "inlf ~ age + I(age ** 2) + educ + kidslt6 + nwifeinc", {}, {}
    if years:  # drawn only here, so the designs without years keep their streams
        year = rng.choice(YEARS, n)
        effects = dict(zip(YEARS, (0.0, 0.1, 0.2, 0.3, 0.35, 0.4, 0.45), strict=True))
        beta |= {f"C(year)[T.{y}]": effects[y] for y in YEARS[1:]}
        eta = eta + np.vectorize(effects.get)(year)
        formula, levels, extra = formula + " + C(year)", {"year": list(YEARS)}, {"year": year}
    inlf = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    data = pd.DataFrame({"inlf": inlf, "age": age, "educ": educ, "kidslt6": kidslt6,
                         "nwifeinc": nwifeinc, **extra})
    return data, formula, beta, levels


#: design -> (family, simulate(rng, n) -> (data, formula, truth by name, levels)).
DESIGNS = {
    "wage": ("linear", lambda rng, n: _wage(rng, n, "normal")),
    "fertility": ("linear", _fertility),
    "participation": ("logistic", lambda rng, n: _participation(rng, n, -5.4)),
    "approval": ("logistic", lambda rng, n: _participation(rng, n, -6.9)),
    "rare_approval": ("logistic", lambda rng, n: _participation(rng, n, -8.0)),
    "participation_years": ("logistic",
                            lambda rng, n: _participation(rng, n, -5.6, years=True)),
    "wage_t3": ("huber", lambda rng, n: _wage(rng, n, "t3")),
}


def simulate_design(design: str, n: int, rng: np.random.Generator):
    """One data set of a textbook design: ``(data, formula, bounds, levels, truth)``.

    ``bounds`` are the codebook's for the formula's numeric columns and the outcome;
    ``truth`` is a dict of the coefficients by patsy name.
    """
    _, simulate = DESIGNS[design]
    data, formula, truth, levels = simulate(rng, n)
    bounds = {c: CODEBOOK[c] for c in data.columns if c in CODEBOOK}
    return data, formula, bounds, levels, truth


@dataclass(frozen=True)
class DesignFit:
    """One data set of a textbook design and its private fit (:func:`fit_design`).

    Attributes
    ----------
    res : DPRegressionResults
        The private fit.
    messages : list of str
        Its :class:`~dpreg.exceptions.ConvergenceWarning` texts (empty: unwarned).
    data : pandas.DataFrame
    formula : str
    bounds : dict
        The codebook's bounds.
    levels : dict
    truth : dict
        The true coefficients by patsy name.
    family : str
    """

    res: Any
    messages: list
    data: pd.DataFrame
    formula: str
    bounds: dict
    levels: dict
    truth: dict
    family: str


def fit_design(design: str, n: int, rng: np.random.Generator, *, family: str | None = None,
               **options) -> DesignFit:
    """Simulate one data set of ``design`` and fit it privately at the defaults but
    ``options``, recording its convergence warnings.

    Parameters
    ----------
    design : str
        A key of :data:`DESIGNS`.
    n : int
        Rows.
    rng : numpy.random.Generator
        The data's generator.
    family : str, optional
        The family to fit with (default: the design's own).
    **options
        Passed to the family's front end (``mu``, ``engine``, ``ranges``,
        ``random_state``, ...); the codebook's bounds and the design's levels are added.

    Returns
    -------
    DesignFit
    """
    from dpreg.studies.robustness import FAMILY_FITS

    family = family or DESIGNS[design][0]
    data, formula, bounds, levels, truth = simulate_design(design, n, rng)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = FAMILY_FITS[family](formula, data, bounds=bounds, levels=levels or None,
                                  **options)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    return DesignFit(res, messages, data, formula, bounds, levels, truth, family)


def textbook_replicate(seed, *, design: str, family: str, n: int, mu: float, engine: str,
                       ranges: str, alpha: float) -> list[dict]:
    """One data set of ``design``, one private fit at the defaults but for the cell's
    engine, ``mu`` and ``ranges``, and the same model fitted without privacy.

    ``family`` is the family the design is fitted with (``"huber"`` or ``"expectile"``
    for ``wage_t3``; otherwise the design's own). Rows: every interval of the private
    fit, its default interval again as ``"default"``, and the non-private interval as
    ``"nonprivate"``, all with the grouping key ``warned``.
    """
    from dpreg.frontend.model import DPRegression

    data_seed, fit_seed = seed.spawn(2)
    fit = fit_design(design, n, np.random.default_rng(data_seed), family=family, mu=mu,
                     engine=engine, ranges=ranges,
                     random_state=int(fit_seed.generate_state(1)[0]))
    res, messages, data, formula = fit.res, fit.messages, fit.data, fit.formula
    bounds, levels, truth = fit.bounds, fit.levels, fit.truth
    target = [truth[name] for name in res.params.index]
    oracle = DPRegression.from_formula(formula, data, family=family, bounds=bounds,
                                       levels=levels or None).fit_oracle()
    return fit_rows(res, target, messages, alpha=alpha, oracle=oracle)


def _pair_with_nonprivate(raw: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    """Private rows with the same replication's non-private estimate and length."""
    keys = factors + ["rep", "coef", "alpha"]
    ref = raw[raw["method"] == "nonprivate"][keys + ["estimate", "lower", "upper"]]
    ref = ref.assign(np_length=ref["upper"] - ref["lower"]).rename(
        columns={"estimate": "np_estimate"}).drop(columns=["lower", "upper"])
    private = raw[raw["method"] != "nonprivate"]
    return private.merge(ref, on=keys, how="left", validate="many_to_one")


def textbook_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per cell and interval: the share unwarned, coverage of the unwarned, relative
    length, and how often an unwarned interval misses the non-private estimate far.

    Parameters
    ----------
    raw : pandas.DataFrame
        :func:`dpreg.studies.run_replicates` of the ``textbook`` study.

    Returns
    -------
    pandas.DataFrame
        One row per cell and method: ``reps``; ``unwarned`` (share of fits without a
        warning); ``coverage`` (of the truth, all fits) and ``coverage_unwarned`` (the
        unwarned fits) with ``mcse`` (the MC s.e. of a 0.95 share over the unwarned
        replications; a replication is the unit, its coefficients share the data);
        ``length_ratio`` (mean over coefficients and unwarned fits of the interval's
        length over the non-private one; all fits where every fit warned) and
        ``length_ratio_max`` (the coefficient with the longest); ``contains_np`` (share
        of unwarned (coefficient, fit) pairs whose interval contains the non-private
        estimate) and ``far_miss`` (share whose interval misses it by more than 3 of its
        own half-lengths); ``meets`` (the issue's target: at least 70% unwarned, the
        unwarned covering within 3 MC s.e., and ``length_ratio`` at most 2 for the
        squared loss and 3 for the other families).
    """
    factors = [c for c in CELL_FACTORS if c in raw]
    rows = _pair_with_nonprivate(raw, factors)
    rows = rows.assign(
        covered=(rows["lower"] <= rows["truth"]) & (rows["truth"] <= rows["upper"]),
        ratio=(rows["upper"] - rows["lower"]) / rows["np_length"],
        contains_np=(rows["lower"] <= rows["np_estimate"])
        & (rows["np_estimate"] <= rows["upper"]),
        far_miss=np.maximum(rows["lower"] - rows["np_estimate"],
                            rows["np_estimate"] - rows["upper"])
        > 1.5 * (rows["upper"] - rows["lower"]))
    out = []
    for key, g in rows.groupby(factors + ["method"], sort=False):
        per_rep = g.groupby("rep").agg(covered=("covered", "mean"), warned=("warned", "max"))
        quiet_reps = per_rep.index[per_rep["warned"] == 0]
        quiet = g[g["rep"].isin(quiet_reps)]
        by_coef = (quiet if len(quiet) else g).groupby("coef")["ratio"].mean()
        mcse = np.sqrt(0.95 * 0.05 / len(quiet_reps)) if len(quiet_reps) else np.nan
        cov_quiet = per_rep.loc[quiet_reps, "covered"].mean() if len(quiet_reps) else np.nan
        cell = dict(zip(factors + ["method"], key, strict=True))
        unwarned = 1.0 - float(per_rep["warned"].mean())
        limit = 2.0 if get_family(cell["family"]).squared_loss else 3.0
        out.append(cell | dict(
            reps=len(per_rep), unwarned=unwarned,
            coverage=float(per_rep["covered"].mean()), coverage_unwarned=float(cov_quiet),
            mcse=float(mcse), length_ratio=float(by_coef.mean()),
            length_ratio_max=float(by_coef.max()),
            contains_np=float(quiet["contains_np"].mean()) if len(quiet) else np.nan,
            far_miss=float(quiet["far_miss"].mean()) if len(quiet) else np.nan,
            meets=bool(unwarned >= 0.7 and cov_quiet >= 0.95 - 3 * mcse
                       and by_coef.mean() <= limit)))
    return pd.DataFrame(out)
