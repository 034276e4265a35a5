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
with ``--budget-grid``, the fit's rule across ``n mu`` at the learned ranges and in the
codebook boxes (:data:`BUDGET_CELLS`, :func:`budget_table`, before and after the default
interval became ``"plugin_rs"`` and the finding alone a note) in
``validation/results/dpsgd_floor_check_budget.csv``, and the coverage of the pairs named
where the check was the only finding (:func:`floor_alone_table`) in
``validation/results/dpsgd_floor_check_alone.csv``; with ``--gate-cap``, the rule against
the gate lifted above a floor change of 0.35 (:func:`cap_table`: warned share, coverage
and far misses, :data:`CAP_CELLS`) in ``validation/results/dpsgd_floor_check_cap.csv``.

    python validation/dpsgd_floor_check.py --gate-cap --reps 100 --jobs 2
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
from dpreg.inference.diagnostics import (
    FLOOR_NOTE_MIN_N_MU,
    FLOOR_RS_RATIO,
    FLOOR_SENSITIVITY,
    RATIO_LOWER,
)

CELLS = [(d, f, n, mu, r) for d, f in (("wage", "linear"), ("fertility", "linear"),
                                        ("participation", "logistic"),
                                        ("approval", "logistic"))
         for n in (2000, 10_000) for mu in (5.0, 10.0) for r in ("declared", "private")]
CELL = ["design", "n", "mu", "ranges"]
#: ``--budget-grid``: the learned ranges (the default) across ``n mu`` from 1,000 to
#: 20,000, two ``(n, mu)`` each, with two designs the thresholds were not set on (the
#: participation logit with a year factor, p = 12, and a rare-event logit of ~3% ones).
BUDGET_DESIGNS = (("fertility", "linear"), ("participation", "logistic"),
                  ("approval", "logistic"), ("participation_years", "logistic"),
                  ("rare_approval", "logistic"))
BUDGET_CELLS = [(d, f, n, mu, r) for r in ("private", "declared") for d, f in BUDGET_DESIGNS
                for n, mu in ((500, 2.0), (1000, 1.0), (500, 5.0), (2500, 1.0),
                              (1000, 5.0), (5000, 1.0),
                              (1000, 10.0), (5000, 2.0), (2000, 10.0), (10_000, 2.0))]
#: The seed's design key (the first cells' order, so their recorded fits reproduce).
_DESIGN_KEY = {"wage": 0, "fertility": 8, "participation": 16, "approval": 24,
               "participation_years": 32, "rare_approval": 40}
THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
GATES = (0.0, 1.0, 1.1, 1.2, 1.3, 1.4, 1.6)
#: Floor changes above which :func:`cap_table` lifts the gate (candidates, not the rule).
GATE_CAPS = (0.35,)
#: ``--gate-cap``: the budget grid's designs and the wage equation, at ``n mu`` of 2,500
#: and 5,000 (where the gate decides most; the same seeds as the budget grid's cells).
CAP_CELLS = [(d, f, n, mu, r) for r in ("private", "declared")
             for d, f in (("wage", "linear"), *BUDGET_DESIGNS)
             for n, mu in ((500, 5.0), (2500, 1.0), (1000, 5.0), (5000, 1.0))]


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
    estimate = oracle.params

    def far(ci, name):
        """The interval misses the non-private estimate by over 3 of its half-lengths
        (from its nearer end, as the textbook study counts far misses)."""
        lo, hi = ci.loc[name, 0], ci.loc[name, 1]
        return bool(max(lo - estimate[name], estimate[name] - hi) > 1.5 * (hi - lo))

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
            rs_length=(rs.loc[name, 1] - rs.loc[name, 0]) / width,
            plugin_far=far(plug, name), rs_far=far(rs, name)))
    return rows


