"""The tables of results (dpreg.results.summary): one fit's summary (header, coefficients,
settings, notes, ledger) and summary_col's long layout, read back from the text."""

import numpy as np
import pytest

import dpreg
from dpreg.exceptions import OptionError
from dpreg.results.summary import coefficient_frame, fit_summary


@pytest.fixture(scope="module")
def pair():
    from tests.conftest import SMALL_BOUNDS, make_small_frame

    frame = make_small_frame(7, n=300)
    res = dpreg.dp_ols("y ~ x + d", frame, mu=1.2345, bounds=SMALL_BOUNDS, random_state=3,
                       steps=6000, cov_type="plugin")
    orc = dpreg.oracle("y ~ x + d", frame, bounds=SMALL_BOUNDS)
    return res, orc


def flat(text: str) -> str:
    """The text with every run of white space made one blank (notes are wrapped)."""
    return " ".join(text.split())


def header(text: str) -> dict:
    """``{label: value}`` of the summary's two-column header (labels end with ':')."""
    out = {}
    lines = text.splitlines()
    for line in lines[2:lines.index(next(x for x in lines[2:] if set(x) == {"-"}))]:
        cells = [c.strip() for c in line.split("  ") if c.strip()]
        for label, value in zip(cells[::2], cells[1::2], strict=False):
            out[label] = value
    return out


def test_private_header(pair):
    res, _ = pair
    text = res.summary().as_text()
    assert text.splitlines()[0].strip() == "DP regression results"
    eps, acct = res.ledger.epsilon_rigorous
    assert header(text) == {
        "Dep. Variable:": "y", "Family:": "Linear (squared loss)", "Engine:": "DP-SGD",
        "Inference:": "Plug-in", "No. Observations:": "300", "Rows dropped (missing):": "0",
        "Df Model:": "2", "Privacy:": "mu = 1.2345 (Gaussian DP)",
        "(eps, delta):": f"({eps:.4g}, 1e-05) [{acct}]",
    }


def test_coefficient_rows_print_the_summary_frame(pair):
    res, _ = pair
    lines = res.summary().as_text().splitlines()
    frame = res.summary_frame()
    for name, row in frame.iterrows():
        printed = next(line for line in lines if line.startswith(name + " "))
        assert printed.split()[1:] == [f"{v:.4f}" for v in row], name
    np.testing.assert_allclose(frame[["[0.025", "0.975]"]], res.conf_int())
    np.testing.assert_allclose(frame[["RS [0.025", "RS 0.975]"]], res.conf_int(method="rs"))
    np.testing.assert_allclose(frame["P>|z|"], res.pvalues)


def test_alpha_sets_every_interval_column(pair):
    res, _ = pair
    frame = res.summary_frame(alpha=0.1)
    np.testing.assert_allclose(frame[["[0.05", "0.95]"]], res.conf_int(0.1))
    np.testing.assert_allclose(frame[["RS [0.05", "RS 0.95]"]], res.conf_int(0.1, "rs"))
    assert "[0.05" in res.summary(alpha=0.1).as_text()
    assert "[0.025" not in res.summary(alpha=0.1).as_text()


def test_settings_notes_and_inference_notes_are_printed(pair):
    res, _ = pair
    text = flat(res.summary().as_text())
    for key, value in res.settings.items():
        shown = f"{value:.6g}" if isinstance(value, float) else str(value)
        assert f"{key}: {flat(shown)}" in text, key
    assert res.notes and all(flat(note) in text for note in res.notes)
    for inf in res.inferences.values():
        assert flat(inf.note) in text


def test_ledger_rows_and_totals(pair):
    res, _ = pair
    text = res.summary().as_text()
    led = res.ledger
    frame = led.to_frame()
    for _, event in frame.iterrows():
        line = next(x for x in text.splitlines() if x.strip().startswith(event["name"]))
        assert line.split()[-1] == f"{event['mu']:.4g}", event["name"]
    eps, acct = led.epsilon_rigorous
    rows = flat(text)
    assert f"Request: {led.request.describe()}" in rows
    assert f"Total mu (GDP; CLT for subsampled steps): {led.total_mu:.4g}" in rows
    assert f"(eps, delta) rigorous [headline]: ({eps:.4g}, 1e-05)" in rows
    assert f"(eps, delta) from GDP-CLT: ({led.epsilon_gdp:.4g}, 1e-05)" in rows
    assert f"Accountant: {acct}" in rows
    assert led.total_mu == pytest.approx(1.2345, rel=1e-9)


