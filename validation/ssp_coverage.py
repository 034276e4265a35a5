"""Coverage of the SSP engine's intervals for the population coefficients (issue 18).

Data: :func:`dpreg.studies.robustness.natural_units_design` (covariates in natural units
inside loose declared boxes: age in [18, 90], years of schooling in [0, 25], a log income
in [5, 15], a dummy, a count; outcome bounds [-10, 14]), with homoskedastic Student t(3)
errors (``t3``) or heteroskedastic normal errors whose s.d. grows from 0.5 to 1.5 with
age (``hetero``). The target is the population coefficient vector: the design's slopes
and the intercept ``2 - slopes' E[x]`` (``E[x]`` of the simulated laws).

Each replication fits ``engine="ssp"`` twice on the same data, with ``robust=False``
(intervals ``plugin``, ``pboot``, ``pboot_basic``) and ``robust=True`` (``sandwich`` and
the bootstrap with the meat, reported as ``pboot_r`` and ``pboot_basic_r``), at the
default budget split unless ``--split`` names another (given the private ranges'
default share, like the default split: :func:`with_ranges`). Per cell and method: coverage
averaged over the p coefficients (``coverage``), the lowest coefficient's
(``cov_min``), the mean interval length relative to the plug-in's (``rel_length``), the
share of fits that warned (``warned``), and the root mean squared error of the estimate
relative to the default split's (``--split`` comparisons only). With R replications the
binomial s.e. of a 95% coverage is ``sqrt(0.95 * 0.05 / R)`` (0.0126 at R = 300).

Also printed (and written to ``ssp_coverage_by_floor.csv``): the coverage of the
non-robust fits over all cells by the number of eigenvalues of ``X'X~`` raised to the
floor and by the delta-method diagnostic ``2 s_G sqrt(p) / lambda_min(G~+)``.

Run:  python validation/ssp_coverage.py --reps 300 --out validation/results
      (about 15 minutes on one core; the results in validation/results)
      python validation/ssp_coverage.py --reps 200 --compare-splits --n 10000 50000 \
          --p 4 6 --mu 1 --errors t3 --splits delta thirds "yty 0.15" "yty 0.02" \
          "xty 0.65" --out validation/results      (about 10 minutes)
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

import dpreg
from dpreg.exceptions import ConvergenceWarning
from dpreg.privacy.ranges import DEFAULT_RANGES_SHARE
from dpreg.studies.robustness import natural_units_design

#: Population means of the covariates of natural_units_design (in its order).
_MEANS = {"age": 40.0, "educ": 13.0, "loginc": 10.0, "female": 0.4,
          "kids": float(np.sum(np.minimum(np.arange(200), 10)
                               * stats.poisson.pmf(np.arange(200), 1.5)))}
SPLITS = {
    "default": None,
    "delta": "proportional to the sensitivities (memo)",
    "thirds": {"gram": 1 / 3, "xty": 1 / 3, "yty": 1 / 3},
    "yty 0.15": {"gram": 0.35, "xty": 0.5, "yty": 0.15},
    "yty 0.30": {"gram": 0.29, "xty": 0.41, "yty": 0.30},
    "gram 0.5": {"gram": 0.5, "xty": 0.35, "yty": 0.15},
    "yty 0.02": {"gram": 0.405, "xty": 0.575, "yty": 0.02},
    "xty 0.65": {"gram": 0.3, "xty": 0.65, "yty": 0.05},
}


def with_ranges(split: dict) -> dict:
    """A split of the engine's releases with the private ranges' default share added
    (the others scaled to the rest): a ``budget_split`` without a ``"ranges"`` share
    keeps the declared boxes, so a comparison with the default (which learns ranges)
    would compare range choices, not splits."""
    rest = 1.0 - DEFAULT_RANGES_SHARE
    return {**{k: v * rest for k, v in split.items()}, "ranges": DEFAULT_RANGES_SHARE}


def population_truth(data: pd.DataFrame, truth: np.ndarray) -> np.ndarray:
    """The design's slopes and the population intercept ``2 - slopes' E[x]``."""
    cols = [c for c in data.columns if c != "y"]
    slopes = truth[1:]
    means = np.array([_MEANS[c.rstrip("0123456789")] for c in cols])
    return np.r_[2.0 - slopes @ means, slopes]


def _delta_split(formula, data, bounds):
    """mu_k^2 proportional to Delta_k, from the public bounds (the memo's default)."""
    from dpreg.engines.ssp import SSPSettings, ssp_sensitivities
    from dpreg.fits.ssp import ssp_plan

    model = dpreg.DPRegression.from_formula(formula, data, bounds=bounds)
    opts = dpreg.fits.registry.fit_options(engine="ssp")
    cond = model.problem.coordinates(opts.condition)
    settings, _ = ssp_plan(model.problem, opts, cond)
    sens = ssp_sensitivities(SSPSettings(settings.x_bound, settings.y_bound), 2)
    total = sum(sens.values())
    return {k: v / total for k, v in sens.items()}


def one_fit(formula, data, bounds, mu, truth, seed, **kw):
    """One fit: ``(estimate, {method: (covered, length)}, facts)``, where ``facts``
    holds whether it warned, its floored eigenvalues and its delta-method ratio."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = dpreg.dp_ols(formula, data, bounds=bounds, engine="ssp", mu=mu,
                           random_state=seed, **kw)
    facts = {"warned": any(issubclass(w.category, ConvergenceWarning) for w in caught),
             "floored": res.settings.value("n_floored"),
             "ratio": res.settings.value("delta_ratio")}
    out = {}
    for name in res.inferences:
        ci = res.conf_int(method=name).to_numpy()
        out[name] = ((ci[:, 0] <= truth) & (truth <= ci[:, 1]), ci[:, 1] - ci[:, 0])
    return res.params.to_numpy(), out, facts


def run_cell(errors, n, p, mu, reps, seed, split=None, robust_too=True):
    rows = []
    rng = np.random.default_rng([seed, n, p, int(mu * 100), errors == "hetero"])
    for r in range(reps):
        data, formula, bounds, truth = natural_units_design(n, p, rng, family="linear",
                                                            errors=errors)
        beta = population_truth(data, truth)
        kw = {}
        if split == "delta":
            kw["budget_split"] = with_ranges(_delta_split(formula, data, bounds))
        elif split is not None:
            kw["budget_split"] = with_ranges(split)
        est, out, facts = one_fit(formula, data, bounds, mu, beta,
                                  np.random.SeedSequence([seed, r, 1]), **kw)
        rec = {"rep": r, **facts, "err": est - beta}
        for name, (cover, length) in out.items():
            rec[f"cov_{name}"] = cover
            rec[f"len_{name}"] = length
        if robust_too:
            _, out_r, facts_r = one_fit(formula, data, bounds, mu, beta,
                                        np.random.SeedSequence([seed, r, 2]), robust=True)
            rec["warned_r"] = facts_r["warned"]
            for name, (cover, length) in out_r.items():
                if name == "plugin":
                    continue
                key = name if name == "sandwich" else f"{name}_r"
                rec[f"cov_{key}"] = cover
                rec[f"len_{key}"] = length
        rows.append(rec)
    return rows


def by_floor(rows_by_cell) -> pd.DataFrame:
    """Coverage of the non-robust fits' intervals by the number of eigenvalues of X'X~
    raised to the floor (the fits the warning flags) and by the delta-method diagnostic
    ``2 s_G sqrt(p) / lambda_min(G~+)``, over every cell."""
    recs = []
    for cell, rows in rows_by_cell:
        for r in rows:
            recs.append({**cell, "floored": r["floored"], "ratio": r["ratio"],
                         **{m: float(np.mean(r[f"cov_{m}"]))
                            for m in ("plugin", "pboot", "pboot_basic")}})
    frame = pd.DataFrame(recs)
    frame["diagnostic"] = pd.cut(frame["ratio"], [0, 0.1, 0.5, np.inf],
                                 labels=["< 0.1", "0.1-0.5", "> 0.5"])
    keys = ["floored", "diagnostic"]
    groups = frame.groupby(keys, observed=True)
    out = groups[["plugin", "pboot", "pboot_basic"]].mean()
    out["fits"] = groups.size()
    return out.reset_index()


def summarize(rows, cell):
    methods = [k[4:] for k in rows[0] if k.startswith("cov_")]
    out = []
    base = np.mean([r["len_plugin"] for r in rows], axis=0)
    for m in methods:
        cover = np.array([r[f"cov_{m}"] for r in rows], dtype=float)
        length = np.mean([r[f"len_{m}"] for r in rows], axis=0)
        warned_key = "warned_r" if m.endswith("_r") or m == "sandwich" else "warned"
        out.append({**cell, "method": m, "coverage": cover.mean(),
                    "cov_min": cover.mean(axis=0).min(),
                    "rel_length": float(np.mean(length / base)),
                    "warned": float(np.mean([r.get(warned_key, r["warned"]) for r in rows])),
                    "rmse": np.sqrt(np.mean([r["err"] ** 2 for r in rows], axis=0)),
                    "length": length})
    return out


def relative_to_default(frame: pd.DataFrame) -> pd.DataFrame:
    """``rel_rmse`` and ``rel_plugin_length``: per coefficient against the default split
    in the same cell, averaged over the coefficients."""
    keys = ["errors", "n", "p", "mu"]
    out = []
    for _, cell in frame.groupby(keys):
        base = cell[(cell.split == "default") & (cell.method == "plugin")].iloc[0]
        for _, row in cell.iterrows():
            out.append({**row.to_dict(),
                        "rel_rmse": float(np.mean(row["rmse"] / base["rmse"])),
                        "rel_plugin_length": float(np.mean(row["length"] / base["length"]))})
    return pd.DataFrame(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--n", type=int, nargs="+", default=[2000, 10000, 50000])
    ap.add_argument("--p", type=int, nargs="+", default=[4, 6])
    ap.add_argument("--mu", type=float, nargs="+", default=[0.5, 2.0])
    ap.add_argument("--errors", nargs="+", default=["t3", "hetero"])
    ap.add_argument("--compare-splits", action="store_true",
                    help="RMSE and interval length of the default split against the memo's "
                         "(proportional to the sensitivities) and equal thirds")
    ap.add_argument("--splits", nargs="+", default=list(SPLITS), choices=list(SPLITS),
                    help="with --compare-splits: which splits (default all)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore", dpreg.exceptions.SeedReuseWarning)
    t0 = time.perf_counter()
    table, cells = [], []
    for errors in args.errors:
        for n in args.n:
            for p in args.p:
                for mu in args.mu:
                    cell = {"errors": errors, "n": n, "p": p, "mu": mu}
                    if args.compare_splits:
                        for name in dict.fromkeys(["default", *args.splits]):
                            split = SPLITS[name]
                            sp = "delta" if name == "delta" else split
                            rows = run_cell(errors, n, p, mu, args.reps, args.seed,
                                            split=sp, robust_too=False)
                            table += summarize(rows, {**cell, "split": name})
                    else:
                        rows = run_cell(errors, n, p, mu, args.reps, args.seed)
                        table += summarize(rows, cell)
                        cells.append((cell, rows))
                    print(f"{cell} done at {time.perf_counter() - t0:.0f}s", flush=True)
    frame = pd.DataFrame(table)
    if args.compare_splits:
        frame = relative_to_default(frame)
        frame = frame[frame.method == "plugin"].drop(columns=["rel_length"])
    frame = frame.drop(columns=["rmse", "length"])
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(frame.round(3).to_string(index=False))
    floors = None
    if cells:
        floors = by_floor(cells)
        print("\nCoverage by eigenvalues floored (all cells, robust=False):")
        print(floors.round(3).to_string(index=False))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        name = "ssp_splits.csv" if args.compare_splits else "ssp_coverage.csv"
        frame.to_csv(args.out / name, index=False)
        if floors is not None:
            floors.to_csv(args.out / "ssp_coverage_by_floor.csv", index=False)


if __name__ == "__main__":
    main()
