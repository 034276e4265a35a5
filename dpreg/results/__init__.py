"""What a fit returns and how it is shown.

- :mod:`dpreg.results.results`: :class:`DPRegressionResults` (estimates, inference,
  ledger, tests, predictions, saving) and :class:`ResultsModel`;
- :mod:`dpreg.results.record`: :class:`ResultsRecord`, the one frozen record a Results
  object is built from, and :data:`ABSENT`, the value of an optional part a result lacks;
- :mod:`dpreg.results.settings`: the public settings of a fit, records that render
  their own rows;
- :mod:`dpreg.results.summary`: one fit's summary and :func:`summary_col` (several fits
  side by side);
- :mod:`dpreg.results.hypothesis`: tests of linear restrictions (``t_test``, ``f_test``,
  ``wald_test``) and their :class:`~dpreg.results.hypothesis.ContrastResults`;
- :mod:`dpreg.results.prediction`: predictions with intervals
  (:class:`~dpreg.results.prediction.PredictionResults`);
- :mod:`dpreg.results.margins`: marginal effects at public covariate values
  (:class:`~dpreg.results.margins.Margins`);
- :mod:`dpreg.results.io`: :func:`~dpreg.results.io.load` of saved results and stream
  checkpoints;
- :mod:`dpreg.results.tables`: statsmodels' ``Summary`` with rules as wide as the table;
- :mod:`dpreg.results.plotting`: running estimates with their intervals against rows used
  (:func:`~dpreg.results.plotting.plot_trajectory`).

A Results object reads records (:class:`~dpreg.inference.base.Inference`, the ledger);
it never runs an engine or touches data.
"""

from dpreg.results.record import ABSENT, ResultsRecord
from dpreg.results.results import PRIVATE_ATTRIBUTES, DPRegressionResults, ResultsModel
from dpreg.results.settings import Setting, Settings
from dpreg.results.summary import METHOD_LABELS, summary_col

__all__ = ["DPRegressionResults", "ResultsModel", "ResultsRecord", "ABSENT", "Settings",
           "Setting", "summary_col", "METHOD_LABELS", "PRIVATE_ATTRIBUTES"]
