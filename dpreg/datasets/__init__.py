"""Real data (the STAR public-use file) and simulators of the papers' designs.

The STAR file is not shipped with dpreg: :func:`load_star` reads it from ``path=`` or
from the directory in the environment variable ``DPREG_DATA_DIR`` and checks its sha256.
"""

from dpreg.datasets.simulate import (
    Simulated,
    simulate_ldp_design,
    simulate_linear,
    simulate_logistic,
)
from dpreg.datasets.star import STAR_SHA256, load_star, star_path

__all__ = [
    "STAR_SHA256",
    "Simulated",
    "load_star",
    "simulate_ldp_design",
    "simulate_linear",
    "simulate_logistic",
    "star_path",
]
