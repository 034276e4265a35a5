"""Benchmark of the DP-SGD engine on the STAR shape (n = 1399, p = 8, T = n^2).

Prints: compile time (first call, then cached on disk), engine time on one core, the
time to draw the same random numbers with numpy, the ratio, a plain NumPy loop's speed
(extrapolated from a short run), the full dp_ols call, m = 16 and m = 128, and peak
memory for two values of T (flat in T). Run: python benchmarks/bench_dpsgd.py
"""

from __future__ import annotations

import os
import time
import tracemalloc

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from dpreg.engines import SGDSettings, run_dpsgd  # noqa: E402
from dpreg.families import Objective  # noqa: E402
from dpreg.families.linear import LINEAR  # noqa: E402

N, P = 1399, 8


def data(seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(N), rng.integers(0, 2, size=(N, P - 1))]).astype(float)
    y = np.clip(X @ rng.uniform(-0.5, 0.5, P) + 2 + rng.normal(0, 0.9, N), 0, 4.3)
    return np.ascontiguousarray(X), y


def settings(m=1, steps=N * N):
    return SGDSettings(batch_size=m, sampling="uniform", steps=steps, clip=5.3, lr=1 / 6,
                       lr_decay=0.501, noise_scale=10.0, noise_multiplier=1.0)


def run(X, y, s, seed=1):
    return run_dpsgd(X, y, objective=Objective(LINEAR, np.inf, 0.5, np.ones(len(y)), False),
                     settings=s, theta0=np.zeros(P),
                     rng=np.random.default_rng(seed))


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def numpy_loop(X, y, s, steps):
    rng = np.random.default_rng(0)
    theta = np.zeros(P)
    total = np.zeros(P)
    for t in range(1, steps + 1):
        idx = rng.choice(N, size=s.batch_size, replace=False)
        g = (X[idx] @ theta - y[idx])[:, None] * X[idx]
        norms = np.linalg.norm(g, axis=1)
        g *= np.minimum(1, s.clip / np.maximum(norms, 1e-300))[:, None]
        theta -= s.lr * t ** -s.lr_decay * (g.mean(0) + s.noise_scale * rng.standard_normal(P))
        total += theta
    return total / steps


def main():
    X, y = data()
    T = N * N
    t0 = time.perf_counter()
    run(X, y, settings(steps=1000))
    print(f"first call (compile or load from the on-disk cache): {time.perf_counter() - t0:.2f} s")
    t_engine = best(lambda: run(X, y, settings()))
    rng = np.random.default_rng(1)
    t_draw = best(lambda: (rng.random(T), rng.standard_normal((T, P))))
    print(f"engine, m = 1, T = {T:,}: {t_engine:.3f} s ({T / t_engine / 1e6:.1f} M steps/s)")
    print(f"drawing the same random numbers with numpy: {t_draw:.3f} s; "
          f"ratio {t_engine / t_draw:.2f}")
    short = 20_000
    t_np = best(lambda: numpy_loop(X, y, settings(), short), repeat=1)
    print(f"plain NumPy loop: {short / t_np:,.0f} steps/s -> {T * t_np / short:.0f} s for T = n^2; "
          f"engine is {(T * t_np / short) / t_engine:.0f}x faster")
    for m in (16, 128):
        t_m = best(lambda m=m: run(X, y, settings(m=m)), repeat=1)
        print(f"engine, m = {m}, T = {T:,}: {t_m:.3f} s ({T * m / t_m / 1e6:.1f} M gradients/s)")
    try:
        import pandas as pd

        import dpreg

        frame = pd.DataFrame(X[:, 1:], columns=[f"x{j}" for j in range(1, P)])
        frame["y"] = y
        formula = "y ~ " + " + ".join(frame.columns[:-1])
        bounds = {"y": (0, 4.3), **{c: (0, 1) for c in frame.columns[:-1]}}
        t_fit = best(lambda: dpreg.dp_ols(formula, frame, mu=2, bounds=bounds, random_state=1))
        print(f"whole dp_ols call (engine, plug-in matrices, accounting): {t_fit:.3f} s")
    except ImportError as err:  # pragma: no cover
        print("dp_ols not available:", err)
    for steps in (T // 4, T):
        tracemalloc.start()
        run(X, y, settings(steps=steps))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"peak traced memory, T = {steps:,}: {peak / 2 ** 20:.1f} MiB")


if __name__ == "__main__":
    main()
