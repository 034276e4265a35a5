"""Absorbed fixed effects in pyfixest's syntax: ``"y ~ x1 + x2 | state"``.

The part after a ``|`` at the top level of the right-hand side names the categorical
column whose effects are absorbed (``absorb=``; SSP, linear family). Patsy has no ``|``
operator, so the split is unambiguous; a ``|`` inside parentheses or brackets (``I(a |
b)``) is an expression, not the separator.
"""

from __future__ import annotations

import re

from dpreg.exceptions import FormulaError

__all__ = ["split_fixed_effects"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def _top_level_bars(formula: str) -> list[int]:
    """Positions of the ``|`` outside every pair of parentheses and brackets."""
    depth, bars = 0, []
    for i, char in enumerate(formula):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "|" and depth == 0:
            bars.append(i)
    return bars


def split_fixed_effects(formula: str) -> tuple[str, str | None]:
    """``"y ~ x | state"`` -> ``("y ~ x", "state")``; a formula without ``|`` unchanged.

    Parameters
    ----------
    formula : str

    Returns
    -------
    formula : str
        The formula without its fixed-effects part.
    absorb : str or None
        The column whose fixed effects are absorbed.

    Raises
    ------
    FormulaError
        More than one ``|``, or a fixed-effects part that is not one column name
        (dpreg absorbs one categorical column; pyfixest's ``| state + year`` is not
        supported).
    """
    bars = _top_level_bars(formula)
    if not bars:
        return formula, None
    if len(bars) > 1 or "~" not in formula[:bars[0]]:
        raise FormulaError(f"{formula!r}: fixed effects are written 'y ~ x1 + x2 | column' "
                           "with one '|' after the regressors")
    base, effects = formula[:bars[0]].strip(), formula[bars[0] + 1:].strip()
    if not _NAME.fullmatch(effects):
        raise FormulaError(f"{formula!r}: the part after '|' must name one categorical "
                           f"column whose fixed effects are absorbed, got {effects!r} (one "
                           "column is supported; add the others to the formula as "
                           "C(column))")
    return base, effects
