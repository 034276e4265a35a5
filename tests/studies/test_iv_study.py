"""The iv study: registration, the design's first-stage F, the replicate and its table."""

import numpy as np
import pandas as pd
import pytest

import dpreg.studies as ds
from dpreg.studies import catalog, iv
from dpreg.studies.runner import run_replicates


def test_registered_listed_and_crossed():
    assert "iv" in ds.list_studies() and "``iv``" in catalog.__doc__
    study = ds.get_study("iv")
    cells = [c.params for c in study.cells()]
    assert len(cells) == 12 and study.reps == 200
    assert {c["strength"] for c in cells} == set(iv.STRENGTHS) == {"strong", "moderate",
                                                                   "weak"}
    assert {c["n"] for c in cells} == {2000, 10_000} and {c["mu"] for c in cells} == {1, 5}


def _first_stage_f(data: pd.DataFrame) -> float:
    """F of z1, z2 in the regression of d on 1, x, z1, z2 (numpy least squares)."""
    n = len(data)
    full = np.column_stack([np.ones(n), data["x"], data["z1"], data["z2"]])
    rss = [np.sum((data["d"] - X @ np.linalg.lstsq(X, data["d"], rcond=None)[0]) ** 2)
           for X in (full, full[:, :2])]
    return (rss[1] - rss[0]) / 2 / (rss[0] / (n - 4))


@pytest.mark.parametrize("strength", list(iv.STRENGTHS))
def test_first_stage_f_is_the_design_value(strength):
    """The mean non-private first-stage F over 300 data sets of n = 2,000 is within 4 of
    its standard errors of the design's F (150, 20, 4)."""
    target = iv.STRENGTHS[strength]
    s = iv.instrument_coefficient(target, 2000)
    rng = np.random.default_rng(29)
    f = np.array([_first_stage_f(iv.simulate_iv(2000, rng, s)) for _ in range(300)])
    assert abs(f.mean() - target) < 4 * f.std(ddof=1) / np.sqrt(f.size), f.mean()


def test_design_is_endogenous_and_inside_its_bounds():
    """corr(u, first-stage error) = 0.15 var(v) / sqrt(var(u) var(w)) = 0.589; the bounds
    of iv_bounds contain every row."""
    s = iv.instrument_coefficient(20.0, 100_000)
    data = iv.simulate_iv(100_000, np.random.default_rng(3), s)
    u = data["y"] - 1 - 0.5 * data["x"] - data["d"]
    w = data["d"] - s * (data["z1"] + data["z2"])
    rho = np.corrcoef(u, w)[0, 1]
    assert abs(rho - 0.05 / np.sqrt(1 / 6 * 0.13 / 3)) < 4 * (1 - rho ** 2) / np.sqrt(1e5)
    for column, (lo, hi) in iv.iv_bounds(s).items():
        assert lo <= data[column].min() and data[column].max() <= hi, column
    assert iv.iv_bounds(0.5) == {"y": (-2, 4), "x": (-1, 1), "d": (-1.5, 1.5),
                                 "z1": (-1, 1), "z2": (-1, 1)}  # iv_coverage.py's


def test_noise_off_the_plugin_interval_is_linearmodels():
    """With the noise off the plug-in interval of d is linearmodels' unadjusted, debiased
    interval (normal against t(n - k): 0.06% longer at n = 2,000), and the F rows hold
    the same first-stage F."""
    rows = pd.DataFrame(iv.iv_replicate(np.random.SeedSequence(2), strength="strong",
                                        n=2000, mu=1e12, alpha=0.05))
    assert set(rows["coef"]) == {"d"} and (rows["warned"] == 0).all()
    by = rows.set_index("method")
    assert set(by.index) == {"plugin", "pboot", "pboot_basic", "nonprivate", "F private",
                             "F nonprivate"}
    np.testing.assert_allclose(by.loc["plugin", "estimate"], by.loc["nonprivate", "estimate"],
                               rtol=1e-6)
    ratio = ((by.loc["plugin", "upper"] - by.loc["plugin", "lower"])
             / (by.loc["nonprivate", "upper"] - by.loc["nonprivate", "lower"]))
    assert ratio == pytest.approx(1.95996 / 1.96115, rel=1e-4)
    assert by.loc["F private", "estimate"] == pytest.approx(by.loc["F nonprivate", "estimate"],
                                                            rel=1e-5)
    assert by.loc["F private", "truth"] == 150.0


def test_a_tiny_run_gives_the_table_and_weak_instruments_warn():
    raw = run_replicates(ds.get_study("iv"), reps=3, where={"strength": "weak", "n": 2000,
                                                            "mu": 5.0},
                         n_jobs=1, progress=False)
    table = iv.iv_table(raw)
    assert list(table.columns) == [
        "strength", "n", "mu", "method", "reps", "warned", "weak", "unwarned",
        "coverage_unwarned", "mcse", "coverage", "coverage_nonprivate", "length_ratio",
        "length_ratio_unwarned", "contains_np", "passes", "F", "F_nonprivate", "F_private"]
    assert list(table["method"]) == ["plugin", "pboot", "pboot_basic"]
    assert (table["reps"] == 3).all() and (table["F"] == 4.0).all()
    assert (table["warned"] >= table["weak"]).all()
    assert np.allclose(table["warned"] + table["unwarned"], 1.0)