def apply_rule(raw: pd.DataFrame, t: float, r: float, *, note_from: float | None = None,
               mixed: bool = True, cap: float | None = None) -> pd.DataFrame:
    """The records with the rule at thresholds ``t`` (change) and ``r`` (ratio gate).

    A fit the check names switches its default interval (unless a path check flagged
    it): to random scaling's for the named coefficients and the plug-in's for the others
    (``mixed``, the fit's ``"plugin_rs"``), or to random scaling's for every coefficient
    (``mixed=False``, the rule before it). With ``note_from``, the check's finding is a
    note (the fit unwarned) at the learned ranges from that ``n mu`` when nothing else
    fired (the fit's :data:`~dpreg.inference.diagnostics.FLOOR_NOTE_MIN_N_MU`); ``None``:
    it always warns (the rule before). With ``cap``, a change above it names the
    coefficient whatever the ratio (the gate lifted where the floor moves the standard
    error most; a candidate measured by :func:`cap_table`).
    """
    d = raw.copy()
    ratio = d["rs_length"] / d["plugin_length"]
    gate = ratio > r if cap is None else (ratio > r) | (d["floor_change"] > cap)
    d["named"] = (d["floor_change"] > t) & gate
    fit_named = d.groupby(CELL + ["rep"])["named"].transform("max")
    switched = fit_named & ~d["unconverged"]
    use_rs = switched & (d["named"] if mixed else True)
    d["covers"] = np.where(use_rs, d["rs_covers"], d["plugin_covers"])
    d["length"] = np.where(use_rs, d["rs_length"], d["plugin_length"])
    if "plugin_far" in d:  # records before the far misses were kept lack them
        d["far_miss"] = np.where(use_rs, d["rs_far"], d["plugin_far"])
    d["floor_only"] = fit_named & ~d["other"]
    noted = np.zeros(len(d), dtype=bool) if note_from is None else (
        d["floor_only"] & (d["ranges"] == "private") & (d["n"] * d["mu"] >= note_from))
    d["warned"] = (fit_named & ~noted) | d["other"]
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
    d = apply_rule(raw, t, r, note_from=FLOOR_NOTE_MIN_N_MU)
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
    """Per ``--budget-grid`` cell: fits warned *before* (random scaling's intervals for
    every coefficient of a fit the floor check names, and a warning) and *now* (the
    fit's rule: random scaling's for the named coefficients, the plug-in's for the
    others, and a note where :func:`apply_rule`'s ``note_from`` holds); the share of fits
    where the floor check was the only finding; the default interval's coverage over all
    fits and over the unwarned ones, before and now, and the unwarned intervals' mean
    length over the non-private one (now); and over the (coefficient, fit) pairs the
    check named in fits where it was the only finding, the plug-in's and random
    scaling's coverage."""
    before = apply_rule(raw, FLOOR_SENSITIVITY, FLOOR_RS_RATIO, mixed=False)
    d = apply_rule(raw, FLOOR_SENSITIVITY, FLOOR_RS_RATIO, note_from=FLOOR_NOTE_MIN_N_MU)
    fits = d.groupby(CELL + ["rep"])[["warned", "floor_only"]].first().groupby(CELL).mean()
    fits_before = before.groupby(CELL + ["rep"])["warned"].first().groupby(CELL).mean()
    alone = d[d["named"] & d["floor_only"]].groupby(CELL)
    out = pd.DataFrame({
        "n_mu": d.groupby(CELL)["n"].first() * d.groupby(CELL)["mu"].first(),
        "warned_before": fits_before, "warned": fits["warned"],
        "floor_only": fits["floor_only"],
        "coverage_before": before.groupby(CELL)["covers"].mean(),
        "coverage": d.groupby(CELL)["covers"].mean(),
        "coverage_unwarned_before":
            before[~before["warned"]].groupby(CELL)["covers"].mean(),
        "coverage_unwarned": d[~d["warned"]].groupby(CELL)["covers"].mean(),
        "length_unwarned": d[~d["warned"]].groupby(CELL)["length"].mean(),
        "alone_pairs": alone.size(),
        "alone_plugin": alone["plugin_covers"].mean(),
        "alone_rs": alone["rs_covers"].mean()}).fillna({"alone_pairs": 0})
    out["alone_pairs"] = out["alone_pairs"].astype(int)
    return out.sort_values(["ranges", "n_mu", "design", "n"], ascending=[False, True,
                                                                          True, True])


def floor_alone_table(raw: pd.DataFrame) -> pd.DataFrame:
    """The (coefficient, fit) pairs the floor check named in fits where it was the only
    finding, pooled by ranges and ``n mu``: the plug-in's and random scaling's coverage,
    and the other coefficients' of those fits (what the note rests on)."""
    d = apply_rule(raw, FLOOR_SENSITIVITY, FLOOR_RS_RATIO)
    d = d[d["floor_only"]].assign(n_mu=d["n"] * d["mu"])
    rows = []
    for (ranges, n_mu), g in d.groupby(["ranges", "n_mu"]):
        named, other = g[g["named"]], g[~g["named"]]
        rows.append(dict(ranges=ranges, n_mu=n_mu, fits=g.groupby(CELL + ["rep"]).ngroups,
                         named_pairs=len(named), named_plugin=named["plugin_covers"].mean(),
                         named_rs=named["rs_covers"].mean(), other_pairs=len(other),
                         other_plugin=other["plugin_covers"].mean(),
                         other_rs=other["rs_covers"].mean()))
    return pd.DataFrame(rows).sort_values(["ranges", "n_mu"], ascending=[False, True])


