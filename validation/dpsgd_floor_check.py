"""DP-SGD's eigenvalue-floor check as a test (issue 26, item 1): its measured curve.

The check: a coefficient's plug-in standard error is *decided by the floor* when it
changes by more than ``FLOOR_SENSITIVITY`` (0.2, :mod:`dpreg.inference.diagnostics`)
when the floor of the private Hessian's eigenvalues doubles, and its random-scaling
interval is more than ``FLOOR_RS_RATIO`` (1.1) times as long as its plug-in interval
(the gate: a plug-in that the Hessian's noise made long, not the floor short, stays
below it); the fit then warns, names the coefficient, and (without ``cov_type=``)
switches its default interval to random scaling. On textbook cells
(:mod:`dpreg.studies.textbook`: the wage and fertility equations and the participation
and approval logits, n = 2,000 and 10,000, mu = 5 and 10, declared and private ranges,
``--reps`` fits each) every fit records, per coefficient, the floor's relative change,
both intervals, and the other checks. For each threshold ``t`` on the change and
``r`` on the ratio (``r = 0``: no gate, the rule before) the table re-applies the rule
(the other checks as they fired) and gives: the share of fits unwarned; the check's
false-alarm rate (coefficients named where their default interval covers the truth
within 3 MC s.e. over the cell's fits) and power (named where it does not); the number
of (cell, coefficient) pairs whose unwarned fits' default intervals undercover (below
0.95 by more than 3 MC s.e., at least 10 unwarned fits), with their mean length over
the non-private interval; and the number of cells whose default intervals cover (within
3 MC s.e., all coefficients pooled) with over 10% of fits warned, and of cells that do
not cover with under 95% warned (issue 26's targets).

    python validation/dpsgd_floor_check.py --reps 100 --jobs 2
    python validation/dpsgd_floor_check.py --from-raw /tmp/dpsgd_floor_check_raw.csv
    python validation/dpsgd_floor_check.py --budget-grid --reps 100 --jobs 2

Writes ``validation/results/dpsgd_floor_check.csv`` (the curve) and
``validation/results/dpsgd_floor_check_cells.csv`` (per cell, the rule before and now);
with ``--budget-grid``, the fit's rule across ``n mu`` at the learned ranges
(:data:`BUDGET_CELLS`, :func:`budget_table`) in
``validation/results/dpsgd_floor_check_budget.csv``.
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
from dpreg.inference.diagnostics import FLOOR_RS_RATIO, FLOOR_SENSITIVITY, RATIO_LOWER

CELLS = [(d, f, n, mu, r) for d, f in (("wage", "linear"), ("fertility", "linear"),
                                        ("participation", "logistic"),
                                        ("approval", "logistic"))
         for n in (2000, 10_000) for mu in (5.0, 10.0) for r in ("declared", "private")]
CELL = ["design", "n", "mu", "ranges"]
#: ``--budget-grid``: the learned ranges (the default) across ``n mu`` from 2,500 to
#: 20,000, two ``(n, mu)`` each, with two designs the thresholds were not set on (the
#: participation logit with a year factor, p = 12, and a rare-event logit of ~3% ones).
BUDGET_DESIGNS = (("fertility", "linear"), ("participation", "logistic"),
                  ("approval", "logistic"), ("participation_years", "logistic"),
                  ("rare_approval", "logistic"))
BUDGET_CELLS = [(d, f, n, mu, "private") for d, f in BUDGET_DESIGNS
                for n, mu in ((500, 5.0), (2500, 1.0), (1000, 5.0), (5000, 1.0),
                              (1000, 10.0), (5000, 2.0), (2000, 10.0), (10_000, 2.0))]
#: The seed's design key (the first cells' order, so their recorded fits reproduce).
_DESIGN_KEY = {"wage": 0, "fertility": 8, "participation": 16, "approval": 24,
               "participation_years": 32, "rare_approval": 40}
THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
GATES = (0.0, 1.0, 1.1, 1.2, 1.3, 1.4, 1.6)


def replicate(design, family, n, mu, ranges, rep) -> list[dict]:
    """One data set, one DP-SGD fit at the defaults, the non-private fit."""
    from dpreg.frontend.model import DPRegression
    from dpreg.studies.robustness import FAMILY_FITS
    from dpreg.studies.textbook import simulate_design

    seed = np.random.SeedSequence([20261127, _DESIGN_KEY[design], n, int(mu),
                                   ranges == "private", rep])
    data_seed, fit_seed = seed.spawn(2)
    data, formula, bounds, levels, truth = simulate_design(
        design, n, np.random.default_rng(data_seed))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = FAMILY_FITS[family](formula, data, bounds=bounds, levels=levels or None,
                                  mu=mu, engine="dpsgd", ranges=ranges,
                                  random_state=int(fit_seed.generate_state(1)[0]))
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    report = res.convergence
    other = bool(report.unconverged or report.plugin_too_long or report.curvature_biased
                 or report.public) or any("eigenvalue floor" not in m for m in messages)
    oracle = DPRegression.from_formula(formula, data, family=family, bounds=bounds,
                                       levels=levels or None).fit_oracle()
    plug, rs, ref = res.conf_int(method="plugin"), res.conf_int(method="rs"), \
        oracle.conf_int()
    rows = []
    for name in res.params.index:
        width = ref.loc[name, 1] - ref.loc[name, 0]
        rows.append(dict(
            design=design, n=n, mu=mu, ranges=ranges, rep=rep, coef=name,
            floor_change=report.floor_change.get(name, 0.0), other=other,
            unconverged=bool(report.unconverged),
            plugin_covers=plug.loc[name, 0] <= truth[name] <= plug.loc[name, 1],
            rs_covers=rs.loc[name, 0] <= truth[name] <= rs.loc[name, 1],
            plugin_length=(plug.loc[name, 1] - plug.loc[name, 0]) / width,
            rs_length=(rs.loc[name, 1] - rs.loc[name, 0]) / width))
    return rows


def apply_rule(raw: pd.DataFrame, t: float, r: float) -> pd.DataFrame:
    """The records with the rule at thresholds ``t`` (change) and ``r`` (ratio gate)."""
    d = raw.copy()
    ratio = d["rs_length"] / d["plugin_length"]
    d["named"] = (d["floor_change"] > t) & (ratio > r)
    fit_named = d.groupby(CELL + ["rep"])["named"].transform("max")
    switched = fit_named & ~d["unconverged"]  # the default moves to random scaling
    d["covers"] = np.where(switched, d["rs_covers"], d["plugin_covers"])
    d["length"] = np.where(switched, d["rs_length"], d["plugin_length"])
    d["warned"] = fit_named | d["other"]
    return d


def by_cell(d: pd.DataFrame) -> pd.DataFrame:
    """Per cell: fits warned, coverage (all, unwarned) and whether it covers."""
    fits = d.groupby(CELL + ["rep"])["warned"].first().groupby(CELL).mean()
    cov = d.groupby(CELL)["covers"].agg(["mean", "size"])
    out = pd.DataFrame({"warned": fits, "coverage": cov["mean"],
                        "coverage_unwarned": d[~d["warned"]].groupby(CELL)["covers"].mean()})
    out["covers"] = cov["mean"] >= 0.95 - 3 * np.sqrt(0.0475 / cov["size"])
    return out


def characteristic(raw: pd.DataFrame, t: float, r: float) -> dict:
    """The rule at thresholds ``t`` and ``r``, re-applied to the recorded fits."""
    d = apply_rule(raw, t, r)
    pairs = d.groupby(CELL + ["coef"])["covers"].agg(["mean", "size"])
    ok = (pairs["mean"] >= 0.95 - 3 * np.sqrt(0.0475 / pairs["size"])).rename("pair_ok")
    d = d.join(ok, on=CELL + ["coef"])
    quiet = d[~d["warned"]]
    unw = quiet.groupby(CELL + ["coef"])["covers"].agg(["mean", "size"])
    short = (unw["mean"] < 0.95 - 3 * np.sqrt(0.0475 / unw["size"])) & (unw["size"] >= 10)
    cells = by_cell(d)
    fits = d.groupby(CELL + ["rep"])["warned"].first()
    return dict(threshold=t, ratio_gate=r,
                rule="the fit's" if (t, r) == (FLOOR_SENSITIVITY, FLOOR_RS_RATIO) else "",
                fits_unwarned=1 - fits.mean(),
                false_alarm=d.loc[d["pair_ok"], "named"].mean(),
                power=d.loc[~d["pair_ok"], "named"].mean(),
                undercovering_unwarned=int(short.sum()),
                coverage_unwarned=quiet["covers"].mean(),
                length_unwarned=quiet["length"].mean(),
                covering_cells_over_10pc_warned=int((cells["covers"]
                                                     & (cells["warned"] > 0.1)).sum()),
                failing_cells_under_95pc_warned=int((~cells["covers"]
                                                     & (cells["warned"] < 0.95)).sum()))


def budget_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per ``--budget-grid`` cell, under the fit's rule: fits warned (by any check and
    by the floor check alone), the default interval's coverage over all fits and the
    unwarned ones, and over the (coefficient, fit) pairs the floor check named, the
    plug-in's and random scaling's coverage."""
    d = apply_rule(raw, FLOOR_SENSITIVITY, FLOOR_RS_RATIO)
    d["floor_only"] = d.groupby(CELL + ["rep"])["named"].transform("max") & ~d["other"]
    fits = d.groupby(CELL + ["rep"])[["warned", "floor_only"]].first().groupby(CELL).mean()
    named = d[d["named"]].groupby(CELL)
    out = pd.DataFrame({
        "n_mu": d.groupby(CELL)["n"].first() * d.groupby(CELL)["mu"].first(),
        "warned": fits["warned"], "warned_floor_only": fits["floor_only"],
        "coverage": d.groupby(CELL)["covers"].mean(),
        "coverage_unwarned": d[~d["warned"]].groupby(CELL)["covers"].mean(),
        "named_pairs": named.size(),
        "named_plugin": named["plugin_covers"].mean(),
        "named_rs": named["rs_covers"].mean()}).fillna({"named_pairs": 0})
    out["named_pairs"] = out["named_pairs"].astype(int)
    return out.sort_values(["n_mu", "design", "n"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results")))
    parser.add_argument("--raw", default="/tmp/dpsgd_floor_check_raw.csv",
                        help="where the per-coefficient records go")
    parser.add_argument("--from-raw", help="re-read these records instead of fitting")
    parser.add_argument("--budget-grid", action="store_true",
                        help="the learned ranges across n mu (BUDGET_CELLS): writes "
                             "dpsgd_floor_check_budget.csv")
    args = parser.parse_args()
    t0 = time.perf_counter()
    if args.budget_grid:
        if args.from_raw:
            raw = pd.read_csv(args.from_raw)
        else:
            out = Parallel(n_jobs=args.jobs, batch_size=4)(
                delayed(replicate)(*cell, rep) for cell in BUDGET_CELLS
                for rep in range(args.reps))
            raw = pd.DataFrame([row for rows in out for row in rows])
            raw.to_csv(Path(args.raw), index=False)
        table = budget_table(raw).round(4)
        table.to_csv(Path(args.out) / "dpsgd_floor_check_budget.csv")
        print(table.to_string())
        print(f"{(time.perf_counter() - t0) / 60:.1f} min")
        return
    if args.from_raw:
        raw = pd.read_csv(args.from_raw)
    else:
        out = Parallel(n_jobs=args.jobs, batch_size=4)(
            delayed(replicate)(*cell, rep) for cell in CELLS for rep in range(args.reps))
        raw = pd.DataFrame([row for rows in out for row in rows])
        raw.to_csv(Path(args.raw), index=False)
    grid = [(t, FLOOR_RS_RATIO) for t in THRESHOLDS] + \
        [(FLOOR_SENSITIVITY, r) for r in GATES if r != FLOOR_RS_RATIO]
    table = pd.DataFrame([characteristic(raw, t, r) for t, r in grid]).round(4)
    table.to_csv(Path(args.out) / "dpsgd_floor_check.csv", index=False)
    cells = by_cell(apply_rule(raw, FLOOR_SENSITIVITY, 0.0)).merge(
        by_cell(apply_rule(raw, FLOOR_SENSITIVITY, FLOOR_RS_RATIO)), left_index=True,
        right_index=True, suffixes=("", "_gated"))
    cells.round(4).to_csv(Path(args.out) / "dpsgd_floor_check_cells.csv")
    ratio = raw["rs_length"] / raw["plugin_length"]
    long = raw[ratio < RATIO_LOWER]
    print(f"plug-in over {1 / RATIO_LOWER:g} times random scaling: {len(long)} pairs in "
          f"{long.groupby(CELL).ngroups} cells; the plug-in covered "
          f"{long['plugin_covers'].mean():.3f}, random scaling {long['rs_covers'].mean():.3f}")
    print(table.to_string(index=False))
    print(cells.round(3).to_string())
    print(f"{raw.groupby(CELL).ngroups} cells, {raw.groupby(CELL)['rep'].nunique().max()} "
          "fits each; "
          f"{(time.perf_counter() - t0) / 60:.1f} min")


if __name__ == "__main__":
    main()
