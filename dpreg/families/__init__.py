"""Regression families and their registry.

Adding a family means one module with a :class:`~dpreg.families.base.Family` record and
one line in ``FAMILIES`` (plus its branch in the kernels' ``dloss`` dispatch).
"""

from dpreg.exceptions import OptionError
from dpreg.families.base import Family
from dpreg.families.linear import LINEAR

__all__ = ["Family", "FAMILIES", "get_family"]

FAMILIES: dict[str, Family] = {
    "linear": LINEAR,
}


def get_family(family: str | Family) -> Family:
    """Look up a family by name (or pass a :class:`Family` through)."""
    if isinstance(family, Family):
        return family
    try:
        return FAMILIES[family]
    except (KeyError, TypeError):
        raise OptionError(f"unknown family {family!r}; choose one of {sorted(FAMILIES)}") from None
