"""Public bounds of a formula's terms and of the design's columns.

Declared bounds of data columns bound the terms built from them: the row norm
``||x_i||`` (:func:`row_norm_bound`), each design column's interval
(:func:`bounds_of_columns`, which the public conditioning of the engines uses), and the
bounds of transformed terms derived by interval arithmetic (:func:`derived_bounds`, with
:mod:`dpreg.design.intervals`). A bound declared on a transformed term used as a main
effect is enforced by clipping its design column (:func:`enforce_term_bounds`). A bounds
dict may name data columns a formula does not use, so one dict serves several models;
any other unknown name is an error with the close matches (:func:`check_bound_names`).
"""

from __future__ import annotations

import difflib
import itertools
import math
from typing import Mapping

import numpy as np
import pandas as pd
import patsy

from dpreg.design.formula.namespace import WORD
from dpreg.design.intervals import derive_bounds
from dpreg.exceptions import OptionError

__all__ = ["row_norm_bound", "bounds_of_columns", "column_combos", "normalize_bounds",
           "check_bound_names", "enforce_term_bounds", "derived_bounds"]


def row_norm_bound(design_info, bounds: Mapping[str, tuple[float, float]]):
    """Public bound on ``||x_i||`` from declared bounds, and the undeclared variables.

    A term's columns are Kronecker products of its factors' columns, so its squared norm
    in a row is at most the product, over categorical factors, of the largest squared
    row of the contrast matrix (1 for treatment coding; larger for ``Sum`` or ``Poly``),
    times the product of squared bounds of its numerical factors; terms add up.
    """
    total, undeclared = 0.0, []
    for term, subterms in design_info.term_codings.items():
        numeric = 1.0
        for factor in term.factors:
            info = design_info.factor_infos[factor]
            if info.type == "numerical":
                name = factor.name()
                if name in bounds and info.num_columns == 1:
                    numeric *= max(abs(v) for v in bounds[name]) ** 2
                else:
                    undeclared.append(name)
        for sub in subterms:
            cat = 1.0
            for contrast in sub.contrast_matrices.values():
                cat *= float(np.max(np.sum(np.asarray(contrast.matrix) ** 2, axis=1)))
            total += cat * numeric
    undeclared = tuple(dict.fromkeys(undeclared))
    return (None if undeclared else math.sqrt(total)), undeclared


def bounds_of_columns(design_info, bounds: Mapping[str, tuple[float, float]]):
    """Public ``(lower, upper)`` of every design column (``None`` where unknown), and
    for each column the names of its numerical factors (``None`` for a column of a
    term with a categorical factor; ``()`` for the intercept).

    Interval arithmetic over the factors of each column: a numerical factor contributes
    its declared bounds, a categorical one the range of its contrast column; a column is
    their product (patsy orders a subterm's columns with the left-most factor varying
    fastest). The public conditioning of the engines (:mod:`dpreg.design.conditioning`) maps
    each column to ``[-1, 1]`` with these.
    """
    def factor_bounds(factor, sub):
        if factor in sub.contrast_matrices:
            matrix = np.asarray(sub.contrast_matrices[factor].matrix, dtype=float)
            return [(float(col.min()), float(col.max())) for col in matrix.T]
        name = factor.name()
        known = name in bounds and design_info.factor_infos[factor].num_columns == 1
        return [tuple(bounds[name]) if known else None]

    out, numeric = [], []
    for sub, combos in column_combos(design_info, factor_bounds):
        factors = tuple(f.name() for f in sub.factors)
        numeric += [factors if not sub.contrast_matrices else None] * sub.num_columns
        out += [_interval_product(combo) for combo in combos]
    return tuple(out), tuple(numeric)


def column_combos(design_info, factor_values):
    """Per subterm of a patsy design, in column order: ``(subterm, combos)``, where each
    combo holds one value per factor of one design column (the column is their product).

    ``factor_values(factor, subterm)`` gives a factor's values, one per column it
    contributes (a contrast matrix's columns, or the one column of a numerical factor);
    patsy orders a subterm's columns with the left-most factor varying fastest. Shared by
    the columns' public bounds (:func:`bounds_of_columns`) and the public reference design
    (:mod:`dpreg.design.reference_design`).
    """
    for subterms in design_info.term_codings.values():
        for sub in subterms:
            per_factor = [factor_values(factor, sub) for factor in sub.factors]
            yield sub, list(itertools.product(*reversed(per_factor)))


