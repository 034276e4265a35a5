"""The names a formula reads from its caller: functions and modules in scope.

A formula's terms may call functions of the caller's namespace (``np.log``, a user's
``scale``). :func:`capture_env` keeps that namespace for a design built later (a stream's
first chunk); :func:`formula_namespace` picks out what a formula names, so that it can be
evaluated elsewhere (:func:`namespace_env`: a Dask worker) or pickled
(:func:`portable_namespace`, :func:`restore_namespace`: a stream's checkpoint).
"""

from __future__ import annotations

import importlib
import re
import types
from typing import Any, Mapping

import numpy as np
import pandas as pd
import patsy
from patsy.categorical import C as patsy_C

__all__ = ["WORD", "FORMULA_BUILTINS", "unboxed_categorical", "capture_env",
           "formula_namespace", "namespace_env", "portable_namespace",
           "restore_namespace"]


#: An identifier a formula may name: a column, a function or a module attribute
#: (``np.log``).
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def unboxed_categorical(data, contrast=None, levels=None):
    """patsy's ``C()``, which hands a pandas Categorical (a column with declared
    ``levels=``) back as it is when neither a contrast nor levels are asked for.

    patsy 1.0 converts a boxed categorical row by row (its ``categorical_to_int`` looks
    for a Categorical before it unboxes ``C()``'s result), about 1.5 us a row; unboxed,
    it reads the Categorical's codes. The design is the same: patsy takes a
    Categorical's categories as its levels either way, and the columns keep the names
    the formula gives them (``C(religious)[T.2]``).
    """
    if contrast is None and levels is None and isinstance(
            getattr(data, "dtype", None), pd.CategoricalDtype):
        return data
    return patsy_C(data, contrast, levels)


#: Names every formula may use besides the caller's own (which take precedence): numpy
#: as ``np``, and patsy's ``C`` (:func:`unboxed_categorical`).
FORMULA_BUILTINS = {"np": np, "C": unboxed_categorical}


def capture_env(eval_env: int = 0):
    """The namespace ``eval_env`` frames above the caller, for a later
    :func:`~dpreg.design.formula.build.build_design` (a stream builds its design when its
    first chunk arrives, in another frame)."""
    return patsy.EvalEnvironment.capture(eval_env + 1)


def formula_namespace(formula: str, eval_env=0) -> dict[str, Any]:
    """The functions and modules the formula's terms name, from the caller's namespace.

    Parameters
    ----------
    formula : str
    eval_env : int or captured environment
        Frames above the caller (or an environment from :func:`capture_env`).

    Returns
    -------
    dict
        ``{name: function or module}`` (e.g. ``{"np": numpy}``), so that the formula can
        be evaluated elsewhere (:func:`namespace_env`), e.g. on a Dask worker.
    """
    env = eval_env if isinstance(eval_env, patsy.EvalEnvironment) else \
        patsy.EvalEnvironment.capture(eval_env + 1)
    out = {}
    for word in set(WORD.findall(formula)):
        head = word.split(".")[0]
        for ns in getattr(env, "_namespaces", []):
            if head in ns:
                if callable(ns[head]) or isinstance(ns[head], types.ModuleType):
                    out[head] = ns[head]
                break
    return out


def namespace_env(namespace: Mapping[str, Any]):
    """An evaluation environment for :func:`~dpreg.design.formula.build.build_design`
    from :func:`formula_namespace`."""
    return patsy.EvalEnvironment([dict(namespace)])


def portable_namespace(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`formula_namespace`'s output in a picklable form: modules by name (pickle
    cannot store a module), functions as they are (pickled by reference)."""
    return {k: ("module", v.__name__) if isinstance(v, types.ModuleType) else ("object", v)
            for k, v in namespace.items()}


def restore_namespace(portable: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`portable_namespace` (modules imported by name)."""
    return {k: importlib.import_module(v) if kind == "module" else v
            for k, (kind, v) in portable.items()}
