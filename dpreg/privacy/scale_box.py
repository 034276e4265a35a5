"""A declared box known only by its scale: ``bounds={"income": ScaleBox(0, 1e7)}``.

A codebook often gives a hard limit but no range: a dollar amount is between 0 and ten
million, a count of days between 0 and 36,500. As a box, ``(0, 1e7)`` is honest but far
too loose, and the 64 equal bins that ``ranges="private"`` learns a range on
(:mod:`dpreg.privacy.ranges`) are each 156,250 wide: the data of a typical income fall
in the first two, and the learned range stays near ``(0, 312500)``. A :class:`ScaleBox`
is the same box with a public **geometric grid** instead: the edges are the box's ends,
0 when it lies inside, and every power of two times ``unit`` (either sign) inside it, so
``ScaleBox(0, 1e7)`` has the bins ``[0, 1), [1, 2), [2, 4), ..., [2^23, 1e7]`` and a
learned range is tight to within a factor of two at any scale.

Everywhere else it *is* the box ``(lower, upper)`` (a tuple of the two numbers): every
sensitivity, the declared boxes of ``ranges="declared"`` and of the local engine, and
the bounds derived for squares, logs and products. The grid changes only which bins the
histograms count into; their sensitivity (one count moves per column) and the privacy
of the release do not depend on it.
"""

from __future__ import annotations

import math

import numpy as np

from dpreg.exceptions import OptionError

__all__ = ["ScaleBox", "MAX_SCALE_BINS"]

#: Most bins of a scale box's grid (about 60 powers of two on each side of 0).
MAX_SCALE_BINS = 128


class ScaleBox(tuple):
    """A declared box ``(lower, upper)`` learned on a geometric grid.

    Parameters
    ----------
    lower, upper : float
        The hard limits, ``lower < upper`` (as for a declared box: values outside are
        clipped to them).
    unit : float
        The smallest scale resolved, ``> 0``: the grid's edges are ``+-unit * 2**k``
        (``k = 0, 1, ...``) inside the box, its ends, and 0 when ``lower < 0 < upper``.
        Default 1.

    Examples
    --------
    >>> from dpreg import ScaleBox
    >>> box = ScaleBox(0, 1e7)
    >>> tuple(box)
    (0.0, 10000000.0)
    >>> box.edges()[:5].tolist(), int(box.edges()[-2]), len(box.edges()) - 1
    ([0.0, 1.0, 2.0, 4.0, 8.0], 8388608, 25)
    """

    unit: float

    def __new__(cls, lower: float, upper: float, unit: float = 1.0) -> "ScaleBox":
        try:
            lo, hi, u = float(lower), float(upper), float(unit)
        except (TypeError, ValueError):
            raise OptionError(f"ScaleBox needs numbers (lower, upper, unit), got "
                              f"({lower!r}, {upper!r}, {unit!r})") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise OptionError(f"ScaleBox({lower!r}, {upper!r}) must be finite with "
                              "lower < upper")
        if not (math.isfinite(u) and u > 0):
            raise OptionError(f"ScaleBox unit must be a positive number (the smallest "
                              f"scale its grid resolves), got {unit!r}")
        self = super().__new__(cls, (lo, hi))
        self.unit = u
        bins = len(self.edges()) - 1
        if bins > MAX_SCALE_BINS:
            raise OptionError(f"ScaleBox({lo:g}, {hi:g}, unit={u:g}) has {bins} bins of "
                              f"powers of two, over {MAX_SCALE_BINS}: raise unit")
        return self

    def __getnewargs__(self):
        return (self[0], self[1], self.unit)

    def __repr__(self) -> str:
        return f"ScaleBox({self[0]:g}, {self[1]:g}, unit={self.unit:g})"

    def edges(self) -> np.ndarray:
        """The grid's edges, increasing, from ``lower`` to ``upper``.

        Returns
        -------
        ndarray
        """
        lo, hi = self[0], self[1]
        points = {lo, hi}
        if lo < 0 < hi:
            points.add(0.0)
        top = max(abs(lo), abs(hi))
        if top >= self.unit:
            powers = self.unit * 2.0 ** np.arange(int(math.floor(math.log2(top / self.unit)))
                                                  + 1)
            for v in np.concatenate([powers, -powers]):
                if lo < v < hi:
                    points.add(float(v))
        return np.array(sorted(points))
