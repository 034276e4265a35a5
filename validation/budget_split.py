"""How DP-SGD's budget split buys precision (issue 25, item 4).

On the textbook study's designs (:mod:`dpreg.studies.textbook`: natural units, codebook
bounds, the default learned ranges), DP-SGD fits at mu = 5 with the default split of
``mu^2`` (path 0.6, preconditioner 0.05, Hessian 0.25, score 0.1, after the ranges'
0.05) and with alternatives that move budget between the path and the plug-in
matrices. Per (design, n, split): the share of fits that do not warn, the coverage of
the unwarned fits' default intervals (all coefficients pooled, with its MC s.e.), and
their mean length over the non-private interval on the same data.

    python validation/budget_split.py --reps 100 --jobs 2

Writes ``validation/results/budget_split.csv``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from dpreg.exceptions import ConvergenceWarning

#: Shares of mu^2 after the learned ranges' 0.05 (each sums to 0.95).
SPLITS = {
    "default": {"path": 0.6, "precondition": 0.05, "hessian": 0.25, "score": 0.1},
    "path-heavy": {"path": 0.75, "precondition": 0.05, "hessian": 0.1, "score": 0.05},
    "matrix-heavy": {"path": 0.45, "precondition": 0.05, "hessian": 0.3, "score": 0.15},
    "hessian-heavy": {"path": 0.5, "precondition": 0.05, "hessian": 0.35, "score": 0.05},
    "precondition-heavy": {"path": 0.5, "precondition": 0.15, "hessian": 0.25, "score": 0.05},
}
CELLS = (("wage", "linear", 2000), ("wage", "linear", 10_000),
         ("fertility", "linear", 2000), ("participation", "logistic", 2000),
         # the one cell at n >= 2,000, mu >= 5 short of the textbook target
         ("approval", "logistic", 2000))
MU = 5.0


def replicate(design: str, family: str, n: int, split: str, rep: int) -> list[dict]:
    """One data set, one DP-SGD fit with the split, the non-private fit: a row per
    coefficient."""
    from dpreg.frontend.model import DPRegression
    from dpreg.studies.robustness import FAMILY_FITS
    from dpreg.studies.textbook import simulate_design

    seed = np.random.SeedSequence([20261126, [c[0] for c in CELLS].index(design), n, rep])
    data_seed, fit_seed = seed.spawn(2)  # the same data and noise seed for every split
    data, formula, bounds, levels, truth = simulate_design(
        design, n, np.random.default_rng(data_seed))
    shares = {"ranges": 0.05} | {k: v * 0.95 / sum(SPLITS[split].values())
                                 for k, v in SPLITS[split].items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = FAMILY_FITS[family](formula, data, bounds=bounds, levels=levels or None,
                                  mu=MU, engine="dpsgd", budget_split=shares,
                                  random_state=int(fit_seed.generate_state(1)[0]))
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    oracle = DPRegression.from_formula(formula, data, family=family, bounds=bounds,
                                       levels=levels or None).fit_oracle()
    ci, ref = res.conf_int(), oracle.conf_int()
    return [dict(design=design, n=n, split=split, rep=rep, coef=name, warned=int(warned),
                 covers=int(ci.loc[name, 0] <= truth[name] <= ci.loc[name, 1]),
                 length=(ci.loc[name, 1] - ci.loc[name, 0])
                 / (ref.loc[name, 1] - ref.loc[name, 0]))
            for name in res.params.index]


def summarize(raw: pd.DataFrame) -> pd.DataFrame:
    """Per (design, n, split): unwarned share, unwarned coverage and its MC s.e., and
    the unwarned intervals' mean length over the non-private ones."""
    rows = []
    for (design, n, split), g in raw.groupby(["design", "n", "split"], sort=False):
        fits = g.groupby("rep")["warned"].first()
        ok = g[g["warned"] == 0]
        cov = ok["covers"].mean() if len(ok) else np.nan
        rows.append(dict(design=design, n=n, split=split, fits=len(fits),
                         unwarned=1 - fits.mean(), coverage_unwarned=cov,
                         mcse=np.sqrt(0.0475 / len(ok)) if len(ok) else np.nan,
                         length_unwarned=ok["length"].mean() if len(ok) else np.nan))
    return pd.DataFrame(rows).round(4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results")))
    args = parser.parse_args()
    t0 = time.perf_counter()
    out = Parallel(n_jobs=args.jobs, batch_size=4)(
        delayed(replicate)(design, family, n, split, rep)
        for design, family, n in CELLS for split in SPLITS for rep in range(args.reps))
    table = summarize(pd.DataFrame([row for rows in out for row in rows]))
    table.to_csv(Path(args.out) / "budget_split.csv", index=False)
    with pd.option_context("display.width", 160):
        print(table.to_string(index=False))
    print(f"{(time.perf_counter() - t0) / 60:.1f} min, {args.reps} fits per row")


if __name__ == "__main__":
    main()
