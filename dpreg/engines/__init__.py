"""Engines: numba kernels behind thin Python drivers.

``ENGINES`` names every engine the model can run; each driver takes arrays and
pre-validated settings and returns an :class:`~dpreg.engines.output.EngineOutput`.
"""

from dpreg.engines.dpgd import GDOutput, GDSettings, run_dpgd
from dpreg.engines.dpsgd import SGDSettings, default_schedule, run_dpsgd
from dpreg.engines.ldp_sgd import LDPPath, LDPSettings
from dpreg.engines.output import EngineOutput

ENGINES = ("dpsgd", "ldp_sgd", "dpgd", "adassp")

__all__ = ["ENGINES", "EngineOutput", "SGDSettings", "default_schedule", "run_dpsgd",
           "GDSettings", "GDOutput", "run_dpgd", "LDPPath", "LDPSettings"]
