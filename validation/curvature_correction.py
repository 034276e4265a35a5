"""The curvature correction of DP-SGD's logistic estimates, measured (issue 26: a check
replaced by a correction, its threshold set from its measured curve).

A noisy logistic path's averaged iterate is biased away from 0: its iterates spread
around their average and the score is curved, so the average solves the score equation
for about ``k`` times the estimate, ``k = sqrt(1 + pi s^2 / 8)`` with ``s^2`` the spread
of the linear index (:mod:`dpreg.inference.diagnostics`, module notes). DP-SGD's
estimate is the averaged iterate divided by ``k`` (post-processing of the released path
and the private second moment); a coefficient is flagged when that correction exceeds
``CURVATURE_CORRECTED_LIMIT`` = 1.5 plug-in standard errors (1 until 28 Nov; this
script's limit tables set it).

Per fit this script records, for every coefficient, the default interval as the fit
reports it (corrected) and the same interval moved back to the averaged iterate (the
estimate before the correction: the corrected estimate times ``k``). The cells are the
textbook study's two logits (``participation``, 30% ones; ``approval``, 10%) at the
default private ranges, and the robustness study's natural-units logit (n = 1,000 and
5,000, p = 3, heteroskedastic, the declared boxes), where the uncorrected check was
first measured, and the robustness study's natural-units logits at the default learned
ranges (``learned-p3``, ``learned-p10``: p = 3 and 10 at the budgets of its ``--ranges-cells``
grid), where the check was a false alarm (issue 26). Reported:

* per cell: coverage of the true coefficients before and after the correction, mean
  ``k``, and the share of fits flagged by the old check (bias over 0.5 s.e.,
  uncorrected) and by the new one (correction over the package's limit);
* over all cells, by the size of the fit's largest correction (in s.e.): the coverage
  before and after;
* by each coefficient's own correction, over the fits where no other check fired (the
  coefficients the limit alone decides): coverage with its MC s.e. (the fit as the
  unit), overall and by study (the textbook logits; the robustness study's), which sets
  the limit: the largest band edge below which every band of each study covers within
  one MC s.e. of 0.95 (pooled, one study's designs can hide the other's failures);
* the limit's curve: for each candidate limit, per cell the share of fits warned (by
  this check or another) and the unwarned fits' coverage, and the issue's targets
  (covering cells warned in at most 10% of fits; the others in at least 95%).

    python validation/curvature_correction.py --reps 200     # the recorded run (results/)
    python validation/curvature_correction.py --reps 200 --raw raw.csv   # and its rows
    python validation/curvature_correction.py --from-raw raw.csv         # tables again

The fits run at the check's limit ``--run-limit`` (default 3, the largest candidate), so
the curve's re-application of every smaller limit is exact (16 min on 2 cores).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from dpreg.inference.diagnostics import CURVATURE_CORRECTED_LIMIT

OUT = pathlib.Path(__file__).parent / "results" / "curvature_correction.txt"
#: (design, n, mu): textbook logits at the default ranges; "natural" is the robustness
#: study's natural-units logit in its declared boxes.
CELLS = [(d, n, mu) for d in ("participation", "approval")
         for n, mu in ((500, 10), (2000, 5), (2000, 10), (10000, 1), (10000, 5))] + [
    ("natural", 1000, 1), ("natural", 5000, 5)] + [
    # the robustness study's --ranges-cells logits (DP-SGD, learned ranges)
    (f"learned-p{p}", n, mu) for p in (3, 10) for n in (1000, 5000) for mu in (1, 5)]
BANDS = (0.0, 0.5, 1.0, 2.0, np.inf)
#: Bands of a coefficient's own correction (plug-in s.e.) for the limit's table.
OWN_BANDS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, np.inf)
#: Candidate limits of the limit's curve.
LIMITS = (1.0, 1.5, 2.0, 3.0)


def fit_cell(design: str, n: int, mu: float, seed: int):
    """One data set of a cell (:data:`CELLS`) and its logistic DP-SGD fit: ``(res,
    truth, messages)``, the truth by coefficient name and the fit's convergence
    warnings."""
    from dpreg.exceptions import ConvergenceWarning, SeedReuseWarning

    learned = design.startswith("learned")
    rng = np.random.default_rng([seed, n, mu, int(design[9:])] if learned else [seed, n])
    if design == "natural" or learned:
        import dpreg
        from dpreg.studies.robustness import natural_units_design

        data, formula, bounds, truth = natural_units_design(
            n, int(design[9:]) if learned else 3, rng, family="logistic", errors="hetero")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            warnings.simplefilter("ignore", SeedReuseWarning)  # seeds replicate a study
            res = dpreg.dp_logit(formula, data, mu=mu, bounds=bounds, engine="dpsgd",
                                 ranges="auto" if learned else "declared", random_state=seed)
        messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
        truth = dict(zip(res.params.index, np.asarray(truth, dtype=float), strict=True))
    else:
        from dpreg.studies.textbook import fit_design

        # DP-SGD's correction is studied: its engine, also where logistic regression's
        # default is now noisy Newton (n mu >= 25,000: the (10000, 5) cells)
        fit = fit_design(design, n, rng, mu=mu, engine="dpsgd", random_state=seed)
        res, truth, messages = fit.res, fit.truth, fit.messages
    return res, truth, messages


def replicate(design: str, n: int, mu: float, seed: int,
              run_limit: float | None = None) -> list[dict]:
    """One data set and fit; one row per coefficient. ``run_limit``: the check's limit
    for this fit (:data:`~dpreg.inference.diagnostics.CURVATURE_CORRECTED_LIMIT` when
    ``None``); the limit's curve re-applies every limit up to it exactly (a flag under a
    higher limit would keep the floor check's finding a warning at the learned ranges,
    :func:`~dpreg.inference.diagnostics.floor_as_note`)."""
    import dpreg.inference.diagnostics as diagnostics

    if run_limit is not None:  # read by with_curvature_bias at each fit (a worker's copy)
        diagnostics.CURVATURE_CORRECTED_LIMIT = run_limit

    res, truth, messages = fit_cell(design, n, mu, seed)
    # a warning from another check (the limit's curve re-applies this one's limit)
    other = any(not m.startswith("The curvature correction") for m in messages)
    report = res.convergence
    k = report.curvature_factor or 1.0
    params = res.params.to_numpy()
    raw = params * k  # the averaged iterate
    ci = np.asarray(res.conf_int())
    se = res.bse_by("plugin").to_numpy()
    rows = []
    for j, name in enumerate(res.params.index):
        t = truth[name]
        lo_raw, hi_raw = ci[j] + (raw[j] - params[j])
        rows.append(dict(design=design, n=n, mu=mu, seed=seed, coef=name, k=k,
                         correction=abs(raw[j] - params[j]) / se[j],
                         covers=bool(ci[j, 0] <= t <= ci[j, 1]),
                         covers_raw=bool(lo_raw <= t <= hi_raw),
                         flagged=name in report.curvature_biased, other=other,
                         truth=t, estimate=params[j], averaged=raw[j], se=se[j],
                         lower=ci[j, 0], upper=ci[j, 1]))
    return rows


def summarize(raw: pd.DataFrame) -> list[str]:
    """The two tables of the module docstring, as text lines."""
    fits = raw.groupby(["design", "n", "mu", "seed"], sort=False)
    per_fit = fits.agg(largest=("correction", "max"), k=("k", "first")).reset_index()
    per_fit["flagged"] = per_fit["largest"] > CURVATURE_CORRECTED_LIMIT  # the package's
    # the old check: bias of the uncorrected average over 0.5 s.e. (the correction
    # k theta_hat - theta_hat is the bias (1 - 1/k) theta_bar that the check estimated)
    per_fit["old_flag"] = per_fit["largest"] > 0.5
    cells = raw.groupby(["design", "n", "mu"], sort=False).agg(
        coverage_raw=("covers_raw", "mean"), coverage=("covers", "mean"))
    cells = cells.join(per_fit.groupby(["design", "n", "mu"], sort=False).agg(
        fits=("seed", "size"), k=("k", "mean"), flagged_old=("old_flag", "mean"),
        flagged_new=("flagged", "mean")))
    raw = raw.merge(per_fit[["design", "n", "mu", "seed", "largest"]],
                    on=["design", "n", "mu", "seed"])
    raw["band"] = pd.cut(raw["largest"], BANDS, right=False)
    bands = raw.groupby("band", observed=True).agg(
        coverage_raw=("covers_raw", "mean"), coverage=("covers", "mean"),
        coefficients=("covers", "size"))
    bands["fits"] = raw.drop_duplicates(["design", "n", "mu", "seed"]).groupby(
        "band", observed=True).size()
    mcse = np.sqrt(0.95 * 0.05 / per_fit.groupby(["design", "n", "mu"]).size().min())
    return (["Per cell: coverage of the true coefficients by the default interval before "
            "(raw) and after the correction, mean k, share of fits flagged by the old "
            "check (bias over 0.5 s.e., uncorrected) and the new (correction over "
            f"{CURVATURE_CORRECTED_LIMIT:g} s.e., the package's limit)",
            f"(binomial MC s.e. of a coefficient's coverage: {mcse:.3f})",
            cells.round(3).to_string(), "",
            "All cells, by the fit's largest correction (plug-in s.e.):",
            bands.round(3).to_string(), ""] + limit_tables(raw))


def _clustered_se(frame: pd.DataFrame) -> float:
    """MC s.e. of a coverage over (coefficient, fit) pairs with the fit as the unit."""
    per = frame.groupby(["design", "n", "mu", "seed"])["covers"].agg(["sum", "size"])
    m = per["sum"].sum() / per["size"].sum()
    k = len(per)
    if k < 2:
        return np.nan
    resid = per["sum"] - m * per["size"]
    return float(np.sqrt(k / (k - 1) * (resid ** 2).sum()) / per["size"].sum())


def limit_tables(raw: pd.DataFrame) -> list[str]:
    """The limit's two tables (module docstring), as text lines."""
    alone = raw[~raw["other"]].copy()
    alone["own_band"] = pd.cut(alone["correction"], OWN_BANDS, right=False)
    def band_table(frame, by):
        return frame.groupby(by, observed=True).apply(
            lambda g: pd.Series({"coefficients": len(g), "coverage": g["covers"].mean(),
                                 "mcse": _clustered_se(g)}), include_groups=False)

    own = band_table(alone, "own_band")
    # the same by study: a limit pooled over designs can hide one where it fails
    alone["study"] = np.where(alone["design"].isin(("participation", "approval")),
                              "textbook", "robustness")
    own_by_study = band_table(alone, ["study", "own_band"])
    keys = ["design", "n", "mu"]
    fits = raw.groupby(keys + ["seed"], sort=False).agg(
        largest=("correction", "max"), other=("other", "first"),
        covers=("covers", "sum"), pairs=("covers", "size")).reset_index()
    curve, targets = [], []
    for limit in LIMITS:
        fits["warned"] = fits["other"] | (fits["largest"] > limit)
        for cell, g in fits.groupby(keys, sort=False):
            ok = g[~g["warned"]]
            coverage = g["covers"].sum() / g["pairs"].sum()
            covering = coverage >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / len(g))
            curve.append(dict(zip(keys, cell, strict=True)) | dict(
                limit=limit, warned=g["warned"].mean(), coverage=coverage,
                coverage_unwarned=(ok["covers"].sum() / ok["pairs"].sum()
                                   if len(ok) else np.nan), covering=covering))
        c = pd.DataFrame([r for r in curve if r["limit"] == limit])
        targets.append(dict(limit=limit, covering_cells=int(c["covering"].sum()),
                            of_them_over_10pct_warned=int((c["covering"]
                                                           & (c["warned"] > 0.10)).sum()),
                            other_cells=int((~c["covering"]).sum()),
                            of_them_under_95pct_warned=int((~c["covering"]
                                                            & (c["warned"] < 0.95)).sum())))
    table = pd.DataFrame(curve).pivot_table(
        index=keys, columns="limit", values=["warned", "coverage_unwarned"], sort=False)
    return ["Coefficients by their own correction (plug-in s.e.), in fits where no other "
            "check fired (coverage with its MC s.e., the fit as the unit):",
            own.round(3).to_string(), "",
            "The same by study (the textbook logits; the robustness study's):",
            own_by_study.round(3).to_string(), "",
            "The limit's curve: per cell the share of fits warned (this check or another) "
            "and the unwarned fits' coverage, by limit:",
            table.round(3).to_string(), "",
            "Issue 26's targets by limit (a cell covers when its default interval covers "
            "within 3 MC s.e. over all fits):",
            pd.DataFrame(targets).to_string(index=False)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--raw", metavar="CSV",
                        help="also write one row per (fit, coefficient): the estimate, the "
                             "averaged iterate, the plug-in s.e., the default interval and "
                             "the truth")
    parser.add_argument("--from-raw", metavar="CSV",
                        help="print the tables from a file --raw wrote, without fitting")
    parser.add_argument("--run-limit", type=float, default=max(LIMITS),
                        help="the check's limit in the fits (the curve re-applies the "
                             "limits up to it exactly)")
    args = parser.parse_args(argv)
    if args.from_raw:
        print("\n".join(summarize(pd.read_csv(args.from_raw))))
        return
    start = time.time()
    rows = Parallel(n_jobs=args.jobs)(
        delayed(replicate)(d, n, mu, s, args.run_limit)
        for d, n, mu in CELLS for s in range(args.reps))
    raw = pd.DataFrame([r for rep in rows for r in rep])
    if args.raw:
        raw.to_csv(args.raw, index=False)
    lines = summarize(raw)
    lines.append(f"({(time.time() - start) / 60:.1f} min: python "
                 f"validation/curvature_correction.py --reps {args.reps}; the fits at the "
                 f"check's limit {args.run_limit:g}, the package's is "
                 f"{CURVATURE_CORRECTED_LIMIT:g})")
    text = "\n".join(lines)
    print(text)
    pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
