"""Very large n (issue 8): 10^7 rows through DP-SGD and LDP-SGD without copies of the
data beyond one.

The user's arrays are ``X`` (n x p) and ``y``. The model keeps one checked, clipped
copy (the design); everything else is O(n) vectors (norms, weights, a permutation) or
blocks of rows. The script reports the peak of memory allocated during model building
and fitting (tracemalloc, which sees numpy's allocations), in units of the size of
``X``: a second full copy would show as a peak above 2.

Run:  python benchmarks/bench_large_n.py [--n 10000000] [--p 5]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
import warnings

import numpy as np

import dpreg


def measure(label, fn, data_bytes):
    tracemalloc.start()
    t0 = time.perf_counter()
    res = fn()
    wall = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{label:<34s} {wall:7.1f} s   peak {peak / 2 ** 20:8.0f} MiB = "
          f"{peak / data_bytes:4.2f} x size of X   finite: {bool(np.all(np.isfinite(res.params)))}")
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--p", type=int, default=5)
    args = ap.parse_args(argv)
    n, p = args.n, args.p
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(n), np.clip(rng.standard_normal((n, p - 1)), -4, 4)])
    y = np.clip(X.sum(axis=1) + rng.standard_t(3, n), -20, 20)  # heavy-tailed errors
    bounds = {f"x{j}": (-4.0, 4.0) for j in range(2, p + 1)} | {"y": (-20.0, 20.0)}
    print(f"n = {n:,d}, p = {p}: X is {X.nbytes / 2 ** 20:.0f} MiB")
    warnings.simplefilter("ignore", dpreg.PrivacyLeakWarning)
    # warm the numba caches on a small problem first
    dpreg.DPRegression(y[:2000], X[:2000], bounds=bounds, intercept=0).fit(mu=1, random_state=0)
    dpreg.DPRegression(y[:2000], X[:2000], family="huber", intercept=0).fit(
        mu=1, engine="ldp_sgd", random_state=0)
    res = measure("DP-SGD (linear, default schedule)",
                  lambda: dpreg.DPRegression(y, X, bounds=bounds, intercept=0).fit(
                      mu=1, random_state=1),
                  X.nbytes)
    print(f"    batch {res.settings['batch_size']:,d}, steps {res.settings['steps']:,d}")
    measure("LDP-SGD (Huber, one pass)",
            lambda: dpreg.DPRegression(y, X, family="huber", intercept=0).fit(
                mu=1, engine="ldp_sgd", random_state=1), X.nbytes)


if __name__ == "__main__":
    main()
