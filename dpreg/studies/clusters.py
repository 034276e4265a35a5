r"""The clusters study: linear regression on clustered data, clusters the privacy unit.

The question (docs page ``studies/clusters_iv``): do cluster-robust intervals cover 0.95
within 3 Monte Carlo standard errors, or warn, at 30 to 500 clusters of unequal sizes?
Each replication simulates one data set of ``G`` clusters (:func:`simulate_clusters`):

* **sizes** ``m_g`` drawn independently, once per data set, from the discrete law
  :math:`P(m) \propto 1/m` on ``m = 2, ..., K`` with ``K = max_group_size = 40`` (public):
  skewed to small clusters, mean :math:`(K - 1) / (H_K - 1) = 11.9` rows (``H_K`` the
  harmonic number), median 8, 9.7% of clusters with at least 30 rows (:func:`size_law`);
  no cluster exceeds ``K``, so no row is truncated and statsmodels' fit on the same rows
  is the non-private limit;
* a continuous regressor with a random intercept, ``x1 = sqrt(rho) a_g + sqrt(1 - rho)
  e_i`` with standard normals ``a_g``, ``e_i`` and intra-cluster correlation ``rho =
  0.3``, clipped to its declared bounds ``[-4, 4]`` (about 6 rows in 100,000);
* a cluster-level binary regressor ``x2`` (a treated cluster, probability 1/2);
* errors with a random intercept and the same intra-cluster correlation, ``u = sqrt(rho)
  b_g + sqrt(1 - rho) f_i``, clipped to ``[-4.5, 4.5]`` (about 7 rows in a million; the
  clip is symmetric and the errors independent of the regressors, so ``E[u | x] = 0``
  still holds and the truth is unchanged);
* ``y = 1 + 0.5 x1 + 0.5 x2 + u``, inside its declared bounds ``[-5.5, 8]`` by
  construction.

The declared bounds (:data:`BOUNDS`) are true bounds of this law. Each replication fits
the data privately, with clusters as the privacy unit (``groups=``, ``max_group_size =
K``), by each engine of :data:`ENGINES` with the options of :data:`ENGINE_FITS`, and
without privacy by statsmodels' OLS with ``cov_type="cluster"`` (CR1 and a ``t(G - 1)``
reference law, ``use_t=True``: the same finite-sample form as the private cluster
interval). It records, for each slope and each private interval the engine reports, the
interval and the key ``warned`` (1 when the private fit raised a
:class:`~dpreg.exceptions.ConvergenceWarning`, as the ``textbook`` study decides), with
the checks that fired (``checks``) and the names of any other warning categories
(``other_warnings``), and the non-private interval as ``method = "nonprivate"``.

:func:`clusters_table` gives per cell, interval and slope the share unwarned, the
coverage of the unwarned fits with its MC s.e., the overall coverage, the length over the
non-private cluster interval, whether the interval contains the non-private estimate, and
the verdict (:func:`dpreg.studies.unwarned.passes`).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from dpreg.exceptions import ConvergenceWarning
from dpreg.studies.records import result_rows
from dpreg.studies.unwarned import NONPRIVATE, draw_unwarned, unwarned_table
from dpreg.studies.warning_rates import fired_checks

__all__ = ["ENGINES", "ENGINE_FITS", "EngineFit", "BOUNDS", "TRUTH", "FORMULA",
           "MAX_GROUP_SIZE", "ICC", "size_law", "simulate_clusters", "clusters_replicate",
           "clusters_table", "draw_clusters", "FACTORS"]


class EngineFit(NamedTuple):
    """How one engine fits the study's model: its keyword arguments and its intervals.

    Attributes
    ----------
    options : dict
        Keyword arguments of :func:`dpreg.dp_ols` besides the data, bounds, budget,
        ``groups=``, ``max_group_size=`` and ``random_state`` (set by the replicate).
    intervals : tuple of str
        The fit's inference methods recorded (keys of ``res.inferences``).
    """

    options: dict
    intervals: tuple[str, ...]


#: The engines of the study (a factor of its cells).
ENGINES = ("ssp", "dpsgd")

#: engine -> its fit. Changing an entry changes the meaning of the recorded replications:
#: bump the study's ``revision`` (the cache is keyed on it). SSP: the cluster-robust
#: sandwich (released cluster meat, CR1, ``t(G - 1)``) and the parametric bootstrap,
#: whose sampling noise is drawn from the cluster meat. DP-SGD: its plug-in and
#: random scaling.
ENGINE_FITS = {
    "ssp": EngineFit(dict(engine="ssp", robust=True, cov_type="cluster"),
                     ("cluster", "pboot")),
    # DP-SGD samples whole clusters; its plug-in is the cluster-robust sandwich (CR1,
    # t(G - 1)) and its random scaling needs nothing new
    "dpsgd": EngineFit(dict(engine="dpsgd"), ("plugin", "rs")),
}

FORMULA = "y ~ x1 + x2"
#: Public bounds: true bounds of the simulated law (x1 and the errors are clipped).
BOUNDS = {"y": (-5.5, 8.0), "x1": (-4.0, 4.0), "x2": (0.0, 1.0)}
#: The coefficients the data are simulated from.
TRUTH = {"Intercept": 1.0, "x1": 0.5, "x2": 0.5}
#: The public bound on a cluster's rows, and the largest simulated size.
MAX_GROUP_SIZE = 40
#: Intra-cluster correlation of x1 and of the errors.
ICC = 0.3
#: Clip of the errors (their bound; x1 is clipped to its declared bounds).
ERROR_CLIP = 4.5
#: The columns that name a cell of the study.
FACTORS = ("engine", "G", "mu")


def size_law(max_size: int = MAX_GROUP_SIZE) -> tuple[np.ndarray, np.ndarray]:
    r"""The law of a cluster's size: :math:`P(m) \propto 1/m` on ``m = 2, ..., max_size``.

    Parameters
    ----------
    max_size : int
        The largest size (the public ``max_group_size``).

    Returns
    -------
    (sizes, probabilities) : tuple of ndarray

    Examples
    --------
    >>> m, p = size_law(40)
    >>> int(m[0]), int(m[-1]), round(float(p @ m), 2)
    (2, 40, 11.9)
    """
    sizes = np.arange(2, max_size + 1)
    weights = 1.0 / sizes
    return sizes, weights / weights.sum()


def simulate_clusters(G: int, rng: np.random.Generator, *,
                      max_size: int = MAX_GROUP_SIZE, icc: float = ICC) -> pd.DataFrame:
    """One data set of ``G`` clusters of unequal sizes (the law of the module docstring).

    Parameters
    ----------
    G : int
        Number of clusters.
    rng : numpy.random.Generator
    max_size : int
        Largest cluster size (sizes follow :func:`size_law`).
    icc : float
        Intra-cluster correlation of ``x1`` and of the errors.

    Returns
    -------
    pandas.DataFrame
        Columns ``y``, ``x1``, ``x2`` and ``cluster`` (integer labels ``0 .. G - 1``;
        a cluster's rows are consecutive).
    """
    sizes, probs = size_law(max_size)
    m = rng.choice(sizes, size=G, p=probs)
    g = np.repeat(np.arange(G), m)
    n = g.size
    a, b = np.sqrt(icc), np.sqrt(1.0 - icc)
    x1 = np.clip(a * rng.standard_normal(G)[g] + b * rng.standard_normal(n),
                 *BOUNDS["x1"])
    x2 = (rng.random(G) < 0.5).astype(float)[g]
    u = np.clip(a * rng.standard_normal(G)[g] + b * rng.standard_normal(n),
                -ERROR_CLIP, ERROR_CLIP)
    y = TRUTH["Intercept"] + TRUTH["x1"] * x1 + TRUTH["x2"] * x2 + u
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "cluster": g})


def _nonprivate(data: pd.DataFrame):
    """statsmodels' OLS with the CR1 cluster covariance and ``t(G - 1)`` intervals."""
    import statsmodels.formula.api as smf

    return smf.ols(FORMULA, data).fit(cov_type="cluster",
                                      cov_kwds={"groups": data["cluster"]}, use_t=True)


def clusters_replicate(seed, *, engine: str, G: int, mu: float, max_group_size: int,
                       icc: float, alpha: float) -> list[dict]:
    """One data set of ``G`` clusters, one private fit by ``engine``, statsmodels' fit.

    Parameters
    ----------
    seed : numpy.random.SeedSequence
    engine : str
        A key of :data:`ENGINE_FITS`.
    G : int
        Number of clusters.
    mu : float
        Budget in Gaussian DP (clusters are the privacy unit).
    max_group_size : int
        The public bound ``K`` on a cluster's rows (the largest simulated size).
    icc : float
        Intra-cluster correlation of ``x1`` and of the errors.
    alpha : float
        Nominal miscoverage.

    Returns
    -------
    list of dict
        For each slope: a row per interval of ``ENGINE_FITS[engine].intervals`` and the
        non-private row (``method = "nonprivate"``), with the keys ``warned``,
        ``checks`` and ``other_warnings``.
    """
    import dpreg

    fit = ENGINE_FITS[engine]
    data_seed, fit_seed = seed.spawn(2)
    data = simulate_clusters(G, np.random.default_rng(data_seed), max_size=max_group_size,
                             icc=icc)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dpreg.dp_ols(FORMULA, data, bounds=BOUNDS, mu=mu, groups="cluster",
                           max_group_size=max_group_size,
                           random_state=np.random.default_rng(fit_seed), **fit.options)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    checks, _ = fired_checks(res, messages)
    other = sorted({w.category.__name__ for w in caught
                    if not issubclass(w.category, ConvergenceWarning)})
    keys = dict(warned=int(bool(messages)), checks="+".join(checks),
                other_warnings="+".join(other))
    truth = [TRUTH[name] for name in res.params.index]
    rows = result_rows(res, truth, methods=list(fit.intervals), alpha=alpha, **keys)
    ols = _nonprivate(data)
    names = list(res.params.index)
    ci = ols.conf_int(alpha).loc[names].to_numpy()
    tstat = (ols.params[names] - truth) / ols.bse[names]
    pval = 2 * stats.t.sf(np.abs(tstat), ols.df_resid_inference)
    rows += [dict(method=NONPRIVATE, coef=name, truth=TRUTH[name],
                  estimate=float(ols.params[name]), lower=float(lo), upper=float(hi),
                  pvalue=float(pv), alpha=alpha, **keys)
             for name, (lo, hi), pv in zip(names, ci, pval, strict=True)]
    return [row for row in rows if row["coef"] != "Intercept"]


def clusters_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per cell, interval and slope: the share unwarned, the unwarned fits' coverage with
    its MC s.e., the overall coverage, the length over the non-private cluster interval,
    and the verdict.

    Parameters
    ----------
    raw : pandas.DataFrame
        :func:`dpreg.studies.run_replicates` of the ``clusters`` study.

    Returns
    -------
    pandas.DataFrame
        :func:`dpreg.studies.unwarned.unwarned_table` with the factors ``engine``,
        ``G``, ``mu``: ``reps``, ``unwarned``, ``coverage_unwarned``, ``mcse``,
        ``coverage``, ``coverage_nonprivate``, ``length_ratio``,
        ``length_ratio_unwarned``, ``contains_np``, ``passes``.
    """
    return unwarned_table(raw, [f for f in FACTORS if f in raw])


def draw_clusters(summary: pd.DataFrame, path=None):
    """Coverage of the unwarned intervals per cell with the share warned
    (:func:`dpreg.studies.unwarned.draw_unwarned`).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`dpreg.studies.summarize` of the ``clusters`` study.
    path : str or Path, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    return draw_unwarned(summary, path, factors=FACTORS)
