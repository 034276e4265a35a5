"""Size of joint tests on private fits: a Monte Carlo check (not run by the test suite).

Linear model of dpreg.datasets.simulate_linear (n = 1000, intercept and 3 slopes), DP-SGD
at mu = 2 with bounds y in (-6, 6), x in (-3, 3), clip 6; H0: the 3 slopes equal their
true values (true, so every rejection is a type-I error), level 5%. For each replicate:

* ``K``: the random-scaling joint test of dpreg (f_test(method="rs"): finite-sample
  correction K = (S_t S_p^{-1})^{1/2}, law W(1)'(int B B')^{-1} W(1)/q);
* ``diag``: the same with the per-coefficient corrections sqrt(rho_j) on both sides;
* ``none``: no correction (E Q as is);
* ``plugin``: the plug-in Wald statistic against chi2_3 / 3;
* ``rs_t1..3``: the scalar random-scaling t tests of each slope;
* ``path_joint``, ``path_t*`` (--path): the path-only pivot, theta_bar against the
  oracle estimate with Q itself (no statistical part, no correction).

Measured on 2026-11-24 (dpreg at branch issue16, numpy 2.4, 2 cores):

    reps  steps     K      diag   none  plugin rs_t1  rs_t2  rs_t3
    400   100000    0.205  0.205  0.0   0.075  0.078  0.092  0.080
    200   1000000   0.13   0.095  0.0   0.08   0.08   0.05   0.09     (default T = n^2)

    path-only, 200 reps, 100000 steps: joint 0.205, t 0.07 / 0.12 / 0.105

The path-only pivot over-rejects as much as the corrected test, so the excess comes from
the private path's finite-T departure from the Brownian limit (which a joint statistic
compounds), not from the table of dpreg/inference/_rs_joint_table.py (checked against
independent computations in tests/inference/test_rs_joint.py) nor from the correction.
It shrinks with T. Binomial standard errors: 1.1% (400 reps), 1.5% (200 reps).

Run from the repository root (so that this checkout's dpreg is imported):

    PYTHONPATH=. python tests/results/rs_joint_size_check.py REPS STEPS [--path]
"""

import sys
import warnings

import numpy as np

import dpreg
from dpreg.inference.pivot import rs_pivot
from dpreg.inference.rs_joint import contrast_scale_matrix, rs_joint_law

NAMES = ("x1", "x2", "x3")
BOUNDS = {"y": (-6.0, 6.0), **{f"x{j}": (-3.0, 3.0) for j in (1, 2, 3)}}


def one(r: int, n: int, steps: int, path: bool) -> dict:
    sim = dpreg.datasets.simulate_linear(n, p=3, intercept=True, random_state=1000 + r)
    res = dpreg.dp_ols(sim.formula, sim.data, bounds=BOUNDS, clip=6.0, mu=2.0,
                       random_state=r, steps=steps)
    inf = res.inferences["rs"]
    R = np.eye(4)[1:]
    out = {}
    if path:
        orc = dpreg.oracle(sim.formula, sim.data, bounds=BOUNDS)
        d = (res.params - orc.params).to_numpy()[1:]
        G = (inf.matrix / res.settings["epochs"])[1:, 1:]
        out["path_joint"] = rs_joint_law.sf(d @ np.linalg.solve(G, d) / 3, 3) < 0.05
        for j in range(3):
            out[f"path_t{j + 1}"] = rs_pivot.two_sided_pvalue(d[j] / np.sqrt(G[j, j])) < 0.05
        return out
    d = R @ res.params.to_numpy() - np.array([sim.params[k] for k in NAMES])
    G = R @ inf.matrix @ R.T
    D = np.diag(inf.scale[1:] / np.sqrt(np.diag(G)))
    for key, M in (("K", contrast_scale_matrix(inf, R)), ("diag", D @ G @ D), ("none", G)):
        out[key] = rs_joint_law.sf(d @ np.linalg.solve(M, d) / 3, 3) < 0.05
    C = R @ res.cov_params().to_numpy() @ R.T
    out["plugin"] = d @ np.linalg.solve(C, d) / 3 > 2.6049  # chi2_3 / 3, 5%
    for j in range(3):
        out[f"rs_t{j + 1}"] = abs(d[j] / inf.scale[j + 1]) > rs_pivot.critical_value(0.05)
    return out


def main():
    warnings.simplefilter("ignore")
    reps, steps = int(sys.argv[1]), int(sys.argv[2])
    path = "--path" in sys.argv
    rows = [one(r, 1000, steps, path) for r in range(reps)]
    print(reps, steps, {k: round(float(np.mean([row[k] for row in rows])), 3)
                        for k in rows[0]})


if __name__ == "__main__":
    main()
