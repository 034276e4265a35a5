"""The declarative description of a regression family (loss in the linear index).

A family is a frozen record of jitted scalar functions of ``(y, eta, c)`` where ``eta``
is the linear index ``x'theta`` and ``c`` the family's tuning constant, plus the
bounds that privacy needs. Kernels do not receive these functions (that would defeat
numba's on-disk cache, numba issue #2956); they dispatch on the integer ``code``
through :func:`dpreg.engines._kernels.dloss`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Family"]


@dataclass(frozen=True)
class Family:
    """A regression family.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"linear"``.
    code : int
        Integer the numba kernels dispatch on.
    label : str
        Human-readable name for summaries.
    loss, dloss, d2loss : callable
        Per-observation loss ``l(y, eta, c)`` and its first and second derivatives in
        ``eta`` (jitted scalar functions).
    psi_bound : float or None
        Bound on ``|dloss|`` (``None`` when unbounded: gradients are then clipped).
    hess_bound : float
        Bound on ``d2loss``, used for the sensitivity of the private Hessian.
    check_y : callable
        Validates the outcome vector; raises :class:`~dpreg.exceptions.DataError`.
    """

    name: str
    code: int
    label: str
    loss: Callable
    dloss: Callable
    d2loss: Callable
    psi_bound: float | None
    hess_bound: float
    check_y: Callable[[np.ndarray, str], None]
