"""The textbook study: its designs' truths, the replicate's records, and the tables."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from dpreg.studies import get_study
from dpreg.studies import textbook as tb
from dpreg.studies import warning_rates as wr


@pytest.mark.parametrize("design", sorted(tb.DESIGNS))
def test_design_truth_is_what_the_nonprivate_fit_estimates(design):
    """At n = 100,000 the non-private fit of each design's formula (statsmodels) is within
    4.5 of its standard errors of the recorded truth on every coefficient: the truth's
    names and values are those of the model the data come from (a wrong sign, scale or
    name would be off by many standard errors)."""
    family, _ = tb.DESIGNS[design]
    data, formula, bounds, levels, truth = tb.simulate_design(
        design, 100_000, np.random.default_rng(11))
    if family == "logistic":
        fit = smf.logit(formula, data).fit(disp=0)
    elif family == "huber":
        import statsmodels.api as sm

        fit = smf.rlm(formula, data, M=sm.robust.norms.HuberT()).fit()
    else:
        fit = smf.ols(formula, data).fit(cov_type="HC1")
    assert set(fit.params.index) == set(truth)
    z = (fit.params - pd.Series(truth)) / fit.bse
    assert np.all(np.abs(z) < 4.5), z
    # the codebook bounds are honest and loose: every column inside, wider than the data
    for column, (lo, hi) in bounds.items():
        if column == "lw" and design == "wage_t3":
            continue  # t(3) errors reach outside any codebook (clipped by the package)
        assert lo <= data[column].min() and data[column].max() <= hi, column
    assert set(levels) <= set(data.columns)


def test_binary_designs_have_the_stated_share_of_ones():
    rng = np.random.default_rng(5)
    shares = {d: tb.simulate_design(d, 200_000, rng)[0]["inlf"].mean()
              for d in ("participation", "approval")}
    assert 0.27 < shares["participation"] < 0.33
    assert 0.08 < shares["approval"] < 0.12


def test_study_grid_crosses_declared_and_private_ranges():
    study = get_study("textbook")
    cells = [c.params for c in study.cells()]
    assert len(cells) == 144
    assert {c["ranges"] for c in cells} == {"declared", "private"}
    assert {c["engine"] for c in cells if c["family"] == "linear"} == {"dpsgd", "ssp"}
    assert {c["engine"] for c in cells if c["family"] != "linear"} == {"dpsgd"}


def test_replicate_records_default_nonprivate_and_the_checks_that_fired():
    """SSP on the fertility design at n = 500, mu = 1 in codebook boxes floors X'X (the
    age square's eigenvalue is under the noise): the replicate records the warning as
    the check ``ssp_floor``, which names every coefficient; the default rows repeat the
    plug-in's, and the non-private rows are statsmodels' OLS interval."""
    rows = pd.DataFrame(tb.textbook_replicate(
        np.random.SeedSequence(3), design="fertility", family="linear", n=500, mu=1.0,
        engine="ssp", ranges="declared", alpha=0.05))
    assert set(rows["method"]) >= {"plugin", "default", "nonprivate"}
    assert (rows["warned"] == 1).all() and (rows["checks"] == "ssp_floor").all()
    assert (rows.loc[rows["method"] == "default", "flagged"] == 1).all()
    plugin = rows[rows["method"] == "plugin"].set_index("coef")
    default = rows[rows["method"] == "default"].set_index("coef")
    pd.testing.assert_frame_equal(plugin[["lower", "upper"]], default[["lower", "upper"]])
    # the non-private interval is OLS's (the model's own sandwich, HC0 by default)
    data, formula, bounds, levels, truth = tb.simulate_design(
        "fertility", 500, np.random.default_rng(np.random.SeedSequence(3).spawn(2)[0]))
    ols = smf.ols(formula, data).fit()
    nonprivate = rows[rows["method"] == "nonprivate"].set_index("coef")
    np.testing.assert_allclose(nonprivate["estimate"], ols.params[nonprivate.index],
                               rtol=1e-8)


def _raw(cells):
    """Rows for textbook_table: cells of (warned per rep, covered per rep, length)."""
    rows = []
    for cell, reps in cells.items():
        for rep, (warned, lower, upper, np_est) in enumerate(reps):
            base = dict(design="wage", family="linear", engine="ssp", ranges=cell, n=500,
                        mu=5.0, rep=rep, coef="x", truth=0.0, alpha=0.05, warned=warned,
                        checks="ssp_floor" if warned else "", flagged=warned)
            rows.append(base | dict(method="default", estimate=(lower + upper) / 2,
                                    lower=lower, upper=upper))
            rows.append(base | dict(method="nonprivate", estimate=np_est, lower=np_est - 0.5,
                                    upper=np_est + 0.5))
    return pd.DataFrame(rows)


def test_textbook_table_counts_unwarned_coverage_length_and_far_misses():
    # 'declared': 4 reps, 2 warned; unwarned: one covers (length 2), one misses the
    # truth and misses the non-private estimate (at 10) by 8 > 3 half-lengths
    raw = _raw({"declared": [(1, -1, 1, 0.0), (1, 5, 6, 0.0), (0, -1, 1, 0.0),
                             (0, 1, 2, 10.0)],
                "private": [(0, -1, 1, 0.0)] * 40})
    table = tb.textbook_table(raw).set_index("ranges")
    d = table.loc["declared"]
    assert d["reps"] == 4 and d["unwarned"] == 0.5
    assert d["coverage"] == 0.5 and d["coverage_unwarned"] == 0.5
    assert d["length_ratio"] == pytest.approx((2 + 1) / 2)  # non-private length 1
    assert d["contains_np"] == 0.5 and d["far_miss"] == 0.5
    assert not d["meets"]
    p = table.loc["private"]
    assert p["unwarned"] == 1 and p["coverage_unwarned"] == 1 and p["length_ratio"] == 2
    assert p["meets"]  # linear target: length at most 2


def test_check_characteristics_rates_by_whether_the_cell_covers():
    # 'declared' covers 0.5 over 4 reps (not within 3 MC s.e. of 0.95): warned in 2 of 4;
    # 'private' covers in all 40 reps: never warned
    raw = _raw({"declared": [(1, -1, 1, 0.0), (1, 5, 6, 0.0), (0, -1, 1, 0.0),
                             (0, 1, 2, 10.0)],
                "private": [(0, -1, 1, 0.0)] * 40})
    oc = wr.check_characteristics(raw)
    cell = oc[(oc["level"] == "cell") & (oc["check"] == "any")].set_index("covers")
    assert cell.loc[False, "rate_mean"] == 0.5 and cell.loc[False, "meets_target"] == 0
    assert cell.loc[True, "rate_mean"] == 0.0 and cell.loc[True, "meets_target"] == 1
    named = oc[(oc["level"] == "cell") & (oc["check"] == "ssp_floor")].set_index("covers")
    assert named.loc[False, "rate_mean"] == 0.5


def test_warning_characteristics_separates_cells_whose_unwarned_fits_cover():
    # four cells of 200 fits (MC s.e. of 0.95: 0.0154): two cover (0.95 and 0.93 >= 0.904)
    # and warn 5% and 40%; two do not (0.80): one leaves unwarned fits covering 0.95 (the
    # warning separates) though it warns only 60%, one leaves them covering 0.80
    table = pd.DataFrame({
        "engine": ["a", "a", "a", "a"], "method": "default", "reps": 200,
        "coverage": [0.95, 0.93, 0.80, 0.80], "unwarned": [0.95, 0.60, 0.40, 0.40],
        "coverage_unwarned": [0.95, 0.95, 0.95, 0.80],
        "mcse": [0.0158, 0.0199, 0.0243, 0.0243]})
    oc = wr.warning_characteristics(table, by=["engine"]).set_index("covers")
    assert oc.loc[True, "cells"] == 2 and oc.loc[True, "warned_worst"] == pytest.approx(0.4)
    assert oc.loc[True, "meets_target"] == 0.5  # 5% warned meets, 40% does not
    assert oc.loc[False, "meets_target"] == 0.0  # neither warns in 95% of fits
    assert oc.loc[False, "separates"] == 0.5     # only the first leaves covering fits
    # the robustness table's form: a 'warned' share instead of 'unwarned'
    robust = table.assign(warned=1 - table["unwarned"]).drop(columns="unwarned")
    pd.testing.assert_frame_equal(wr.warning_characteristics(robust, by=["engine"]),
                                  wr.warning_characteristics(table, by=["engine"]))
    with pytest.raises(ValueError, match="no rows with method 'plugin'"):
        wr.warning_characteristics(table, method="plugin")


def test_check_characteristics_keeps_the_robustness_cells_factors_apart():
    # two cells that differ only in p (a robustness factor): both cover; one never warns,
    # the other always does. Merged into one cell, the rate would be 0.5 over 1 unit.
    quiet = _raw({"private": [(0, -1, 1, 0.0)] * 40}).assign(p=3)
    loud = _raw({"private": [(1, -1, 1, 0.0)] * 40}).assign(p=10)
    oc = wr.check_characteristics(pd.concat([quiet, loud], ignore_index=True))
    cell = oc[(oc["level"] == "cell") & (oc["check"] == "any")].set_index("covers")
    assert cell.loc[True, "units"] == 2 and cell.loc[True, "rate_worst"] == 1.0
    assert cell.loc[True, "meets_target"] == 0.5


def test_check_characteristics_reads_rows_back_from_csv(tmp_path):
    # a CSV cache gives NaN where no check fired: same rates as the rows in memory
    raw = _raw({"declared": [(1, -1, 1, 0.0), (0, -1, 1, 0.0)] * 20})
    raw.to_csv(tmp_path / "raw.csv", index=False)
    back = pd.read_csv(tmp_path / "raw.csv")
    assert back["checks"].isna().any()
    pd.testing.assert_frame_equal(wr.check_characteristics(back),
                                  wr.check_characteristics(raw))
