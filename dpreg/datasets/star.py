"""The STAR public-use file of Angrist, Lang and Oreopoulos (2009).

The file is not distributed with dpreg. :func:`star_path` finds it (from ``path=`` or the
directory named by the environment variable ``DPREG_DATA_DIR``) and checks its sha256;
:func:`load_star` reads it and selects the analysis sample.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pandas as pd

from dpreg._checks import one_of
from dpreg.exceptions import DatasetNotFoundError

__all__ = ["STAR_SHA256", "STAR_FILENAME", "DATA_DIR_ENV", "star_path", "load_star"]

STAR_SHA256 = "50bc2bbf05298c2d35771c5802c07323cc240d5c31de9be5729a5a5a1ba147d4"
STAR_FILENAME = "STAR_public_use.csv"
DATA_DIR_ENV = "DPREG_DATA_DIR"

#: Columns that must be non-missing in the analysis sample (with ``noshow == 0``).
_COMPLETE_CASES = ["GPA_year1", "lastmin", "mom_edn", "dad_edn"]
_SAMPLES = ("analysis", "full")
_CHUNK = 1 << 20


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _not_found(problem: str) -> DatasetNotFoundError:
    return DatasetNotFoundError(
        f"{problem}. dpreg needs {STAR_FILENAME}, the public-use file of Angrist, Lang "
        "and Oreopoulos (2009), 'Incentives and Services for College Achievement: "
        "Evidence from a Randomized Trial', AEJ: Applied Economics 1(1), 136-163. The "
        "authors distribute it as STAR_public_use.dta in the Angrist Data Archive (MIT "
        f"Economics); export it to CSV, name it {STAR_FILENAME}, and either pass "
        f"path= (the file or its directory) or set the environment variable "
        f"{DATA_DIR_ENV} to its directory. Expected sha256 {STAR_SHA256} (see "
        "datasets/README.md in the dpreg repository for the export that matches it)."
    )


def star_path(path: str | os.PathLike | None = None) -> Path:
    """Locate the STAR public-use CSV file and verify its checksum.

    Parameters
    ----------
    path : str or path-like, optional
        The CSV file itself, or a directory that holds ``STAR_public_use.csv``. If
        omitted, the directory named by the environment variable ``DPREG_DATA_DIR``.

    Returns
    -------
    pathlib.Path
        The resolved path of a file whose sha256 equals :data:`STAR_SHA256`.

    Raises
    ------
    DatasetNotFoundError
        If no location is given, the file does not exist, or its sha256 differs. The
        message says where dpreg looked, how to obtain the file and where to put it.
    """
    if path is None:
        env = os.environ.get(DATA_DIR_ENV)
        if not env:
            raise _not_found(
                f"No path= was given and the environment variable {DATA_DIR_ENV} is not set"
            )
        candidate = Path(env).expanduser() / STAR_FILENAME
        where = f"{candidate} (from {DATA_DIR_ENV})"
    else:
        candidate = Path(path).expanduser()
        if candidate.is_dir():
            candidate = candidate / STAR_FILENAME
        where = f"{candidate} (from path=)"
    if not candidate.is_file():
        raise _not_found(f"Looked for {where}: no such file")
    digest = _sha256(candidate)
    if digest != STAR_SHA256:
        raise _not_found(f"Found {where} but its sha256 is {digest}, not the expected one")
    return candidate.resolve()


def load_star(path: str | os.PathLike | None = None, *, sample: str = "analysis") -> pd.DataFrame:
    """Load the STAR public-use data (Angrist, Lang and Oreopoulos, 2009).

    Parameters
    ----------
    path : str or path-like, optional
        The file ``STAR_public_use.csv`` or its directory; by default the directory in
        the environment variable ``DPREG_DATA_DIR``. See :func:`star_path`.
    sample : {"analysis", "full"}, default "analysis"
        ``"analysis"``: the n = 1399 students with ``noshow == 0`` and non-missing
        ``GPA_year1``, ``lastmin``, ``mom_edn`` and ``dad_edn``. ``"full"``: all 1656
        rows of the file.

    Returns
    -------
    pandas.DataFrame
        All 48 original columns, in file order, with a fresh ``RangeIndex``. Missing
        values are NaN (numeric columns holding them are float64).

    Raises
    ------
    DatasetNotFoundError
        If the file is missing or its sha256 is wrong.
    OptionError
        If `sample` is not ``"analysis"`` or ``"full"``.

    Notes
    -----
    The Student Achievement and Retention (STAR) Project randomly assigned first-year
    students at a Canadian university to academic support services (SSP), financial
    incentives for grades (SFP), both (SFSP), or a control group. The columns used by
    the dpsgd-inference paper (Section 6.3, Table 1) and by the sample definition are

    ========== ======== ==========================================================
    column     dtype    meaning
    ========== ======== ==========================================================
    GPA_year1  float64  first-year grade point average, 0-4 (NaN if missing)
    ssp        int64    1 if offered the Student Support Program only
    sfp        int64    1 if offered the Student Fellowship Program only
    sfsp       int64    1 if offered both (SFSP); ssp = sfp = sfsp = 0 is control
    sex        str      "M" or "F"
    female     int64    1 if sex == "F"
    hsgroup    int64    high-school grade group 1-3 (terciles of ``gpa0``);
                        used as a categorical, ``C(hsgroup)``
    gpa0       float64  high-school grade average (percent)
    noshow     int64    1 if the student did not take part (excluded)
    lastmin    float64  baseline-survey answer, 1-5, on leaving work to the last
                        minute (NaN if missing)
    mom_edn    float64  mother's education, coded 1-9 (NaN if missing)
    dad_edn    float64  father's education, coded 1-9 (NaN if missing)
    ========== ======== ==========================================================

    The analysis sample is the set of complete cases for the original study's full
    control set. On it, OLS of ``GPA_year1 ~ ssp + sfp + sfsp + sex + C(hsgroup)``
    gives SSP 0.008 (s.e. 0.063), SFP -0.041 (0.063) and SFSP 0.143 (0.081), the
    "Oracle" row of Table 1 of the dpsgd-inference paper (up to that paper's rounding).
    String columns load with pandas' default string dtype (``str`` in pandas 3).

    References
    ----------
    .. [1] Angrist, J., Lang, D. and Oreopoulos, P. (2009). "Incentives and Services
       for College Achievement: Evidence from a Randomized Trial." American Economic
       Journal: Applied Economics, 1(1), 136-163.

    Examples
    --------
    >>> from dpreg.datasets import load_star
    >>> data = load_star("/path/to/data")  # doctest: +SKIP
    >>> data.shape  # doctest: +SKIP
    (1399, 48)
    """
    one_of("sample", sample, list(_SAMPLES))
    data = pd.read_csv(star_path(path))
    if sample == "analysis":
        keep = data["noshow"].eq(0) & data[_COMPLETE_CASES].notna().all(axis=1)
        data = data.loc[keep]
    return data.reset_index(drop=True)
