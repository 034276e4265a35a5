"""Shared fixtures: seeds, small data sets, the STAR file (skipped when absent)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``long`` (a minute or more each) run first: pytest -n hands tests
    out in collection order, and one started last keeps its worker busy while the others
    idle (about 3 of CI's 11.5 minutes before)."""
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
