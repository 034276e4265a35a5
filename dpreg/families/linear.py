"""Linear regression: squared loss ``l(y, eta) = (y - eta)^2 / 2``.

The score ``(eta - y) x`` is unbounded, so DP engines clip per-example gradients
(dpsgd-inference paper, (5.1)); the Hessian weight is 1.
"""

import numpy as np
from numba import njit

from dpreg.exceptions import DataError
from dpreg.families.base import Family

CODE = 0


@njit(cache=True)
def loss(y, eta, c, tau):
    r = y - eta
    return 0.5 * r * r


@njit(cache=True)
def dloss(y, eta, c, tau):
    return eta - y


@njit(cache=True)
def d2loss(y, eta, c, tau):
    return 1.0


def check_y(y: np.ndarray, name: str) -> None:
    if not np.issubdtype(np.asarray(y).dtype, np.number):
        raise DataError(f"outcome {name!r} must be numeric for the linear family")


LINEAR = Family(name="linear", code=CODE, label="Linear (squared loss)", loss=loss,
                dloss=dloss, d2loss=d2loss, psi_bound=lambda c, tau: None,
                hess_bound=lambda c, tau: 1.0, check_y=check_y, lr_scale=1.0,
                ldp_lr_scale=1.0, squared_loss=True, statsmodels_model="OLS",
                ldp_offset_step="always", cli_name="ols")
