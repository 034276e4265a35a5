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
