r"""Performance measures of a Monte Carlo study, each with its Monte Carlo standard error.

Given per-replication rows (see :class:`dpreg.studies.Study`), :func:`summarize` gives
for every group (cell, method, level, grouping keys) and coefficient, and for the
average over coefficients:

- coverage: mean of :math:`1\{l \le \theta \le u\}`; MC s.e. :math:`s_c/\sqrt{R}`;
- length: mean of :math:`u - l`; MC s.e. :math:`s_{u-l}/\sqrt{R}`;
- bias: mean of :math:`e = \hat\theta - \theta`; MC s.e. :math:`s_e/\sqrt{R}`;
- mse: mean of :math:`e^2`; MC s.e. :math:`s_{e^2}/\sqrt{R}`;
- rmse: :math:`\sqrt{\mathrm{mse}}`; MC s.e. :math:`\mathrm{se(mse)}/(2\,\mathrm{rmse})`
  (delta method);
- rejection: mean of :math:`1\{p < \alpha\}` for the p-value of the true null
  :math:`H_0: \theta_j = \theta_j^*`; MC s.e. :math:`s_r/\sqrt{R}`.

``s`` is the sample standard deviation (``ddof=1``) over the ``R`` replications. For
one coefficient the indicators are Bernoulli and :math:`s_c/\sqrt R =
\sqrt{\bar c(1-\bar c)/(R-1)}`, the binomial standard error with ``R - 1`` (slightly
conservative). For the average over coefficients the per-replication averages are used,
so the correlation between coefficients of one fit is accounted for. These are the
formulas of Morris, White and Crowther (2019), "Using simulation studies to evaluate
statistical methods", Statistics in Medicine 38, Table 6.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from dpreg._checks import one_of
from dpreg.exceptions import OptionError

__all__ = ["summarize", "compare_with_reference", "relative_mse", "AVERAGE", "MEASURES",
           "nominal_band"]

#: The ``coef`` label of rows averaged over coefficients.
AVERAGE = "(average)"
#: Measures of :func:`summarize`, in column order (each followed by ``<name>_mcse``).
MEASURES = ("coverage", "length", "bias", "mse", "rmse", "rejection")
_VALUES = ("truth", "estimate", "lower", "upper", "pvalue")
#: Per-replication bookkeeping, never a grouping key: the runner's ``rep`` and
#: ``rep_seconds``, and ``seconds``, a fit time a replicate records itself.
_RUNNER = ("rep", "rep_seconds", "seconds")
_DERIVED = ("coverage", "length", "bias", "mse", "rejection")


def _derived(raw: pd.DataFrame) -> pd.DataFrame:
    """Per-row indicators and errors."""
    out = pd.DataFrame(index=raw.index)
    truth = raw["truth"].to_numpy(float)
    lower = raw["lower"].to_numpy(float) if "lower" in raw else np.full(len(raw), np.nan)
    upper = raw["upper"].to_numpy(float) if "upper" in raw else np.full(len(raw), np.nan)
    pval = raw["pvalue"].to_numpy(float) if "pvalue" in raw else np.full(len(raw), np.nan)
    alpha = raw["alpha"].to_numpy(float) if "alpha" in raw else np.full(len(raw), np.nan)
    has_ci = np.isfinite(lower) & np.isfinite(upper)
    with np.errstate(invalid="ignore"):
        out["coverage"] = np.where(has_ci, (lower <= truth) & (truth <= upper), np.nan)
        out["length"] = np.where(has_ci, upper - lower, np.nan)
        err = raw["estimate"].to_numpy(float) - truth
        out["bias"] = err
        out["mse"] = err ** 2
        out["rejection"] = np.where(np.isfinite(pval) & np.isfinite(alpha), pval < alpha,
                                    np.nan)
    return out


def _aggregate(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean and MC s.e. of the derived columns per group of ``keys``."""
    grouped = frame.groupby(keys, dropna=False, sort=False)
    mean = grouped[list(_DERIVED)].mean()
    sd = grouped[list(_DERIVED)].std(ddof=1)
    count = grouped[list(_DERIVED)].count()
    out = pd.DataFrame(index=mean.index)
    out["reps"] = grouped["bias"].count()
    for name in _DERIVED:
        out[name] = mean[name]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[f"{name}_mcse"] = sd[name] / np.sqrt(count[name])
    out["rmse"] = np.sqrt(out["mse"])
    with np.errstate(invalid="ignore", divide="ignore"):
        out["rmse_mcse"] = out["mse_mcse"] / (2 * out["rmse"])
    return out.reset_index()


