r"""The iv study: private two-stage least squares at strong, moderate and weak instruments.

The question (docs page ``studies/clusters_iv``): do IV intervals cover at strong
instruments and warn at weak ones? The design (:func:`simulate_iv`, the one of
``validation/iv_coverage.py``): ``x, z1, z2, v, e, e2`` independent uniform on
``[-1, 1]``;

* first stage ``d = s (z1 + z2) + 0.3 v + 0.2 e``;
* structural error ``u = 0.5 v + 0.5 e2``, endogenous through ``v`` (correlation 0.59
  with the first-stage error ``0.3 v + 0.2 e``);
* ``y = 1 + 0.5 x + d + u``, fitted as ``y ~ 1 + x + [d ~ z1 + z2]`` (one endogenous
  regressor, two excluded instruments); the truth is ``(1, 0.5, 1)``.

The bounds (:func:`iv_bounds`) are the true bounds ``|d| <= 2 s + 0.5`` and ``y`` in
``[-1 - 2 s, 3 + 2 s]``, so clipping never changes the target. The instrument strength
is set by the expected first-stage F statistic: the first-stage error's variance is
``0.13 / 3`` and ``var(z_j) = 1 / 3``, so :math:`E[F] \approx 1 + n s^2 / 0.13` and
``s = sqrt(0.13 (F - 1) / n)`` (:func:`instrument_coefficient`) gives the same F at
every ``n``: ``"strong"`` F = 150, ``"moderate"`` F = 20 (near Stock and Yogo's critical
value for a 10% worst-case size with two instruments, 19.9), ``"weak"`` F = 4
(:data:`STRENGTHS`).

Each replication fits :func:`dpreg.dp_iv2sls` at its defaults (the plug-in interval,
and the parametric bootstrap's percentile and basic intervals, all recorded) and
linearmodels' ``IV2SLS(...).fit(cov_type="unadjusted", debiased=True)``, the plug-in's
non-private limit (``method = "nonprivate"``). Rows are for the endogenous regressor's
coefficient, with the keys ``warned`` (any :class:`~dpreg.exceptions.ConvergenceWarning`),
``weak`` (the weak-instrument warning fired), ``other`` (another ConvergenceWarning
fired: the floor of ``W'W`` or of the residual variance) and ``other_warnings`` (names
of any other warning categories); two more rows per replication record the private and
the non-private first-stage F (``method = "F private"``, ``"F nonprivate"``; ``truth``
the design's F, no interval).

:func:`iv_table` gives per cell and interval the share warned (and warned weak), the
coverage of the unwarned fits with its MC s.e., the overall coverage, the length over
linearmodels' interval, the median first-stage F, and the verdict
(:func:`dpreg.studies.unwarned.passes`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from dpreg.exceptions import ConvergenceWarning
from dpreg.studies.records import result_rows
from dpreg.studies.unwarned import NONPRIVATE, draw_unwarned, unwarned_table

__all__ = ["FORMULA", "TRUTH", "STRENGTHS", "FIRST_STAGE_VARIANCE", "simulate_iv",
           "iv_bounds", "instrument_coefficient", "iv_replicate", "iv_table", "draw_iv",
           "FACTORS", "F_PRIVATE", "F_NONPRIVATE"]

FORMULA = "y ~ 1 + x + [d ~ z1 + z2]"
#: The coefficients (Intercept, x, d) the data are simulated from.
TRUTH = np.array([1.0, 0.5, 1.0])
#: The design's expected first-stage F by instrument strength.
STRENGTHS = {"strong": 150.0, "moderate": 20.0, "weak": 4.0}
#: Variance of the first-stage error 0.3 v + 0.2 e (v, e uniform on [-1, 1]).
FIRST_STAGE_VARIANCE = 0.13 / 3
#: The columns that name a cell of the study.
FACTORS = ("strength", "n", "mu")
#: ``method`` labels of the rows recording the first-stage F.
F_PRIVATE, F_NONPRIVATE = "F private", "F nonprivate"
_WEAK = "IV-2SLS: weak instruments"


def simulate_iv(n: int, rng: np.random.Generator, strength: float = 0.5) -> pd.DataFrame:
    """One data set of the design (module docstring) with instrument coefficient
    ``strength`` (``s``).

    Parameters
    ----------
    n : int
        Rows.
    rng : numpy.random.Generator
    strength : float
        The coefficient ``s`` of each instrument in the first stage (0.5:
        ``validation/iv_coverage.py``'s strong design, F about ``1 + n / 0.52``).

    Returns
    -------
    pandas.DataFrame
        Columns ``y``, ``x``, ``d``, ``z1``, ``z2``.
    """
    x, z1, z2, v, e, e2 = rng.uniform(-1, 1, (6, n))
    d = strength * (z1 + z2) + 0.3 * v + 0.2 * e
    u = 0.5 * v + 0.5 * e2
    y = 1 + 0.5 * x + d + u
    return pd.DataFrame({"y": y, "x": x, "d": d, "z1": z1, "z2": z2})


def iv_bounds(strength: float = 0.5) -> dict[str, tuple[float, float]]:
    """The true bounds of the design with instrument coefficient ``strength``.

    Examples
    --------
    >>> iv_bounds(0.5)["d"], iv_bounds(0.5)["y"]
    ((-1.5, 1.5), (-2.0, 4.0))
    """
    s = abs(float(strength))
    return {"y": (-1.0 - 2 * s, 3.0 + 2 * s), "x": (-1.0, 1.0), "d": (-2 * s - 0.5, 2 * s + 0.5),
            "z1": (-1.0, 1.0), "z2": (-1.0, 1.0)}


def instrument_coefficient(first_stage_f: float, n: int) -> float:
    r"""The coefficient ``s`` that gives the expected first-stage F at ``n`` rows.

    :math:`s = \sqrt{3 \sigma^2_v (F - 1) / n}` with :math:`\sigma^2_v = 0.13 / 3` the
    first-stage error's variance (:data:`FIRST_STAGE_VARIANCE`).

    Examples
    --------
    >>> round(instrument_coefficient(150.0, 2000), 4)
    0.0984
    """
    return float(np.sqrt(3 * FIRST_STAGE_VARIANCE * (first_stage_f - 1.0) / n))


def _nonprivate(data: pd.DataFrame):
    """linearmodels' 2SLS, homoskedastic covariance with ``n - k`` (the plug-in's limit)."""
    from linearmodels.iv import IV2SLS

    return IV2SLS.from_formula(FORMULA, data).fit(cov_type="unadjusted", debiased=True)


def iv_replicate(seed, *, strength: str, n: int, mu: float, alpha: float) -> list[dict]:
    """One data set at the cell's instrument strength, one private 2SLS fit at the
    defaults, and linearmodels' non-private fit.

    Parameters
    ----------
    seed : numpy.random.SeedSequence
    strength : {"strong", "moderate", "weak"}
        A key of :data:`STRENGTHS`.
    n : int
        Rows.
    mu : float
        Budget in Gaussian DP.
    alpha : float
        Nominal miscoverage.

    Returns
    -------
    list of dict
        For the endogenous regressor ``d``: a row per interval of the private fit
        (``plugin``, ``pboot``, ``pboot_basic``), the non-private row, and the two rows
        of the first-stage F, with the keys ``warned``, ``weak``, ``other`` and
        ``other_warnings``.
    """
    import dpreg

    target_f = STRENGTHS[strength]
    s = instrument_coefficient(target_f, n)
    data_seed, fit_seed = seed.spawn(2)
    data = simulate_iv(n, np.random.default_rng(data_seed), s)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dpreg.dp_iv2sls(FORMULA, data, mu=mu, bounds=iv_bounds(s),
                              random_state=np.random.default_rng(fit_seed))
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    weak = any(m.startswith(_WEAK) for m in messages)
    keys = dict(warned=int(bool(messages)), weak=int(weak),
                other=int(any(not m.startswith(_WEAK) for m in messages)),
                other_warnings="+".join(sorted({
                    w.category.__name__ for w in caught
                    if not issubclass(w.category, ConvergenceWarning)})))
    rows = [row for row in result_rows(res, TRUTH, alpha=alpha, **keys) if row["coef"] == "d"]
    ols = _nonprivate(data)
    ci = ols.conf_int(level=1 - alpha).loc["d"]
    tstat = (ols.params["d"] - TRUTH[2]) / ols.std_errors["d"]
    rows.append(dict(method=NONPRIVATE, coef="d", truth=float(TRUTH[2]),
                     estimate=float(ols.params["d"]), lower=float(ci["lower"]),
                     upper=float(ci["upper"]),
                     pvalue=float(2 * stats.t.sf(abs(tstat), ols.df_resid)), alpha=alpha,
                     **keys))
    f_nonprivate = float(ols.first_stage.diagnostics.loc["d", "f.stat"])
    rows += [dict(method=F_PRIVATE, coef="d", truth=target_f,
                  estimate=float(res.first_stage["d"]), **keys),
             dict(method=F_NONPRIVATE, coef="d", truth=target_f, estimate=f_nonprivate,
                  **keys)]
    return rows


def iv_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per cell and interval: the share warned, the unwarned fits' coverage of the
    endogenous regressor's coefficient with its MC s.e., the overall coverage, the
    length over linearmodels' interval, the first-stage F, and the verdict.

    Parameters
    ----------
    raw : pandas.DataFrame
        :func:`dpreg.studies.run_replicates` of the ``iv`` study.

    Returns
    -------
    pandas.DataFrame
        :func:`dpreg.studies.unwarned.unwarned_table` with the factors ``strength``,
        ``n``, ``mu`` (``coef`` dropped: always ``d``), with ``warned`` (share of fits
        that warned) and ``weak`` (share in which the weak-instrument warning fired)
        after ``reps``, and ``F`` (the design's expected first-stage F), ``F_nonprivate``
        and ``F_private`` (medians over the replications) at the end.
    """
    factors = [f for f in FACTORS if f in raw]
    table = unwarned_table(raw, factors).drop(columns="coef")
    per_rep = raw[raw["method"] == F_PRIVATE]
    shares = per_rep.groupby(factors, sort=False).agg(warned=("warned", "mean"),
                                                      weak=("weak", "mean")).reset_index()
    f_rows = raw[raw["method"].isin([F_PRIVATE, F_NONPRIVATE])]
    medians = f_rows.pivot_table(index=factors, columns="method", values="estimate",
                                 aggfunc="median").reset_index()
    medians = medians.rename(columns={F_PRIVATE: "F_private", F_NONPRIVATE: "F_nonprivate"})
    medians.columns.name = None
    table = table.merge(shares, on=factors, how="left").merge(medians, on=factors, how="left")
    table["F"] = table["strength"].map(STRENGTHS) if "strength" in table else np.nan
    first = factors + ["method", "reps", "warned", "weak"]
    last = ["F", "F_nonprivate", "F_private"]
    return table[first + [c for c in table.columns if c not in first + last] + last]


def draw_iv(summary: pd.DataFrame, path=None):
    """Coverage of the unwarned intervals per cell with the share warned
    (:func:`dpreg.studies.unwarned.draw_unwarned`).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`dpreg.studies.summarize` of the ``iv`` study.
    path : str or Path, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    return draw_unwarned(summary, path, factors=FACTORS, coef="d")
