"""Shared fixtures: seeds, small data sets, the STAR file (skipped when absent)."""

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

# pytest -n: each worker compiles into its own numba cache folder. Numba's on-disk cache is
# not safe for processes that write the same entries at once (numba issues #4807 and
# #10128): in CI a Dask worker of the study-runner test died of a segfault while the other
# pytest worker compiled the same kernels into the shared folder. It must be set before
# dpreg (whose kernels fix their cache folder when decorated) is imported: hence the
# warning filters naming dpreg's classes are added below, not in pyproject.toml.
# Processes a worker starts (Dask's, joblib's) inherit the variable. (Tests that import
# this module again, as tests.conftest, find the folder set.)
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER and os.path.basename(os.environ.get("NUMBA_CACHE_DIR", "")) != _WORKER:
    if "dpreg" in sys.modules:
        raise RuntimeError("dpreg was imported before tests/conftest.py could give this "
                           "pytest worker its own numba cache folder")
    _base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(tempfile.gettempdir(),
                                                              "dpreg-numba-cache")
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(_base, _WORKER)
    if "numba" in sys.modules:  # numba reads the variable into its config when imported
        from numba.core import config as _numba_config

        _numba_config.reload_config()


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "error::dpreg.exceptions.PrivacyLeakWarning")
    # tests seed every fit on purpose (reproducible numbers on the same data); the
    # warning itself is tested in tests/test_privacy_holes.py
    config.addinivalue_line("filterwarnings", "ignore::dpreg.exceptions.SeedReuseWarning")


SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``long`` (a minute or more each) run first: pytest -n hands tests
    out in collection order, and one started last keeps its worker busy while the others
    idle (CI's tests took 11.5 minutes before, 8.8 after)."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # stable


@pytest.fixture
def seed():
    """The one seed of the fast tests (change it to check a test is not seed-tuned)."""
    return 20251122


@pytest.fixture
def star_dir():
    if not (SHARED_DATA / "STAR_public_use.csv").exists():
        pytest.skip("STAR_public_use.csv is not in ../shared/datasets")
    return SHARED_DATA


@pytest.fixture
def small_frame(seed):
    """A small frame with a numeric, a categorical and a binary column (bounded)."""
    return make_small_frame(seed)


def make_small_frame(seed, n: int = 400) -> pd.DataFrame:
    """``n`` rows of ``y = 1 + 0.5 x - 0.3 [g = b] + 0.4 d + N(0, 0.5^2)``, clipped to
    [-3, 5], with ``x ~ U(-1, 1)``, ``g`` in {a, b, c} and a binary ``d``."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n)
    g = rng.choice(["a", "b", "c"], n)
    d = rng.integers(0, 2, n)
    y = 1.0 + 0.5 * x - 0.3 * (g == "b") + 0.4 * d + rng.normal(0, 0.5, n)
    return pd.DataFrame({"y": np.clip(y, -3, 5), "x": x, "g": g, "d": d})


SMALL_BOUNDS = {"y": (-3.0, 5.0), "x": (-1.0, 1.0), "d": (0.0, 1.0)}


@pytest.fixture
def small_bounds():
    return dict(SMALL_BOUNDS)
