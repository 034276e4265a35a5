"""The one list of engines: ``{name: Engine(fit, options, cov_types, label)}``.

:meth:`dpreg.DPRegression.fit` validates what every engine shares and calls
``ENGINES[name].fit(problem, opts, request, given)``. Adding an engine is one module in
:mod:`dpreg.fits` (with its driver and kernel in :mod:`dpreg.engines`) and one line here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dpreg.fits.adassp import fit_adassp
from dpreg.fits.dpgd import fit_dpgd
from dpreg.fits.dpsgd import fit_dpsgd
from dpreg.fits.ldp_sgd import fit_ldp_sgd
from dpreg.options import ENGINE_COV_TYPES, FitOptions

__all__ = ["Engine", "ENGINES", "get_engine"]


@dataclass(frozen=True)
class Engine:
    """One engine: its fit, its options, its interval methods and its display name.

    Attributes
    ----------
    fit : callable
        ``fit(problem, opts, request, given) -> DPRegressionResults``.
    options : type
        The options dataclass the fit takes.
    cov_types : tuple of str
        Its interval methods; the first is the default ``cov_type``.
    label : str
        The name in summaries.
    """

    fit: Callable
    options: type
    cov_types: tuple[str, ...]
    label: str


ENGINES: dict[str, Engine] = {
    "dpsgd": Engine(fit_dpsgd, FitOptions, ENGINE_COV_TYPES["dpsgd"], "DP-SGD"),
    "ldp_sgd": Engine(fit_ldp_sgd, FitOptions, ENGINE_COV_TYPES["ldp_sgd"], "LDP-SGD"),
    "dpgd": Engine(fit_dpgd, FitOptions, ENGINE_COV_TYPES["dpgd"], "DP-GD"),
    "adassp": Engine(fit_adassp, FitOptions, ENGINE_COV_TYPES["adassp"], "AdaSSP"),
}


def get_engine(name: str) -> Engine:
    """The registered engine ``name``."""
    return ENGINES[name]
