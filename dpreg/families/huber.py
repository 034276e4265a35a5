"""Huber regression: ``l(y, eta) = h_c(y - eta)``.

``h_c(r) = r^2 / 2`` for ``|r| <= c`` and ``c |r| - c^2 / 2`` beyond; the score
``psi_c(r) = max(-c, min(c, r))`` is bounded by ``c`` and the Hessian weight is
``1{|r| <= c}`` (ldp-sgd paper, Example 1; statsmodels' ``HuberT`` with scale 1).
The default ``c = 1.345`` gives 95% efficiency at the normal model with unit scale.
"""

from numba import njit

from dpreg.families.base import Family
from dpreg.families.linear import check_y

CODE = 1


@njit(cache=True)
def loss(y, eta, c, tau):
    r = abs(y - eta)
    if r <= c:
        return 0.5 * r * r
    return c * r - 0.5 * c * c


@njit(cache=True)
def dloss(y, eta, c, tau):
    r = y - eta
    if r > c:
        return -c
    if r < -c:
        return c
    return -r


@njit(cache=True)
def d2loss(y, eta, c, tau):
    return 1.0 if abs(y - eta) <= c else 0.0


HUBER = Family(name="huber", code=CODE, label="Huber", loss=loss, dloss=dloss,
               d2loss=d2loss, psi_bound=lambda c, tau: c, hess_bound=lambda c, tau: 1.0,
               check_y=check_y, default_c=1.345, mallows_default=True,
               ldp_lr_scale=1.0, ldp_offset_step="boxed")


