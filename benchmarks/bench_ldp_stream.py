"""Benchmark of the LDP-SGD stream: one pass over a CSV file read in chunks.

Target (issue 5): 1,000,000 rows with p = 11 (intercept and 10 covariates), Huber with
Mallows weights, random scaling updated online, in at most 5 s of wall time, with peak
memory independent of the file's length. Each length runs in a fresh subprocess (after
a warm-up that compiles the kernel into numba's cache), and reports the wall time of
``LDPStream(...).consume(path, chunksize=100_000).results()`` (in a fresh process,
including imports and loading the cached kernels, and again warm) and the peak resident
memory of that process. The peak depends on the chunk size, not on the file's length.

Run:  python benchmarks/bench_ldp_stream.py            (1e6 and 2e6 rows)
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

P_COV = 10
FORMULA = "y ~ " + " + ".join(f"x{j}" for j in range(1, P_COV + 1))


def write_csv(path: str, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    with open(path, "w") as fh:
        header = True
        for start in range(0, n, 250_000):
            m = min(250_000, n - start)
            x = rng.standard_normal((m, P_COV))
            y = 1 + x.sum(axis=1) + 0.5 * rng.standard_normal(m)
            frame = pd.DataFrame(x, columns=[f"x{j}" for j in range(1, P_COV + 1)])
            frame.insert(0, "y", y)
            frame.to_csv(fh, index=False, header=header, float_format="%.6f")
            header = False


def child(path: str, chunksize: int) -> None:
    t0 = time.perf_counter()
    import dpreg

    walls = []
    for _ in range(2):  # first: fresh process (imports, numba cache load); then warm
        stream = dpreg.LDPStream(FORMULA, family="huber", mu=1.0, random_state=1)
        stream.consume(path, chunksize=chunksize)
        res = stream.results()
        walls.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"rows": stream.nobs, "cold_s": walls[0], "wall_s": walls[1],
                      "peak_rss_mib": peak_mib, "intercept": float(res.params.iloc[0])}))


def run_child(path: str, chunksize: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", path, str(chunksize)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "warm.csv")
        write_csv(small, 5_000)
        run_child(small, 1000)  # compile and cache the kernels
        for n in (1_000_000, 2_000_000):
            path = os.path.join(tmp, f"rows{n}.csv")
            write_csv(path, n, seed=n)
            size = os.path.getsize(path) / 2 ** 20
            for chunksize in (100_000,):
                r = run_child(path, chunksize)
                print(f"{n:>9,d} rows ({size:6.0f} MiB CSV), chunks of {chunksize:,d}: "
                      f"{r['wall_s']:.2f} s wall ({r['cold_s']:.2f} s in a fresh process, "
                      f"with imports), {r['rows'] / r['wall_s'] / 1e6:.2f} M rows/s, "
                      f"peak RSS {r['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
