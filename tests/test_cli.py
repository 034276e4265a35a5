"""The command line: demo, fit on a CSV, replicate, and clean errors."""

import numpy as np
import pandas as pd
import pytest

from dpreg.__main__ import main


def test_demo_prints_a_private_summary(capsys):
    assert main(["demo", "--n", "800", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "DP regression results" in out and "mu = 1 (Gaussian DP)" in out
    assert "Privacy ledger" in out and "x3" in out


def test_fit_a_csv(tmp_path, capsys, small_frame):
    path = tmp_path / "data.csv"
    small_frame.to_csv(path, index=False)
    code = main(["fit", "y ~ x + C(g) + d", "--data", str(path), "--mu", "2", "--seed", "3",
                 "--bounds", "y=-3:5", "x=-1:1", "d=0:1", "--levels", "g=a,b,c"])
    out = capsys.readouterr().out
    assert code == 0 and "C(g)[T.c]" in out and "mu = 2" in out


def test_fit_with_private_ranges(tmp_path, capsys, small_frame):
    path = tmp_path / "data.csv"
    small_frame.to_csv(path, index=False)
    code = main(["fit", "y ~ x + d", "--data", str(path), "--mu", "2", "--seed", "3",
                 "--engine", "ssp", "--ranges", "private",
                 "--bounds", "y=-10:10", "x=-5:5", "d=0:1"])
    out = capsys.readouterr().out
    assert code == 0 and "ranges (noisy histograms)" in out
    assert "learned privately" in out


def test_fit_reports_dpreg_errors_without_traceback(tmp_path, capsys, small_frame):
    path = tmp_path / "data.csv"
    small_frame.to_csv(path, index=False)
    code = main(["fit", "y ~ nope", "--data", str(path), "--mu", "1"])
    assert code == 2 and "nope" in capsys.readouterr().err


def test_bad_bounds_argument(tmp_path, small_frame):
    path = tmp_path / "data.csv"
    small_frame.to_csv(path, index=False)
    with pytest.raises(SystemExit, match="NAME=LOWER:UPPER"):
        main(["fit", "y ~ x", "--data", str(path), "--mu", "1", "--bounds", "y=3"])


@pytest.mark.data
def test_replicate_star(star_dir, capsys):
    assert main(["replicate", "star", "--data", str(star_dir), "--seed", "7"]) == 0
    out = capsys.readouterr().out
    assert "Oracle" in out and "Plug-in" in out and "As printed in the paper" in out
    assert "0.008" in out and "-0.041" in out and "0.143" in out  # the oracle row
    assert "seed 7" in out


def test_study_writes_csv_figures_and_a_run_record(tmp_path, capsys):
    import json

    out = tmp_path / "out"
    code = main(["study", "smoke", "--reps", "3", "--jobs", "1", "--out", str(out),
                 "--no-progress"])
    text = capsys.readouterr().out
    assert code == 0 and "Smoke test" in text and "oracle" in text
    table = pd.read_csv(out / "smoke.csv")
    assert {"coverage", "coverage_mcse", "length", "rmse", "rejection"} <= set(table)
    assert (out / "smoke-coverage.png").stat().st_size > 0
    assert (out / "smoke-length.png").stat().st_size > 0
    record = json.loads((out / "smoke-run.json").read_text())
    assert record["command"].startswith("python -m dpreg study smoke --reps 3")
    assert record["computed_reps"] == 6 and record["wall_seconds"] >= 0
    # a second run reads everything from the cache
    assert main(["study", "smoke", "--reps", "3", "--jobs", "1", "--out", str(out),
                 "--no-progress"]) == 0
    assert json.loads((out / "smoke-run.json").read_text())["cached_reps"] == 6


def test_study_list(capsys):
    assert main(["study", "list"]) == 0
    out = capsys.readouterr().out
    assert "dpsgd-fig2" in out and "ldp-table1" in out and "dpgd-fig5-6" in out


# -- issue 16: every family, engines, bounds and levels files, budgets, output formats ------
@pytest.fixture
def csv_path(tmp_path, small_frame):
    frame = small_frame.assign(passed=(small_frame["y"] > 1.2).astype(int))
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


FAST = ["--steps", "4000", "--seed", "3"]


@pytest.mark.parametrize("family, formula, extra, label", [
    ("ols", "y ~ x + d", [], "Linear"),
    ("huber", "y ~ x + d", ["--c", "2.0"], "Huber (c = 2)"),
    ("expectile", "y ~ x + d", ["--tau", "0.8"], "tau = 0.8"),
    ("logit", "passed ~ x + d", [], "Logistic"),
])
def test_fit_every_family(csv_path, capsys, family, formula, extra, label):
    code = main(["fit", formula, "--data", str(csv_path), "--family", family, "--mu", "1",
                 "--bounds", "y=-3:5", "x=-1:1", "d=0:1", *extra, *FAST])
    assert code == 0
    assert label in capsys.readouterr().out


def test_tau_with_another_family_is_an_error(csv_path, capsys):
    code = main(["fit", "y ~ x", "--data", str(csv_path), "--family", "huber", "--tau", "0.3",
                 "--mu", "1", *FAST])
    assert code == 2 and "tau" in capsys.readouterr().err


def test_bounds_and_levels_from_json_and_toml(tmp_path, csv_path, capsys):
    js = tmp_path / "bounds.json"
    js.write_text('{"y": [-3, 5], "x": [-1, 1], "d": [0, 1]}')
    toml = tmp_path / "spec.toml"
    toml.write_text('[bounds]\ny = [-3, 5]\nx = [-1, 1]\nd = [0, 1]\n\n'
                    '[levels]\ng = ["a", "b", "c"]\n')
    outs = []
    for bounds, levels in ((js, toml), (toml, toml)):
        code = main(["fit", "y ~ x + C(g) + d", "--data", str(csv_path), "--mu", "1",
                     "--bounds", str(bounds), "--levels", str(levels), *FAST])
        captured = capsys.readouterr()
        assert code == 0 and "C(g)[T.b]" in captured.out
        assert "PrivacyLeakWarning" not in captured.err  # everything was declared
        outs.append(captured.out)
    assert outs[0] == outs[1]
    # the file's bounds are the inline ones
    main(["fit", "y ~ x + C(g) + d", "--data", str(csv_path), "--mu", "1", "--bounds",
          "y=-3:5", "x=-1:1", "d=0:1", "--levels", "g=a,b,c", *FAST])
    assert capsys.readouterr().out == outs[0]


def test_bad_spec_file(tmp_path, csv_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit, match="JSON"):
        main(["fit", "y ~ x", "--data", str(csv_path), "--mu", "1", "--bounds", str(bad)])
    with pytest.raises(SystemExit, match="neither"):
        main(["fit", "y ~ x", "--data", str(csv_path), "--mu", "1", "--bounds", "nofile.toml"])


@pytest.mark.parametrize("budget, needle", [
    (["--mu", "1.5"], "mu = 1.5"),
    (["--epsilon", "4", "--delta", "1e-6"], "epsilon"),
    (["--rho", "0.5"], "rho"),
])
def test_budget_in_any_unit(csv_path, capsys, budget, needle):
    code = main(["fit", "y ~ x", "--data", str(csv_path), "--bounds", "y=-3:5", "x=-1:1",
                 *budget, *FAST])
    out = capsys.readouterr().out
    assert code == 0 and needle in out


def test_engines(csv_path, capsys):
    for engine, needle in (("dpgd", "DP-GD"), ("adassp", "AdaSSP"), ("ssp", "SSP X'y")):
        code = main(["fit", "y ~ x", "--data", str(csv_path), "--bounds", "y=-3:5", "x=-1:1",
                     "--engine", engine, "--mu", "1", "--seed", "1"]
                    + (["--steps", "200"] if engine == "dpgd" else []))
        assert code == 0 and needle in capsys.readouterr().out


@pytest.mark.parametrize("output, needle", [("latex", "\\begin{tabular}"), ("html", "<table"),
                                            ("text", "DP regression results")])
def test_output_formats(csv_path, capsys, output, needle):
    code = main(["fit", "y ~ x", "--data", str(csv_path), "--bounds", "y=-3:5", "x=-1:1",
                 "--mu", "1", "--output", output, *FAST])
    assert code == 0 and needle in capsys.readouterr().out


def test_csv_output_is_the_coefficient_table(csv_path, capsys):
    import io

    code = main(["fit", "y ~ x", "--data", str(csv_path), "--bounds", "y=-3:5", "x=-1:1",
                 "--mu", "1", "--output", "csv", *FAST])
    table = pd.read_csv(io.StringIO(capsys.readouterr().out), index_col=0)
    assert code == 0 and list(table.index) == ["Intercept", "x"]
    assert {"coef", "std err", "P>|z|", "RS P>|R|"} <= set(table.columns)
    assert np.all(np.isfinite(table.to_numpy()))


def test_warnings_point_at_the_command(csv_path, capsys):
    # no bounds for x: the PrivacyLeakWarning is reported as the command's, with no
    # file and line of dpreg's source
    code = main(["fit", "y ~ x", "--data", str(csv_path), "--bounds", "y=-3:5", "--mu", "1",
                 *FAST])
    err = capsys.readouterr().err
    assert code == 0
    assert "python -m dpreg fit: PrivacyLeakWarning:" in err and "x_bound" in err
    assert ".py:" not in err


def test_demo_first_line_prints_plain_numbers(capsys):
    assert main(["demo", "--n", "300", "--seed", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "np.float64" not in first and "Intercept = " in first


def test_fit_strict_refuses_and_warnings_reach_the_printed_summary(tmp_path, capsys,
                                                                  small_frame):
    path = tmp_path / "data.csv"
    small_frame.to_csv(path, index=False)
    # no declared levels for g: read off the data, a privacy warning ...
    args = ["fit", "y ~ x + C(g) + d", "--data", str(path), "--mu", "2", "--seed", "3",
            "--bounds", "y=-3:5", "x=-1:1", "d=0:1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    # ... printed after the table it qualifies, not on stderr alone
    assert "PRIVACY WARNINGS" in out and "categories of ['C(g)']" in out
    # --strict turns it into a refusal, with the reason and no traceback
    with pytest.raises(SystemExit, match="refused .--strict.*categories"):
        main(args + ["--strict"])


def test_fit_help_lists_every_engine_and_interval_method_of_the_registry(capsys):
    from dpreg.fits.registry import ENGINES

    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for name, engine in ENGINES.items():
        assert name in out
        for method in engine.cov_types:
            assert method in out, method


def test_family_choices_come_from_the_family_registry(capsys, monkeypatch):
    import dataclasses

    from dpreg.__main__ import _family_names
    from dpreg.families import FAMILIES

    # the spellings before the registry was read (statsmodels' names where they differ)
    # are kept, and every family of the registry has one
    old = {"ols": "linear", "huber": "huber", "logit": "logistic", "expectile": "expectile"}
    assert old.items() <= _family_names().items()
    assert sorted(_family_names().values()) == sorted(FAMILIES)
    # a family added to the registry is offered under its name
    toy = dataclasses.replace(FAMILIES["logistic"], name="toy", cli_name=None)
    monkeypatch.setitem(FAMILIES, "toy", toy)
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "ols,huber,logit,expectile," in out and "toy}" in out and " or toy" in out


def test_fit_with_clusters_and_absorbed_effects(tmp_path, capsys):
    # the options of clustered and fixed-effects analyses reach the fit: SSP's cluster
    # sandwich for OLS, DP-SGD batches of clusters for a logit, absorbed state effects
    rng = np.random.default_rng(0)
    school = np.repeat(np.arange(300), 5)
    data = pd.DataFrame({"school": school, "x": rng.uniform(-1, 1, school.size),
                         "state": rng.choice(["a", "b", "c"], school.size)})
    data["y"] = (data.x + rng.normal(0, 1, 300)[school] + rng.normal(0, 1, school.size)).clip(-5, 5)
    data["b"] = (data.y > 0).astype(float)
    path = tmp_path / "schools.csv"
    data.to_csv(path, index=False)
    common = ["--data", str(path), "--mu", "5", "--seed", "1", "--bounds", "y=-5:5",
              "x=-1:1", "b=0:1"]
    assert main(["fit", "y ~ x", *common, "--groups", "school", "--max-group-size", "5"]) == 0
    out = capsys.readouterr().out
    assert "replace-one cluster (at most 5 rows)" in out and "Cluster-robust (SSP)" in out
    assert main(["fit", "b ~ x", "--family", "logit", *common, "--groups", "school",
                 "--max-group-size", "5", "--steps", "20000"]) == 0
    out = capsys.readouterr().out
    assert "DP-SGD" in out and "a batch samples" in out
    assert main(["fit", "y ~ x", *common, "--engine", "ssp", "--absorb", "state",
                 "--levels", "state=a,b,c", "--robust", "--cov-type", "sandwich"]) == 0
    out = capsys.readouterr().out
    assert "Absorbed fixed effects: 'state'" in out and "C(state)" not in out
