"""Tests of the STAR loader against the real file in ../shared/datasets (skipped if absent)."""

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from dpreg.datasets import STAR_SHA256, load_star, star_path
from dpreg.datasets.star import DATA_DIR_ENV, STAR_FILENAME
from dpreg.exceptions import DatasetNotFoundError, OptionError

DATA_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"

COLUMNS = [
    "GPA_year1",
    "GPA_year2",
    "age",
    "chooseUTM",
    "compsurv",
    "control",
    "credits_earned1",
    "credits_earned2",
    "dad1",
    "dad2",
    "dad_edn",
    "english",
    "female",
    "finish4",
    "goodstanding_year1",
    "goodstanding_year2",
    "gpa0",
    "graddeg",
    "grade_20059_fall",
    "hcom",
    "hsgroup",
    "lastmin",
    "lm_never",
    "lm_rarely",
    "mathsci",
    "mom1",
    "mom2",
    "mom_edn",
    "mtongue",
    "noshow",
    "numcourses_nov1",
    "prob_year1",
    "prob_year2",
    "sex",
    "sfp",
    "sfp_p",
    "sfpany",
    "sfpany_p",
    "sfsp",
    "sfsp_p",
    "signup",
    "ssp",
    "ssp_p",
    "totcredits_year1",
    "used_adv",
    "used_fsg",
    "used_ssp",
    "work1",
]


@pytest.fixture(scope="module")
def data_dir():
    if not (DATA_DIR / STAR_FILENAME).is_file():
        pytest.skip(f"{STAR_FILENAME} not found in {DATA_DIR}")
    return DATA_DIR


@pytest.fixture(scope="module")
def star(data_dir):
    return load_star(data_dir)


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


@pytest.mark.data
def test_analysis_sample(star):
    assert star.shape == (1399, 48)
    assert list(star.columns) == COLUMNS
    assert isinstance(star.index, pd.RangeIndex) and star.index[0] == 0
    assert (star["noshow"] == 0).all()
    assert star[["GPA_year1", "lastmin", "mom_edn", "dad_edn"]].notna().all().all()


@pytest.mark.data
def test_full_sample(data_dir):
    full = load_star(data_dir, sample="full")
    assert full.shape == (1656, 48)
    assert list(full.columns) == COLUMNS


@pytest.mark.data
def test_dtypes(star):
    for col in ["ssp", "sfp", "sfsp", "hsgroup", "female", "noshow"]:
        assert star[col].dtype == np.int64, col
    assert star["GPA_year1"].dtype == np.float64
    assert pd.api.types.is_string_dtype(star["sex"])
    assert set(star["sex"]) == {"M", "F"}
    assert set(star["hsgroup"]) == {1, 2, 3}
    for col in ["ssp", "sfp", "sfsp"]:
        assert set(star[col]) == {0, 1}
    assert (star[["ssp", "sfp", "sfsp"]].sum(axis=1) <= 1).all()


@pytest.mark.data
def test_star_path_verifies_checksum(data_dir):
    found = star_path(data_dir)
    assert found.name == STAR_FILENAME
    assert hashlib.sha256(found.read_bytes()).hexdigest() == STAR_SHA256


@pytest.mark.data
def test_directory_and_file_paths_agree(data_dir, star):
    assert star_path(data_dir) == star_path(data_dir / STAR_FILENAME)
    pd.testing.assert_frame_equal(load_star(data_dir / STAR_FILENAME), star)
    pd.testing.assert_frame_equal(load_star(str(data_dir)), star)


@pytest.mark.data
def test_environment_variable(data_dir, star, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(data_dir))
    assert star_path() == star_path(data_dir)
    pd.testing.assert_frame_equal(load_star(), star)


@pytest.mark.data
def test_wrong_checksum(data_dir, tmp_path):
    raw = bytearray((data_dir / STAR_FILENAME).read_bytes())
    raw[-2:-1] = b"X"
    (tmp_path / STAR_FILENAME).write_bytes(bytes(raw))
    with pytest.raises(DatasetNotFoundError, match="Angrist") as info:
        load_star(tmp_path)
    assert "sha256" in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_missing_file(tmp_path, no_env):
    with pytest.raises(DatasetNotFoundError, match="Angrist") as info:
        load_star(tmp_path)
    msg = str(info.value)
    assert str(tmp_path / STAR_FILENAME) in msg
    assert "STAR_public_use.dta" in msg and DATA_DIR_ENV in msg and "path=" in msg
    assert "http" not in msg
    assert isinstance(info.value, FileNotFoundError)


def test_missing_file_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(DatasetNotFoundError, match=DATA_DIR_ENV) as info:
        star_path()
    assert str(tmp_path) in str(info.value)


def test_no_location(no_env):
    with pytest.raises(DatasetNotFoundError, match=DATA_DIR_ENV):
        load_star()


@pytest.mark.data
def test_copy_is_accepted(data_dir, tmp_path):
    shutil.copy(data_dir / STAR_FILENAME, tmp_path / STAR_FILENAME)
    assert star_path(tmp_path) == (tmp_path / STAR_FILENAME).resolve()


@pytest.mark.parametrize("sample", ["Analysis", "all", None])
def test_bad_sample(sample):
    # checked before the file is looked up, so no data are needed
    with pytest.raises(OptionError, match="sample"):
        load_star(sample=sample)


@pytest.mark.data
def test_oracle_ols(star):
    """Table 1 "Oracle" row of the dpsgd-inference paper (see datasets/README.md)."""
    res = smf.ols("GPA_year1 ~ ssp + sfp + sfsp + sex + C(hsgroup)", star).fit()
    assert res.nobs == 1399
    terms = ["ssp", "sfp", "sfsp"]
    # the published numbers have 3 decimals: compare after rounding, exactly
    assert res.params[terms].round(3).tolist() == [0.008, -0.041, 0.143]
    assert res.bse[terms].round(3).tolist() == [0.063, 0.063, 0.081]
    assert res.pvalues[terms].round(3).tolist() == [0.896, 0.517, 0.076]


@pytest.mark.data
def test_oracle_matches_paper_digits(star):
    """The paper's printed Oracle row equals our numbers truncated to 3 decimals."""
    res = smf.ols("GPA_year1 ~ ssp + sfp + sfsp + sex + C(hsgroup)", star).fit()
    terms = ["ssp", "sfp", "sfsp"]

    def cut(values):  # truncation toward zero; +0.0 turns -0.0 into 0.0
        return (np.trunc(np.asarray(values) * 1000) / 1000 + 0.0).round(3).tolist()

    assert cut(res.params[terms]) == [0.008, -0.040, 0.143]
    assert cut(res.bse[terms]) == [0.063, 0.062, 0.080]
    assert cut(res.pvalues[terms]) == [0.895, 0.516, 0.076]
