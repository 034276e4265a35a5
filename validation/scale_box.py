"""Columns known only by their scale (issue 25, item 1: "where only a scale is known, it
accepts that too"): equal bins against :class:`dpreg.ScaleBox`'s powers-of-two grid.

Design: household spending in dollars on schooling and income, ``spend = 5000 + 2000
educ + 0.1 income + N(0, 8000^2)``, schooling normal(13, 2.5) clipped to [6, 20] and
income lognormal (median 40,000, log-s.d. 0.7; its largest value about 400,000 at
n = 5,000). The analyst knows schooling's codebook box (0, 25) and, for the dollar
amounts, only a scale: income under a billion, spending between -1e6 and 1e7. Three
ways to declare them, each fitted at the defaults (``ranges="auto"``, the engine rule):

* ``equal``: the plain boxes ``(0, 1e9)`` and ``(-1e6, 1e7)``, 64 equal bins each;
* ``scale_income``: income as ``ScaleBox(0, 1e9)``;
* ``scale_both``: spending as ``ScaleBox(-1e6, 1e7)`` too.

Per cell (n = 2,000 and 10,000; mu = 2 and 5; ``--seeds`` data sets): the share of fits
unwarned, the coverage of the true coefficients by the unwarned fits' default
intervals (and by all fits'), their mean length over statsmodels' OLS interval on the
same rows, and the learned income range's upper end over the data's largest income.

    python validation/scale_box.py --seeds 40

Writes ``validation/results/scale_box.csv``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from joblib import Parallel, delayed

import dpreg
from dpreg.exceptions import ConvergenceWarning
from dpreg.studies.unwarned import unwarned_numbers

FORMULA = "spend ~ educ + income"
TRUTH = {"Intercept": 5000.0, "educ": 2000.0, "income": 0.1}
VARIANTS = {
    "equal": {"income": (0.0, 1e9), "spend": (-1e6, 1e7)},
    "scale_income": {"income": dpreg.ScaleBox(0, 1e9), "spend": (-1e6, 1e7)},
    "scale_both": {"income": dpreg.ScaleBox(0, 1e9), "spend": dpreg.ScaleBox(-1e6, 1e7)},
}


def simulate(n: int, rng: np.random.Generator) -> pd.DataFrame:
    educ = np.clip(rng.normal(13, 2.5, n), 6, 20)
    income = np.exp(rng.normal(np.log(40_000), 0.7, n))
    spend = (TRUTH["Intercept"] + TRUTH["educ"] * educ + TRUTH["income"] * income
             + rng.normal(0, 8000, n))
    return pd.DataFrame({"spend": spend, "educ": educ, "income": income})


def replicate(n: int, mu: float, seed: int) -> list[dict]:
    """One data set, the three declarations, and OLS."""
    data_seed, fit_seed = np.random.SeedSequence([20261126, n, int(mu * 10), seed]).spawn(2)
    data = simulate(n, np.random.default_rng(data_seed))
    ref = smf.ols(FORMULA, data).fit().conf_int()
    rows = []
    for variant, boxes in VARIANTS.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            res = dpreg.dp_ols(FORMULA, data, mu=mu, bounds={"educ": (0, 25), **boxes},
                               random_state=int(fit_seed.generate_state(1)[0]))
        warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        text = str(res.settings.value("ranges"))
        upper = float(text.split("income [", 1)[1].split(",")[1].split("]")[0])
        ci = res.conf_int()
        for name, value in TRUTH.items():
            rows.append(dict(
                n=n, mu=mu, variant=variant, seed=seed, coef=name, warned=warned,
                engine=res.engine, covers=ci.loc[name, 0] <= value <= ci.loc[name, 1],
                length=(ci.loc[name, 1] - ci.loc[name, 0]) / (ref.loc[name, 1]
                                                             - ref.loc[name, 0]),
                income_range=upper / data["income"].max()))
    return rows


def table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per cell and declaration: the three numbers, and the learned income range."""
    out = []
    for (n, mu, variant), g in raw.groupby(["n", "mu", "variant"], sort=False):
        out.append(dict(n=n, mu=mu, variant=variant,
                        engine="/".join(sorted(g["engine"].unique())), **unwarned_numbers(g),
                        income_range_over_max=g["income_range"].median()))
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results")))
    args = parser.parse_args()
    t0 = time.perf_counter()
    out = Parallel(n_jobs=args.jobs)(delayed(replicate)(n, mu, seed)
                                     for n in (2000, 10_000) for mu in (2.0, 5.0)
                                     for seed in range(args.seeds))
    result = table(pd.DataFrame([row for rows in out for row in rows])).round(4)
    result.to_csv(Path(args.out) / "scale_box.csv", index=False)
    pd.set_option("display.width", 200)
    print(result.to_string(index=False))
    print(f"{(time.perf_counter() - t0) / 60:.1f} min")


if __name__ == "__main__":
    main()
