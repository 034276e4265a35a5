"""Size of joint tests (issue 26, item 4): Wald tests of q true restrictions on DP-SGD
fits, by the plug-in (reference law from re-released covariances) and by random scaling.

Design: ``y = 1 + e`` with 12 covariates uniform on their declared boxes [-1, 1] (all
slopes zero), the outcome clipped to [-4, 6], the defaults of ``dp_ols`` with
``cov_type="plugin"``. For q = 1, 4 and 12 restrictions (the first q slopes are zero) the
share of fits whose ``wald_test`` p-value is below 0.05, per (n, mu).

    python validation/joint_test_size.py [--reps 200]
"""

from __future__ import annotations

import argparse
import pathlib
import warnings

import numpy as np
import pandas as pd

import dpreg

P = 12
NAMES = [f"x{j}" for j in range(P)]
BOUNDS = {c: (-1, 1) for c in NAMES} | {"y": (-4, 6)}
OUT = pathlib.Path(__file__).parent / "results" / "joint_test_size.txt"


def cell(n: int, mu: float, reps: int) -> str:
    qs = (1, 4, P)
    rejected = {(m, q): 0 for m in ("plugin", "rs") for q in qs}
    for r in range(reps):
        rng = np.random.default_rng(r)
        data = pd.DataFrame(rng.uniform(-1, 1, (n, P)), columns=NAMES)
        data["y"] = np.clip(1 + rng.normal(0, 1, n), -4, 6)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dpreg.dp_ols("y ~ " + " + ".join(NAMES), data, mu=mu, bounds=BOUNDS,
                               random_state=r, cov_type="plugin")
        for m, q in rejected:
            spec = ", ".join(f"{c} = 0" for c in NAMES[:q])
            test = res.wald_test(spec, method=m, scalar=True)
            rejected[(m, q)] += float(np.squeeze(test.pvalue)) < 0.05
    se = (0.05 * 0.95 / reps) ** 0.5
    parts = "  ".join(f"{m} q={q}: {k / reps:.3f}" for (m, q), k in rejected.items())
    return f"n = {n:5d} mu = {mu:g}: {parts}  (MC s.e. {se:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    reps = parser.parse_args().reps
    lines = [cell(n, mu, reps) for n, mu in ((1000, 0.5), (1000, 5.0), (5000, 2.0))]
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text + "\n")


if __name__ == "__main__":
    main()
