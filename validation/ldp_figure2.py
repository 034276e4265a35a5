"""The ldp-sgd paper's Figure 2: LDP-SGD running estimates with PPI, PBM and PRS 95%
intervals against rows used (linear model, p = 3, mu = 1, n = 200,000).

Run:  python validation/ldp_figure2.py   (writes docs/_static/ldp_trajectory.png)
"""

import math
from pathlib import Path

import numpy as np
import pandas as pd

import dpreg

OUT = Path(__file__).resolve().parents[1] / "docs" / "_static" / "ldp_trajectory.png"


def main():
    rng = np.random.default_rng(2)
    n = 200_000
    s = rng.standard_normal((n, 3))
    data = pd.DataFrame({"y": 1 + s.sum(axis=1) + 0.5 * rng.standard_normal(n),
                         "x1": s[:, 0], "x2": s[:, 1], "x3": s[:, 2]})
    stream = dpreg.LDPStream("y ~ x1 + x2 + x3", family="huber", mu=math.sqrt(3),
                             cov_type="plugin", random_state=3)
    stream.consume([data.iloc[i:i + 20_000] for i in range(0, n, 20_000)])
    res = stream.results()
    res.plot_trajectory(truth=np.ones(4), path=OUT)
    print(res.summary())
    print(f"figure -> {OUT}")


if __name__ == "__main__":
    main()
