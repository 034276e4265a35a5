"""Monte Carlo studies that check the intervals cover: declare, run in parallel, plot.

A :class:`Study` crosses factors (data design, method, ``n``, budget, ...) into cells
and names a replicate function that simulates one data set and fits it.
:func:`run_study` runs every replication of every cell with its own reproducible seed,
locally with joblib or on a Dask cluster (the same numbers either way), caches finished
chunks so an interrupted study resumes, and returns a tidy table of coverage, interval
length, bias, RMSE and rejection rates, each with its Monte Carlo standard error.
:func:`plot_coverage` and :func:`plot_length` draw the papers' figures;
:func:`get_study` returns the shipped replications of the papers' simulations.
:mod:`dpreg.studies.star_table1` replicates Table 1 of the dpsgd-inference paper on the
STAR data (``python -m dpreg replicate star``).

Examples
--------
>>> import dpreg.studies as ds
>>> table = ds.run_study(ds.get_study("smoke"), reps=4, n_jobs=1, progress=False)
>>> list(table.columns[:6])
['n', 'method', 'alpha', 'coef', 'reps', 'nominal']
"""

from dpreg.studies.catalog import get_study, list_studies, register_study
from dpreg.studies.plots import plot_coverage, plot_length, plot_metric
from dpreg.studies.records import estimate_rows, result_rows
from dpreg.studies.runner import run_replicates, run_study
from dpreg.studies.spec import Cell, FigureSpec, Study, StudyUnavailableError
from dpreg.studies.summaries import compare_with_reference, nominal_band, relative_mse, summarize

__all__ = [
    "Study", "Cell", "FigureSpec", "StudyUnavailableError", "run_study", "run_replicates",
    "summarize", "compare_with_reference", "relative_mse", "nominal_band", "plot_coverage",
    "plot_length", "plot_metric", "estimate_rows", "result_rows", "get_study",
    "list_studies", "register_study",
]
