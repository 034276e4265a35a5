"""Coverage of dp_iv2sls's intervals on a simulated strong-instrument design.

The design is :func:`dpreg.studies.iv.simulate_iv` at the instruments' coefficient 0.5
(the ``iv`` study runs it at weaker instruments; ``python validation/iv_study.py``),
with true bounds, so clipping never changes the target: x, z1, z2, v, e, e2 iid
U(-1, 1); d = 0.5 z1 + 0.5 z2 + 0.3 v + 0.2 e (|d| <= 1.5); u = 0.5 v + 0.5 e2
(endogenous through v; |u| <= 1); y = 1 + 0.5 x + d + u (y in [-2, 4]).

    python validation/iv_coverage.py --reps 500 --n 5000 --mu 5
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import dpreg
from dpreg.studies.iv import FORMULA, TRUTH, iv_bounds
from dpreg.studies.iv import simulate_iv as simulate

#: The true bounds of the design at the instruments' coefficient 0.5.
BOUNDS = iv_bounds(0.5)


def coverage(reps: int, n: int, mu: float, seed: int = 2026, n_boot: int = 500):
    ss = np.random.SeedSequence(seed)
    hits = {m: np.zeros(3) for m in ("plugin", "pboot", "pboot_basic")}
    warned = 0
    for child in ss.spawn(reps):
        data_seed, noise_seed = child.spawn(2)
        df = simulate(n, np.random.default_rng(data_seed))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpreg.dp_iv2sls(FORMULA, df, mu=mu, bounds=BOUNDS, n_boot=n_boot,
                                  random_state=noise_seed)
        warned += any(issubclass(w.category, dpreg.exceptions.ConvergenceWarning)
                      for w in caught)
        for m in hits:
            ci = res.conf_int(method=m).values
            hits[m] += (ci[:, 0] <= TRUTH) & (TRUTH <= ci[:, 1])
    return {m: h / reps for m, h in hits.items()}, warned


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--mu", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    t = time.time()
    cov, warned = coverage(args.reps, args.n, args.mu, args.seed)
    se = np.sqrt(0.95 * 0.05 / args.reps)
    print(f"n = {args.n}, mu = {args.mu}, {args.reps} reps (binomial s.e. {se:.3f}), "
          f"{warned} fits warned, {time.time() - t:.0f} s")
    for m, c in cov.items():
        print(f"  {m:12s} " + "  ".join(f"{name} {v:.3f}" for name, v in
                                         zip(["Intercept", "x", "d"], c, strict=True)))


if __name__ == "__main__":
    main()
