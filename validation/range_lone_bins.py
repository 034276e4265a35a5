"""Private ranges: what passing over lone noise bins buys and costs (histograms alone).

``ranges="private"`` reads each column's range off a noisy histogram
(:mod:`dpreg.privacy.ranges`). Where the tail rows allowed outside, ``t``, are fewer than
two noise standard deviations ``sigma`` (small ``n mu``), a single empty bin that the
noise lifts over the threshold exceeds the tail alone and sets an end; the rule now
passes over such lone noise bins first (:func:`dpreg.privacy.ranges.range_start`). This
script releases the histograms of the textbook designs' columns (an age uniform on
18-45 in the codebook box 16-100, a count of children 0-20, years of schooling and
experience, a log wage, a lognormal income, a t(3) outcome, a N(0, 2) outcome in
(-10, 10)) at n = 500 to 20,000 and mu = 0.5 to 10 with ``k`` = 3 and 10 columns sharing
the ranges' 5% of mu^2, and reads each range with three rules on the same counts: the
rule before (no bin passed over), an isolation gap of 3 bins, and the default
(:data:`~dpreg.privacy.ranges.ISOLATED_GAP`). Per rule and regime of ``sigma / t``: the
learned range over the data's min-max range (median and 90th percentile), the share of
rows outside it (mean and 95th percentile; non-private, computed from the data) and the
share of columns whose declared box was kept.

    python validation/range_lone_bins.py --draws 100 --out validation/results

Writes ``range_lone_bins.csv``; about a minute on one core.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

import dpreg.privacy.ranges as ranges
from dpreg.privacy.ranges import (
    DEFAULT_RANGES_SHARE,
    column_edges,
    column_histogram,
    histogram_sensitivity,
    range_from_counts,
    tail_rows,
)

#: The rules compared: the isolation gap (``None``: no bin passed over, the rule before).
RULES = {"before": None, "gap 3": 3, "default": ranges.ISOLATED_GAP}
REGIMES = [0.0, 0.5, 1.0, 2.0, 4.0, 100.0]


def columns(rng: np.random.Generator, n: int) -> dict:
    """The textbook designs' columns and their codebook boxes (module notes)."""
    return {
        "age 18-45 in 16-100": (rng.uniform(18, 45, n), (16, 100)),
        "children 0-20": (np.minimum(rng.poisson(1.6, n), 20).astype(float), (0, 20)),
        "schooling": (np.clip(np.round(rng.normal(13, 2.5, n)), 6, 20), (0, 25)),
        "experience": (np.clip(rng.gamma(2.5, 7, n), 0, 50).round(), (0, 60)),
        "log wage": (rng.normal(2.3, 0.5, n), (-3, 6)),
        "income": (np.clip(rng.lognormal(np.log(20), 0.6, n), 0, 150), (0, 150)),
        "t(3) outcome": (2 + 1.5 * stats.t(3).rvs(size=n, random_state=rng) / math.sqrt(3),
                         (-10, 14)),
        "N(0, 2) outcome": (np.clip(rng.normal(0, 2, n), -10, 10), (-10, 10)),
    }


def read(noisy, edges, tail, sd, n, gap):
    """The range with isolation gap ``gap`` (``None``: the rule before)."""
    saved = ranges.ISOLATED_GAP
    ranges.ISOLATED_GAP = 10 ** 9 if gap is None else gap  # 10^9: never isolated
    try:
        return range_from_counts(noisy, edges, tail, sd, n)
    finally:
        ranges.ISOLATED_GAP = saved


def run(draws: int) -> pd.DataFrame:
    rows = []
    for n in (500, 1000, 2000, 5000, 20_000):
        tail = tail_rows(n)
        for mu in (0.5, 1.0, 2.0, 5.0, 10.0):
            for k in (3, 10):
                sd = histogram_sensitivity(k, "replace-one") / (
                    mu * math.sqrt(DEFAULT_RANGES_SHARE))
                for draw in range(draws):
                    rng = np.random.default_rng([n, int(mu * 10), k, draw])
                    for name, (x, box) in columns(rng, n).items():
                        edges = column_edges(box)
                        noisy = column_histogram(x, edges) + rng.normal(0, sd, len(edges) - 1)
                        for rule, gap in RULES.items():
                            found = read(noisy, edges, tail, sd, n, gap)
                            lo, hi = box if found is None else found
                            rows.append(dict(rule=rule, n=n, mu=mu, k=k, column=name,
                                             noise_over_tail=sd / tail, kept=found is None,
                                             width=(hi - lo) / np.ptp(x),
                                             clipped=np.mean((x < lo) | (x > hi))))
    return pd.DataFrame(rows)


def table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per rule and regime of ``sigma / t`` (module notes)."""
    raw = raw.assign(regime=pd.cut(raw["noise_over_tail"], REGIMES).astype(str))
    out = raw.groupby(["regime", "rule"], sort=False).agg(
        ranges=("width", "size"), width_median=("width", "median"),
        width_p90=("width", lambda s: s.quantile(0.9)), clipped_mean=("clipped", "mean"),
        clipped_p95=("clipped", lambda s: s.quantile(0.95)), box_kept=("kept", "mean"))
    return out.reset_index().round(4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results")))
    args = parser.parse_args()
    raw = run(args.draws)
    out = table(raw)
    out.to_csv(Path(args.out) / "range_lone_bins.csv", index=False)
    print(out.to_string(index=False))
    by_column = raw[raw["noise_over_tail"] > 0.5].groupby(["column", "rule"], sort=False).agg(
        width_p90=("width", lambda s: s.quantile(0.9)), clipped_mean=("clipped", "mean"))
    print("\nsigma / t > 0.5, by column:")
    print(by_column.round(4).unstack("rule").to_string())


if __name__ == "__main__":
    main()
