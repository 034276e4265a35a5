"""Monte Carlo measures and their standard errors, against hand computation."""

import math

import numpy as np
import pandas as pd
import pytest

from dpreg.exceptions import OptionError
from dpreg.studies import compare_with_reference, nominal_band, summarize
from dpreg.studies.summaries import AVERAGE


@pytest.fixture
def raw(seed):
    """Two coefficients, 40 replications, one method with intervals and p-values."""
    rng = np.random.default_rng(seed)
    reps = 40
    rows = []
    for rep in range(reps):
        for j, coef in enumerate(("a", "b")):
            truth = 1.0 + j
            est = truth + 0.3 * rng.standard_normal() + 0.05
            half = 0.5 * rng.uniform(0.5, 1.5)
            rows.append(dict(rep=rep, n=100, method="m", coef=coef, truth=truth,
                             estimate=est, lower=est - half, upper=est + half,
                             pvalue=rng.uniform(), alpha=0.1))
    return pd.DataFrame(rows)


def test_per_coefficient_measures_by_hand(raw):
    table = summarize(raw)
    g = raw[raw.coef == "b"]
    row = table[table.coef == "b"].iloc[0]
    R = len(g)
    cover = ((g.lower <= g.truth) & (g.truth <= g.upper)).to_numpy(float)
    c = cover.mean()
    assert row.reps == R and row.nominal == pytest.approx(0.9)
    assert row.coverage == pytest.approx(c, abs=1e-15)
    # sd(ddof=1)/sqrt(R) of a 0/1 variable is the binomial s.e. with R - 1
    assert row.coverage_mcse == pytest.approx(math.sqrt(c * (1 - c) / (R - 1)), rel=1e-12)
    err = (g.estimate - g.truth).to_numpy()
    assert row.bias == pytest.approx(err.mean(), rel=1e-12)
    assert row.bias_mcse == pytest.approx(err.std(ddof=1) / math.sqrt(R), rel=1e-12)
    mse = np.mean(err ** 2)
    se_mse = np.std(err ** 2, ddof=1) / math.sqrt(R)
    assert row.mse == pytest.approx(mse, rel=1e-12)
    assert row.mse_mcse == pytest.approx(se_mse, rel=1e-12)
    assert row.rmse == pytest.approx(math.sqrt(mse), rel=1e-12)
    assert row.rmse_mcse == pytest.approx(se_mse / (2 * math.sqrt(mse)), rel=1e-12)
    length = (g.upper - g.lower).to_numpy()
    assert row.length == pytest.approx(length.mean(), rel=1e-12)
    assert row.length_mcse == pytest.approx(length.std(ddof=1) / math.sqrt(R), rel=1e-12)
    rej = (g.pvalue < 0.1).to_numpy(float)
    assert row.rejection == pytest.approx(rej.mean(), abs=1e-15)
    assert row.rejection_mcse == pytest.approx(rej.std(ddof=1) / math.sqrt(R), rel=1e-12)


def test_average_rows_use_per_replication_averages(raw):
    table = summarize(raw)
    row = table[table.coef == AVERAGE].iloc[0]
    cover = ((raw.lower <= raw.truth) & (raw.truth <= raw.upper)).astype(float)
    per_rep = cover.groupby(raw.rep).mean().to_numpy()
    assert row.coverage == pytest.approx(per_rep.mean(), abs=1e-15)
    assert row.coverage_mcse == pytest.approx(per_rep.std(ddof=1) / math.sqrt(40), rel=1e-12)
    sq = ((raw.estimate - raw.truth) ** 2).groupby(raw.rep).mean().to_numpy()
    assert row.rmse == pytest.approx(math.sqrt(sq.mean()), rel=1e-12)
    assert row.mse_mcse == pytest.approx(sq.std(ddof=1) / math.sqrt(40), rel=1e-12)
    assert summarize(raw, average=False).coef.tolist() == ["a", "b"]


def test_groups_default_to_factors_methods_levels_and_keys(raw):
    two = pd.concat([raw, raw.assign(method="other", steps=5)], ignore_index=True)
    table = summarize(two)
    assert list(table.columns[:5]) == ["n", "method", "alpha", "steps", "coef"]
    assert len(table) == 6  # 2 methods x (2 coefs + average); NaN key kept as a group
    assert table[table.method == "m"].steps.isna().all()


def test_methods_without_intervals_give_nan_coverage(raw):
    raw = raw.assign(lower=np.nan, upper=np.nan, pvalue=np.nan)
    row = summarize(raw).iloc[0]
    assert np.isnan(row.coverage) and np.isnan(row.length) and np.isnan(row.rejection)
    assert np.isfinite(row.rmse)


def test_bad_input():
    with pytest.raises(OptionError, match="lacks"):
        summarize(pd.DataFrame({"coef": ["a"], "truth": [1.0]}))
    with pytest.raises(OptionError, match="DataFrame"):
        summarize([1, 2])


def test_nominal_band():
    lo, hi = nominal_band(0.95, 400)
    half = 1.959963984540054 * math.sqrt(0.95 * 0.05 / 400)
    assert lo == pytest.approx(0.95 - half) and hi == pytest.approx(0.95 + half)


def test_compare_with_reference():
    ours = pd.DataFrame({"n": [1, 2], "coef": AVERAGE, "coverage": [0.93, 0.80],
                         "coverage_mcse": [0.01, 0.01]})
    ref = pd.DataFrame({"n": [1, 2], "coef": AVERAGE, "coverage": [0.95, 0.95]})
    out = compare_with_reference(ours, ref, on=["n", "coef"], reference_reps=200)
    se_ref = math.sqrt(0.95 * 0.05 / 200)
    assert out.reference_se.iloc[0] == pytest.approx(se_ref)
    assert out.z.iloc[0] == pytest.approx(-0.02 / math.sqrt(0.01 ** 2 + se_ref ** 2))
    assert out.within_mc_error.tolist() == [True, False]


def test_relative_mse_is_paired_and_matches_hand_computation(raw):
    from dpreg.studies import relative_mse

    base = raw.assign(method="base", estimate=raw.truth + 0.5 * (raw.estimate - raw.truth),
                      steps=np.nan)
    two = pd.concat([raw.assign(steps=10), raw.assign(steps=20), base], ignore_index=True)
    out = relative_mse(two, "base")
    row = out[(out.method == "m") & (out.steps == 10)].iloc[0]
    # the method's errors are exactly twice the baseline's: ratio 4, no MC error
    assert row.relative_mse == pytest.approx(4.0) and row.relative_mse_mcse < 1e-12
    assert len(out) == 3 and row.reps == 40
    assert out[out.method == "base"].relative_mse.iloc[0] == pytest.approx(1.0)
    noisy = two.copy()
    noisy.loc[noisy.method == "m", "estimate"] += 0.1
    r = relative_mse(noisy, "base")
    m10 = noisy[(noisy.method == "m") & (noisy.steps == 10)]
    x = ((m10.estimate - m10.truth) ** 2).groupby(m10.rep).mean()
    b = ((base.estimate - base.truth) ** 2).groupby(base.rep).mean()
    ratio = x.mean() / b.mean()
    se = np.std(x.to_numpy() - ratio * b.to_numpy(), ddof=1) / (np.sqrt(40) * b.mean())
    got = r[(r.method == "m") & (r.steps == 10)].iloc[0]
    assert got.relative_mse == pytest.approx(ratio, rel=1e-12)
    assert got.relative_mse_mcse == pytest.approx(se, rel=1e-12)
    with pytest.raises(OptionError, match="baseline"):
        relative_mse(raw, "nope")
