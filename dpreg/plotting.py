"""Former home of :mod:`dpreg.results.plotting` (dpreg 0.2 documented
``dpreg.plotting.plot_trajectory``): imports of that path keep working.

The code is in :mod:`dpreg.results.plotting`, beside the Results object it draws; the
study figures are in :mod:`dpreg.studies.plots`.
"""

from dpreg.results.plotting import plot_trajectory, trajectory_bands

__all__ = ["plot_trajectory", "trajectory_bands"]
