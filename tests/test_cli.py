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