def _interval_product(intervals) -> tuple[float, float] | None:
    lo, hi = 1.0, 1.0
    for iv in intervals:
        if iv is None:
            return None
        ends = [lo * iv[0], lo * iv[1], hi * iv[0], hi * iv[1]]
        lo, hi = min(ends), max(ends)
    return (lo, hi)


def normalize_bounds(bounds, data: pd.DataFrame,
                      formula: str) -> dict[str, tuple[float, float]]:
    """Keys as patsy spells factors (``np.log(x+1)`` -> ``np.log(x + 1)``). Bounds of
    data columns the formula does not use are kept (they are harmless), so one dict can
    serve several models."""
    words = set(WORD.findall(formula))
    out = {}
    for key, value in bounds.items():
        try:
            name = key if key in data.columns else patsy.EvalFactor(key).name()
        except (patsy.PatsyError, SyntaxError, ValueError, TypeError):
            raise OptionError(f"bounds[{key!r}]: {key!r} is neither a column of the data "
                              "nor a valid term") from None
        if key in data.columns and key not in words:
            if pd.api.types.is_numeric_dtype(data[key].dtype):
                out[name] = value
            continue
        if key in data.columns and not pd.api.types.is_numeric_dtype(data[key].dtype):
            raise OptionError(f"bounds[{key!r}]: {key!r} is categorical and needs no bounds "
                              "(its dummy columns are bounded by the coding); declare its "
                              "categories with levels= instead")
        out[name] = value
    return out


def check_bound_names(bounds, data: pd.DataFrame, y_info, design_info) -> None:
    """A bound must name a data column or a term of the formula (close matches shown)."""
    variables = {f.name() for info in (y_info, design_info) for t in info.terms
                 for f in t.factors}
    unknown = [k for k in bounds if k not in variables and k not in data.columns]
    if unknown:
        known = sorted(variables | {str(c) for c in data.columns})
        hints = {k: difflib.get_close_matches(k, known, n=3) for k in unknown}
        hint = "; ".join(f"{k!r}: did you mean {m}?" for k, m in hints.items() if m)
        raise OptionError(f"bounds name {unknown}, which is neither a column of the data nor "
                          f"a term of the formula{' (' + hint + ')' if hint else ''}; terms "
                          f"of the model: {sorted(variables)}")


def enforce_term_bounds(bounds, data, y_info, design_info, y, X) -> dict:
    """Clip the design columns of transformed terms with declared bounds (in place).

    A declared bound on a transformed factor (``bounds={"np.log(w)": (0, 1)}``) is
    enforced on the column of the term that is that factor alone (or on the outcome).
    Where the factor also enters an interaction, its values inside the product cannot be
    clipped from the design: refuse, and point at the raw columns' bounds.
    """
    out = {}
    for info, target in ((y_info, None), (design_info, X)):
        for factor, finfo in info.factor_infos.items():
            name = factor.name()
            if name not in bounds or name in data.columns:
                continue
            terms = [t for t in info.terms if factor in t.factors]
            mixed = [t.name() for t in terms if len(t.factors) > 1]
            raw = [c for c in WORD.findall(name) if c in data.columns]
            if finfo.type != "numerical" or finfo.num_columns != 1 or mixed:
                where = f"the interaction(s) {mixed}" if mixed else "a multi-column term"
                raise OptionError(
                    f"bounds[{name!r}] is declared on a transformed term used in {where}: it "
                    "cannot be enforced there by clipping. Declare bounds of the raw "
                    f"column(s) {raw} instead (bounds of {name!r} are then derived from "
                    "them where that is sound)")
            lo, hi = bounds[name]
            if target is None:
                np.clip(y, lo, hi, out=y)
            else:
                for term in terms:
                    cols = info.term_slices[term]
                    target[:, cols] = np.clip(target[:, cols], lo, hi)
            out[name] = (lo, hi)
    return out


def derived_bounds(bounds, data: pd.DataFrame, infos) -> dict[str, tuple[float, float]]:
    """Bounds of numerical factors that are not data columns, derived soundly from the
    declared bounds of the columns they read (:func:`dpreg.design.intervals.derive_bounds`)."""
    raw = {c: v for c, v in bounds.items() if c in data.columns}
    out = {}
    for info in infos:
        for factor, finfo in info.factor_infos.items():
            name = factor.name()
            if finfo.type != "numerical" or finfo.num_columns != 1 or name in bounds \
                    or name in data.columns:
                continue
            derived = derive_bounds(getattr(factor, "code", name), raw)
            if derived is not None:
                out[name] = derived
    return out
