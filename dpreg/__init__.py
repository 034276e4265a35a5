"""dpreg: differentially private regression with valid statistical inference.

Formula front ends (:func:`dp_ols`), the model class (:class:`DPRegression`), streams
under local DP (:class:`LDPStream`), the
non-private benchmark (:func:`oracle`), side-by-side tables (:func:`summary_col`), saved
results (:func:`load`), the
privacy calculator (:mod:`dpreg.privacy`) and data sets (:mod:`dpreg.datasets`).
"""

from dpreg import datasets, privacy
from dpreg.exceptions import (
                              BudgetExceededError,
                              ConvergenceError,
                              ConvergenceWarning,
                              DataError,
                              DatasetNotFoundError,
                              DPRegError,
                              FormulaError,
                              OptionError,
                              PrivacyLeakError,
                              PrivacyLeakWarning,
                              PrivateStatisticError,
)
from dpreg.frontend.api import dp_expectile, dp_huber, dp_iv2sls, dp_logit, dp_ols, oracle
from dpreg.frontend.model import DPRegression
from dpreg.frontend.stream import LDPStream
from dpreg.privacy.scale_box import ScaleBox
from dpreg.results import DPRegressionResults, summary_col
from dpreg.results.io import load, load_pickle

__version__ = "0.2.0"

__all__ = [
    "dp_ols", "dp_huber", "dp_expectile", "dp_logit", "dp_iv2sls", "DPRegression",
    "DPRegressionResults",
    "LDPStream", "ScaleBox", "oracle", "summary_col", "datasets",
    "privacy", "DPRegError", "DataError", "FormulaError", "OptionError",
    "BudgetExceededError", "DatasetNotFoundError", "ConvergenceError", "PrivacyLeakError",
    "PrivacyLeakWarning", "ConvergenceWarning", "PrivateStatisticError", "load", "load_pickle",
]
