"""The joint RS / batch-means check of LDP-SGD (issue 26: a check without power on
``fair``): its false alarms where the intervals cover and its power where they do not.

Designs (LDP-SGD at its defaults; ``--reps`` fits each):

* ``fair main``: statsmodels' ``fair`` (n = 6,366), the main-effects OLS of
  ``validation/real_data.py`` (age, log years married, children and schooling: correlated,
  far from their boxes' centres) at mu = 5 and 10; the target is the non-private
  estimate (``dpreg.oracle``);
* ``sim``: ``simulate_linear`` (N(0, 1) covariates in (-4, 4), outcome in (-12, 12), no
  intercept) at mu = 2, n = 20,000 with p = 3 and n = 5,000 with p = 5;
* ``table1``: the ldp-sgd paper's Huber design (Mallows weights, x = (1, s), s ~ N(0,
  I_3)), n = 20,000 and 5,000, the paper's budget at mu = 1 (plug-in, the study's
  method);
* ``logit``: the paper's logistic design, n = 100,000, mu = 2 (plug-in).

Per design: coverage of the default interval over all fits, the share of fits the joint
check flags, the share unwarned (no check fired) and the coverage of the unwarned fits,
and the same two numbers without the joint check (the scalar checks alone); then the
share flagged with the limit scaled by 1-1.3 (the threshold's operating curve).

    python validation/ldp_joint_check.py --reps 100 > validation/results/ldp_joint_check.txt
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import dpreg
from dpreg.datasets import simulate_ldp_design
from dpreg.exceptions import ConvergenceWarning
from dpreg.inference.diagnostics import (
    BM_RATIO_LIMIT,
    BM_RATIO_LOWER,
    RATIO_LIMIT,
    RS_HALVES_LIMIT,
)

sys.path.insert(0, str(Path(__file__).parent))
import real_data  # noqa: E402


def _fit(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = fn(*args, **kwargs)
    return res, any(issubclass(w.category, ConvergenceWarning) for w in caught)


def _cover(res, truth) -> float:
    ci = res.conf_int().to_numpy()
    t = np.asarray(truth, dtype=float)
    return float(np.mean((ci[:, 0] <= t) & (t <= ci[:, 1])))


def one(design: str, seed: int, fair, fair_ref):
    if design.startswith("fair main"):
        mu = float(design.split("mu ")[1])
        bounds = {k: v for k, v in real_data.BOUNDS.items() if k in real_data.MAIN_FORMULA}
        res, warned = _fit(dpreg.dp_ols, real_data.MAIN_FORMULA, fair, mu=mu, bounds=bounds,
                           engine="ldp_sgd", random_state=seed)
        truth = fair_ref
    elif design.startswith("sim"):
        n, p = (20_000, 3) if "20000" in design else (5_000, 5)
        sim = dpreg.datasets.simulate_linear(n, p=p, random_state=seed)
        bounds = {c: (-4.0, 4.0) for c in sim.data.columns if c != "y"} | {"y": (-12.0, 12.0)}
        res, warned = _fit(dpreg.dp_ols, sim.formula, sim.data, mu=2.0, engine="ldp_sgd",
                           bounds=bounds, random_state=seed)
        truth = sim.params
    elif design.startswith("table1"):
        n = 20_000 if "20000" in design else 5_000
        sim = simulate_ldp_design(n, family="huber", p=3, random_state=seed)
        res, warned = _fit(dpreg.dp_huber, sim.formula, sim.data, c=1.345, engine="ldp_sgd",
                           mu=math.sqrt(3), cov_type="plugin", random_state=seed + 1)
        truth = sim.params
    else:  # logit
        rng = np.random.default_rng(seed)
        n = 100_000
        s = rng.standard_normal((n, 3))
        data = pd.DataFrame(s, columns=["x1", "x2", "x3"])
        data["y"] = (rng.random(n) < 1 / (1 + np.exp(-(1 + s.sum(axis=1))))).astype(float)
        res, warned = _fit(dpreg.dp_logit, "y ~ x1 + x2 + x3", data, engine="ldp_sgd",
                           mu=math.sqrt(3) * 2, cov_type="plugin", weights="mallows",
                           random_state=seed + 1)
        truth = np.ones(4)
    report = res.convergence
    stat, limit = report.joint_bm
    joint = stat > limit
    # the scalar checks alone: the coefficients flagged by any other check
    others = bool(report.public) or any(
        not BM_RATIO_LOWER <= v <= BM_RATIO_LIMIT for v in report.bm_ratio.values()) or any(
        abs(v) > RS_HALVES_LIMIT for v in report.halves_z.values()) or bool(
        report.plugin_too_long) or any(v > RATIO_LIMIT for v in report.length_ratio.values())
    return dict(design=design, seed=seed, cover=_cover(res, truth), joint=joint,
                warned=warned, others=others, stat=stat, limit=limit)


DESIGNS = ("fair main mu 5", "fair main mu 10", "sim n20000 p3", "sim n5000 p5",
           "table1 n20000", "table1 n5000", "logit n100000")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    args = parser.parse_args()
    t0 = time.perf_counter()
    fair = real_data.fair()
    bounds = {k: v for k, v in real_data.BOUNDS.items() if k in real_data.MAIN_FORMULA}
    fair_ref = dpreg.oracle(real_data.MAIN_FORMULA, fair, bounds=bounds).params
    rows = pd.DataFrame([one(d, s, fair, fair_ref) for d in DESIGNS for s in range(args.reps)])
    out = []
    for design, g in rows.groupby("design", sort=False):
        quiet = ~g.warned
        quiet_before = ~g.others
        out.append(dict(design=design, fits=len(g), coverage=g.cover.mean(),
                        joint_flags=g.joint.mean(), stat_median=g.stat.median(),
                        limit=g.limit.median(), unwarned=quiet.mean(),
                        coverage_unwarned=g[quiet].cover.mean() if quiet.any() else np.nan,
                        unwarned_without_joint=quiet_before.mean(),
                        coverage_unwarned_without_joint=g[quiet_before].cover.mean()
                        if quiet_before.any() else np.nan))
    with pd.option_context("display.width", 200):
        print(pd.DataFrame(out).round(3).to_string(index=False))
        # the operating curve: the share flagged with the limit scaled by a factor
        curve = pd.DataFrame({f"{f:g} x limit": rows.groupby("design", sort=False).apply(
            lambda g, f=f: float(np.mean(g.stat > f * g.limit)), include_groups=False)
            for f in (1.0, 1.05, 1.1, 1.2, 1.3)})
        print("\nshare of fits flagged with the limit scaled:")
        print(curve.round(2).to_string())
    print(f"({(time.perf_counter() - t0) / 60:.1f} min: python validation/ldp_joint_check.py "
          f"--reps {args.reps})")


if __name__ == "__main__":
    main()
