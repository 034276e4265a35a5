"""SSP's eigenvalue-floor check as a test (issue 26, item 1): its measured curve.

On the textbook study's SSP cells (:mod:`dpreg.studies.textbook`: the wage and fertility
equations in natural units with codebook bounds, declared and private ranges, n = 500,
2,000 and 10,000, mu = 1, 5 and 10; ``--reps`` data sets per cell), every coefficient of
every fit gets the floor's sensitivity ``res.floor_sensitivity`` (the estimate's move and
the standard error's relative change when the floor doubles). A (cell, coefficient)
*covers* when its default interval covers the truth within 3 MC s.e. of 0.95 over all
fits. For each rule "flag a coefficient of a floored fit when its sensitivity exceeds
t", the table gives the false-alarm rate (flagged where the interval covers), the power
(flagged where it does not), the share of fits unwarned, the number of (cell,
coefficient) pairs whose *unflagged* intervals undercover (below 0.95 by more than 3 MC
s.e., at least 10 unflagged fits), and the share of unflagged intervals that miss the
non-private estimate by more than 3 of their half-lengths. The fit's rule is
``se_change > SSP_FLOOR_SENSITIVITY`` (:mod:`dpreg.inference.diagnostics`); the row
``current`` names every coefficient of a floored fit (the rule before).

    python validation/ssp_floor_check.py --reps 100 --jobs 2

Writes ``validation/results/ssp_floor_check.csv``; about 5 minutes on one core. With
``--real``, the check on data it was not tuned on instead: SSP's OLS of statsmodels'
``fair`` and ``randhie`` (the models of ``validation/statsmodels_datasets.py``) at mu =
1, 2 and 5, declared and learned ranges, 20 seeds; in the fits whose ``X'X`` was
floored, the share of coefficients named, and whether the unnamed and the named
intervals contain the non-private estimate (or miss it by more than 3 half-lengths).
Writes ``validation/results/ssp_floor_check_real.csv``; under a minute.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from dpreg.inference.diagnostics import SSP_FLOOR_SENSITIVITY

DESIGNS = ("wage", "fertility")
CELLS = [(d, n, mu, r) for d in DESIGNS for n in (500, 2000, 10_000)
         for mu in (1.0, 5.0, 10.0) for r in ("declared", "private")]
CELL = ["design", "n", "mu", "ranges"]


def replicate(design: str, n: int, mu: float, ranges: str, rep: int) -> list[dict]:
    """One data set and one SSP fit at the defaults: a row per coefficient."""
    import dpreg
    from dpreg.frontend.model import DPRegression
    from dpreg.studies.textbook import simulate_design

    seed = np.random.SeedSequence([20261126, DESIGNS.index(design), n, int(mu * 10),
                                   ranges == "private", rep])
    data_seed, fit_seed = seed.spawn(2)
    data, formula, bounds, levels, truth = simulate_design(
        design, n, np.random.default_rng(data_seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the rules are applied below; seeds are fixed
        res = dpreg.dp_ols(formula, data, bounds=bounds, levels=levels or None, mu=mu,
                           engine="ssp", ranges=ranges,
                           random_state=int(fit_seed.generate_state(1)[0]))
    floored = res.settings.value("n_floored") > 0
    oracle = DPRegression.from_formula(formula, data, family="linear", bounds=bounds,
                                       levels=levels or None).fit_oracle()
    ci, sens = res.conf_int(), res.floor_sensitivity
    rows = []
    for name in res.params.index:
        lo, hi = ci.loc[name]
        rows.append(dict(design=design, n=n, mu=mu, ranges=ranges, rep=rep, coef=name,
                         covers=int(lo <= truth[name] <= hi), floored=int(floored),
                         miss_np=abs(oracle.params[name] - (lo + hi) / 2) / ((hi - lo) / 2),
                         shift=sens.loc[name, "shift"],
                         se_change=sens.loc[name, "se_change"]))
    return rows


def characteristic(raw: pd.DataFrame, flag: pd.Series, rule: str) -> dict:
    """The rule ``flag`` (per coefficient row of ``raw``) as a test."""
    d = raw.assign(flag=flag.astype(bool))
    fit_warned = d.groupby(CELL + ["rep"])["flag"].max()
    unflagged = d[~d["flag"]].groupby(CELL + ["coef"])["covers"].agg(["mean", "size"])
    short = (unflagged["mean"] < 0.95 - 3 * np.sqrt(0.0475 / unflagged["size"])) \
        & (unflagged["size"] >= 10)
    return dict(rule=rule, false_alarm=d.loc[d["pair_covers"], "flag"].mean(),
                power=d.loc[~d["pair_covers"], "flag"].mean(),
                fits_unwarned=1 - fit_warned.mean(), undercovering_unflagged=int(short.sum()),
                miss_np_over_3=(d.loc[~d["flag"], "miss_np"] > 3).mean())


def curve(raw: pd.DataFrame) -> pd.DataFrame:
    """The table of the module's docstring."""
    pairs = raw.groupby(CELL + ["coef"])["covers"].agg(["mean", "size"])
    covers = (pairs["mean"] >= 0.95 - 3 * np.sqrt(0.0475 / pairs["size"])).rename("pair_covers")
    raw = raw.join(covers, on=CELL + ["coef"])
    floored = raw["floored"].astype(bool)
    rows = [characteristic(raw, floored, "current")]
    for t in (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5):
        rule = f"se_change > {t:g}" + (" (the fit's)" if t == SSP_FLOOR_SENSITIVITY else "")
        rows.append(characteristic(raw, floored & (raw["se_change"] > t), rule))
    for t in (0.1, 0.2, 0.5):
        rows.append(characteristic(raw, floored & (raw["shift"] > t), f"shift > {t:g}"))
    return pd.DataFrame(rows).round(4)


