"""Declared codebook boxes against privately learned ranges (``ranges="private"``).

A textbook wage equation in natural units, ``lwage ~ school + exper + I(exper**2)``, with
codebook bounds (schooling 0-25 years, experience 0-60 years, log wage -3 to 6), on data
simulated from a Mincer equation (schooling about N(13, 2.5^2) rounded to years in
[6, 20]; experience a rounded Gamma(2.5, 7) capped at 50; log wage 0.6 + 0.09 school +
0.04 exper - 0.0007 exper^2 + N(0, 0.45^2)). For each engine (DP-SGD, SSP), n, mu and
seed, one data set is fitted with the declared boxes and with ranges learned privately
(5% of mu^2, the default share); the reference is statsmodels' OLS on the same rows.

    python validation/private_ranges.py --seeds 20 --out validation/results

Writes ``private_ranges.csv``: per engine, n, mu and ranges, the mean over coefficients
and seeds of the private 95% interval's length over the non-private (OLS) interval's,
the share of (coefficient, seed) pairs whose private interval contains the OLS estimate,
the share of fits that warned (ConvergenceWarning), and (private ranges) the mean share
of rows outside a learned range (NON-PRIVATE, computed here from the data: the clipping
the learned ranges cause) and the learned widths over the data's min-max widths.
"""

from __future__ import annotations

import argparse
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

import dpreg
from dpreg.exceptions import ConvergenceWarning, SeedReuseWarning

FORMULA = "lwage ~ school + exper + I(exper**2)"
BOUNDS = {"school": (0, 25), "exper": (0, 60), "lwage": (-3, 6)}
_RANGE = re.compile(r"(\w+) \[([-+.\deE]+), ([-+.\deE]+)\]")


def wage_data(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """The simulated Mincer design (module notes)."""
    school = np.clip(np.round(rng.normal(13, 2.5, n)), 6, 20)
    exper = np.clip(rng.gamma(2.5, 7, n), 0, 50).round()
    lwage = (0.6 + 0.09 * school + 0.04 * exper - 0.0007 * exper ** 2
             + rng.normal(0, 0.45, n))
    return pd.DataFrame({"lwage": lwage, "school": school, "exper": exper})


def run(seeds: int, sizes=(1000, 5000), budgets=(2.0, 5.0),
        engines=("dpsgd", "ssp")) -> pd.DataFrame:
    rows = []
    for n in sizes:
        for seed in range(seeds):
            data = wage_data(n, np.random.default_rng(10_000 + seed))
            ols = smf.ols(FORMULA, data).fit()
            ref, ref_ci = ols.params, ols.conf_int()
            ref_len = ref_ci[1] - ref_ci[0]
            for engine in engines:
                for mu in budgets:
                    for ranges in ("declared", "private"):
                        start = time.perf_counter()
                        with warnings.catch_warnings(record=True) as caught:
                            warnings.simplefilter("always", ConvergenceWarning)
                            warnings.simplefilter("ignore", SeedReuseWarning)
                            res = dpreg.dp_ols(FORMULA, data, mu=mu, bounds=BOUNDS,
                                               engine=engine, ranges=ranges,
                                               random_state=seed)
                        seconds = time.perf_counter() - start
                        ci = res.conf_int()
                        ci.index = ref.index
                        inside = (ci.iloc[:, 0] <= ref) & (ref <= ci.iloc[:, 1])
                        length = (ci.iloc[:, 1] - ci.iloc[:, 0]) / ref_len
                        row = dict(engine=engine, n=n, mu=mu, ranges=ranges, seed=seed,
                                   length_ratio=float(length.mean()),
                                   contains=float(inside.mean()),
                                   warned=any(issubclass(w.category, ConvergenceWarning)
                                              for w in caught),
                                   seconds=seconds, clipped=np.nan, width_ratio=np.nan)
                        if ranges == "private":
                            learned = _parse(res)
                            out = np.zeros(n, dtype=bool)
                            widths = []
                            for col, (lo, hi) in learned.items():
                                v = data[col].to_numpy()
                                out |= (v < lo) | (v > hi)
                                widths.append((hi - lo) / (v.max() - v.min()))
                            row.update(clipped=float(out.mean()),
                                       width_ratio=float(np.mean(widths)))
                        rows.append(row)
    raw = pd.DataFrame(rows)
    return (raw.groupby(["engine", "n", "mu", "ranges"], sort=False)
            .agg(length_ratio=("length_ratio", "mean"), contains=("contains", "mean"),
                 warned=("warned", "mean"), rows_clipped=("clipped", "mean"),
                 max_rows_clipped=("clipped", "max"), width_over_data=("width_ratio", "mean"),
                 seconds=("seconds", "mean"), seeds=("seed", "nunique"))
            .reset_index())


def _parse(res) -> dict[str, tuple[float, float]]:
    """``{column: (lower, upper)}`` learned, from the settings row ``ranges``."""
    text = str(res.settings.value("ranges")).removeprefix("learned privately: ")
    out = {}
    for part in text.split("; "):
        m = _RANGE.match(part.strip())
        if m:
            out[m[1]] = (float(m[2]), float(m[3]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--out", default="validation/results")
    args = parser.parse_args()
    table = run(args.seeds)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "private_ranges.csv", index=False, float_format="%.4f")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
