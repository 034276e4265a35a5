"""Clustered analyses with clusters as the privacy unit, each beside its non-private
counterpart (issue 29, item 4).

1. **A public data set with a cluster identifier**: statsmodels' ``modechoice`` (Greene's
   travel-mode choice data: 210 travellers, one row for each of four modes, so every
   cluster has exactly ``K = 4`` rows and the cluster sizes are public by design). A logit
   of the chosen mode on the mode and its in-vehicle cost and time, the traveller the
   privacy unit (``dp_logit(..., groups="individual", max_group_size=4)``: DP-SGD),
   against statsmodels' ``Logit(...).fit(cov_type="cluster")``.
2. **A realistic simulation**: pupils in schools (sizes 5-40, a school effect, a
   school-level programme), a test score by OLS (``dp_ols`` with ``groups=``: SSP's
   cluster-robust sandwich) and passing the test by logit (DP-SGD), against statsmodels'
   cluster-robust fits.

For each, over ``--seeds`` seeds of the privacy noise (the data are fixed): the share of
fits that do not warn, the share of coefficients whose private interval contains the
non-private estimate, and the mean length of the private interval over the non-private
cluster-robust one.

    python validation/clustered_analysis.py --seeds 20
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf

import dpreg
from dpreg.exceptions import ConvergenceWarning

MODE_FORMULA = "choice ~ C(mode) + invc + invt"
MODE_LEVELS = {"mode": ["air", "train", "bus", "car"]}
#: Codebook bounds: a fare up to $200 and a journey up to 25 hours.
MODE_BOUNDS = {"invc": (0, 200), "invt": (0, 1500)}

SCHOOL_BOUNDS = {"score": (0, 100), "programme": (0, 1), "age": (10, 18), "hours": (0, 20)}
SCORE_FORMULA = "score ~ programme + age + hours"
PASS_FORMULA = "passed ~ programme + age + hours"


def modechoice() -> pd.DataFrame:
    data = sm.datasets.modechoice.load_pandas().data
    data["mode"] = data["mode"].map({1: "air", 2: "train", 3: "bus", 4: "car"})
    return data


def schools(n_schools: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Pupils in schools of 5-40 pupils: a school-level programme (a third of schools),
    age and weekly study hours, a school effect (intra-school correlation about 0.2) in
    a 0-100 score, and passing at 60."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 41, n_schools)
    school = np.repeat(np.arange(n_schools), sizes)
    n = school.size
    programme = (rng.random(n_schools) < 1 / 3)[school]
    age = rng.integers(10, 19, n)
    hours = np.clip(rng.gamma(2.0, 2.5, n) + 2 * rng.normal(0, 1, n_schools)[school], 0, 20)
    score = (40 + 4 * programme + 1.2 * age + 0.8 * hours
             + rng.normal(0, 6, n_schools)[school] + rng.normal(0, 12, n))
    return pd.DataFrame({"school": school, "programme": programme.astype(float),
                         "age": age, "hours": hours, "score": np.clip(score, 0, 100),
                         "passed": (score >= 60).astype(float)})


def _score(private, reference) -> tuple[float, float]:
    ci = private.conf_int().to_numpy()
    ref_ci = reference.conf_int().loc[private.params.index].to_numpy()
    est = reference.params.loc[private.params.index].to_numpy()
    contains = float(np.mean((ci[:, 0] <= est) & (est <= ci[:, 1])))
    ratio = float(np.mean(np.diff(ci, axis=1).ravel() / np.diff(ref_ci, axis=1).ravel()))
    return contains, ratio


def _runs(name, fit, reference, mus, seeds, n_groups) -> list[dict]:
    rows = []
    for mu in mus:
        warned, contains, ratios = [], [], []
        for seed in range(seeds):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = fit(mu, np.random.default_rng(seed))
            warned.append(any(issubclass(w.category, ConvergenceWarning) for w in caught))
            c, r = _score(res, reference)
            contains.append(c)
            ratios.append(r)
        ok = ~np.array(warned)
        rows.append(dict(analysis=name, engine=res.engine, mu=mu, G=n_groups,
                         n=int(reference.nobs), fits=seeds, unwarned=ok.mean(),
            contains_unwarned=np.mean(np.array(contains)[ok]) if ok.any() else np.nan,
            length_unwarned=np.mean(np.array(ratios)[ok]) if ok.any() else np.nan,
            contains_all=np.mean(contains), length_all=np.mean(ratios)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--out", default="validation/results")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = []

    travel = modechoice()
    travel_ref = smf.logit(MODE_FORMULA, travel).fit(
        disp=0, cov_type="cluster", cov_kwds={"groups": travel["individual"]})
    rows += _runs("modechoice logit (210 travellers x 4 modes)",
                  lambda mu, rng: dpreg.dp_logit(
                      MODE_FORMULA, travel, groups="individual", max_group_size=4, mu=mu,
                      levels=MODE_LEVELS, bounds=MODE_BOUNDS, random_state=rng),
                  travel_ref, (5.0, 10.0), args.seeds, travel["individual"].nunique())

    pupils = schools()
    groups = {"groups": pupils["school"]}
    score_ref = smf.ols(SCORE_FORMULA, pupils).fit(cov_type="cluster", cov_kwds=groups)
    pass_ref = smf.logit(PASS_FORMULA, pupils).fit(disp=0, cov_type="cluster",
                                                    cov_kwds=groups)
    rows += _runs("schools OLS of the score", lambda mu, rng: dpreg.dp_ols(
        SCORE_FORMULA, pupils, groups="school", max_group_size=40, mu=mu,
        bounds=SCHOOL_BOUNDS, random_state=rng), score_ref, (2.0, 5.0), args.seeds,
        pupils["school"].nunique())
    rows += _runs("schools logit of passing", lambda mu, rng: dpreg.dp_logit(
        PASS_FORMULA, pupils, groups="school", max_group_size=40, mu=mu,
        bounds={k: v for k, v in SCHOOL_BOUNDS.items() if k != "score"},
        random_state=rng), pass_ref, (2.0, 5.0), args.seeds, pupils["school"].nunique())

    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        text = table.to_string(index=False)
    lines = [text, "",
             "Non-private references (statsmodels, cluster-robust CR1):",
             "modechoice logit: " + _coefs(travel_ref),
             "schools OLS: " + _coefs(score_ref),
             "schools logit: " + _coefs(pass_ref),
             f"{time.perf_counter() - start:.0f} s, {args.seeds} seeds per row"]
    print("\n".join(lines))
    out = Path(args.out) / "clustered_analysis.txt"
    out.write_text("\n".join(lines) + "\n")


def _coefs(res) -> str:
    return ", ".join(f"{k} {v:.4g} ({s:.3g})" for k, v, s in
                     zip(res.params.index, res.params, res.bse, strict=True))


if __name__ == "__main__":
    main()
