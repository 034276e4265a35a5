"""Tests of dpreg.inference.pivot: the law of W(1) / sqrt(int (W(r) - r W(1))^2 dr).

Three independent checks of the distribution function: published critical values,
an mpmath reference built from the Anderson-Darling series for int B^2 (see
tests/results/make_pivot_reference.py), and a seeded Monte Carlo of the series
representation Q = sum_k Z_k^2 / (k pi)^2.
"""

import math
import os
import time

import numpy as np
import pytest
from scipy import integrate

from dpreg.inference.pivot import RandomScalingPivot, rs_pivot

REFERENCE = os.path.join(os.path.dirname(__file__), "..", "results", "pivot_reference.csv")


def _reference():
    """(x, P(|R| > x)) from the mpmath reference; '#' lines are provenance."""
    with open(REFERENCE) as fh:
        lines = [line.strip() for line in fh if line.strip() and not line.startswith("#")]
    assert lines[0] == "x,p_two_sided"
    rows = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    return rows[:, 0], rows[:, 1]


# --- published values -------------------------------------------------------------


@pytest.mark.parametrize(
    "alpha, published",
    [(0.05, 6.747), (0.10, 5.323), (0.20, 3.875)],  # SGDinference / Abadir-Paruolo Table I
)
def test_critical_values_match_published(alpha, published):
    c = rs_pivot.critical_value(alpha)
    assert abs(c - published) < 2e-3
    assert round(float(c), 3) == published
    assert rs_pivot.ppf(1 - alpha / 2) == pytest.approx(c, rel=1e-12)
    assert rs_pivot.isf(alpha / 2) == pytest.approx(c, rel=1e-12)
    assert rs_pivot.two_sided_pvalue(c) == pytest.approx(alpha, rel=1e-10)


def test_critical_value_99_is_beyond_95():
    c99 = rs_pivot.critical_value(0.01)
    assert 9.5 < c99 < 10.5 and c99 > rs_pivot.critical_value(0.05)


# --- independent mpmath reference -------------------------------------------------


def test_two_sided_tail_matches_independent_reference():
    x, p_ref = _reference()
    assert x.size >= 12
    p = rs_pivot.two_sided_pvalue(x)
    assert np.max(np.abs(p - p_ref)) < 1e-13
    np.testing.assert_allclose(p, p_ref, rtol=1e-11, atol=0)
    np.testing.assert_allclose(rs_pivot.sf(x), p_ref / 2, rtol=1e-11, atol=0)
    np.testing.assert_allclose(rs_pivot.cdf(-x), p_ref / 2, rtol=1e-11, atol=0)


def test_critical_values_solve_independent_reference():
    x, p_ref = _reference()
    # last four rows: the reference tail at dpreg's 80/90/95/99% critical values
    np.testing.assert_allclose(p_ref[-4:], [0.2, 0.1, 0.05, 0.01], rtol=1e-10, atol=0)
    np.testing.assert_allclose(
        x[-4:], rs_pivot.critical_value(np.array([0.2, 0.1, 0.05, 0.01])), rtol=1e-11
    )


# --- Monte Carlo ------------------------------------------------------------------


def test_monte_carlo_series_representation():
    rng = np.random.default_rng(20240611)
    n, k_terms, chunk = 1_000_000, 50, 50_000
    weights = 1.0 / (np.arange(1, k_terms + 1) * np.pi) ** 2
    tail_mean = 1.0 / 6.0 - weights.sum()  # sum_{k>K} 1/(k pi)^2; its variance ~5e-8
    xs = np.array([0.5, 1.0, 2.0, 3.875, 5.0, 6.747, 10.0])
    exceed = np.zeros(xs.size)
    for _ in range(n // chunk):
        q = (rng.standard_normal((chunk, k_terms)) ** 2) @ weights + tail_mean
        r = rng.standard_normal(chunk) / np.sqrt(q)
        exceed += (np.abs(r)[:, None] > xs).sum(axis=0)
    p_mc = exceed / n
    p = rs_pivot.two_sided_pvalue(xs)
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(p_mc - p) < 4 * se), (p_mc, p, se)


# --- density, quantiles, symmetry ---------------------------------------------------


def test_pdf_integrates_to_one():
    total, err = integrate.quad(rs_pivot.pdf, -np.inf, np.inf, limit=200)
    assert total == pytest.approx(1.0, abs=1e-10)
    half, _ = integrate.quad(rs_pivot.pdf, 0, 6.747302109172836, limit=200)
    assert half == pytest.approx(0.5 - 0.025, abs=1e-10)


def test_pdf_matches_finite_difference():
    h = 1e-4
    x = np.concatenate([-np.geomspace(30, 0.01, 25), [0.0], np.geomspace(0.01, 30, 25)])
    fd_pos = (rs_pivot.sf(x - h) - rs_pivot.sf(x + h)) / (2 * h)
    fd_neg = (rs_pivot.cdf(x + h) - rs_pivot.cdf(x - h)) / (2 * h)
    fd = np.where(x > 0, fd_pos, fd_neg)
    np.testing.assert_allclose(rs_pivot.pdf(x), fd, rtol=1e-6)
    assert rs_pivot.pdf(0.0) == pytest.approx(rs_pivot.pdf(1e-9), rel=1e-14)
    np.testing.assert_array_equal(rs_pivot.pdf(x), rs_pivot.pdf(-x))


