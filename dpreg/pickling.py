"""Pickle files, written once: :func:`write_pickle`, :func:`read_pickle` and
:func:`read_instance`.

:meth:`dpreg.DPRegressionResults.save` / ``load``, :func:`dpreg.load` and
:meth:`dpreg.LDPStream.save` all go through these (the module imports nothing of dpreg but
its exceptions, so any layer can use it). Loading runs pickle: load only files you trust.
"""

from __future__ import annotations

import os
import pickle
import tempfile

from dpreg.exceptions import DataError

__all__ = ["write_pickle", "read_pickle", "read_instance"]


def write_pickle(obj, fname) -> None:
    """Pickle ``obj`` to ``fname`` (a path or a writable binary file object).

    A path is written atomically: to a temporary file in the same folder, then renamed
    over ``fname``, so a crash while writing leaves the previous file whole.

    Parameters
    ----------
    obj : object
        What to pickle (at the highest protocol).
    fname : str, path or writable binary file object
        Where to write.
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
    """Unpickle ``fname``; load only files you trust.

    Parameters
    ----------
    fname : str, path or readable binary file object
        The file.

    Returns
    -------
    object
        What it holds.
    """
    if hasattr(fname, "read"):
        return pickle.load(fname)
    with open(os.fspath(fname), "rb") as fh:
        return pickle.load(fh)


def read_instance(fname, types: tuple[type, ...], what: str):
    """Unpickle ``fname`` and check that it holds an instance of ``types``.

    Parameters
    ----------
    fname : str, path or readable binary file object
        The file.
    types : tuple of type
        The classes accepted.
    what : str
        What they are, for the error message (``"dpreg result"``).

    Returns
    -------
    object
        The instance.

    Raises
    ------
    DataError
        When the file holds anything else.
    """
    obj = read_pickle(fname)
    if not isinstance(obj, tuple(types)):
        raise DataError(f"{fname!r} holds a {type(obj).__name__}, not a {what}")
    return obj
