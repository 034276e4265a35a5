"""Saving and loading results: :func:`save`, :func:`load` (and ``load_pickle``).

A result is pickled as its record (:class:`~dpreg.results.record.ResultsRecord`):
private estimates, inference records, ledger, public settings and the public description
of the formula's design (variables and declared categories), never data (user guide,
Privacy: "Threat model"). A loaded result predicts on new data frames: the design is
rebuilt from the formula and the stored categories.

:func:`load` also reads a stream's checkpoint (:meth:`dpreg.LDPStream.save`), which is
not a result: it is the curator's state of a run, to be kept with the data.
"""

from __future__ import annotations

from dpreg.pickling import read_instance, read_pickle, write_pickle
from dpreg.results.results import DPRegressionResults

__all__ = ["save", "load", "load_pickle", "register_loadable", "write_pickle", "read_pickle"]

#: The classes whose pickles :func:`load` returns; :class:`dpreg.LDPStream` registers
#: itself (it sits above this module).
_LOADABLE: list[type] = [DPRegressionResults]


def register_loadable(cls: type) -> type:
    """Let :func:`load` return pickles of ``cls`` (a class decorator)."""
    if cls not in _LOADABLE:
        _LOADABLE.append(cls)
    return cls


def save(results, fname) -> None:
    """Pickle ``results`` to ``fname`` (a path or a writable binary file object)."""
    DPRegressionResults.save(results, fname)


def load(fname):
    """Load a result saved by :meth:`dpreg.DPRegressionResults.save`, or a stream
    checkpoint saved by :meth:`dpreg.LDPStream.save`.

    Parameters
    ----------
    fname : str, path or readable binary file object

    Returns
    -------
    DPRegressionResults or LDPStream

    Notes
    -----
    Loading runs pickle: load only files you trust, as with statsmodels' ``load_pickle``.
    """
    return read_instance(fname, tuple(_LOADABLE), "dpreg result or stream checkpoint")


# statsmodels' spelling (statsmodels.iolib.smpickle.load_pickle): the same function.
load_pickle = load
