"""Pickle files, written once: :func:`write_pickle`, :func:`read_pickle` and
:func:`read_instance`.

:meth:`dpreg.DPRegressionResults.save` / ``load``, :func:`dpreg.load` and
:meth:`dpreg.LDPStream.save` all go through these (the module imports nothing of dpreg but
its exceptions, so any layer can use it). Loading runs pickle: load only files you trust.

A pickle names each class by its module. Files written before the modules of ``dpreg/``
moved into folders name the old modules (a stream checkpoint holds
``dpreg.stream.LDPStream`` and ``dpreg.conditioning.Conditioning``), and files written
before ``dpreg.inference.ssp`` and ``dpreg.inference.iv`` became ``ssp_estimator`` and
``iv_estimator`` name those (an ``SSPRelease`` pickled on its own): :func:`read_pickle`
looks those up where they live now (:data:`MOVED_MODULES`), so such files still load
through :func:`dpreg.load` and ``DPRegressionResults.load``. The Results classes never
moved (``dpreg.results.results``).
"""

from __future__ import annotations

import os
import pickle
import tempfile

from dpreg.exceptions import DataError

__all__ = ["write_pickle", "read_pickle", "read_instance", "MOVED_MODULES"]

#: ``{module in older pickles: where its classes and functions live now}``: the modules
#: that sat loose in ``dpreg/`` until they moved into the folders of their layers, and the
#: estimators of the sufficient-statistics releases, renamed apart from the engines' and
#: the fits' modules of the same name.
MOVED_MODULES = {
    "dpreg.api": "dpreg.frontend.api",
    "dpreg.model": "dpreg.frontend.model",
    "dpreg.stream": "dpreg.frontend.stream",
    "dpreg.conditioning": "dpreg.design.conditioning",
    "dpreg.formula": "dpreg.design.formula",
    "dpreg.intervals": "dpreg.design.intervals",
    "dpreg.reference_design": "dpreg.design.reference_design",
    "dpreg.options": "dpreg.fits.options",
    "dpreg.oracle": "dpreg.fits.oracle",
    "dpreg.hypothesis": "dpreg.results.hypothesis",
    "dpreg.io": "dpreg.results.io",
    "dpreg.margins": "dpreg.results.margins",
    "dpreg.prediction": "dpreg.results.prediction",
    "dpreg.tables": "dpreg.results.tables",
    "dpreg.star_table1": "dpreg.studies.star_table1",
    "dpreg.inference.ssp": "dpreg.inference.ssp_estimator",
    "dpreg.inference.iv": "dpreg.inference.iv_estimator",
}


class _Unpickler(pickle.Unpickler):
    """pickle's unpickler, with the classes of :data:`MOVED_MODULES` found where they
    live now."""

    def find_class(self, module, name):
        return super().find_class(MOVED_MODULES.get(module, module), name)


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
    """Unpickle ``fname``; load only files you trust. Classes of older pickles are looked
    up where they live now (:data:`MOVED_MODULES`).

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
        return _Unpickler(fname).load()
    with open(os.fspath(fname), "rb") as fh:
        return _Unpickler(fh).load()


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
