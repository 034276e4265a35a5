"""Issue 30, item 2 for Huber and expectile regression: does noisy Newton
(``engine="newton"``, :mod:`dpreg.engines.newton`) beat DP-SGD's interval length at an
equal budget, as it does for the logistic family where ``n mu`` is large
(``validation/newton_logit.py``)?

Design: the textbook study's ``wage_t3`` (:mod:`dpreg.studies.textbook`: a log-wage
equation with experience and its square, Student t(3) errors, codebook bounds), fitted
by Huber regression (``c = 1.345``) and by the 0.5-expectile (``c = 1.345``), both of
which target the linear coefficients. Per data set: noisy Newton and DP-SGD at their
defaults (private ranges) on the same rows, and the non-private fit of the same loss.
Per cell and engine: the coverage of the true coefficients by all fits, the share of
fits without a ``ConvergenceWarning``, the unwarned fits' coverage and their mean length
over the non-private interval, and the seconds a fit; the non-private fit's coverage on
the same data sets as the yardstick.

With ``--natural P ...`` the design is instead the robustness study's natural-units
design with ``P`` columns (:func:`dpreg.studies.robustness.natural_units_design`; t(3)
errors for Huber regression, and its logistic family too), to see how far past the
rule's ``p <= 8`` the engine holds.

    python validation/newton_location.py --reps 50 --n 2000 5000 10000 --mu 1 2 5 10
    python validation/newton_location.py --reps 50 --natural 10 15 --family logistic \
        huber --n 2500 5000 10000 --mu 5 10 --append   # the recorded run (results/)
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time
import warnings

import numpy as np
from scipy import stats

from dpreg.exceptions import ConvergenceWarning
from dpreg.frontend.model import DPRegression
from dpreg.studies.robustness import FAMILY_FITS, natural_units_design
from dpreg.studies.textbook import simulate_design

OUT = pathlib.Path(__file__).parent / "results" / "newton_location.txt"
ENGINES = ("newton", "dpsgd")


def draw_textbook(n: int, rng: np.random.Generator):
    """The textbook study's t(3) wage equation."""
    return simulate_design("wage_t3", n, rng)


def draw_natural(p: int):
    """The robustness study's natural-units design with ``p`` columns (covariates in
    loose codebook boxes; t(3) errors for Huber and expectile regression)."""
    def draw(n: int, rng: np.random.Generator, family: str):
        data, formula, bounds, truth = natural_units_design(n, p, rng, family=family,
                                                            errors="t3")
        names = ["Intercept"] + formula.split(" ~ ")[1].split(" + ")
        return data, formula, bounds, None, dict(zip(names, truth, strict=True))
    return draw


def cell(family: str, n: int, mu: float, reps: int, seed: int, p: int | None = None
         ) -> list[str]:
    """One cell: the textbook's t(3) wage equation, or with ``p`` the natural-units
    design with ``p`` columns (its logistic family too)."""
    rng = np.random.default_rng([seed, n, int(mu * 10), len(family), p or 0])
    z = stats.norm.ppf(0.975)
    got = {e: {k: [] for k in ("cover", "length", "warned", "seconds")} for e in ENGINES}
    mle = []
    for _ in range(reps):
        data, formula, bounds, levels, truth = (draw_textbook(n, rng) if p is None
                                                else draw_natural(p)(n, rng, family))
        model = DPRegression.from_formula(formula, data, family=family, bounds=bounds,
                                          levels=levels or None)
        beta = np.array([truth[name] for name in model.design.exog_names])
        nonprivate = model.fit_oracle()
        se = nonprivate.bse.to_numpy()
        mle.append(np.mean(np.abs(nonprivate.params.to_numpy() - beta) <= z * se))
        seed_fit = int(rng.integers(2 ** 31))
        for engine in ENGINES:
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = FAMILY_FITS[family](formula, data, bounds=bounds,
                                          levels=levels or None, mu=mu, engine=engine,
                                          random_state=seed_fit)
            out = got[engine]
            out["seconds"].append(time.perf_counter() - start)
            ci = res.conf_int().to_numpy()
            out["cover"].append(np.mean((ci[:, 0] <= beta) & (beta <= ci[:, 1])))
            out["length"].append(np.mean((ci[:, 1] - ci[:, 0]) / (2 * z * se)))
            out["warned"].append(any(issubclass(w.category, ConvergenceWarning)
                                     for w in caught))
    design = "wage_t3" if p is None else f"natural units, p = {p}"
    lines = [f"{family}, {design}, n = {n}, mu = {mu:g}, {reps} data sets (MC s.e. "
             f"{math.sqrt(0.05 * 0.95 / reps):.3f}); non-private covers {np.mean(mle):.3f}"]
    for engine in ENGINES:
        out = got[engine]
        cover, quiet = np.array(out["cover"]), ~np.array(out["warned"], bool)
        lengths = np.array(out["length"])
        unwarned = (f"covers {cover[quiet].mean():.3f}  length / non-private "
                    f"{lengths[quiet].mean():.3f}" if quiet.any() else "-")
        lines.append(f"  {engine:<7} all fits cover {cover.mean():.3f}  unwarned "
                     f"{quiet.mean():.2f}: {unwarned}  {np.mean(out['seconds']):.3f} s")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--family", nargs="+", default=["huber", "expectile"])
    parser.add_argument("--n", type=int, nargs="+", default=[2000, 10_000])
    parser.add_argument("--mu", type=float, nargs="+", default=[1.0, 5.0, 10.0])
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--natural", type=int, nargs="+", default=[],
                        help="instead of the wage equation: the robustness study's "
                             "natural-units design with these p (columns)")
    parser.add_argument("--append", action="store_true", help="append to --out")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    start = time.perf_counter()
    lines = []
    for p in args.natural or [None]:
        for family in args.family:
            for n in args.n:
                for mu in args.mu:
                    new = cell(family, n, mu, args.reps, args.seed, p)
                    lines += new
                    print("\n".join(new), flush=True)
    lines.append(f"({(time.perf_counter() - start) / 60:.1f} min: python "
                 f"validation/newton_location.py {' '.join(sys.argv[1:])})")
    out = pathlib.Path(args.out)
    before = out.read_text() if args.append and out.exists() else ""
    out.write_text(before + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
