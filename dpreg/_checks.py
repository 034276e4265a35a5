"""Validators of public inputs, written once: positive numbers, numbers in an interval,
integers with a lower bound, and one of a set of choices.

Each names the parameter, the accepted values and the value given in its message,
raises :class:`~dpreg.exceptions.OptionError` (or the class passed as ``error``: the
privacy request raises :class:`~dpreg.exceptions.BudgetExceededError`) and returns the
value normalized (``float``, ``int`` or the choice itself). A ``bool`` is never a
number here, although Python counts it as one.

Validate only at the boundary: the front ends, the option records' ``__post_init__`` and
the public functions of the calculator, the studies and the audits.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection

from dpreg.exceptions import OptionError

__all__ = ["positive_number", "number_in", "integer_at_least", "one_of"]


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def positive_number(name: str, value, *, error: type[Exception] = OptionError) -> float:
    """``value`` as a float if it is a finite real number above 0.

    Examples
    --------
    >>> positive_number("clip", 2)
    2.0
    >>> positive_number("clip", float("inf"))
    Traceback (most recent call last):
    ...
    dpreg.exceptions.OptionError: clip must be a positive finite number, got inf
    """
    if not _is_real(value) or not (math.isfinite(value) and value > 0):
        raise error(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def number_in(name: str, value, low: float, high: float, *, low_closed: bool = False,
              high_closed: bool = False, error: type[Exception] = OptionError) -> float:
    """``value`` as a float if it is a real number in the interval from ``low`` to ``high``.

    The ends are open unless ``low_closed`` or ``high_closed``; NaN and infinite values
    are never inside.

    Examples
    --------
    >>> number_in("rho", 0, 0, 1, low_closed=True)
    0.0
    >>> number_in("alpha", 1.5, 0, 1)
    Traceback (most recent call last):
    ...
    dpreg.exceptions.OptionError: alpha must be a number in (0, 1), got 1.5
    """
    inside = _is_real(value) and math.isfinite(value) and (
        (low <= value if low_closed else low < value)
        and (value <= high if high_closed else value < high))
    if not inside:
        interval = (f"{'[' if low_closed else '('}{low:g}, "
                    f"{high:g}{']' if high_closed else ')'}")
        raise error(f"{name} must be a number in {interval}, got {value!r}")
    return float(value)


def integer_at_least(name: str, value, low: int = 1, *,
                     error: type[Exception] = OptionError) -> int:
    """``value`` as an int if it is an integer (Python or numpy) ``>= low``.

    Examples
    --------
    >>> integer_at_least("runs", 10, 4)
    10
    >>> integer_at_least("reps", 2.0)
    Traceback (most recent call last):
    ...
    dpreg.exceptions.OptionError: reps must be a positive integer, got 2.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        what = {0: "a non-negative integer", 1: "a positive integer"}.get(
            low, f"an integer >= {low}")
        raise error(f"{name} must be {what}, got {value!r}")
    return int(value)


def one_of(name: str, value, allowed: Collection, *, error: type[Exception] = OptionError):
    """``value`` itself if it is one of ``allowed`` (compared by equality).

    Examples
    --------
    >>> one_of("layout", "wide", ("wide", "long"))
    'wide'
    >>> one_of("layout", "tall", ("wide", "long"))
    Traceback (most recent call last):
    ...
    dpreg.exceptions.OptionError: layout must be one of ('wide', 'long'), got 'tall'
    """
    try:
        ok = value in allowed
    except (TypeError, ValueError):  # unhashable, or an array compared element-wise
        ok = False
    if not ok:
        raise error(f"{name} must be one of {allowed}, got {value!r}")
    return value
