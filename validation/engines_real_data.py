"""DP-SGD against SSP at their defaults on the regressions users run (issue 30, item 2's
evidence): statsmodels' ``fair`` OLS (``benchmarks/bench_defaults.py``), the simulated
log-wage quadratic of ``validation/square_coordinates.py`` (n = 2,000, codebook bounds)
and the STAR OLS of the README (needs the STAR file), at mu = 2, 5 and 10, 10 seeds.
Per cell and engine: the share of (coefficient, seed) pairs whose interval contains the
non-private OLS estimate, the share of fits without a ``ConvergenceWarning``, and the
median length over the OLS interval.

    python validation/engines_real_data.py
"""

from __future__ import annotations

import pathlib
import sys
import warnings

import numpy as np
import statsmodels.formula.api as smf

import dpreg
from dpreg.datasets import load_star
from dpreg.exceptions import ConvergenceWarning

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "datasets"
OUT = pathlib.Path(__file__).parent / "results" / "engines_real_data.txt"
STAR_FORMULA = "GPA_year1 ~ ssp + sfp + sfsp + sex + C(hsgroup)"
STAR_BOUNDS = {"GPA_year1": (0, 4.3), "ssp": (0, 1), "sfp": (0, 1), "sfsp": (0, 1)}
STAR_LEVELS = {"sex": ["F", "M"], "hsgroup": [1, 2, 3]}


def designs() -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT / "validation"))
    import bench_defaults as fair
    import square_coordinates as wage

    return {"fair OLS": (fair.FAIR_FORMULA, fair.fair_data(), fair.FAIR_BOUNDS,
                         fair.FAIR_LEVELS),
            "wage quadratic n=2000": (wage.FORMULA, wage.simulate(2000, 99), wage.BOUNDS,
                                      None),
            "STAR OLS": (STAR_FORMULA, load_star(DATA if DATA.exists() else None),
                         STAR_BOUNDS, STAR_LEVELS)}


def cell(formula, data, bounds, levels, mu, engine, seeds=10) -> str:
    ols = smf.ols(formula, data).fit()
    target = ols.params.to_numpy()
    ci0 = ols.conf_int().to_numpy()
    contains, unwarned, lengths = [], 0, []
    for seed in range(seeds):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpreg.dp_ols(formula, data, mu=mu, bounds=bounds, levels=levels,
                               engine=engine, random_state=seed)
        unwarned += not any(issubclass(w.category, ConvergenceWarning) for w in caught)
        ci = res.conf_int().to_numpy()  # patsy's column order on both sides
        contains.append(np.mean((ci[:, 0] <= target) & (target <= ci[:, 1])))
        lengths.append(np.median((ci[:, 1] - ci[:, 0]) / (ci0[:, 1] - ci0[:, 0])))
    return (f"{engine}: contains {np.mean(contains):.2f} unwarned {unwarned / seeds:.1f} "
            f"length {np.median(lengths):.2f}")


def main() -> None:
    lines = []
    for name, (formula, data, bounds, levels) in designs().items():
        for mu in (2.0, 5.0, 10.0):
            row = [cell(formula, data, bounds, levels, mu, e) for e in ("dpsgd", "ssp")]
            lines.append(f"{name:24s} mu = {mu:4g} | " + " | ".join(row))
            print(lines[-1], flush=True)
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
