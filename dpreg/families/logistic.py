"""Logistic regression: ``l(y, eta) = log(1 + e^eta) - y eta`` with ``y`` in {0, 1}.

The score ``sigmoid(eta) - y`` is bounded by 1 and the Hessian weight
``sigmoid(eta)(1 - sigmoid(eta))`` by 1/4 (dpsgd-inference paper s.5.2; ldp-sgd paper,
Example 2). Every function is written to avoid overflow for large ``|eta|``.
"""

import math

import numpy as np
from numba import njit
from scipy.special import expit

from dpreg.exceptions import DataError
from dpreg.families.base import Family

CODE = 2


@njit(cache=True)
def _sigmoid(eta):
    if eta >= 0:
        return 1.0 / (1.0 + math.exp(-eta))
    e = math.exp(eta)
    return e / (1.0 + e)


@njit(cache=True)
def loss(y, eta, c, tau):
    # softplus(eta) - y eta, softplus written without overflow
    return max(eta, 0.0) + math.log1p(math.exp(-abs(eta))) - y * eta


@njit(cache=True)
def dloss(y, eta, c, tau):
    return _sigmoid(eta) - y


@njit(cache=True)
def d2loss(y, eta, c, tau):
    s = _sigmoid(eta)
    return s * (1.0 - s)


def check_y(y: np.ndarray, name: str) -> None:
    values = np.unique(np.asarray(y))
    if not np.isin(values, (0.0, 1.0)).all():
        shown = ", ".join(f"{v:g}" for v in values[:6]) + (", ..." if len(values) > 6 else "")
        raise DataError(f"outcome {name!r} must be 0/1 (or boolean, or a two-level category) "
                        f"for logistic regression; found values {shown}")


def inverse_link(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``p = 1 / (1 + exp(-eta))``, ``dp/deta = p (1 - p)`` and ``d2p/deta2 = p (1 - p)
    (1 - 2 p)``."""
    p = expit(eta)
    w = p * (1 - p)
    return p, w, w * (1 - 2 * p)


LOGISTIC = Family(name="logistic", code=CODE, label="Logistic", loss=loss, dloss=dloss,
                  d2loss=d2loss, psi_bound=lambda c, tau: 1.0,
                  hess_bound=lambda c, tau: 0.25, check_y=check_y, binary_outcome=True,
                  location=False, inverse_link=inverse_link, statsmodels_model="Logit",
                  checks_curvature_bias=True, cli_name="logit")