def summarize(raw: pd.DataFrame, *, by: Sequence[str] | None = None,
              average: bool = True) -> pd.DataFrame:
    """Coverage, length, bias, (R)MSE and rejection rates with Monte Carlo errors.

    Parameters
    ----------
    raw : pandas.DataFrame
        Per-replication rows with at least ``coef``, ``truth``, ``estimate`` and ``rep``
        (as returned by :func:`dpreg.studies.run_replicates`).
    by : sequence of str, optional
        Grouping columns. Default: every column except ``coef``, the values
        (``truth``, ``estimate``, ``lower``, ``upper``, ``pvalue``) and the runner's
        ``rep``, ``rep_seconds``: that is, the cell's factors, ``method``, ``alpha``
        and any grouping keys of the replicate's rows.
    average : bool
        Also give rows with ``coef = "(average)"``: measures averaged over the
        coefficients of each replication first (so their MC s.e. accounts for the
        correlation between coefficients of one fit).

    Returns
    -------
    pandas.DataFrame
        One row per group and coefficient: the groups, ``coef``, ``reps``, ``nominal``
        (``1 - alpha``), and for each of ``coverage``, ``length``, ``bias``, ``mse``,
        ``rmse``, ``rejection`` the estimate and ``<measure>_mcse``. Measures a method
        does not have (no interval, no p-value) are NaN.

    Examples
    --------
    >>> import pandas as pd
    >>> raw = pd.DataFrame({"method": "m", "coef": "x1", "rep": [0, 1, 2, 3],
    ...                     "truth": 1.0, "estimate": [0.9, 1.1, 1.2, 1.0],
    ...                     "lower": [0.8, 1.05, 0.9, 0.5], "upper": [1.2, 1.3, 1.5, 1.5],
    ...                     "alpha": 0.05})
    >>> s = summarize(raw, average=False)
    >>> float(s["coverage"].iloc[0]), round(float(s["coverage_mcse"].iloc[0]), 4)
    (0.75, 0.25)
    """
    if not isinstance(raw, pd.DataFrame):
        raise OptionError(f"raw must be a DataFrame of replication rows, got {type(raw)}")
    missing = [c for c in ("coef", "truth", "estimate", "rep") if c not in raw]
    if missing:
        raise OptionError(f"raw lacks the column(s) {missing}")
    if by is None:
        by = [c for c in raw.columns if c not in (*_VALUES, *_RUNNER, "coef")]
    else:
        by = list(by)
        unknown = [c for c in by if c not in raw]
        if unknown:
            raise OptionError(f"by names columns not in raw: {unknown}")
    derived = _derived(raw)
    frame = pd.concat([raw[by + ["coef", "rep"]], derived], axis=1)
    per_coef = _aggregate(frame, by + ["coef"])
    parts = [per_coef]
    if average:
        per_rep = frame.groupby(by + ["rep"], dropna=False, sort=False)[list(_DERIVED)].mean()
        avg = _aggregate(per_rep.reset_index(), by)
        avg.insert(len(by), "coef", AVERAGE)
        parts.append(avg)
    out = pd.concat(parts, ignore_index=True)
    if "alpha" in out:
        out.insert(out.columns.get_loc("reps") + 1, "nominal", 1 - out["alpha"])
    cols = by + ["coef", "reps"] + (["nominal"] if "nominal" in out else [])
    cols += [c for m in MEASURES for c in (m, f"{m}_mcse")]
    return out[cols]


def nominal_band(nominal, reps, z: float = 1.959963984540054):
    """``nominal -/+ z sqrt(nominal (1 - nominal) / reps)``: where a calibrated coverage
    estimate from ``reps`` replications falls with probability about 95%.

    Parameters
    ----------
    nominal : float or array-like
        Nominal coverage ``1 - alpha``.
    reps : int or array-like
        Replications behind each coverage estimate.
    z : float
        Normal quantile (1.96 for a 95% band).

    Returns
    -------
    (lower, upper) : tuple of ndarray

    Notes
    -----
    This is the band of one coefficient's coverage (a binomial proportion). An average
    over ``p`` coefficients of one fit varies less (by Cauchy-Schwarz its variance is at
    most the single-coefficient one), so the band is conservative for averages.
    """
    nominal = np.asarray(nominal, dtype=float)
    reps = np.asarray(reps, dtype=float)
    half = z * np.sqrt(nominal * (1 - nominal) / reps)
    return nominal - half, nominal + half


