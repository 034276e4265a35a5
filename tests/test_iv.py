"""dp_iv2sls: two-stage least squares by sufficient-statistics perturbation.

References: linearmodels' IV2SLS (the estimate and its unadjusted standard errors with
the noise off), statsmodels' F test of the excluded instruments (the first-stage F),
the ledger's accountants (the budget), and a Monte Carlo of a design whose declared
bounds are true bounds (coverage).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpreg
from dpreg.exceptions import ConvergenceWarning, FormulaError, OptionError

linearmodels_iv = pytest.importorskip("linearmodels.iv")

FORMULA = "y ~ 1 + x + [d ~ z1 + z2]"
BOUNDS = {"y": (-2, 4), "x": (-1, 1), "d": (-1.5, 1.5), "z1": (-1, 1), "z2": (-1, 1)}
TRUTH = np.array([1.0, 0.5, 1.0])
#: Noise off: mu so large that the noise is ~1e-9 of the statistics.
NO_NOISE = 1e9


def simulate(n: int, rng: np.random.Generator, strength: float = 0.5) -> pd.DataFrame:
    """Bounded strong-instrument design (validation/iv_coverage.py): |d| <= 1.5, y in
    [-2, 4], u = 0.5 v + 0.5 e2 correlated with d through v, independent of (x, z)."""
    x, z1, z2, v, e, e2 = rng.uniform(-1, 1, (6, n))
    d = strength * (z1 + z2) + 0.3 * v + 0.2 * e
    u = 0.5 * v + 0.5 * e2
    y = 1 + 0.5 * x + d + u
    return pd.DataFrame({"y": y, "x": x, "d": d, "z1": z1, "z2": z2})


def _richer(seed) -> pd.DataFrame:
    """Two endogenous regressors, a categorical exogenous term and an interaction
    (patsy orders its columns differently from the formula)."""
    rng = np.random.default_rng(seed)
    n = 3000
    x, w, z1, z2, z3, v1, v2, e = rng.uniform(-1, 1, (8, n))
    g = rng.choice(["a", "b", "c"], n)
    d1 = 0.6 * z1 + 0.3 * z3 + 0.3 * v1
    d2 = 0.5 * z2 - 0.3 * z3 + 0.3 * v2
    y = 0.5 + 0.3 * x * w + d1 - 0.5 * d2 + 0.2 * (g == "b") + 0.5 * v1 + 0.3 * e
    return pd.DataFrame({"y": y, "x": x, "w": w, "z1": z1, "z2": z2, "z3": z3, "d1": d1,
                         "d2": d2, "g": g})


RICH_BOUNDS = {"y": (-5, 5), "x": (-1, 1), "w": (-1, 1), "z1": (-1, 1), "z2": (-1, 1),
               "z3": (-1, 1), "d1": (-1.2, 1.2), "d2": (-1.1, 1.1)}


@pytest.mark.parametrize("formula, rich", [
    (FORMULA, False),
    ("y ~ x + [d ~ z1 + z2]", False),  # no intercept (linearmodels' rule)
    ("y ~ 1 + C(g) + x:w + [d1 + d2 ~ z1 + z2 + z3]", True),
])
def test_noise_off_matches_linearmodels(formula, rich, seed):
    df = _richer(seed) if rich else simulate(5000, np.random.default_rng(seed))
    bounds = RICH_BOUNDS if rich else BOUNDS
    levels = {"g": ["a", "b", "c"]} if rich else None
    res = dpreg.dp_iv2sls(formula, df, mu=NO_NOISE, bounds=bounds, levels=levels,
                          random_state=1)
    ref = linearmodels_iv.IV2SLS.from_formula(formula, df)
    names = list(ref.fit().params.index)
    assert sorted(res.params.index) == sorted(names)
    # unadjusted covariance with sigma^2 = RSS / (n - k), as dpreg's (debiased=True);
    # the noise (std ~1e-9 of the statistics) and round-off in the bounds' coordinates
    # leave agreement to far below 1e-6 (measured ~1e-10)
    fit = ref.fit(cov_type="unadjusted", debiased=True)
    np.testing.assert_allclose(res.params[names], fit.params, rtol=1e-6)
    np.testing.assert_allclose(res.bse[names], fit.std_errors, rtol=1e-6)
    # linearmodels' default sigma^2 = RSS / n: the same up to sqrt(n / (n - k))
    # (1.0003 here at n = 5000, k = 3; 1.001 at n = 3000, k = 6)
    fit = ref.fit(cov_type="unadjusted")
    n, k = res.nobs, len(names)
    np.testing.assert_allclose(res.bse[names] * math.sqrt((n - k) / n), fit.std_errors,
                               rtol=1e-6)
    assert res.engine == "IV-2SLS (SSP)"


def test_first_stage_f_matches_statsmodels(seed):
    df = simulate(5000, np.random.default_rng(seed))
    res = dpreg.dp_iv2sls(FORMULA, df, mu=NO_NOISE, bounds=BOUNDS, random_state=1)
    full = smf.ols("d ~ x + z1 + z2", df).fit()
    f_ref = full.compare_f_test(smf.ols("d ~ x", df).fit())[0]
    assert list(res.first_stage.index) == ["d"]
    np.testing.assert_allclose(res.first_stage["d"], f_ref, rtol=1e-6)


def test_ledger_meets_the_request(seed):
    df = simulate(2000, np.random.default_rng(seed))
    res = dpreg.dp_iv2sls(FORMULA, df, mu=2.0, bounds=BOUNDS, random_state=1)
    events = res.ledger.events
    assert [e.name for e in events] == ["IV W'W", "IV W'X", "IV W'y", "IV X'X", "IV X'y",
                                       "IV y'y"]
    # independent check: sum of (sensitivity / noise)^2 over the releases is mu^2
    mu_sq = math.fsum((e.sensitivity / e.noise_std) ** 2 for e in events)
    assert math.sqrt(mu_sq) == pytest.approx(2.0, rel=1e-9)
    assert res.ledger.total_mu == pytest.approx(2.0, rel=1e-9)
    # sensitivities from the public norms (bounds' coordinates): ||w|| <= 2 (intercept
    # and three [-1, 1] columns), ||x|| <= sqrt(3), |y - 1| <= 3
    sens = {e.name: e.sensitivity for e in events}
    assert sens["IV W'W"] == pytest.approx(math.sqrt(2) * 4)
    assert sens["IV W'X"] == pytest.approx(2 * 2 * math.sqrt(3))
    assert sens["IV W'y"] == pytest.approx(2 * 2 * 3)
    assert sens["IV X'X"] == pytest.approx(math.sqrt(2) * 3)
    assert sens["IV X'y"] == pytest.approx(2 * math.sqrt(3) * 3)
    assert sens["IV y'y"] == pytest.approx(9)
    res = dpreg.dp_iv2sls(FORMULA, df, epsilon=3.0, delta=1e-6, bounds=BOUNDS,
                          random_state=1)
    eps, _ = res.ledger.epsilon_rigorous
    # calibrated by the PLD accountant to its own discretization (1e-3 relative)
    assert eps == pytest.approx(3.0, rel=1e-3) and eps <= 3.0 * (1 + 1e-3)


def _coverage(reps: int, n: int, mu: float) -> dict[str, np.ndarray]:
    ss = np.random.SeedSequence(2026)
    hits = {m: np.zeros(3) for m in ("plugin", "pboot")}
    for child in ss.spawn(reps):
        data_seed, noise_seed = child.spawn(2)
        df = simulate(n, np.random.default_rng(data_seed))
        res = dpreg.dp_iv2sls(FORMULA, df, mu=mu, bounds=BOUNDS, n_boot=500,
                              random_state=noise_seed)
        for m in hits:
            ci = res.conf_int(method=m).values
            hits[m] += (ci[:, 0] <= TRUTH) & (TRUTH <= ci[:, 1])
    return {m: h / reps for m, h in hits.items()}


@pytest.mark.parametrize("reps", [100, pytest.param(1000, marks=pytest.mark.slow)])
def test_coverage_strong_instruments(reps):
    # 100 replications take ~5 s; each coefficient's coverage within 3 binomial
    # standard errors of 0.95 (0.065 at 100 reps, 0.021 at 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # no fit of this design warns
        cov = _coverage(reps, 5000, 5.0)
    tol = 3 * math.sqrt(0.95 * 0.05 / reps)
    for m, c in cov.items():
        assert np.all(np.abs(c - 0.95) <= tol), (m, c)


def test_weak_instrument_warns(seed):
    rng = np.random.default_rng(seed)
    df = simulate(5000, rng, strength=0.0)  # d does not depend on z1, z2
    with pytest.warns(ConvergenceWarning, match="weak instruments") as rec:
        res = dpreg.dp_iv2sls(FORMULA, df, mu=5.0, bounds=BOUNDS, random_state=1)
    assert res.first_stage["d"] < 10
    assert any("weak instruments" in note for note in res.notes)
    # through the fit's report (build_results): at the user's line, no convergence report
    assert all(w.filename == __file__ for w in rec)
    assert not hasattr(res, "convergence")


def test_strong_instrument_does_not_warn(seed):
    df = simulate(5000, np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = dpreg.dp_iv2sls(FORMULA, df, mu=5.0, bounds=BOUNDS, random_state=1)
    assert res.first_stage["d"] > 100
    text = res.summary().as_text()
    assert "IV-2SLS (SSP)" in text and "IV W'X" in text


def test_same_seed_same_numbers(seed):
    df = simulate(2000, np.random.default_rng(seed))
    a = dpreg.dp_iv2sls(FORMULA, df, mu=3.0, bounds=BOUNDS, random_state=7)
    b = dpreg.dp_iv2sls(FORMULA, df, mu=3.0, bounds=BOUNDS, random_state=7)
    np.testing.assert_array_equal(a.params, b.params)
    np.testing.assert_array_equal(a.conf_int(method="pboot"), b.conf_int(method="pboot"))


@pytest.mark.parametrize("formula, match", [
    ("y ~ 1 + x + d", "no bracketed part"),
    ("y ~ 1 + [d ~ z1] + [x ~ z2]", "exactly one bracketed part"),
    ("y ~ 1 + [d z1]", "exactly one '~'"),
    ("y ~ 1 + [ ~ z1]", "no endogenous regressor"),
    ("y ~ 1 + [d ~ ]", "no instrument"),
    ("y ~ 1 + x + [x ~ z1]", r"\['x'\] appear among both the exogenous"),
    ("y ~ 1 + [d ~ z1 + d]", r"\['d'\] appear among both the endogenous"),
    ("[d ~ z1] ~ y", "one '~' before the bracketed part"),
    (" ~ 1 + [d ~ z1]", "no outcome"),
    ("y ~ 1 + x + [d ~ z1 +]", "cannot parse the instruments"),
    (3, "must be a string"),
])
def test_bad_formulas(formula, match, seed):
    df = simulate(200, np.random.default_rng(seed))
    with pytest.raises(FormulaError, match=match):
        dpreg.dp_iv2sls(formula, df, mu=1.0, bounds=BOUNDS)


def test_underidentified_and_missing_bounds(seed):
    df = simulate(200, np.random.default_rng(seed))
    df["d2"] = df["d"] ** 2
    with pytest.raises(OptionError, match="at least as many excluded instruments"):
        dpreg.dp_iv2sls("y ~ 1 + [d + d2 ~ z1]", df, mu=1.0,
                        bounds={**BOUNDS, "d2": (0, 2.25)})
    bounds = {k: v for k, v in BOUNDS.items() if k != "z2"}
    with pytest.raises(OptionError, match=r"none declared for \['z2'\]"):
        dpreg.dp_iv2sls(FORMULA, df, mu=1.0, bounds=bounds)
    with pytest.raises(OptionError, match="cov_type"):
        dpreg.dp_iv2sls(FORMULA, df, mu=1.0, bounds=BOUNDS, cov_type="rs")


def test_missing_rows_dropped_once(seed):
    df = simulate(500, np.random.default_rng(seed))
    df.loc[3, "z2"] = np.nan  # an instrument: the row leaves X's design too
    df.loc[7, "d"] = np.nan
    res = dpreg.dp_iv2sls(FORMULA, df, mu=NO_NOISE, bounds=BOUNDS, random_state=1)
    assert res.nobs == 498 and res.n_dropped == 2
    ref = linearmodels_iv.IV2SLS.from_formula(FORMULA, df.dropna()).fit(
        cov_type="unadjusted", debiased=True)
    np.testing.assert_allclose(res.params[ref.params.index], ref.params, rtol=1e-6)


def test_privacy_covariance_matches_the_noise(seed):
    """The delta-method privacy term against the spread of the estimate over fresh noise
    at fixed data (overidentified, so the W'W and v terms count)."""
    from dpreg.engines.iv import IVSettings, iv_events, iv_sums, release_iv
    from dpreg.fits.iv import DEFAULT_SPLIT
    from dpreg.inference.iv_estimator import iv_estimate

    df = simulate(20000, np.random.default_rng(seed))
    W = np.column_stack([np.ones(len(df)), df.x, df.z1, df.z2])
    X = np.column_stack([np.ones(len(df)), df.x, df.d])
    settings = IVSettings(w_bound=2.0, x_bound=float(np.sqrt(1 + 1 + 1.5 ** 2)),
                          y_bound=3.0, y_shift=1.0)
    sums = iv_sums(W, X, df.y.to_numpy(), settings)
    events = iv_events(settings, 4, 3, DEFAULT_SPLIT, 1.0)
    rng = np.random.default_rng(seed)
    est0 = iv_estimate(release_iv(sums, events, rng))
    draws = np.array([iv_estimate(release_iv(sums, events, rng)).params
                      for _ in range(2000)])
    sd = draws.std(axis=0)
    # 2000 draws: the s.d. has relative Monte Carlo error ~1.6%; the delta method at
    # one release against another and its second-order terms, a few percent more
    np.testing.assert_allclose(np.sqrt(np.diag(est0.privacy_cov)), sd, rtol=0.1)


def test_instrument_categories_read_off_the_data_warn(seed):
    from dpreg.exceptions import PrivacyLeakWarning

    df = simulate(2000, np.random.default_rng(seed))
    df["g"] = np.where(df.z2 > 0, "hi", "lo")
    with pytest.warns(PrivacyLeakWarning, match=r"categories of \['C\(g\)'\]"):
        dpreg.dp_iv2sls("y ~ 1 + x + [d ~ z1 + C(g)]", df, mu=5.0, bounds=BOUNDS,
                        random_state=1)
    res = dpreg.dp_iv2sls("y ~ 1 + x + [d ~ z1 + C(g)]", df, mu=5.0, bounds=BOUNDS,
                          levels={"g": ["hi", "lo"]}, random_state=1)
    assert list(res.params.index) == ["Intercept", "x", "d"]
