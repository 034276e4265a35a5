"""Benchmark of (epsilon, delta) accounting and calibration with sampling without replacement.

Prints, for a few DP-SGD shapes with ``sampling="uniform"``:

* one evaluation of the epsilon of the path: dp_accounting's RDP accountant over its
  default orders (what dpreg called before), against dpreg's ``rigorous_epsilon`` (the
  numpy curve of ``dpreg.privacy.wor_rdp`` picks the order, dp_accounting evaluates it
  there) and the numpy curve alone, with the two epsilons;
* a whole ``dp_ols`` call with an (epsilon, delta) request (calibration and ledger), for
  uniform and for Poisson sampling.

Run: python benchmarks/bench_calibration.py
"""

from __future__ import annotations

import time

import dp_accounting
import numpy as np
import pandas as pd

import dpreg
from dpreg.privacy.accountants import rigorous_epsilon
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.wor_rdp import DEFAULT_ORDERS, composed_rdp

DELTA = 1e-6
SHAPES = [  # (n, m, T, noise multiplier)
    (40, 10, 300, 3.0),
    (1399, 1, 1399 ** 2, 1.0),
    (10_000, 100, 20_000, 1.2),
]


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def one_evaluation():
    print("one epsilon evaluation (best of 3)")
    print(f"{'n':>6} {'m':>4} {'T':>9} {'s':>4} | {'dp_accounting':>13} {'dpreg':>8} "
          f"{'numpy curve':>11} | {'eps (dp_acc.)':>13} {'eps (dpreg)':>12}")
    for n, m, steps, s in SHAPES:
        event = GaussianMechanismEvent("path", 2.0 / m, 2.0 * s / m, "replace-one",
                                       "uniform", m, n, steps)

        def library(event=event):
            acc = dp_accounting.rdp.RdpAccountant(
                neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
            acc.compose(event.to_dp_accounting())
            return acc.get_epsilon(DELTA)

        t_lib, eps_lib = best_of(library)
        t_ours, (eps_ours, _) = best_of(lambda: rigorous_epsilon([event], DELTA))  # noqa: B023
        t_curve, _ = best_of(lambda: composed_rdp([event], DEFAULT_ORDERS))  # noqa: B023
        print(f"{n:>6} {m:>4} {steps:>9} {s:>4} | {t_lib * 1e3:>10.0f} ms {t_ours * 1e3:>5.1f} ms "
              f"{t_curve * 1e3:>8.1f} ms | {eps_lib:>13.10f} {eps_ours:>12.10f}")


def whole_fits():
    print("\ndp_ols with delta=1e-6, n = 40, T = 300 (calibration and ledger; one run)")
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"y": rng.normal(size=40), "x": rng.uniform(-1, 1, 40)})
    kw = dict(bounds={"y": (-5, 5), "x": (-1, 1)}, steps=300, random_state=0)
    dpreg.dp_ols("y ~ x", data, mu=1.0, **kw)  # load the compiled kernels first
    kw["delta"] = DELTA
    for sampling in ("uniform", "poisson"):
        for m in (1, 10):
            for eps in (0.05, 1.0, 20.0):
                t, res = best_of(lambda: dpreg.dp_ols(  # noqa: B023
                    "y ~ x", data, epsilon=eps, sampling=sampling, batch_size=m, **kw),  # noqa: B023
                    repeat=1)  # once: the PLDs are cached per noise multiplier
                print(f"  sampling={sampling:<8} m={m:<3} epsilon={eps:<5} {t:6.3f} s  "
                      f"spent {res.ledger.epsilon_rigorous[0]:.7f}")


if __name__ == "__main__":
    one_evaluation()
    whole_fits()
