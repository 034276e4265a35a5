"""Bounds of transformed terms derived from the declared bounds of raw columns.

A formula term such as ``np.log(income)`` or ``I(x1 * x2 + 1)`` is a function of data
columns. When every column it reads has declared bounds (and is clipped to them), the
term's range follows by interval arithmetic, with no look at the data: so a user
declares ``income``'s bounds once and every model that transforms ``income`` is bounded.

Only what is sound is derived: constants, declared columns, ``+ - * /`` (a divisor
whose interval excludes 0), powers with a constant exponent, unary minus, ``abs``, and
the monotone functions ``np.log``, ``np.log1p``, ``np.log2``, ``np.log10``,
``np.sqrt`` and ``np.exp`` on their domains (``log`` of an interval reaching 0 is
unbounded, so it is not derived). Anything else returns ``None`` and the caller asks
for the term's bounds by name. Endpoints are widened outward by a relative 1e-12 so
that numpy's elementwise evaluation (which may differ from :mod:`math` in the last bit)
stays inside them.
"""

from __future__ import annotations

import ast
import math
from typing import Mapping

__all__ = ["derive_bounds"]

Interval = tuple[float, float]

_MONOTONE = {"log": (math.log, 0.0, False), "log1p": (math.log1p, -1.0, False),
             "log2": (math.log2, 0.0, False), "log10": (math.log10, 0.0, False),
             "sqrt": (math.sqrt, 0.0, True), "exp": (math.exp, -math.inf, True)}
_WIDEN = 1e-12


def derive_bounds(code: str, bounds: Mapping[str, Interval]) -> Interval | None:
    """The range of the Python expression ``code`` when each name in ``bounds`` lies in
    its interval, or ``None`` where it cannot be derived soundly.

    Parameters
    ----------
    code : str
        A patsy factor's code, e.g. ``"np.log(w)"`` or ``"I(x1 * x2)"``.
    bounds : dict
        ``{column: (lower, upper)}`` declared (and enforced) bounds of data columns.

    Returns
    -------
    tuple of float or None
        ``(lower, upper)``, finite and widened outward by a relative 1e-12.

    Examples
    --------
    >>> derive_bounds("np.log1p(w)", {"w": (0.0, 9.0)})  # doctest: +ELLIPSIS
    (-2.30...e-12, 2.30258509299...)
    >>> derive_bounds("x.mean()", {"x": (0.0, 1.0)}) is None
    True
    """
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return None
    try:
        lo, hi = _eval(tree.body, bounds)
    except _NotDerivable:
        return None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        return None
    pad = _WIDEN * max(abs(lo), abs(hi), 1e-300)
    return lo - pad, hi + pad


class _NotDerivable(Exception):
    pass


def _finite(iv: Interval) -> Interval:
    if not all(math.isfinite(v) for v in iv):
        raise _NotDerivable
    return iv


def _eval(node: ast.AST, bounds: Mapping[str, Interval]) -> Interval:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return _finite((float(node.value), float(node.value)))
    if isinstance(node, ast.Name):
        if node.id in bounds:
            lo, hi = bounds[node.id]
            return float(lo), float(hi)
        raise _NotDerivable
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        lo, hi = _eval(node.operand, bounds)
        return (-hi, -lo) if isinstance(node.op, ast.USub) else (lo, hi)
    if isinstance(node, ast.BinOp):
        return _binop(node, bounds)
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        return _call(node, bounds)
    raise _NotDerivable


def _binop(node: ast.BinOp, bounds) -> Interval:
    a = _eval(node.left, bounds)
    if isinstance(node.op, ast.Pow):
        if not (isinstance(node.right, ast.Constant)
                and isinstance(node.right.value, (int, float))
                and not isinstance(node.right.value, bool)):
            raise _NotDerivable
        return _power(a, float(node.right.value))
    b = _eval(node.right, bounds)
    if isinstance(node.op, ast.Add):
        return _finite((a[0] + b[0], a[1] + b[1]))
    if isinstance(node.op, ast.Sub):
        return _finite((a[0] - b[1], a[1] - b[0]))
    if isinstance(node.op, ast.Mult):
        return _product(a, b)
    if isinstance(node.op, ast.Div):
        if b[0] <= 0.0 <= b[1]:
            raise _NotDerivable  # the divisor may be 0: unbounded
        return _product(a, (1.0 / b[1], 1.0 / b[0]))
    raise _NotDerivable


def _product(a: Interval, b: Interval) -> Interval:
    values = [x * y for x in a for y in b]
    return _finite((min(values), max(values)))


def _power(a: Interval, k: float) -> Interval:
    lo, hi = a
    if k == int(k) and k >= 0:
        k = int(k)
        if k == 0:
            return 1.0, 1.0
        if k % 2 == 1:
            return _finite((lo ** k, hi ** k))
        top = max(abs(lo), abs(hi)) ** k
        bottom = 0.0 if lo <= 0.0 <= hi else min(abs(lo), abs(hi)) ** k
        return _finite((bottom, top))
    if lo > 0.0 or (lo == 0.0 and k > 0):  # monotone on [0, inf) (decreasing for k < 0)
        ends = sorted((lo ** k, hi ** k))
        return _finite((ends[0], ends[1]))
    raise _NotDerivable


def _call(node: ast.Call, bounds) -> Interval:
    func = node.func
    if isinstance(func, ast.Name) and func.id == "I":
        return _eval(node.args[0], bounds)
    name = None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id in ("np", "numpy"):
        name = func.attr
    elif isinstance(func, ast.Name) and func.id == "abs":
        name = "abs"
    lo, hi = _eval(node.args[0], bounds)
    if name in ("abs", "absolute"):
        top = max(abs(lo), abs(hi))
        return (0.0, top) if lo <= 0.0 <= hi else (min(abs(lo), abs(hi)), top)
    if name in _MONOTONE:
        fn, domain, closed = _MONOTONE[name]
        if lo < domain or (lo == domain and not closed):
            raise _NotDerivable  # outside the domain, or unbounded at its edge
        try:
            return _finite((fn(lo), fn(hi)))
        except (OverflowError, ValueError):
            raise _NotDerivable from None
    raise _NotDerivable
