"""Study figures: files are written, the nominal band is where it should be."""

import matplotlib
import numpy as np
import pandas as pd
import pytest

from dpreg.exceptions import OptionError
from dpreg.studies import nominal_band, plot_coverage, plot_length, plot_metric
from dpreg.studies.catalog import draw_dpsgd_vs_dpgd
from dpreg.studies.summaries import AVERAGE

matplotlib.use("Agg")


def fake_summary(x_name="n", xs=(100, 200, 400), methods=("a", "b"), reps=200):
    rows = []
    for method in methods:
        for x in xs:
            for coef in ("x1", "x2", AVERAGE):
                rows.append({x_name: x, "method": method, "alpha": 0.05, "coef": coef,
                             "reps": reps, "nominal": 0.95, "coverage": 0.94,
                             "coverage_mcse": 0.015, "length": 1 / np.sqrt(x),
                             "length_mcse": 0.001, "bias": 0.0, "bias_mcse": 0.01,
                             "mse": 1 / x, "mse_mcse": 0.1 / x, "rmse": 1 / np.sqrt(x),
                             "rmse_mcse": 0.01, "rejection": 0.06, "rejection_mcse": 0.015})
    return pd.DataFrame(rows)


def test_coverage_plot_writes_a_png_with_the_mc_band(tmp_path):
    path = tmp_path / "cov.png"
    fig = plot_coverage(fake_summary(), path=path)
    assert path.exists() and path.stat().st_size > 5000
    ax = fig.axes[0]
    band = [c for c in ax.collections if c.get_label().startswith("nominal")]
    assert len(band) == 1
    lo, hi = nominal_band(0.95, 200)
    ys = band[0].get_paths()[0].vertices[:, 1]
    assert ys.min() == pytest.approx(lo) and ys.max() == pytest.approx(hi)
    assert ax.get_ylabel() == "coverage"


def test_facets_and_horizontal_lines(tmp_path):
    s = pd.concat([fake_summary().assign(design="identity"),
                   fake_summary().assign(design="toeplitz")], ignore_index=True)
    const = fake_summary(xs=(np.nan,), methods=("OLS",)).assign(design="identity")
    s = pd.concat([s, const], ignore_index=True)
    fig = plot_length(s, col="design", logx=True, path=tmp_path / "len.png")
    assert len(fig.axes) == 2
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["100", "200", "400"]
    dashed = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == 1  # OLS does not depend on x: a horizontal line


def test_coverage_against_nominal_level_bands_the_diagonal():
    s = fake_summary(x_name="level", xs=(1,))
    rows = []
    for q in (0.9, 0.95, 0.99):
        rows.append(s[s.coef == AVERAGE].assign(nominal=q, alpha=1 - q))
    s = pd.concat(rows, ignore_index=True)
    fig = plot_coverage(s, x="nominal")
    band = [c for c in fig.axes[0].collections if c.get_label().startswith("nominal")][0]
    verts = band.get_paths()[0].vertices
    lo, hi = nominal_band(np.array([0.9, 0.95, 0.99]), 200)
    assert verts[:, 1].min() == pytest.approx(lo.min())


def test_coef_range_error_bars_and_bad_options(tmp_path):
    s = fake_summary()
    s.loc[s.coef == "x2", "coverage"] = 0.90
    fig = plot_metric(s, "coverage", errorbars="coef-range", path=tmp_path / "r.png")
    assert fig.axes[0].get_lines()
    with pytest.raises(OptionError, match="metric"):
        plot_metric(s, "power")
    with pytest.raises(OptionError, match="not in the summary"):
        plot_metric(s, "coverage", x="T")
    with pytest.raises(OptionError, match="no rows"):
        plot_metric(s, "coverage", coef="x9")


def test_dpsgd_vs_dpgd_figure(tmp_path):
    rows = []
    base = fake_summary(xs=(1,))
    base = base[base.method == "a"].drop(columns=["n"])
    for kappa in (1.5, 2.0):
        rows.append(base.assign(method="DP-SGD plug-in", kappa=kappa,
                                iterations=int(1000 ** kappa)))
    for t2 in (5, 10):
        for m in ("DP-GD last-step plug-in", "DP-GD runs (t)"):
            rows.append(base.assign(method=m, kappa=np.nan, iterations=t2))
    path = tmp_path / "f3.png"
    fig = draw_dpsgd_vs_dpgd(pd.concat(rows, ignore_index=True), path=path)
    assert path.exists() and len(fig.axes) == 6  # three panels with twin top axes
