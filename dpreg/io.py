"""Saving and loading results: :func:`save`, :func:`load` (and ``load_pickle``).

A result is pickled as it is: private estimates, inference records, ledger, public
settings and the public description of the formula's design (variables and declared
categories), never data (user guide, Privacy: "Threat model"). A loaded result predicts
on new data frames: the design is rebuilt from the formula and the stored categories.
"""

from __future__ import annotations

from dpreg.results.results import DPRegressionResults

__all__ = ["save", "load", "load_pickle"]


def save(results, fname) -> None:
    """Pickle ``results`` to ``fname`` (a path or a writable binary file object)."""
    DPRegressionResults.save(results, fname)


def load(fname):
    """Load a result saved by :meth:`dpreg.DPRegressionResults.save`.

    Parameters
    ----------
    fname : str, path or readable binary file object

    Returns
    -------
    DPRegressionResults

    Notes
    -----
    Loading runs pickle: load only files you trust, as with statsmodels' ``load_pickle``.
    """
    return DPRegressionResults.load(fname)


# statsmodels' spelling (statsmodels.iolib.smpickle.load_pickle): the same function.
load_pickle = load
