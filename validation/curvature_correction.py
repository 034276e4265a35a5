"""The curvature correction of DP-SGD's logistic estimates, measured (issue 26: a check
replaced by a correction, its threshold set from its measured curve).

A noisy logistic path's averaged iterate is biased away from 0: its iterates spread
around their average and the score is curved, so the average solves the score equation
for about ``k`` times the estimate, ``k = sqrt(1 + pi s^2 / 8)`` with ``s^2`` the spread
of the linear index (:mod:`dpreg.inference.diagnostics`, module notes). DP-SGD's
estimate is the averaged iterate divided by ``k`` (post-processing of the released path
and the private second moment); a coefficient is flagged when that correction exceeds
``CURVATURE_CORRECTED_LIMIT`` = 1 plug-in standard error.

Per fit this script records, for every coefficient, the default interval as the fit
reports it (corrected) and the same interval moved back to the averaged iterate (the
estimate before the correction: the corrected estimate times ``k``). The cells are the
textbook study's two logits (``participation``, 30% ones; ``approval``, 10%) at the
default private ranges, and the robustness study's natural-units logit (n = 1,000 and
5,000, p = 3, heteroskedastic, the declared boxes), where the uncorrected check was
first measured. Reported:

* per cell: coverage of the true coefficients before and after the correction, mean
  ``k``, and the share of fits flagged by the old check (bias over 0.5 s.e.,
  uncorrected) and by the new one (correction over 1 s.e.);
* over all cells, by the size of the fit's largest correction (in s.e.): the coverage
  before and after, which sets the limit (the correction holds the nominal rate where
  it stays under 1 s.e., not beyond).

    python validation/curvature_correction.py --reps 200     # the recorded run (results/)
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

OUT = pathlib.Path(__file__).parent / "results" / "curvature_correction.txt"
#: (design, n, mu): textbook logits at the default ranges; "natural" is the robustness
#: study's natural-units logit in its declared boxes.
CELLS = [(d, n, mu) for d in ("participation", "approval")
         for n, mu in ((500, 10), (2000, 5), (2000, 10), (10000, 1), (10000, 5))] + [
    ("natural", 1000, 1), ("natural", 5000, 5)]
BANDS = (0.0, 0.5, 1.0, 2.0, np.inf)


def replicate(design: str, n: int, mu: float, seed: int) -> list[dict]:
    """One data set and fit; one row per coefficient."""
    from dpreg.exceptions import ConvergenceWarning, SeedReuseWarning

    rng = np.random.default_rng([seed, n])
    if design == "natural":
        import dpreg
        from dpreg.studies.robustness import natural_units_design

        data, formula, bounds, truth = natural_units_design(n, 3, rng, family="logistic",
                                                            errors="hetero")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", SeedReuseWarning)  # seeds replicate a study
            res = dpreg.dp_logit(formula, data, mu=mu, bounds=bounds, ranges="declared",
                                 random_state=seed)
        truth = dict(zip(res.params.index, np.asarray(truth, dtype=float), strict=True))
    else:
        from dpreg.studies.textbook import fit_design

        # DP-SGD's correction is studied: its engine, also where logistic regression's
        # default is now noisy Newton (n mu >= 25,000: the (10000, 5) cells)
        fit = fit_design(design, n, rng, mu=mu, engine="dpsgd", random_state=seed)
        res, truth = fit.res, fit.truth
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
                         flagged=name in report.curvature_biased))
    return rows


def summarize(raw: pd.DataFrame) -> list[str]:
    """The two tables of the module docstring, as text lines."""
    fits = raw.groupby(["design", "n", "mu", "seed"], sort=False)
    per_fit = fits.agg(largest=("correction", "max"), flagged=("flagged", "max"),
                       k=("k", "first")).reset_index()
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
    return ["Per cell: coverage of the true coefficients by the default interval before "
            "(raw) and after the correction, mean k, share of fits flagged by the old "
            "check (bias over 0.5 s.e., uncorrected) and the new (correction over 1 s.e.)",
            f"(binomial MC s.e. of a coefficient's coverage: {mcse:.3f})",
            cells.round(3).to_string(), "",
            "All cells, by the fit's largest correction (plug-in s.e.):",
            bands.round(3).to_string()]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    start = time.time()
    rows = Parallel(n_jobs=args.jobs)(
        delayed(replicate)(d, n, mu, s) for d, n, mu in CELLS for s in range(args.reps))
    raw = pd.DataFrame([r for rep in rows for r in rep])
    lines = summarize(raw)
    lines.append(f"({(time.time() - start) / 60:.1f} min: python "
                 f"validation/curvature_correction.py --reps {args.reps})")
    text = "\n".join(lines)
    print(text)
    pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
