"""Saving and loading results: :func:`save`, :func:`load` (and ``load_pickle``).

A result is pickled as it is: private estimates, inference records, ledger, public
settings and the public description of the formula's design (variables and declared
categories), never data (user guide, Privacy: "Threat model"). A loaded result predicts
on new data frames: the design is rebuilt from the formula and the stored categories.

:func:`load` also reads a stream's checkpoint (:meth:`dpreg.LDPStream.save`), which is
not a result: it is the curator's state of a run, to be kept with the data.
"""

from __future__ import annotations

import os
import pickle
import tempfile

from dpreg.exceptions import DataError
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


def write_pickle(obj, fname) -> None:
    """Pickle ``obj`` to ``fname`` (a path or a writable binary file object).

    A path is written atomically: to a temporary file in the same folder, then renamed
    over ``fname``, so a crash while writing leaves the previous file whole.
    """
    if hasattr(fname, "write"):
        pickle.dump(obj, fname, protocol=pickle.HIGHEST_PROTOCOL)
        return
    path = os.path.abspath(os.fspath(fname))
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".dpreg-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def read_pickle(fname):
    """Unpickle ``fname`` (a path or a readable binary file object); load only files
    you trust."""
    if hasattr(fname, "read"):
        return pickle.load(fname)
    with open(os.fspath(fname), "rb") as fh:
        return pickle.load(fh)


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
    obj = read_pickle(fname)
    if not isinstance(obj, tuple(_LOADABLE)):
        raise DataError(f"{fname!r} holds a {type(obj).__name__}, not a dpreg result or "
                        "stream checkpoint")
    return obj


# statsmodels' spelling (statsmodels.iolib.smpickle.load_pickle): the same function.
load_pickle = load
