"""What a fit returns and how it is shown.

- :mod:`dpreg.results.results`: :class:`DPRegressionResults` (estimates, inference,
  ledger, tests, predictions, saving) and :class:`ResultsModel`;
- :mod:`dpreg.results.settings`: the public settings of a fit, records that render
  their own rows;
- :mod:`dpreg.results.summary`: one fit's summary and :func:`summary_col` (several fits
  side by side);
- :mod:`dpreg.results.plotting`: running estimates with their intervals against rows used
  (:func:`~dpreg.results.plotting.plot_trajectory`).

A Results object reads records (:class:`~dpreg.inference.base.Inference`, the ledger);
it never runs an engine or touches data.
"""

from dpreg.results.results import PRIVATE_ATTRIBUTES, DPRegressionResults, ResultsModel
from dpreg.results.settings import Setting, Settings
from dpreg.results.summary import METHOD_LABELS, summary_col

__all__ = ["DPRegressionResults", "ResultsModel", "Settings", "Setting", "summary_col",
           "METHOD_LABELS", "PRIVATE_ATTRIBUTES"]
