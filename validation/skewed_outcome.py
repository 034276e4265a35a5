"""Private ranges on a skewed, heavy-tailed outcome: how far clipping moves the estimand.

The private ranges (``ranges="auto"``, :mod:`dpreg.privacy.ranges`) clip each column at
the points where ``t = min(0.005 n, 0.5 sqrt(n))`` rows lie beyond, which moves a mean
by at most half a standard error when the clipped rows' excess is about one standard
deviation. A skewed outcome with a long right tail (doctor visits, spending, income)
breaks that premise: its clipped rows lie many standard deviations out, on one side.

Two measurements, at the package's defaults (the engine by the rule, ``ranges="auto"``)
and with the declared boxes (``ranges="declared"``):

* **Simulated visits** (``--reps``): ``y ~ NegBin(mean x' beta, shape 0.5)`` (variance
  ``m + 2 m^2``; the mean is linear, so OLS targets ``beta``), ``x`` = age (uniform
  20-65, box 0-100), chronic conditions (Poisson 1, box 0-20), a female dummy and log
  income (normal 10, s.d. 0.7, box 5-15); the outcome's codebook box is 0-365 visits a
  year. Per cell: the share of fits unwarned and, over them, the coverage of the true
  coefficients (all, and the worst coefficient's), the mean length over the
  non-private HC1 interval, and the largest mean shift of a coefficient from the
  non-private estimate in private standard errors (the clipping bias).
* **randhie** (statsmodels' RAND health insurance data, n = 20,190, outpatient visits
  ``mdvis`` in 0-100; the model of ``validation/statsmodels_datasets.py``): the same
  shift over ``--seeds`` fits; and, for the ranges the first DP-SGD fit learned, the two
  clippings apart, without privacy: OLS on the rows clipped to those ranges, and the
  minimizer of the objective whose per-example gradients are clipped at that fit's
  ``clip`` (:func:`dpreg.studies.robustness.clipped_target`), each against OLS in its
  standard errors.

The summary's note on a long-tailed outcome (``--note-rates``): the share of fits that
print it, on the textbook study's linear designs (whose defaults cover; the note is a
false alarm there) and on the skewed designs above (where it should appear), at
n = 500, 2,000 and 10,000 (randhie: its 20,190 rows) and mu = 1, 5 and 10, by SSP (the
note reads only the ranges' release, which is the same for every central engine).

The rule for DP-SGD's clip (``--skewed-clip``): where the note fires and ``n mu >=``
:data:`dpreg.fits.common.SKEWED_CLIP_MIN_N_MU`, DP-SGD's clip lets a residual reach from
the outcome's private median to the far end of its learned range instead of half the
range (:func:`dpreg.fits.common.skewed_reach`). Per cell, DP-SGD with the rule applied
wherever the note fires (``rule``) against DP-SGD with half the range (``half``), on the
same data sets and seeds; and the share of fits in which the note fired.

The recorded runs (``validation/results/skewed_outcome.txt``, ``..._note.txt`` and
``..._skewed_clip.txt``; each mode writes its own file unless ``--out`` is given)::

    python validation/skewed_outcome.py --reps 100 --seeds 20
    python validation/skewed_outcome.py --note-rates --reps 50
    python validation/skewed_outcome.py --skewed-clip --reps 60 --seeds 40 \
        --n 10000 20000 --mu 1 1.5 2 3 5
"""

from __future__ import annotations

import argparse
import contextlib
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import dpreg
import dpreg.fits.common
from dpreg.exceptions import ConvergenceWarning

RESULTS = Path(__file__).parent / "results"
#: Where each mode writes (``--out`` overrides).
OUT = {"main": RESULTS / "skewed_outcome.txt",
       "note": RESULTS / "skewed_outcome_note.txt",
       "skewed-clip": RESULTS / "skewed_outcome_skewed_clip.txt"}
FORMULA = "visits ~ age + chronic + female + loginc"
BETA = {"Intercept": 1.0 - 0.05 * 20 + 0.3 * 10, "age": 0.05, "chronic": 1.0,
        "female": 0.8, "loginc": -0.3}
BOUNDS = {"visits": (0, 365), "age": (0, 100), "chronic": (0, 20), "female": (0, 1),
          "loginc": (5, 15)}
SHAPE = 0.5  # negative binomial shape: variance m + m^2 / SHAPE
RANDHIE_FORMULA = ("mdvis ~ lncoins + idp + lpi + fmde + physlm + disea + hlthg + hlthf"
                   " + hlthp")
