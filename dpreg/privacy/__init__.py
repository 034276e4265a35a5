"""Privacy layer of dpreg: requests, events, accountants, calibration and the ledger.

Privacy as data, in the manner of Google's ``dp_accounting``: mechanisms are described
by frozen events,
the :class:`Ledger` only appends them, and accountants only read them. mu-GDP closed
forms live in :mod:`dpreg.privacy.gdp`; the rigorous (epsilon, delta) comes from
Google's ``dp_accounting`` (:mod:`dpreg.privacy.accountants`).
"""

from dpreg.privacy.accountants import (
                                       rigorous_delta,
                                       rigorous_epsilon,
                                       rigorous_rdp_curve,
                                       zcdp_rho_upper,
)
from dpreg.privacy.calibration import (
                                       Calibration,
                                       calibrate_gaussian_noise,
                                       calibrate_mu_scale,
                                       calibrate_to_budget,
)
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import (
                                       calibrate_dpsgd,
                                       dpsgd_mu,
                                       epsilon_to_mu,
                                       gaussian_mu,
                                       mu_to_delta,
                                       mu_to_epsilon,
                                       mu_to_rho,
                                       rho_to_epsilon,
                                       rho_to_mu,
)
from dpreg.privacy.ledger import Ledger
from dpreg.privacy.request import PrivacyRequest, split_budget

__all__ = [
    "PrivacyRequest", "split_budget", "GaussianMechanismEvent", "Ledger",
    "dpsgd_mu", "calibrate_dpsgd", "gaussian_mu", "mu_to_delta", "mu_to_epsilon",
    "epsilon_to_mu", "mu_to_rho", "rho_to_mu", "rho_to_epsilon",
    "rigorous_epsilon", "rigorous_delta", "rigorous_rdp_curve", "zcdp_rho_upper",
    "calibrate_gaussian_noise", "calibrate_to_budget", "calibrate_mu_scale", "Calibration",
]
