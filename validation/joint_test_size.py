"""Size of joint tests (issue 26, item 4): Wald tests of q true restrictions on DP-SGD
fits, by the plug-in (reference law from re-released covariances; beyond
``PLUGIN_JOINT_MAX`` restrictions also the Bonferroni combination) and by random scaling
(the multivariate pivot up to ``RS_JOINT_MAX`` restrictions, the Bonferroni combination
of the exact scalar tests beyond; :mod:`dpreg.results.hypothesis`).

Design: ``y = 1 + e`` with 12 covariates uniform on their declared boxes [-1, 1] (all
slopes zero), the outcome clipped to [-4, 6], the defaults of ``dp_ols`` (learned ranges
included) with ``engine="dpsgd"``, ``cov_type="plugin"``. For q = 1, 2, 4, 6, 8 and 12
restrictions (the first q slopes are zero) the share of fits whose ``wald_test`` p-value
is below 0.05, per (n, mu), by the fit's tests and, for comparison, by the
multivariate random-scaling pivot alone (``rs_pivot``). Then SSP's plug-in (a
chi-square test) on the same design, over its fits whose ``X'X`` was not floored (a
floored fit warns) and over the floored ones. A last row: a design in natural units (a
quadratic in age, a log income, codebook boxes), its 5 slopes zero, against the
chi-square reference on the same fits. DP-SGD's tests run at the default number of
steps and, at n = 1,000 and mu = 5, at 20 n and n^2 steps too.

    python validation/joint_test_size.py [--reps 200]
"""

from __future__ import annotations

import argparse
import pathlib
import warnings

import numpy as np
import pandas as pd

import dpreg

P = 12
NAMES = [f"x{j}" for j in range(P)]
BOUNDS = {c: (-1, 1) for c in NAMES} | {"y": (-4, 6)}
OUT = pathlib.Path(__file__).parent / "results" / "joint_test_size.txt"


def cell(n: int, mu: float, reps: int, steps: int | None = None) -> str:
    """DP-SGD's tests at ``n``, ``mu`` and ``steps`` (``None``: the default count)."""
    from dpreg.inference.rs_joint import contrast_scale_matrix, rs_joint_law

    qs = (1, 2, 4, 6, 8, P)
    rejected = {(m, q): 0 for m in ("plugin", "rs", "rs_pivot") for q in qs}
    for r in range(reps):
        rng = np.random.default_rng(r)
        data = pd.DataFrame(rng.uniform(-1, 1, (n, P)), columns=NAMES)
        data["y"] = np.clip(1 + rng.normal(0, 1, n), -4, 6)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dpreg.dp_ols("y ~ " + " + ".join(NAMES), data, mu=mu, bounds=BOUNDS,
                               random_state=r, cov_type="plugin", engine="dpsgd",
                               **({} if steps is None else {"steps": steps}))
        for m, q in rejected:
            if m == "rs_pivot":  # the multivariate pivot's law at every q
                R = np.eye(P + 1)[1:q + 1]
                d = R @ res.params.to_numpy()
                G = contrast_scale_matrix(res.inferences["rs"], R)
                pvalue = float(rs_joint_law.sf(float(d @ np.linalg.solve(G, d)) / q, q))
            else:
                spec = ", ".join(f"{c} = 0" for c in NAMES[:q])
                pvalue = float(np.squeeze(res.wald_test(spec, method=m, scalar=True).pvalue))
            rejected[(m, q)] += pvalue < 0.05
    se = (0.05 * 0.95 / reps) ** 0.5
    parts = "  ".join(f"{m} q={q}: {k / reps:.3f}" for (m, q), k in rejected.items())
    at = "" if steps is None else f" steps = {steps:,}"
    return f"n = {n:5d} mu = {mu:g}{at}: {parts}  (MC s.e. {se:.3f})"


def ssp_cell(n: int, mu: float, reps: int) -> str:
    """SSP's plug-in joint tests on the same design: size over the unfloored fits (which
    do not warn) and over the floored ones."""
    qs = (1, 4, P)
    rejected = {(f, q): 0 for f in (False, True) for q in qs}
    fits = {False: 0, True: 0}
    for r in range(reps):
        rng = np.random.default_rng(r)
        data = pd.DataFrame(rng.uniform(-1, 1, (n, P)), columns=NAMES)
        data["y"] = np.clip(1 + rng.normal(0, 1, n), -4, 6)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dpreg.dp_ols("y ~ " + " + ".join(NAMES), data, mu=mu, bounds=BOUNDS,
                               random_state=r, engine="ssp")
        floored = res.settings.value("n_floored") > 0
        fits[floored] += 1
        for q in qs:
            spec = ", ".join(f"{c} = 0" for c in NAMES[:q])
            test = res.wald_test(spec, scalar=True)
            rejected[(floored, q)] += float(np.squeeze(test.pvalue)) < 0.05
    parts = [f"{'floored' if f else 'unfloored'} ({fits[f]} fits) q={q}: "
             f"{rejected[(f, q)] / fits[f]:.3f}" for f in (False, True) if fits[f]
             for q in qs]
    return f"SSP n = {n:5d} mu = {mu:g}: " + "  ".join(parts)


NATURAL = "y ~ age + I(age ** 2) + educ + female + np.log(inc)"
NATURAL_BOUNDS = {"y": (0, 100), "age": (16, 100), "educ": (0, 25), "female": (0, 1),
                  "inc": (1000, 1e6)}


def natural_cell(n: int, mu: float, reps: int) -> str:
    """Natural units in codebook boxes (a quadratic in age, a log income), all 5 slopes
    zero: the plug-in's joint test against its chi-square reference."""
    from scipy import stats

    rejected = chi2 = 0
    for r in range(reps):
        rng = np.random.default_rng(1000 + r)
        data = pd.DataFrame({"age": rng.uniform(20, 60, n),
                             "educ": np.clip(rng.normal(13, 2.5, n), 6, 20),
                             "female": rng.integers(0, 2, n).astype(float),
                             "inc": rng.lognormal(10, 0.5, n)})
        data["y"] = np.clip(50 + rng.normal(0, 10, n), 0, 100)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dpreg.dp_ols(NATURAL, data, mu=mu, bounds=NATURAL_BOUNDS, random_state=r,
                               cov_type="plugin", engine="dpsgd")
        test = res.wald_test("age = 0, I(age ** 2) = 0, educ = 0, female = 0, "
                             "np.log(inc) = 0", scalar=True)
        rejected += float(test.pvalue) < 0.05
        chi2 += stats.chi2.sf(float(test.statistic), 5) < 0.05
    return (f"natural units, n = {n:5d} mu = {mu:g}: plugin q=5: {rejected / reps:.3f} "
            f"(chi-square reference {chi2 / reps:.3f})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    reps = parser.parse_args().reps
    lines = [cell(n, mu, reps) for n, mu in ((1000, 0.5), (1000, 5.0), (5000, 2.0))]
    # step counts other than the default (200 n at n = 1,000): 20 n, and n^2
    lines += [cell(1000, 5.0, reps, steps) for steps in (20_000, 1_000_000)]
    lines += [ssp_cell(n, mu, reps) for n, mu in ((1000, 0.5), (1000, 5.0), (5000, 2.0),
                                                   (10_000, 5.0))]
    lines.append(natural_cell(2000, 5.0, reps))
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text + "\n")


if __name__ == "__main__":
    main()
