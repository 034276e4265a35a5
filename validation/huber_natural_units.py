"""Huber regression in natural units (issue 25, item 5: "curved and robust families
converge at the defaults in natural units; Huber with a large c on a dollar-valued
outcome is the measured case").

Design: annual earnings in dollars, ``earn = 5000 + 3000 educ + 800 exper - 12 exper^2
- 6000 female + 12000 t(3)`` (symmetric errors, so Huber's population coefficients are
the regression line's for every ``c``), schooling normal(13, 2.5) clipped to [6, 20],
experience gamma(3, 6) clipped to [0, 45], 45% women. The codebook: earnings in
(-100,000, 1,000,000), schooling (0, 25), experience (0, 60), the dummy (0, 1). Every
fit is ``dpreg.dp_huber`` at its defaults (DP-SGD, Mallows weights, ``ranges="auto"``)
but ``c``, the budget and the declared bounds. Variants:

* ``c=12000``: ``c`` in dollars, about 1.3 of the errors' scale (their MAD is 9,200,
  so this is statsmodels' default tuning in these units); every column declared;
* ``c=30000``: a user who guesses the scale 2.5 times too large;
* ``female undeclared``: ``c = 12000`` with no bounds for the dummy. Before, one column
  without bounds left the whole design unconditioned, and the Mallows weights, computed
  on rows in natural units (``||x||^2`` in the millions for experience squared), gave
  every row a weight near zero;
* ``female undeclared, before``: the same fits with the conditioning as it was (every
  column or none), for the comparison;
* the ``c`` sweep (n = 2,000, mu = 5, every column declared): ``c`` = 300, 1,000 and
  3,000 dollars, towards the median regression whose fits
  :data:`dpreg.families.base.C_RANGE_FLOOR` refuses (here ``c < 110``).

Per cell (n = 2,000 and 10,000; mu = 2, 5 and 10; ``--seeds`` data sets): the share of
fits without a convergence warning, the coverage of the true coefficients by the
unwarned fits' default intervals (and by all fits'), and their mean length over the
interval of statsmodels' ``RLM`` with ``HuberT`` at the same ``c`` in dollars (its scale
held at the initial MAD, so ``t = c / scale``), the non-private yardstick, whose own
coverage on the same data sets is the last column.

    python validation/huber_natural_units.py --seeds 100 --jobs 2

Writes ``validation/results/huber_natural_units.csv``.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf
from joblib import Parallel, delayed

import dpreg
from dpreg.design import conditioning
from dpreg.exceptions import ConvergenceWarning
from dpreg.studies.unwarned import unwarned_numbers

FORMULA = "earn ~ educ + exper + I(exper ** 2) + female"
TRUTH = {"Intercept": 5000.0, "educ": 3000.0, "exper": 800.0, "I(exper ** 2)": -12.0,
         "female": -6000.0}
CODEBOOK = {"earn": (-100_000, 1_000_000), "educ": (0, 25), "exper": (0, 60),
            "female": (0, 1)}
#: variant -> (c, undeclared columns, the conditioning as before this study)
VARIANTS = {
    "c=12000": (12_000.0, (), False),
    "c=30000": (30_000.0, (), False),
    "female undeclared": (12_000.0, ("female",), False),
    "female undeclared, before": (12_000.0, ("female",), True),
}
SWEEP = (300.0, 1000.0, 3000.0)


def simulate(n: int, rng: np.random.Generator) -> pd.DataFrame:
    educ = np.clip(rng.normal(13, 2.5, n), 6, 20)
    exper = np.clip(rng.gamma(3, 6, n), 0, 45)
    female = (rng.random(n) < 0.45).astype(float)
    earn = (TRUTH["Intercept"] + TRUTH["educ"] * educ + TRUTH["exper"] * exper
            + TRUTH["I(exper ** 2)"] * exper ** 2 + TRUTH["female"] * female
            + 12_000 * rng.standard_t(3, n))
    return pd.DataFrame({"earn": earn, "educ": educ, "exper": exper, "female": female})


def rlm_interval(data: pd.DataFrame, c: float) -> np.ndarray:
    """statsmodels' Huber fit with its threshold at ``c`` dollars: the scale held at the
    initial MAD ``s`` (``update_scale=False``) and ``t = c / s``; its 95% intervals."""
    X = smf.ols(FORMULA, data).exog
    s = sm.RLM(data["earn"], X, M=sm.robust.norms.HuberT(t=1.0)).fit(
        update_scale=False).scale
    res = sm.RLM(data["earn"], X, M=sm.robust.norms.HuberT(t=c / s)).fit(update_scale=False)
    return np.asarray(res.conf_int())


def _all_or_nothing(design, partial=False):
    # the conditioning before this study: nothing mapped unless every column is bounded
    return conditioning.default_conditioning(design)


def fit_once(data, mu, c, undeclared, before, seed) -> tuple[bool, pd.DataFrame, str]:
    bounds = {k: v for k, v in CODEBOOK.items() if k not in undeclared}
    patch = (mock.patch("dpreg.frontend.model.default_conditioning", _all_or_nothing)
             if before else contextlib.nullcontext())
    with patch, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = dpreg.dp_huber(FORMULA, data, c=c, mu=mu, bounds=bounds, random_state=seed)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return warned, res.conf_int(), res.engine


def replicate(n: int, mu: float, seed: int, cells) -> list[dict]:
    """One data set, the cells' fits, and statsmodels' RLM at each ``c``."""
    data_seed, fit_seed = np.random.SeedSequence([20261127, n, int(mu * 10), seed]).spawn(2)
    data = simulate(n, np.random.default_rng(data_seed))
    fit_seed = int(fit_seed.generate_state(1)[0])
    references = {}
    rows = []
    for variant, (c, undeclared, before) in cells:
        if c not in references:
            references[c] = rlm_interval(data, c)
        warned, ci, engine = fit_once(data, mu, c, undeclared, before, fit_seed)
        ref = references[c]
        for j, (name, value) in enumerate(TRUTH.items()):
            rows.append(dict(
                n=n, mu=mu, variant=variant, c=c, seed=seed, coef=name, warned=warned,
                engine=engine, covers=ci.loc[name, 0] <= value <= ci.loc[name, 1],
                covers_rlm=ref[j, 0] <= value <= ref[j, 1],
                length=(ci.loc[name, 1] - ci.loc[name, 0]) / (ref[j, 1] - ref[j, 0])))
    return rows


def table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per cell and variant: the three numbers (and the coverage over all fits)."""
    out = []
    for (n, mu, variant), g in raw.groupby(["n", "mu", "variant"], sort=False):
        out.append(dict(n=n, mu=mu, variant=variant, c=g["c"].iloc[0],
                        **unwarned_numbers(g, pairs_per_fit=len(TRUTH)),
                        coverage_rlm=g["covers_rlm"].mean()))
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results")))
    args = parser.parse_args()
    t0 = time.perf_counter()
    main_cells = list(VARIANTS.items())
    sweep_cells = [(f"c={c:g}", (c, (), False)) for c in SWEEP]
    tasks = [(n, mu, seed, main_cells + (sweep_cells if (n, mu) == (2000, 5.0) else []))
             for n in (2000, 10_000) for mu in (2.0, 5.0, 10.0) for seed in range(args.seeds)]
    out = Parallel(n_jobs=args.jobs)(delayed(replicate)(*task) for task in tasks)
    result = table(pd.DataFrame([row for rows in out for row in rows])).round(4)
    result.to_csv(Path(args.out) / "huber_natural_units.csv", index=False)
    pd.set_option("display.width", 200)
    print(result.to_string(index=False))
    print(f"({(time.perf_counter() - t0) / 60:.1f} min: python validation/huber_natural_units.py "
          f"--seeds {args.seeds} --jobs {args.jobs})")


if __name__ == "__main__":
    main()