def real_data(seeds: int = 20) -> pd.DataFrame:
    """The ``--real`` table (module docstring)."""
    from statsmodels_datasets import MODELS

    import dpreg

    rows = []
    for label in ("fair OLS (ssp)", "randhie OLS (ssp)"):
        fit, family, load, formula, bounds, levels, options = MODELS[label]
        data = load()
        used = {k: v for k, v in bounds.items() if k in formula and k not in (levels or {})}
        target = dpreg.oracle(formula, data, family=family, bounds=used,
                              levels=levels).params
        for mu in (1.0, 2.0, 5.0):
            for ranges in ("declared", "auto"):
                for seed in range(seeds):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = fit(formula, data, mu=mu, bounds=used, levels=levels,
                                  ranges=ranges, random_state=seed, **options)
                    if res.settings.value("n_floored") == 0:
                        continue
                    ci, change = res.conf_int(), res.floor_sensitivity["se_change"]
                    for name in res.params.index:
                        lo, hi = ci.loc[name]
                        t = target[name]
                        rows.append(dict(model=label, named=change[name] > SSP_FLOOR_SENSITIVITY,
                                         contains=lo <= t <= hi,
                                         far=max(lo - t, t - hi) > 1.5 * (hi - lo)))
    raw = pd.DataFrame(rows)
    table = raw.groupby(["model", "named"]).agg(
        pairs=("contains", "size"), contains=("contains", "mean"), far_miss=("far", "mean"))
    return table.reset_index().round(4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--real", action="store_true",
                        help="the check on statsmodels' data sets instead")
    parser.add_argument("--out", default=str(Path(__file__).with_name("results")))
    args = parser.parse_args()
    if args.real:
        table = real_data()
        table.to_csv(Path(args.out) / "ssp_floor_check_real.csv", index=False)
        print(table.to_string(index=False))
        return
    out = Parallel(n_jobs=args.jobs, batch_size=8)(
        delayed(replicate)(*cell, rep) for cell in CELLS for rep in range(args.reps))
    raw = pd.DataFrame([row for rows in out for row in rows])
    table = curve(raw)
    path = Path(args.out) / "ssp_floor_check.csv"
    table.to_csv(path, index=False)
    pairs = raw.groupby(CELL + ["coef"]).ngroups
    print(f"{len(CELLS)} cells, {args.reps} fits each, {pairs} (cell, coefficient) pairs")
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
