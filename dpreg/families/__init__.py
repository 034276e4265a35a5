"""Regression families and their registry.

Adding a family means one module with a :class:`~dpreg.families.base.Family` record,
one line in ``FAMILIES`` and its branch in the numba dispatch of losses and scores
(:mod:`dpreg.families.dispatch`).
"""

from dpreg.exceptions import OptionError
from dpreg.families.base import (
    REGISTRY,
    Family,
    Objective,
    check_c_scale,
    family_constants,
    mallows_weights,
)
from dpreg.families.expectile import EXPECTILE
from dpreg.families.huber import HUBER
from dpreg.families.linear import LINEAR
from dpreg.families.logistic import LOGISTIC

__all__ = ["Family", "Objective", "FAMILIES", "get_family", "mallows_weights",
           "family_constants", "check_c_scale"]

FAMILIES: dict[str, Family] = {f.name: f for f in (LINEAR, HUBER, LOGISTIC, EXPECTILE)}
REGISTRY.update(FAMILIES)  # what a pickled family is loaded from


def get_family(family: str | Family) -> Family:
    """Look up a family by name (or pass a :class:`Family` through)."""
    if isinstance(family, Family):
        return family
    try:
        return FAMILIES[family]
    except (KeyError, TypeError):
        raise OptionError(f"unknown family {family!r}; choose one of {sorted(FAMILIES)}") from None
