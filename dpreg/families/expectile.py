"""Robust expectile regression: ``l(y, eta) = |tau - 1{y - eta < 0}| h_c(y - eta)``.

The asymmetric weight ``tau`` (residual >= 0) or ``1 - tau`` (residual < 0) times the
Huber loss ``h_c`` (ldp-sgd paper, Example 3; Man, Tan, Wang and Zhou 2024). The score is
bounded by ``c max(tau, 1 - tau)`` and the Hessian weight by ``max(tau, 1 - tau)``. With
``c = inf`` this is the classical expectile loss (Newey and Powell 1987), whose score
is unbounded: gradients are then clipped like the linear family's.
"""

import math

from numba import njit

from dpreg.families.base import Family
from dpreg.families.linear import check_y

CODE = 3


@njit(cache=True)
def _asym(r, tau):
    return 1.0 - tau if r < 0 else tau


@njit(cache=True)
def loss(y, eta, c, tau):
    r = y - eta
    a = abs(r)
    h = 0.5 * a * a if a <= c else c * a - 0.5 * c * c
    return _asym(r, tau) * h


@njit(cache=True)
def dloss(y, eta, c, tau):
    r = y - eta
    psi = r
    if r > c:
        psi = c
    elif r < -c:
        psi = -c
    return -_asym(r, tau) * psi


@njit(cache=True)
def d2loss(y, eta, c, tau):
    r = y - eta
    return _asym(r, tau) if abs(r) <= c else 0.0


def _psi_bound(c, tau):
    return None if not math.isfinite(c) else c * max(tau, 1 - tau)


EXPECTILE = Family(name="expectile", code=CODE, label="Expectile", loss=loss, dloss=dloss,
                   d2loss=d2loss, psi_bound=_psi_bound,
                   hess_bound=lambda c, tau: max(tau, 1 - tau), check_y=check_y,
                   default_c=1.345, uses_tau=True, mallows_default=True)
