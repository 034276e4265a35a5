"""Engines: numba kernels behind thin Python drivers.

Each driver takes arrays and pre-validated settings and returns an output dataclass;
the list of engines a model can run is :data:`dpreg.fits.registry.ENGINES`.
"""

from dpreg.engines.dpgd import GDOutput, GDSettings, run_dpgd
from dpreg.engines.dpsgd import SGDSettings, default_schedule, run_dpsgd
from dpreg.engines.ldp_sgd import LDPPath, LDPSettings
from dpreg.engines.output import EngineOutput

__all__ = ["EngineOutput", "SGDSettings", "default_schedule", "run_dpsgd",
           "GDSettings", "GDOutput", "run_dpgd", "LDPPath", "LDPSettings"]
