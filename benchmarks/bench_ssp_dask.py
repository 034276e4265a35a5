"""SSP on a Dask frame too large to hold (issue 18): 10^8 rows, generated partition by
partition, never in one place.

Each partition is simulated on its worker from its own seed (``dask.dataframe.from_map``):
``y = 1 + 0.3 x1 - 0.5 x2 + 0.4 [g = b] - 0.2 [g = c] + e`` with ``x1 ~ U(0, 10)``,
``x2 ~ N(0, 1)`` clipped to [-4, 4], ``g`` in {a, b, c}, ``e ~ N(0, 1)``, and one row in
a thousand missing its ``x2`` (dropped and counted). ``dp_ols(..., engine="ssp")``
reduces every partition to its clipped sums; the client adds them and the noise. The
script prints the rows, partitions, wall time and the process's peak resident memory
(``ru_maxrss``; the default threaded scheduler runs in this process, so it is the
whole computation's peak), and the estimate against the truth.

Run:  python benchmarks/bench_ssp_dask.py [--rows 100000000] [--partition-rows 1000000]
      [--workers 2] [--scheduler threads|distributed]

Measured on the 2-core machine at the defaults: 10^8 rows in 100 partitions, 24.8 s
(threads; 27.5 s on a LocalCluster of 2 workers, processes=False), peak resident memory
638 MiB (713 MiB), of which 295 MiB (308 MiB) before the fit.
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings

import numpy as np
import pandas as pd

import dpreg

TRUTH = {"Intercept": 1.0, "g[T.b]": 0.4, "g[T.c]": -0.2, "x1": 0.3, "x2": -0.5}
BOUNDS = {"y": (-10.0, 15.0), "x1": (0.0, 10.0), "x2": (-4.0, 4.0)}
LEVELS = {"g": ["a", "b", "c"]}


def make_partition(i: int, rows: int, seed: int) -> pd.DataFrame:
    """Partition ``i``: ``rows`` rows from the seed ``(seed, i)``."""
    rng = np.random.default_rng([seed, i])
    x1 = rng.uniform(0, 10, rows)
    x2 = np.clip(rng.standard_normal(rows), -4, 4)
    g = rng.integers(0, 3, rows)
    y = 1 + 0.3 * x1 - 0.5 * x2 + np.array([0.0, 0.4, -0.2])[g] + rng.standard_normal(rows)
    x2[rng.random(rows) < 1e-3] = np.nan
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2,
                         "g": pd.Categorical.from_codes(g, LEVELS["g"])})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=1e8)
    ap.add_argument("--partition-rows", type=float, default=1e6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scheduler", choices=["threads", "distributed"], default="threads")
    ap.add_argument("--mu", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args(argv)

    import dask
    import dask.dataframe as dd

    rows, part = int(args.rows), int(args.partition_rows)
    sizes = [part] * (rows // part) + ([rows % part] if rows % part else [])
    meta = make_partition(0, 0, 0)
    ddf = dd.from_map(make_partition, list(range(len(sizes))), sizes,
                      [args.seed] * len(sizes), meta=meta, enforce_metadata=False)
    warnings.simplefilter("ignore", dpreg.exceptions.SeedReuseWarning)
    client = None
    if args.scheduler == "distributed":
        from dask.distributed import Client, LocalCluster

        client = Client(LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                     processes=False))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    t0 = time.perf_counter()
    with dask.config.set(scheduler="threads" if client is None else None,
                         num_workers=args.workers):
        res = dpreg.dp_ols("y ~ x1 + x2 + g", ddf, engine="ssp", mu=args.mu, bounds=BOUNDS,
                           levels=LEVELS, random_state=1)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    if client is not None:
        client.close()
    print(f"rows {rows:,d} ({res.nobs:,d} used, {res.n_dropped:,d} dropped for missing x2), "
          f"partitions {len(sizes)} of up to {part:,d} rows, scheduler {args.scheduler} "
          f"with {args.workers} workers")
    print(f"wall time {wall:.1f} s ({rows / wall / 1e6:.2f} million rows/s), peak resident "
          f"memory {peak:.0f} MiB ({base:.0f} MiB before the fit, after the imports; one "
          f"partition is {part * 4 * 8 / 2 ** 20:.0f} MiB of float64 columns, all rows "
          f"would be {rows * 4 * 8 / 2 ** 30:.1f} GiB)")
    frame = pd.DataFrame({"truth": pd.Series(TRUTH), "estimate": res.params,
                          "std err": res.bse})
    frame[["lower", "upper"]] = res.conf_int().to_numpy()
    print(frame.round(5).to_string())


if __name__ == "__main__":
    main()
