"""DP-SGD logistic regression at the defaults: random-scaling and plug-in coverage.

Usage::

    python validation/logistic_rs.py --reps 100

The issue-14 cell (about 10% ones, n = 2,000, mu = 2): ``y ~ x1 + x2 + x3`` with
``x1 ~ N(0, 1)`` clipped to its declared ``[-4, 4]``, ``x2 ~ U(0, 10)`` in ``[0, 10]``,
``x3`` binary, ``theta = (-2.9, 0.5, 0.1, 0.5)``. Prints the coverage of the 95%
intervals per coefficient, median lengths and the share of fits that warned (about 20 s
per 100 replications on one core).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

import dpreg
from dpreg.exceptions import ConvergenceWarning

THETA = np.array([-2.9, 0.5, 0.1, 0.5])
BOUNDS = {"x1": (-4, 4), "x2": (0, 10), "x3": (0, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--mu", type=float, default=2.0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(2024)
    cover = {"rs": [], "plugin": []}
    length = {"rs": [], "plugin": []}
    warned, ones = 0, []
    for r in range(args.reps):
        n = args.n
        x1 = np.clip(rng.standard_normal(n), -4, 4)
        x2 = rng.uniform(0, 10, n)
        x3 = rng.integers(0, 2, n)
        eta = THETA[0] + THETA[1] * x1 + THETA[2] * x2 + THETA[3] * x3
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(int)
        ones.append(y.mean())
        d = pd.DataFrame({"y": y, "x1": x1, "x2": x2, "x3": x3})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpreg.dp_logit("y ~ x1 + x2 + x3", d, mu=args.mu, random_state=r,
                                 bounds=BOUNDS)
        warned += any(issubclass(w.category, ConvergenceWarning) for w in caught)
        for method in cover:
            ci = res.conf_int(method=method).to_numpy()
            cover[method].append((ci[:, 0] <= THETA) & (THETA <= ci[:, 1]))
            length[method].append(ci[:, 1] - ci[:, 0])
    print(f"share of ones {np.mean(ones):.3f}, {args.reps} replications")
    for method in cover:
        c = np.array(cover[method])
        print(f"{method:7s} coverage {c.mean():.3f}, per coefficient {c.mean(axis=0).round(3)},"
              f" median length {np.median(length[method], axis=0).round(3)}")
    print(f"warned {warned / args.reps:.2f}")


if __name__ == "__main__":
    main()