def cap_table(raw: pd.DataFrame, caps=GATE_CAPS) -> pd.DataFrame:
    """Per ``--gate-cap`` cell, the fit's rule against the gate lifted above each
    floor change in ``caps``: fits warned, the default interval's coverage over all fits
    and over the unwarned ones, and the share of unwarned (coefficient, fit) pairs whose
    interval misses the non-private estimate by more than 3 of its half-lengths (issue
    26's far misses)."""
    if "plugin_far" not in raw:
        raise ValueError("these records predate the far misses (no 'plugin_far' column): "
                         "rerun with --gate-cap instead of --from-raw")
    parts = []
    for cap in (None, *caps):
        d = apply_rule(raw, FLOOR_SENSITIVITY, FLOOR_RS_RATIO, note_from=FLOOR_NOTE_MIN_N_MU,
                       cap=cap)
        cells = by_cell(d).drop(columns="covers")
        cells["far_miss"] = d[~d["warned"]].groupby(CELL)["far_miss"].mean()
        tag = "" if cap is None else f"_cap{cap:g}"
        parts.append(cells.add_suffix(tag))
    out = pd.concat(parts, axis=1)
    out.insert(0, "n_mu", raw.groupby(CELL)["n"].first() * raw.groupby(CELL)["mu"].first())
    return out.sort_values(["ranges", "n_mu"], ascending=[False, True])


def records(cells, args) -> pd.DataFrame:
    """The per-coefficient records of ``cells`` (``--reps`` fits each, on ``--jobs``
    workers, saved to ``--raw``), or those of ``--from-raw``."""
    if args.from_raw:
        return pd.read_csv(args.from_raw)
    out = Parallel(n_jobs=args.jobs, batch_size=4)(
        delayed(replicate)(*cell, rep) for cell in cells for rep in range(args.reps))
    raw = pd.DataFrame([row for rows in out for row in rows])
    raw.to_csv(Path(args.raw), index=False)
    return raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results")))
    parser.add_argument("--raw", default="/tmp/dpsgd_floor_check_raw.csv",
                        help="where the per-coefficient records go")
    parser.add_argument("--from-raw", help="re-read these records instead of fitting")
    parser.add_argument("--gate-cap", action="store_true",
                        help="the gate lifted above a floor change of GATE_CAPS, on "
                             "CAP_CELLS: writes dpsgd_floor_check_cap.csv")
    parser.add_argument("--budget-grid", action="store_true",
                        help="the learned ranges across n mu (BUDGET_CELLS): writes "
                             "dpsgd_floor_check_budget.csv")
    args = parser.parse_args()
    t0 = time.perf_counter()
    if args.budget_grid:
        raw = records(BUDGET_CELLS, args)
        table = budget_table(raw).round(4)
        table.to_csv(Path(args.out) / "dpsgd_floor_check_budget.csv")
        alone = floor_alone_table(raw).round(4)
        alone.to_csv(Path(args.out) / "dpsgd_floor_check_alone.csv", index=False)
        print(table.to_string())
        print(alone.to_string(index=False))
        d = apply_rule(raw, FLOOR_SENSITIVITY, FLOOR_RS_RATIO)
        noted = d[d["named"] & d["floor_only"] & (d["ranges"] == "private")
                  & (d["n"] * d["mu"] >= FLOOR_NOTE_MIN_N_MU)]
        print(f"named where the floor was the only finding, learned ranges, n mu >= "
              f"{FLOOR_NOTE_MIN_N_MU:,}: {len(noted)} pairs, random scaling covered "
              f"{noted['rs_covers'].mean():.3f} (FLOOR_NOTE_COVERAGE), the plug-in "
              f"{noted['plugin_covers'].mean():.3f}")
        print(f"{(time.perf_counter() - t0) / 60:.1f} min")
        return
    if args.gate_cap:
        raw = records(CAP_CELLS, args)
        caps = cap_table(raw).round(4)
        caps.to_csv(Path(args.out) / "dpsgd_floor_check_cap.csv")
        print(caps.to_string())
        print(f"{(time.perf_counter() - t0) / 60:.1f} min")
        return
    raw = records(CELLS, args)
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