def test_oracle_summary_says_non_private_and_has_no_ledger(pair):
    _, orc = pair
    text = orc.summary().as_text()
    assert text.splitlines()[0].strip() == "Oracle regression (NON-PRIVATE) results"
    head = header(text)
    assert head["Privacy:"] == "non-private" and head["Inference:"] == "Oracle"
    assert "(eps, delta):" not in head
    assert "Privacy ledger" not in text and "Accountant" not in text
    assert "statsmodels OLS" in text
    assert list(orc.summary_frame().columns) == ["coef", "std err", "t", "P>|t|", "[0.025",
                                                 "0.975]"]


def test_latex_and_html_carry_the_same_tables(pair):
    res, _ = pair
    smry = res.summary()
    latex, html = smry.as_latex(), smry.as_html()
    for out in (latex, html):
        for name in ("DP-SGD path", "Hessian A", "score covariance S", "Intercept"):
            assert name in out
    assert latex.count("\\begin{tabular}") == len(smry.tables)
    assert html.count("<table") == len(smry.tables)


def test_functions_behind_the_methods(pair):
    res, _ = pair
    assert fit_summary(res, 0.05).as_text() == res.summary().as_text()
    np.testing.assert_array_equal(coefficient_frame(res, 0.05).to_numpy(),
                                  res.summary_frame().to_numpy())


def test_long_layout_one_row_per_variable_and_method(pair):
    res, orc = pair
    text = dpreg.summary_col([orc, res], layout="long", variables=["x"]).as_text()
    lines = [x.split() for x in text.splitlines()]
    # table rows end with three numbers (or "x"): key them by the words before those
    rows = {tuple(x[:-3]): x[-3:] for x in lines
            if len(x) >= 4 and x[-1].replace(".", "").isdigit()}
    assert rows[("x", "Oracle")] == [f"{orc.params['x']:.3f}", f"{orc.bse['x']:.3f}",
                                     f"{orc.pvalues['x']:.3f}"]
    assert rows[("Plug-in",)] == [f"{res.params['x']:.3f}", f"{res.bse['x']:.3f}",
                                  f"{res.pvalues_by('plugin')['x']:.3f}"]
    # random scaling has no standard error: an "x" in its column
    assert rows[("RS",)] == [f"{res.params['x']:.3f}", "x",
                             f"{res.pvalues_by('rs')['x']:.3f}"]
    assert f"Private rows: {res.ledger.request.describe()}. Oracle rows are NON-PRIVATE." \
        in flat(text)


def test_long_layout_refuses_a_variable_a_result_lacks(pair):
    res, orc = pair
    with pytest.raises(OptionError, match="'nope' is not in result 0"):
        dpreg.summary_col([orc, res], layout="long", variables=["nope"])


def test_wide_layout_default_names_and_budget_rows(pair):
    res, orc = pair
    text = dpreg.summary_col([res, orc]).as_text()
    lines = text.splitlines()
    assert next(x for x in lines if "(1) y" in x).split() == ["(1)", "y", "(2)", "y"]
    row = {x.split()[0]: x.split()[1:] for x in lines if x.startswith(("N ", "Budget"))}
    assert row["N"] == ["300", "300"]
    assert row["Budget"] == ["(mu)", f"{res.ledger.total_mu:.3g}", "non-private"]


def test_long_settings_do_not_stretch_the_summary():
    """The conditioning's description (about 190 characters with a private
    preconditioner) used to stretch every table of the summary to its length (222
    characters at the defaults); it is now printed wrapped below the settings table."""
    import warnings

    import numpy as np

    import dpreg
    from dpreg.studies.robustness import natural_units_design

    data, formula, bounds, _ = natural_units_design(3000, 3, np.random.default_rng(1),
                                                    family="linear", errors="hetero")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_ols(formula, data, bounds=bounds, mu=2, random_state=1)
    text = res.summary().as_text()
    assert max(len(line) for line in text.splitlines()) < 140
    conditioning = res.settings.value("conditioning")
    assert len(conditioning) > 40
    assert "conditioning: " + conditioning.split()[0] in text
    assert " ".join(text.split()).count(" ".join(conditioning.split())) == 1
