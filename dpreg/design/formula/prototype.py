"""A design described without data, and rebuilt from that description.

A saved result predicts on new frames and a stream's checkpoint resumes: both keep a
picklable prototype of their design (each variable's kind and categories, the column
names; never a value of the data) and rebuild patsy's design from it on placeholder
rows.
"""

from __future__ import annotations

import builtins
import re
import types
from typing import Any

import numpy as np
import pandas as pd
import patsy

from dpreg.design.design import Design, check_bounds
from dpreg.design.formula.build import build_design
from dpreg.design.formula.namespace import FORMULA_BUILTINS
from dpreg.exceptions import DataError

__all__ = ["design_prototype", "numerical_columns", "design_info_from_prototype",
           "template_prototype", "template_from_prototype"]


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def design_prototype(design_info) -> dict:
    """A picklable description of a fitted design's right-hand side, with no data.

    For each identifier a factor's code reads that is not a function or module in the
    formula's namespace: ``"numeric"`` or the factor's categories (the declared levels,
    or those read from the data, which the output's names show). The variables' values
    are never recorded. :func:`design_info_from_prototype` rebuilds the design from it.
    """
    columns: dict[str, Any] = {}
    for factor, info in design_info.factor_infos.items():
        for word in _factor_words(factor, info):
            if info.type == "categorical":
                columns[word] = tuple(info.categories)
            else:
                columns.setdefault(word, "numeric")
    return {"columns": columns, "names": tuple(design_info.column_names)}


def _factor_words(factor, info) -> list[str]:
    """The identifiers a factor's code reads that are not functions or modules of the
    formula's namespace (data columns shadow the namespace in patsy, so other values
    may be columns)."""
    env = info.state.get("eval_env") if isinstance(info.state, dict) else None
    known = {k for ns in getattr(env, "_namespaces", []) for k, v in ns.items()
             if callable(v) or isinstance(v, types.ModuleType)}
    return [w for w in _IDENT.findall(getattr(factor, "code", factor.name()))
            if w not in known and not hasattr(builtins, w)]


def numerical_columns(design: Design) -> set[str]:
    """The data columns that some numerical factor of ``design`` reads (outcome or
    covariates): those whose values, not only their categories, enter the model."""
    out: set[str] = set()
    for design_info in (design.endog_info, design.design_info):
        for factor, info in design_info.factor_infos.items():
            if info.type != "categorical":
                out.update(_factor_words(factor, info))
    return out


def design_info_from_prototype(formula: str, prototype: dict, eval_env: int = 0):
    """The patsy ``DesignInfo`` of ``formula``'s right-hand side, rebuilt from a
    :func:`design_prototype` on a one-row frame of placeholders (numeric columns 1.0,
    categorical columns a Categorical with the recorded categories).

    Functions used in the formula are looked up ``eval_env`` frames above the caller
    (and ``np``). Raises :class:`~dpreg.exceptions.DataError` if the rebuilt columns are
    not the fitted ones.
    """
    frame = {}
    for word, kind in prototype["columns"].items():
        if kind == "numeric":
            frame[word] = [1.0]
        else:
            frame[word] = pd.Categorical([kind[0]], categories=list(kind))
    env = patsy.EvalEnvironment.capture(eval_env + 1).with_outer_namespace(FORMULA_BUILTINS)
    names = list(prototype["names"])
    try:
        rhs = patsy.ModelDesc.from_formula(formula).rhs_termlist
        X = patsy.dmatrix(patsy.ModelDesc([], rhs), pd.DataFrame(frame), eval_env=env,
                          NA_action=patsy.NAAction(NA_types=[]))
        rebuilt = X.design_info
    except Exception as err:  # noqa: BLE001 - any failure means: cannot rebuild
        raise DataError(f"cannot rebuild the design of {formula!r} for new data "
                        f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); "
                        f"pass a design matrix with the columns {names}") from None
    if list(rebuilt.column_names) != names:
        raise DataError(f"the design of {formula!r} rebuilt for new data has columns "
                        f"{list(rebuilt.column_names)}, not the fitted {names}; pass a design "
                        "matrix with the fitted columns instead")
    return rebuilt


def template_prototype(design: Design) -> dict:
    """A picklable description of a stream's template (both sides of its formula), with
    no data: :func:`design_prototype` of the outcome and of the covariates. Rebuilt by
    :func:`template_from_prototype`."""
    lhs, rhs = design_prototype(design.endog_info), design_prototype(design.design_info)
    return {"columns": {**lhs["columns"], **rhs["columns"]}, "names": rhs["names"],
            "endog_name": design.endog_name}


def template_from_prototype(formula: str, prototype: dict, *, missing: str, bounds,
                            levels, eval_env, binary_outcome: bool) -> Design:
    """The template :class:`~dpreg.design.Design` of a stream, rebuilt by
    :func:`~dpreg.design.formula.build.build_design` on one row of public placeholders
    (numeric columns the middle of their declared bounds, else 1; categorical columns
    their first recorded level).

    Only the template's public metadata (names, declared and derived bounds, levels) is
    used after a stream's first chunk; its placeholder row is never fitted. Raises
    :class:`~dpreg.exceptions.DataError` if the rebuilt columns are not the recorded ones.
    """
    declared = check_bounds(bounds)
    frame = {}
    for word, kind in prototype["columns"].items():
        if kind == "numeric":
            lo_hi = declared.get(word)
            frame[word] = [1.0 if lo_hi is None else (lo_hi[0] + lo_hi[1]) / 2]
        elif all(isinstance(level, (bool, np.bool_)) for level in kind):
            frame[word] = np.array([kind[0]], dtype=bool)  # patsy's levels of a bool
        else:
            frame[word] = pd.Categorical([kind[0]], categories=list(kind))
    design = build_design(formula, pd.DataFrame(frame), missing=missing, bounds=bounds,
                          levels=levels, eval_env=eval_env, binary_outcome=binary_outcome)
    if (design.exog_names != tuple(prototype["names"])
            or design.endog_name != prototype["endog_name"]):
        raise DataError(f"the design of {formula!r} rebuilt from a checkpoint has columns "
                        f"{[design.endog_name, *design.exog_names]}, not the recorded "
                        f"{[prototype['endog_name'], *prototype['names']]}")
    return design
