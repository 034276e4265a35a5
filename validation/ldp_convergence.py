"""LDP-SGD coverage and warnings at the defaults (issue 14, item 5).

Usage::

    python validation/ldp_convergence.py --reps 100

Each cell fits ``engine="ldp_sgd"`` at the defaults on fresh data per replication
(fixed seeds) and reports the coverage of the random-scaling and batch-means 95%
intervals (averaged over the coefficients), the median RS length and the share of fits
that raised a ``ConvergenceWarning``. About a minute on one core at 100 replications.
"""

from __future__ import annotations

import argparse
import functools
import time
import warnings

import numpy as np
import pandas as pd

import dpreg
from dpreg.exceptions import ConvergenceWarning


def _linear(rng, n, *, draw, p=3, slope=1.0, box=None, y_box=None):
    """``y = 1 + slope * sum(x) + N(0, 0.5^2)`` with ``p`` covariates from ``draw`` and,
    when ``box`` is given, every covariate declared in it and ``y`` in ``y_box``."""
    cols = [f"x{j}" for j in range(1, p + 1)]
    x = draw(rng, (n, p))
    d = pd.DataFrame(x, columns=cols)
    d["y"] = 1 + slope * x.sum(axis=1) + 0.5 * rng.standard_normal(n)
    bounds = None if box is None else {**{c: box for c in cols}, "y": y_box}
    return d, "y ~ " + " + ".join(cols), bounds, np.r_[1.0, [slope] * p]


def _normal(rng, size):
    return rng.standard_normal(size)


def _uniform(half):
    return lambda rng, size: rng.uniform(-half, half, size)


_normal_box = functools.partial(_linear, draw=_normal, box=(-4, 4), y_box=(-9, 11))
_uniform_box = functools.partial(_linear, draw=_uniform(2), box=(-2, 2), y_box=(-7, 9))
_uniform_p10 = functools.partial(_linear, draw=_uniform(1), p=10, slope=0.5, box=(-1, 1),
                                 y_box=(-6, 8))
_table1 = functools.partial(_linear, draw=_normal)  # the ldp-sgd paper's design, no bounds


def _natural(rng, n):
    age, educ = rng.uniform(25, 65, n), rng.uniform(8, 18, n)
    y = 5 + 0.05 * age + 0.3 * educ + rng.standard_normal(n)
    d = pd.DataFrame({"y": y, "age": age, "educ": educ})
    return (d, "y ~ age + educ", {"age": (18, 90), "educ": (0, 20), "y": (0, 30)},
            np.array([5, 0.05, 0.3]))


#: name -> (data, family, n, mu, extra options)
CELLS = {
    "linear, N(0,1) in [-4,4], n=20000, mu=2": (_normal_box, "linear", 20_000, 2.0, {}),
    "linear, N(0,1) in [-4,4], n=5000, mu=2": (_normal_box, "linear", 5_000, 2.0, {}),
    "linear, U(-2,2) in [-2,2], n=20000, mu=2": (_uniform_box, "linear", 20_000, 2.0, {}),
    "linear, U(-1,1)^10 in [-1,1], n=20000, mu=2": (_uniform_p10, "linear", 20_000, 2.0,
                                                    {}),
    "linear, natural units, n=20000, mu=5": (_natural, "linear", 20_000, 5.0, {}),
    "huber, Table 1 design, n=20000, mu=2": (_table1, "huber", 20_000, 2.0, {}),
    "linear, N(0,1) in [-4,4], n=20000, mu=2, lr=0.01": (_normal_box, "linear", 20_000,
                                                         2.0, {"lr": 0.01}),
}


def run_cell(make, family, n, mu, extra, reps, seed=0):
    rng = np.random.default_rng(seed)
    cover = {"rs": [], "batch_means": []}
    length, warned = [], 0
    for r in range(reps):
        d, formula, bounds, truth = make(rng, n)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpreg.DPRegression.from_formula(formula, d, family=family,
                                                  bounds=bounds).fit(
                engine="ldp_sgd", mu=mu, random_state=r, **extra)
        warned += any(issubclass(w.category, ConvergenceWarning) for w in caught)
        for method in cover:
            ci = res.conf_int(method=method).to_numpy()
            cover[method].append(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
        ci = res.conf_int(method="rs").to_numpy()
        length.append(np.mean(ci[:, 1] - ci[:, 0]))
    return {"rs": np.mean(cover["rs"]), "batch_means": np.mean(cover["batch_means"]),
            "rs_length": float(np.median(length)), "warned": warned / reps}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"{'cell':52s} {'RS':>6s} {'BM':>6s} {'RS len':>7s} {'warned':>7s}  (mean "
          "coverage of the 95% intervals over the coefficients; median RS length)")
    for name, (make, family, n, mu, extra) in CELLS.items():
        start = time.time()
        out = run_cell(make, family, n, mu, extra, args.reps)
        print(f"{name:52s} {out['rs']:6.3f} {out['batch_means']:6.3f} "
              f"{out['rs_length']:7.3f} {out['warned']:7.2f}   ({time.time() - start:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main()