def test_ppf_inverts_cdf():
    x = np.concatenate([-np.geomspace(200, 1e-3, 40), np.geomspace(1e-3, 3, 20)])
    np.testing.assert_allclose(rs_pivot.ppf(rs_pivot.cdf(x)), x, rtol=1e-10, atol=0)
    y = np.geomspace(1e-3, 1000, 40)
    np.testing.assert_allclose(rs_pivot.isf(rs_pivot.sf(y)), y, rtol=1e-10, atol=0)
    q = np.array([1e-300, 1e-12, 0.01, 0.3, 0.5 + 1e-9, 0.9, 0.999])
    np.testing.assert_allclose(rs_pivot.cdf(rs_pivot.ppf(q)), q, rtol=1e-10, atol=1e-16)


def test_symmetry_and_centre():
    x = np.linspace(-40, 40, 161)
    np.testing.assert_allclose(rs_pivot.cdf(-x), 1 - rs_pivot.cdf(x), atol=1e-15)
    np.testing.assert_allclose(rs_pivot.sf(x), rs_pivot.cdf(-x), rtol=0, atol=0)
    np.testing.assert_allclose(rs_pivot.two_sided_pvalue(x), 2 * rs_pivot.sf(np.abs(x)))
    assert rs_pivot.sf(0.0) == 0.5 and rs_pivot.cdf(0.0) == 0.5
    assert rs_pivot.ppf(0.5) == 0.0 and rs_pivot.isf(0.5) == 0.0
    assert np.all(np.diff(rs_pivot.cdf(x)) > 0)
    q = np.array([0.01, 0.2, 0.4])
    np.testing.assert_allclose(rs_pivot.ppf(q), -rs_pivot.ppf(1 - q), rtol=1e-10)


def test_heavier_tails_than_normal():
    # R = Z / sqrt(Q) with E Q = 1/6: much wider than N(0, 6)
    assert rs_pivot.critical_value(0.05) > 1.96 * math.sqrt(6)


def test_shapes_and_scalars():
    x = np.linspace(-3, 3, 12).reshape(3, 4)
    for method in (rs_pivot.sf, rs_pivot.cdf, rs_pivot.pdf, rs_pivot.two_sided_pvalue):
        assert method(x).shape == (3, 4)
        assert np.ndim(method(1.5)) == 0
        assert method([]).shape == (0,)
        assert method(x)[1, 2] == pytest.approx(method(x[1, 2]), rel=1e-14)
    q = np.array([[0.1, 0.9], [0.5, 0.7]])
    assert rs_pivot.ppf(q).shape == (2, 2) and rs_pivot.isf(q).shape == (2, 2)
    assert rs_pivot.critical_value(np.array([0.05, 0.1])).shape == (2,)
    assert np.ndim(rs_pivot.ppf(0.3)) == 0 and np.ndim(rs_pivot.critical_value(0.05)) == 0
    assert isinstance(rs_pivot, RandomScalingPivot) and "W(1)" in rs_pivot.name


def test_extreme_arguments():
    assert rs_pivot.sf(1e-8) == pytest.approx(0.5 - rs_pivot.pdf(0.0) * 1e-8, abs=1e-16)
    assert 0 <= rs_pivot.sf(1e4) < 1e-300 and rs_pivot.cdf(1e4) == 1.0
    assert rs_pivot.sf(np.inf) == 0.0 and rs_pivot.sf(-np.inf) == 1.0
    assert rs_pivot.pdf(np.inf) == 0.0 and rs_pivot.two_sided_pvalue(-np.inf) == 0.0
    assert rs_pivot.sf(1e300) == 0.0 and rs_pivot.sf(5e-324) == 0.5
    out = rs_pivot.sf(np.array([np.nan, 1.0]))
    assert np.isnan(out[0]) and out[1] == pytest.approx(0.5 * 0.7090163657939522, rel=1e-14)
    for method in (rs_pivot.cdf, rs_pivot.pdf, rs_pivot.two_sided_pvalue, rs_pivot.ppf):
        assert np.isnan(method(np.nan))
    assert rs_pivot.ppf(0.0) == -np.inf and rs_pivot.ppf(1.0) == np.inf
    # tail behaves like exp(-x/2): p-values far out stay positive and decrease
    p = rs_pivot.two_sided_pvalue(np.array([100.0, 200.0, 400.0, 1000.0]))
    assert np.all(p > 0) and np.all(np.diff(np.log(p)) < 0)
    assert np.log(p[3]) == pytest.approx(-500, rel=0.02)


@pytest.mark.parametrize("bad", [-0.1, 1.5, np.array([0.2, 2.0]), np.inf])
def test_bad_probability_raises(bad):
    with pytest.raises(ValueError, match="q"):
        rs_pivot.ppf(bad)
    with pytest.raises(ValueError, match="q"):
        rs_pivot.isf(bad)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.5, 3.0])
def test_bad_alpha_raises(bad):
    with pytest.raises(ValueError, match="alpha"):
        rs_pivot.critical_value(bad)


def test_speed():
    x = np.linspace(-25, 25, 100)
    rs_pivot.sf(x)
    start = time.perf_counter()
    for _ in range(20):
        rs_pivot.sf(x)
    assert (time.perf_counter() - start) / 20 < 0.01