def compare_with_reference(summary: pd.DataFrame, reference: pd.DataFrame, *,
                           on: Sequence[str], metric: str = "coverage",
                           reference_reps: int | None = None) -> pd.DataFrame:
    """Our estimates beside published ones, with the difference in Monte Carlo errors.

    Parameters
    ----------
    summary : pandas.DataFrame
        From :func:`summarize`.
    reference : pandas.DataFrame
        Published numbers: the columns ``on`` and ``metric`` (same scale as ours), and
        optionally ``<metric>_mcse``.
    on : sequence of str
        Columns identifying a row in both tables (e.g. ``["mu", "n", "method", "coef"]``).
    metric : str
        One of the measures of :func:`summarize`.
    reference_reps : int, optional
        Replications behind the published numbers. For ``coverage`` and ``rejection``
        without a published s.e., the binomial s.e. ``sqrt(c (1 - c) / reference_reps)``
        is used (conservative for averages over coefficients, see
        :func:`nominal_band`); otherwise the published numbers count as exact.

    Returns
    -------
    pandas.DataFrame
        ``on``, ``ours``, ``ours_mcse``, ``reference``, ``reference_se``, ``difference``,
        ``z`` (difference over the combined MC error) and ``within_mc_error``
        (``|z| <= 2``).
    """
    one_of("metric", metric, MEASURES)
    on = list(on)
    ours = summary[on + [metric, f"{metric}_mcse"]].rename(
        columns={metric: "ours", f"{metric}_mcse": "ours_mcse"})
    ref_cols = on + [metric] + ([f"{metric}_mcse"] if f"{metric}_mcse" in reference else [])
    ref = reference[ref_cols].rename(columns={metric: "reference",
                                              f"{metric}_mcse": "reference_se"})
    if "reference_se" not in ref:
        if reference_reps is not None and metric in ("coverage", "rejection"):
            c = ref["reference"].to_numpy(float)
            ref["reference_se"] = np.sqrt(c * (1 - c) / reference_reps)
        else:
            ref["reference_se"] = 0.0
    out = ours.merge(ref, on=on, how="inner")
    out["difference"] = out["ours"] - out["reference"]
    combined = np.sqrt(out["ours_mcse"] ** 2 + out["reference_se"] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["z"] = out["difference"] / combined
    out["within_mc_error"] = out["z"].abs() <= 2
    return out


def relative_mse(raw: pd.DataFrame, baseline: str) -> pd.DataFrame:
    r"""MSE of every method relative to a baseline fitted on the same data (paired).

    Parameters
    ----------
    raw : pandas.DataFrame
        Replication rows (from :func:`dpreg.studies.run_replicates`) in which every
        replication also holds rows of ``method == baseline`` (e.g. OLS on the same
        data set).
    baseline : str
        The method in the denominator.

    Returns
    -------
    pandas.DataFrame
        One row per group (as in :func:`summarize`, averaged over coefficients):
        ``reps``, ``relative_mse`` :math:`r = \bar x / \bar b` (``x``, ``b`` the
        per-replication mean squared errors of the method and the baseline) and
        ``relative_mse_mcse``, the delta-method standard error
        :math:`\mathrm{sd}(x - r b) / (\sqrt{R}\, \bar b)`, which uses the pairing (it
        is much smaller than the errors of the two MSEs separately).

    Notes
    -----
    The baseline is matched to the other rows on ``rep`` and on the columns that the
    baseline's rows fill (the cell's factors), so a baseline that does not depend on a
    grouping key (OLS against the number of steps) serves every value of it.
    """
    if "method" not in raw or not (raw["method"] == baseline).any():
        raise OptionError(f"no rows of the baseline method {baseline!r}")
    by = [c for c in raw.columns if c not in (*_VALUES, *_RUNNER, "coef", "alpha")]
    sq = raw.assign(_sq=(raw["estimate"] - raw["truth"]) ** 2)
    per_rep = sq.groupby(by + ["rep"], dropna=False, sort=False)["_sq"].mean().reset_index()
    base = per_rep[per_rep["method"] == baseline]
    on = [c for c in by if c != "method" and base[c].notna().all()] + ["rep"]
    base = base[on + ["_sq"]].rename(columns={"_sq": "_base"})
    merged = per_rep.merge(base, on=on, how="inner")
    rows = []
    for key, g in merged.groupby(by, dropna=False, sort=False):
        x, b = g["_sq"].to_numpy(), g["_base"].to_numpy()
        ratio = x.mean() / b.mean()
        se = np.std(x - ratio * b, ddof=1) / (np.sqrt(len(x)) * b.mean()) if len(x) > 1 \
            else np.nan
        keys = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, keys, strict=True)),
                     "reps": len(x), "relative_mse": ratio, "relative_mse_mcse": se})
    return pd.DataFrame(rows)