RANDHIE_BOUNDS = {"mdvis": (0, 100), "lncoins": (0, np.log(101)), "idp": (0, 1),
                  "lpi": (0, 10), "fmde": (0, 10), "physlm": (0, 1), "disea": (0, 100),
                  "hlthg": (0, 1), "hlthf": (0, 1), "hlthp": (0, 1)}


def simulate_visits(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` people: covariates in natural units and visits with a linear mean."""
    age = rng.uniform(20, 65, n)
    chronic = np.minimum(rng.poisson(1.0, n), 20).astype(float)
    female = (rng.random(n) < 0.5).astype(float)
    loginc = np.clip(rng.normal(10, 0.7, n), 5, 15)
    mean = (BETA["Intercept"] + BETA["age"] * age + BETA["chronic"] * chronic
            + BETA["female"] * female + BETA["loginc"] * loginc)
    # NegBin(shape k, mean m): Poisson with a Gamma(k, m / k) rate
    visits = np.minimum(rng.poisson(rng.gamma(SHAPE, mean / SHAPE)), 365).astype(float)
    return pd.DataFrame({"visits": visits, "age": age, "chronic": chronic,
                         "female": female, "loginc": loginc})


def private_fit(formula: str, data: pd.DataFrame, bounds: dict, mu: float, ranges: str,
                seed: int, **options):
    """The default fit (or with declared boxes) and whether it warned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dpreg.dp_ols(formula, data, mu=mu, bounds=bounds, ranges=ranges,
                           random_state=seed, **options)
    return res, any(issubclass(w.category, ConvergenceWarning) for w in caught)


#: The words of DP-SGD's clip reason when the rule for a long-tailed outcome set it.
REACH_REASON = "private median to the far end of its learned range"


@contextlib.contextmanager
def skewed_rule(on: bool):
    """DP-SGD's clip rule for a long-tailed outcome wherever the note fires (``on``), or
    never (half the outcome's learned range, the clip before the rule)."""
    saved = dpreg.fits.common.SKEWED_CLIP_MIN_N_MU
    dpreg.fits.common.SKEWED_CLIP_MIN_N_MU = 0 if on else float("inf")
    try:
        yield
    finally:
        dpreg.fits.common.SKEWED_CLIP_MIN_N_MU = saved


def variant_fit(formula: str, data: pd.DataFrame, bounds: dict, mu: float, variant: str,
                seed: int):
    """One fit of ``variant``: ``"auto"`` or ``"declared"`` (the defaults with those
    ranges), or DP-SGD at the default ranges with the skewed-outcome rule (``"rule"``)
    or without (``"half"``)."""
    if variant in ("auto", "declared"):
        return private_fit(formula, data, bounds, mu, variant, seed)
    with skewed_rule(variant == "rule"):
        return private_fit(formula, data, bounds, mu, "auto", seed, engine="dpsgd")


def reach_fired(res) -> bool:
    """Whether the rule for a long-tailed outcome set this fit's clip."""
    return any(REACH_REASON in note for note in res.notes)


def visits_cell(n: int, mu: float, ranges: str, reps: int, seed: int) -> str:
    """One cell of the simulated visits; ``ranges`` is a variant of :func:`variant_fit`."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng([seed, n, int(mu * 10)])
    names = list(BETA)
    beta = np.array([BETA[k] for k in names])
    cover, length, shift, warned, engines, fired = [], [], [], [], set(), []
    for _ in range(reps):
        data = simulate_visits(n, rng)
        ref = smf.ols(FORMULA, data).fit(cov_type="HC1")
        fit_seed = int(rng.integers(2 ** 31))
        res, w = variant_fit(FORMULA, data, BOUNDS, mu, ranges, fit_seed)
        fired.append(reach_fired(res))
        engines.add(res.engine)
        warned.append(w)
        if w:
            continue
        ci = res.conf_int().loc[names].to_numpy()
        cover.append((ci[:, 0] <= beta) & (beta <= ci[:, 1]))
        ref_ci = ref.conf_int().loc[names].to_numpy()
        length.append((ci[:, 1] - ci[:, 0]) / (ref_ci[:, 1] - ref_ci[:, 0]))
        shift.append(((res.params - ref.params) / res.bse).loc[names].to_numpy())
    head = (f"visits n = {n:>6} mu = {mu:>4g} ranges = {ranges:<8} "
            f"({'/'.join(sorted(engines))}): unwarned {1 - np.mean(warned):.2f}"
            + (f", rule fired {np.mean(fired):.2f}" if ranges == "rule" else ""))
    if not cover:
        return head
    cover, length, shift = np.array(cover), np.array(length), np.array(shift)
    by_coef = cover.mean(0)
    mcse = np.sqrt(0.95 * 0.05 / len(cover))
    worst = int(np.argmin(by_coef))
    big = int(np.argmax(np.abs(shift.mean(0))))
    return (f"{head}, coverage {cover.mean():.3f} (worst {names[worst]} "
            f"{by_coef[worst]:.3f}; MC s.e. of one coefficient {mcse:.3f}), length "
            f"{length.mean():.2f}, largest shift {shift.mean(0)[big]:+.2f} s.e. "
            f"({names[big]})")


def randhie_cell(mu: float, ranges: str, seeds: int) -> str:
    """randhie at ``mu``; ``ranges`` is a variant of :func:`variant_fit`. The fits'
    containment of the OLS estimates is reported too (issue 25's real-data target)."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    data = sm.datasets.randhie.load_pandas().data
    ref = smf.ols(RANDHIE_FORMULA, data).fit(cov_type="HC1")
    shift, length, warned, engines, ends, clipped, fired = [], [], [], set(), [], [], []
    contains = []
    for seed in range(seeds):
        res, w = variant_fit(RANDHIE_FORMULA, data, RANDHIE_BOUNDS, mu, ranges, seed)
        fired.append(reach_fired(res))
        engines.add(res.engine)
        warned.append(w)
        shift.append(((res.params - ref.params) / res.bse).to_numpy())
        length.append(float((res.bse / ref.bse).mean()))
        ci = res.conf_int().to_numpy()
        contains.append((ci[:, 0] <= ref.params.to_numpy()) & (ref.params.to_numpy() <= ci[:, 1]))
        if ranges != "declared":
            learned = learned_ranges(res)
            ends.append((learned["mdvis"][1], learned["disea"][1]))
            clipped.append(float((data["mdvis"] > learned["mdvis"][1]).mean()))
    mean = np.array(shift).mean(0)
    order = np.argsort(-np.abs(mean))[:2]
    names = list(ref.params.index)
    tops = ", ".join(f"{names[i]} {mean[i]:+.2f}" for i in order)
    learned = ""
    if ends:
        ends = np.array(ends)
        learned = (f"; learned upper ends mdvis {ends[:, 0].min():.3g}-{ends[:, 0].max():.3g} "
                   f"({min(clipped):.2%}-{max(clipped):.2%} of the rows above), disea "
                   f"{ends[:, 1].min():.3g}-{ends[:, 1].max():.3g}")
    return (f"randhie mu = {mu:>4g} ranges = {ranges:<8} ({'/'.join(sorted(engines))}): "
            f"unwarned {1 - np.mean(warned):.2f}"
            + (f", rule fired {np.mean(fired):.2f}" if ranges == "rule" else "")
            + f", contains OLS {np.mean(contains):.3f} (worst coefficient "
            f"{np.array(contains).mean(0).min():.3f}), largest mean shifts (private s.e.) "
            f"{tops}, length {np.mean(length):.2f}{learned}")


def learned_ranges(res) -> dict[str, tuple[float, float]]:
    """The ranges a fit learned, read off its settings table (``name [lo, hi] (...)``)."""
    text = str(res.settings.value("ranges"))
    return {m.group(1): (float(m.group(2)), float(m.group(3)))
            for m in re.finditer(r"(\w+) \[([-0-9.e]+), ([-0-9.e]+)\]", text)
            if "declared" not in m.group(1)}


def randhie_clippings(mu: float) -> str:
    """The two clippings of the first DP-SGD fit at ``mu``, apart and without privacy."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    from dpreg.studies.robustness import clipped_target

    data = sm.datasets.randhie.load_pandas().data
    ref = smf.ols(RANDHIE_FORMULA, data).fit(cov_type="HC1")
    res, _ = private_fit(RANDHIE_FORMULA, data, RANDHIE_BOUNDS, mu, "auto", 0)
    ranges = learned_ranges(res)
    model = dpreg.DPRegression.from_formula(RANDHIE_FORMULA, data, bounds=ranges)
    ols_clipped = model.fit_oracle().params.to_numpy()
    target = clipped_target(model, float(res.settings.value("clip")))
    names = list(ref.params.index)
    shift = {"OLS on the clipped rows": (ols_clipped - ref.params.to_numpy()),
             "clipped-gradient minimizer": (target - ref.params.to_numpy())}
    parts = []
    for label, move in shift.items():
        z = move / ref.bse.to_numpy()
        top = np.argsort(-np.abs(z))[:2]
        parts.append(f"{label} " + ", ".join(f"{names[i]} {z[i]:+.2f}" for i in top))
    return (f"randhie mu = {mu:>4g} first fit ({res.engine}), outcome clipped at "
            f"{ranges['mdvis'][1]:g}: " + "; ".join(parts) + " (OLS s.e.)")


def note_rates(reps: int, seed: int) -> list[str]:
    """The share of fits whose summary notes a long-tailed outcome, per design, n, mu."""
    import statsmodels.api as sm

    from dpreg.studies.textbook import simulate_design

    rng = np.random.default_rng(seed)
    randhie = sm.datasets.randhie.load_pandas().data
    designs = {
        "wage (textbook)": lambda n: simulate_design("wage", n, rng)[:3],
        "fertility (textbook)": lambda n: simulate_design("fertility", n, rng)[:3],
        "wage_t3 (textbook)": lambda n: simulate_design("wage_t3", n, rng)[:3],
        "visits (simulated)": lambda n: (simulate_visits(n, rng), FORMULA, BOUNDS),
        "randhie": lambda n: (randhie, RANDHIE_FORMULA, RANDHIE_BOUNDS),
    }
    lines = []
    for label, draw in designs.items():
        for n in ((20_190,) if label == "randhie" else (500, 2000, 10_000)):
            rates = []
            for mu in (1.0, 5.0, 10.0):
                hits = 0
                for _ in range(reps):
                    data, formula, bounds = draw(n)
                    res, _ = private_fit(formula, data, bounds, mu, "auto",
                                         int(rng.integers(2 ** 31)), engine="ssp")
                    hits += any("long right tail" in note or "long left tail" in note
                                for note in res.notes)
                rates.append(f"mu = {mu:g}: {hits / reps:.2f}")
            lines.append(f"note on the outcome's tail, {label}, n = {n}: " + ", ".join(rates))
            print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--n", type=int, nargs="+", default=[2000, 20_000])
    parser.add_argument("--mu", type=float, nargs="+", default=[2.0, 5.0])
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--out", help="the file written (default: per mode, "
                             "validation/results/skewed_outcome[_note|_skewed_clip].txt)")
    parser.add_argument("--note-rates", action="store_true",
                        help="the share of fits that note a long-tailed outcome (module "
                             "notes)")
    parser.add_argument("--skewed-clip", action="store_true",
                        help="DP-SGD with the clip rule for a long-tailed outcome against "
                             "DP-SGD with half the outcome's range (module notes)")
    args = parser.parse_args()
    start = time.perf_counter()
    mode = "note" if args.note_rates else "skewed-clip" if args.skewed_clip else "main"
    out = Path(args.out) if args.out else OUT[mode]
    if args.note_rates:
        lines = note_rates(args.reps, args.seed)
        lines.append(f"({(time.perf_counter() - start) / 60:.1f} min: python "
                     f"validation/skewed_outcome.py --note-rates --reps {args.reps})")
        out.write_text("\n".join(lines) + "\n")
        return
    variants = ("half", "rule") if args.skewed_clip else ("auto", "declared")
    lines = []
    for n in args.n:
        for mu in args.mu:
            for variant in variants:
                lines.append(visits_cell(n, mu, variant, args.reps, args.seed))
                print(lines[-1], flush=True)
    for mu in args.mu:
        for variant in variants:
            lines.append(randhie_cell(mu, variant, args.seeds))
            print(lines[-1], flush=True)
    if not args.skewed_clip:
        lines.append(randhie_clippings(args.mu[0]))
        print(lines[-1], flush=True)
    minutes = (time.perf_counter() - start) / 60
    flag = "--skewed-clip " if args.skewed_clip else ""
    grid = (f" --n {' '.join(str(n) for n in args.n)} --mu {' '.join(f'{m:g}' for m in args.mu)}"
            if args.skewed_clip else "")
    lines.append(f"({minutes:.1f} min: python validation/skewed_outcome.py {flag}--reps "
                 f"{args.reps} --seeds {args.seeds}{grid})")
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
