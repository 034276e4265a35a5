"""The verdict of the clusters and iv studies: unwarned coverage, length, pass."""

import numpy as np
import pandas as pd
import pytest

from dpreg.exceptions import OptionError
from dpreg.studies.unwarned import NONPRIVATE, passes, unwarned_numbers, unwarned_table


def test_passes_is_one_sided_with_the_warned_exit():
    c = np.array([0.95, 0.90, 0.85, 1.00, np.nan, np.nan, 0.50, 0.50, 0.0])
    k = np.array([200, 200, 200, 150, 0, 0, 10, 12, 5])
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(c * (1 - c) / k)
    warned = np.array([0.0, 0.0, 0.0, 0.25, 1.0, 0.9, 0.95, 0.94, 0.0])
    # 0.90 >= 0.95 - 3 * 0.0212 = 0.886; 0.85 < 0.95 - 3 * 0.0252 = 0.874; over-coverage
    # passes; no unwarned fit passes only by warning in >= 95%; c = 0.5 over 12 unwarned
    # fits (se 0.144, 0.95 - 0.43 = 0.52) fails at 94% warned; c = 0 (se 0) fails
    expected = [True, True, False, True, True, False, True, False, False]
    assert passes(c, se, warned).tolist() == expected
    assert passes(0.5, 0.144, 0.94) is False and passes(0.5, 0.144, 0.94,
                                                          warned_enough=0.9) is True


def test_unwarned_numbers_count_fits_not_rows():
    """Three fits of two coefficients: one warned. The shares are of fits; the unwarned
    coverage and length average the unwarned fits' rows only; the MC s.e. counts the
    pairs named independent."""
    cell = pd.DataFrame({"seed": [0, 0, 1, 1, 2, 2], "warned": [True, True] + [False] * 4,
                         "covers": [False, False, True, False, True, True],
                         "length": [9.0, 9.0, 1.0, 2.0, 3.0, 4.0]})
    out = unwarned_numbers(cell)
    assert out["fits"] == 3 and out["unwarned"] == pytest.approx(2 / 3)
    assert out["coverage_unwarned"] == pytest.approx(0.75)
    assert out["coverage_all"] == pytest.approx(0.5)
    assert out["length_unwarned"] == pytest.approx(2.5)
    assert out["mcse"] == pytest.approx(np.sqrt(0.95 * 0.05 / 2))
    assert unwarned_numbers(cell, pairs_per_fit=2)["mcse"] == pytest.approx(
        np.sqrt(0.95 * 0.05 / 4))
    every = unwarned_numbers(cell.assign(warned=True))
    assert every["unwarned"] == 0 and np.isnan(every["coverage_unwarned"])
    assert np.isnan(every["mcse"]) and np.isnan(every["length_unwarned"])


def _raw(cells):
    """Raw rows: per cell, per rep (warned, private (lower, upper), non-private (lower,
    upper, estimate)); the truth is 0."""
    rows = []
    for cell, reps in cells.items():
        for rep, (warned, (lo, hi), (nlo, nhi, nest)) in enumerate(reps):
            base = dict(G=cell, mu=5.0, rep=rep, coef="x1", truth=0.0, alpha=0.05,
                        warned=warned)
            rows.append(base | dict(method="cluster", estimate=(lo + hi) / 2, lower=lo,
                                    upper=hi))
            rows.append(base | dict(method=NONPRIVATE, estimate=nest, lower=nlo, upper=nhi))
            rows.append(base | dict(method="F private", estimate=3.0, lower=np.nan,
                                    upper=np.nan))
    return pd.DataFrame(rows)


def test_unwarned_table_on_a_constructed_raw_table():
    raw = _raw({
        # 4 fits, 1 warned; unwarned: two cover (lengths 2 and 4 over 1), one misses
        # (length 1, misses the non-private estimate 0.2 too); the warned fit covers
        30: [(0, (-1, 1), (-0.5, 0.5, 0.0)), (0, (-1, 3), (-0.5, 0.5, 0.0)),
             (0, (1, 2), (-0.1, 0.9, 0.2)), (1, (-3, 3), (-0.5, 0.5, 0.0))],
        # every fit warned and misses
        100: [(1, (1, 2), (-0.5, 0.5, 0.0))] * 20,
    })
    table = unwarned_table(raw, ["G", "mu"]).set_index("G")
    assert list(table["method"]) == ["cluster", "cluster"]  # F rows have no interval
    a = table.loc[30]
    assert a["reps"] == 4 and a["unwarned"] == 0.75
    assert a["coverage_unwarned"] == pytest.approx(2 / 3)
    assert a["mcse"] == pytest.approx(np.sqrt(2 / 3 * 1 / 3 / 3))
    assert a["coverage"] == 0.75 and a["coverage_nonprivate"] == 1.0
    assert a["length_ratio"] == pytest.approx((2 + 4 + 1 + 6) / 4)
    assert a["length_ratio_unwarned"] == pytest.approx((2 + 4 + 1) / 3)
    assert a["contains_np"] == 0.75
    assert a["passes"]  # 2/3 >= 0.95 - 3 * 0.272
    b = table.loc[100]
    assert b["unwarned"] == 0 and np.isnan(b["coverage_unwarned"]) and np.isnan(b["mcse"])
    assert b["coverage"] == 0 and np.isnan(b["length_ratio_unwarned"])
    assert b["passes"]  # warned in every fit
    # the same cell unwarned fails
    raw.loc[raw["G"] == 100, "warned"] = 0
    assert not unwarned_table(raw, ["G", "mu"]).set_index("G").loc[100, "passes"]


def test_unwarned_table_needs_the_nonprivate_rows():
    raw = _raw({30: [(0, (-1, 1), (-0.5, 0.5, 0.0))]})
    with pytest.raises(OptionError, match="nonprivate"):
        unwarned_table(raw[raw["method"] != NONPRIVATE], ["G", "mu"])
