"""Prediction and marginal-effect intervals: which of the fit's intervals is the shortest
that covers (issue 26, item 4).

``get_prediction`` and ``get_margeff`` follow the fit's default inference (``res.cov_type``:
the plug-in unless DP-SGD switched because the eigenvalue floor decided some plug-in
standard errors, to ``"plugin_rs"``, random scaling's for a target that puts weight on
those coefficients). This script measures both methods and the default on the textbook
designs
(:mod:`dpreg.studies.textbook`: two participation logits with 25% and 10% ones, the
fertility and the wage equations) at n = 2,000 and 10,000, mu = 5, with learned
ranges (the default) and the codebook's boxes, the defaults otherwise (the linear
designs then go to the engine rule's choice):

* **predictions** ``E[y | x]`` (probabilities for the logits) at two public profiles
  per design, against the truth;
* **marginal effects** of the logits' ``educ``, ``kidslt6`` and ``nwifeinc`` averaged
  over the two profiles (``get_margeff(at=profiles)``), against the truth
  ``beta_j mean_k p_k (1 - p_k)``.

Per cell and method (``"default"``: what ``get_prediction`` and ``get_margeff`` give
without ``method=``): coverage of the truth, split by whether the fit warned, whether
its default switched (``res.convergence.default_switched``) and, for predictions,
whether the row was flagged (the curvature correction moved its linear index by over 1
plug-in standard error, ``PredictionResults.flagged``), and the median length over the
non-private interval of the same data (:meth:`dpreg.DPRegression.fit_oracle`).

    python validation/prediction_intervals.py [--reps 50] [--jobs 2]

writes ``validation/results/prediction_intervals.csv`` (about 7 minutes on 2 cores at --reps 100).
``--design``, ``--n`` and ``--ranges`` keep a part of the grid, ``--out`` names the file
(the recorded larger run of one cell, ``prediction_intervals_approval.csv``, about 2.5
minutes):

    python validation/prediction_intervals.py --design approval --n 2000 --ranges auto
    --reps 600 --out validation/results/prediction_intervals_approval.csv
"""

from __future__ import annotations

import argparse
import pathlib
import warnings

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

OUT = pathlib.Path(__file__).parent / "results" / "prediction_intervals.csv"
#: Two public profiles per design (covariate values an analyst chooses, not data).
PROFILES = {
    "participation": [dict(age=45, educ=13, kidslt6=0, nwifeinc=20),
                      dict(age=35, educ=16, kidslt6=1, nwifeinc=40)],
    "approval": [dict(age=45, educ=13, kidslt6=0, nwifeinc=20),
                 dict(age=35, educ=16, kidslt6=1, nwifeinc=40)],
    "fertility": [dict(age=30, educ=13, year=78), dict(age=40, educ=12, year=84)],
    "wage": [dict(educ=13, exper=10, female=0), dict(educ=16, exper=25, female=1)],
}
MARGINS = ("educ", "kidslt6", "nwifeinc")


def true_index(truth: dict, profile: dict) -> float:
    """``x' beta`` at a profile, from the design's true coefficients by patsy name."""
    eta = truth["Intercept"]
    for name, value in profile.items():
        if name == "year":
            eta += truth.get(f"C(year)[T.{value}]", 0.0)
            continue
        eta += truth.get(name, 0.0) * value
        eta += truth.get(f"I({name} ** 2)", 0.0) * value ** 2
    return eta


def _ends(frame: pd.DataFrame) -> np.ndarray:
    """The interval's two ends (the last two columns of a summary frame)."""
    return frame.iloc[:, -2:].to_numpy()


def replicate(design: str, n: int, mu: float, ranges: str, seed: int) -> list[dict]:
    from scipy.special import expit  # imported here: loky cannot unpickle a ufunc global

    from dpreg.exceptions import ConvergenceWarning
    from dpreg.frontend.model import DPRegression
    from dpreg.studies.textbook import DESIGNS, fit_design

    # the logits by DP-SGD, whose two intervals this compares (logistic regression's
    # default at n mu < 25,000; at n = 10,000, mu = 5 the default is now noisy Newton,
    # whose one interval is the plug-in); the linear designs by their default engine
    engine = {"engine": "dpsgd"} if DESIGNS[design][0] == "logistic" else {}
    fit = fit_design(design, n, np.random.default_rng(seed), mu=mu, ranges=ranges,
                     random_state=seed + 7, **engine)
    res, warned, family = fit.res, bool(fit.messages), fit.family
    data, formula, bounds, levels, truth = (fit.data, fit.formula, fit.bounds, fit.levels,
                                            fit.truth)
    oracle = DPRegression.from_formula(formula, data, family=family, bounds=bounds,
                                       levels=levels or None).fit_oracle()
    profiles = pd.DataFrame(PROFILES[design])
    eta = np.array([true_index(truth, p) for p in PROFILES[design]])
    mean = expit(eta) if family == "logistic" else eta
    report = getattr(res, "convergence", None)  # an optional part: DP-SGD's, not SSP's
    keys = dict(design=design, n=n, mu=mu, ranges=ranges, seed=seed, default=res.cov_type,
                warned=warned, switched=bool(report is not None and report.default_switched))
    rows = []
    reference = _ends(oracle.get_prediction(profiles).summary_frame())
    # None: the fit's default, as a user gets it without method= / inference=
    methods = [m for m in ("plugin", "rs") if m in res.inferences] + [None]
    for method in methods:
        label = method or "default"
        with warnings.catch_warnings():
            # the prediction's own flag (PredictionResults.flagged), recorded per row
            warnings.simplefilter("ignore", ConvergenceWarning)
            prediction = res.get_prediction(profiles, method=method)
        ci = _ends(prediction.summary_frame())
        for k in range(len(profiles)):
            rows.append(keys | dict(what="prediction", target=f"profile {k}", method=label,
                                    flagged=bool(prediction.flagged[k]),
                                    covers=int(ci[k, 0] <= mean[k] <= ci[k, 1]),
                                    length_ratio=(ci[k, 1] - ci[k, 0])
                                    / (reference[k, 1] - reference[k, 0])))
    if family == "logistic":
        reference = oracle.get_margeff(at=profiles).summary_frame()
        slope = np.mean(mean * (1 - mean))
        for method in methods:
            frame = res.get_margeff(at=profiles, inference=method).summary_frame()
            for name in MARGINS:
                lo, hi = frame.loc[name].iloc[-2:]
                r_lo, r_hi = reference.loc[name].iloc[-2:]
                rows.append(keys | dict(what="margin", target=name, method=method or "default",
                                        flagged=False,
                                        covers=int(lo <= truth[name] * slope <= hi),
                                        length_ratio=(hi - lo) / (r_hi - r_lo)))
    return rows


def summarize(raw: pd.DataFrame) -> pd.DataFrame:
    """Coverage (and its binomial MC s.e. over the (fit, target) pairs) and the median
    length ratio per cell, fit status (warned, default switched, and for predictions
    the row's curvature flag, ``PredictionResults.flagged``) and method."""
    g = raw.groupby(["what", "design", "n", "ranges", "warned", "switched", "flagged",
                     "method"])
    out = g.agg(pairs=("covers", "size"), coverage=("covers", "mean"),
                length_ratio=("length_ratio", "median")).reset_index()
    out["mcse"] = np.sqrt(out.coverage * (1 - out.coverage) / out.pairs)
    return out.round(3)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--design", nargs="+", choices=list(PROFILES), default=list(PROFILES))
    ap.add_argument("--n", nargs="+", type=int, default=[2000, 10000])
    ap.add_argument("--ranges", nargs="+", choices=["auto", "declared"],
                    default=["auto", "declared"])
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    args = ap.parse_args(argv)
    cells = [(d, n, 5.0, r) for d in args.design for n in args.n for r in args.ranges]
    tasks = [(cell, 1000 * s + 11) for cell in cells for s in range(args.reps)]
    out = Parallel(n_jobs=args.jobs, batch_size=4)(
        delayed(replicate)(*cell, seed) for cell, seed in tasks)
    raw = pd.DataFrame([row for rows in out for row in rows])
    table = summarize(raw)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    unwarned = table[~table.warned]
    with pd.option_context("display.width", 160, "display.max_rows", 200):
        print(unwarned.to_string(index=False))
    print(f"{len(tasks)} fits -> {args.out}")


if __name__ == "__main__":
    main()
