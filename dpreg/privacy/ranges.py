"""Private ranges: noisy histograms of bounded columns on a public grid, and the
quantile ranges read off them (``ranges="private"`` of :meth:`dpreg.DPRegression.fit`).

A declared box ``[l, u]`` is public but often loose (codebook bounds, 2-10 times the
data's range), and every sensitivity of a fit is calibrated to it: the row-norm bound,
the clip, the conditioning map into ``[-1, 1]``, SSP's ``x_bound`` and ``y_bound``.
This module spends a small share of the budget to learn a tighter range of each column
inside its box, by a mechanism the ledger pays for.

Mechanism. The box of each of the ``k`` columns is cut into ``B`` equal bins (the public
grid, ``B = 64`` by default; a :class:`~dpreg.privacy.scale_box.ScaleBox` is cut at the
powers of two of its unit instead); each column's histogram of the ``n`` rows (values in the
box, since the design clips them to it) is released with independent Gaussian noise of
standard deviation ``sigma`` on every bin. Replacing one row moves one count of each
column down by 1 and another up by 1: an L2 change of at most ``sqrt(2)`` per column and
``sqrt(2 k)`` for the ``k`` histograms together. Removing a row, or replacing it by a
null row (zero-out; a null row falls in no bin), moves one count per column: ``sqrt(k)``.
The ``k`` histograms are one Gaussian mechanism with that joint sensitivity (one ledger
row); Gaussian composition is exact, so this is the same privacy as ``k`` releases of
sensitivity ``sqrt(2)`` with the same noise (``sqrt(k (sqrt 2 / sigma)^2) = sqrt(2 k) /
sigma``-GDP; Dong, Roth and Su 2022, Cor. 3.3), and the event is a plain
:class:`~dpreg.privacy.events.GaussianMechanismEvent` that every accountant handles.

Post-processing (free). Counts not above ``2 sigma`` are set to 0 (an empty bin passes
with probability 2.3% and adds ``sigma phi(2) = 0.054 sigma`` rows on average, where
clipping at 0 alone would add ``0.4 sigma``: over the tens of empty bins between a loose
box's edge and the data that drift alone would reach the tail count and leave the range
near the box). Where ``t < 2 sigma`` (small ``n mu``) one empty bin that the noise lifts
over the threshold would alone exceed the tail and set an end (over the tens of empty
bins of a loose box, in most fits: at n = 500, mu = 5 with three columns the learned
range of an age uniform on 18-45 in the box 16-100 was over 1.5 times the data's in 54%
of 400 draws, 12% now), so
a *lone noise bin* is passed over first (:func:`range_start`): a kept bin with no other
kept bin within :data:`ISOLATED_GAP` bins inward, whose count is under the level a noise
bin exceeds with probability :data:`LONE_BIN_RATE` somewhere on the grid, and where the
released counts from it to the next kept bin (thresholded or not) are consistent with at
most ``t`` rows (their sum under ``t +`` :data:`LONE_BIN_SUM_Z` ``sigma sqrt(m)``, ``m``
bins): a sparse tail's rows show in that sum, a noise bin's do not. The price is more
rows clipped where the noise hides a sparse tail's bins: over the textbook designs'
columns (``validation/range_lone_bins.py``) the learned ranges' 90th percentile over the
data's fell from 2.1-2.7 to 1.2-1.8 times where ``sigma > t / 2``, and the rows clipped
rose from 0.7-1.9% to 1.0-2.7% on average (at ``sigma <= t / 2`` neither moved much:
1.17 times, 0.4%). The kept counts are then cumulated from each end; the lower end of
the range is
the left edge of the first bin at which the count from below exceeds ``t`` rows, the upper
end the right edge of the last bin at which the count from above does, each moved further
out by guard bins for the sparse tail rows the threshold dropped (one, or ``ceil(sigma /
t)`` where the noise hides more rows per bin than the tail allows: :func:`guard_bins`),
so the range is
snapped outward to the grid and never leaves the box. ``t = min(0.005 n, 0.5 sqrt(n))``
(:func:`tail_rows`). When the noise swamps the counts (no count exceeds ``t``, or the two
ends cross) the declared box is kept. It is kept too when the threshold dropped more rows
than the range may clip: when the kept counts sum to less than ``n - 2 t - 2 sigma
sqrt(B)`` (``n`` public; ``2 sigma sqrt(B)`` allows for the noise of the sum), the rows
are spread too thinly over the grid for the counts to locate them (data that fill their
box at small ``n mu``: the ends would be set by the few bins the noise lifted over the
threshold). Measured without this check: x uniform on its declared box ``[-1, 1]``,
n = 400, mu = 1, the learned range held a median 82% of the rows (5% of fits excluded 0)
and DP-SGD's unwarned plug-in covered the slope 0.745; with it, the box is kept.

Measured (``validation/private_ranges.py``, a wage equation's log wage, schooling and
experience, 20 seeds, 5% of mu^2): at n = 1000 and mu = 2 (noise sd 5.5 per bin) the
learned ranges are 1.04 times the data's min-max range and clip 1.8% of the rows on
average (at most 4.1% in a seed); at n = 1000, mu = 5 and at n = 5000, 0.8-0.9%.
Without the threshold (clipping at 0 only) the log wage's range stayed 2.2-2.4 times the
data's (most of its box) at n = 1000.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Mapping, Sequence

import numpy as np
from numba import njit

from dpreg._checks import integer_at_least, number_in
from dpreg.exceptions import DataError, OptionError
from dpreg.privacy.calibration import calibrate_mu_scale
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.request import PrivacyRequest
from dpreg.privacy.scale_box import ScaleBox

__all__ = ["DEFAULT_BINS", "DEFAULT_RANGES_SHARE", "THRESHOLD", "GUARD_BINS", "RANGES_EVENT",
           "GUARD_PER_NOISE", "ISOLATED_GAP", "LONE_BIN_RATE", "LONE_BIN_SUM_Z", "SKEWED_TAIL",
           "TAIL_RESOLVED", "MIN_TAIL_BINS", "TAIL_LEVELS", "RangesRelease", "guard_bins",
           "kept_counts", "quantile_from_counts", "grid_edges", "column_edges", "column_histogram",
           "histogram_sensitivity", "tail_rows", "range_start", "range_from_counts",
           "ranges_event", "calibrate_ranges_event", "release_ranges"]

#: Equal bins of each declared box. With a box ten times the data's range the data fill
#: about 6 bins; finer grids resolve more, but spread the tail's rows over more bins
#: whose counts fall under the threshold (measured: 128 bins clip about twice as many
#: rows as 64 at n = 1000, mu = 2, for a 10% narrower range).
DEFAULT_BINS = 64
#: Counts at or below this many noise standard deviations are taken as 0.
THRESHOLD = 2.0
#: Bins added outside each end of the range read off the counts (at least).
GUARD_BINS = 1
#: Guard bins per unit of ``sigma / t`` (the noise sd per bin over the tail rows allowed
#: outside each end, both public): where the noise hides bins holding more rows than the
#: tail may clip, each end moves further out (:func:`guard_bins`).
GUARD_PER_NOISE = 1.0
#: A kept bin with no other kept bin within this many bins inward is isolated: a candidate
#: lone noise bin (module notes). The noise lifts bins evenly over the empty part of the
#: box, so most of those that widened a range lay far from the data; nearer, a bin is
#: read as the data's tail (at most this many bins of widening), and integer columns whose
#: values fall up to this many bins apart stay together (a count 0-20 on 64 bins: one in
#: three). A gap of 3 gave slightly narrower ranges and intervals but clipped more rows
#: (``validation/range_lone_bins.py``: 2.1% against 1.9% of the rows where ``sigma > 2 t``;
#: one-off fits of the textbook and robustness designs at n = 500-1,000).
ISOLATED_GAP = 6
#: An isolated bin whose count is under the level that some noise bin of the grid exceeds
#: with this probability (``sigma`` times ``Phi^-1(1 - rate / B)``, 2.95 sd for 64 bins)
#: may be a lone noise bin; above it, it holds rows.
LONE_BIN_RATE = 0.1
#: ... and is passed over only when the released counts from it to the next kept bin sum
#: to at most the tail plus this many ``sigma sqrt(m)`` (``m`` bins): at most ``t`` rows.
LONE_BIN_SUM_Z = 2.0
#: Share of the budget (of mu^2 in GDP, of rho in zCDP) that buys the histograms.
DEFAULT_RANGES_SHARE = 0.05
#: Ledger name of the release.
RANGES_EVENT = "ranges (noisy histograms)"
#: A column whose 1% or 99% quantile lies more than this many interquartile ranges from
#: its median, on one side only (quantiles read off the released histogram), has a long
#: tail on that side: the summary notes it for the outcome (a note; no number depends
#: on it). A normal column reaches 1.7, Student t(3) 3.0, an exponential 3.6, a
#: lognormal(0, 1) 6.3.
SKEWED_TAIL = 4.0
#: The tail quantiles are read only where a bin holding this share of the rows clears
#: the counts' threshold (:data:`THRESHOLD` noise sd); below it the noise decides them.
TAIL_RESOLVED = 0.005
#: A tail is noted only if at least this many bins between the median's and the 99%
#: (1%) quantile's bins hold counts above the threshold: the rows spread out along it,
#: not a second value apart from the rest (a binary outcome in a wide box).
MIN_TAIL_BINS = 2
#: The levels of the quantiles :attr:`RangesRelease.quantiles` keeps.
TAIL_LEVELS = (0.01, 0.25, 0.5, 0.75, 0.99)


def grid_edges(lower: float, upper: float, bins: int = DEFAULT_BINS) -> np.ndarray:
    """The public grid of a declared box: ``bins + 1`` equally spaced edges.

    Parameters
    ----------
    lower, upper : float
        The declared box, ``lower < upper``.
    bins : int
        Number of bins.

    Returns
    -------
    ndarray (bins + 1,)
        Edges from ``lower`` to ``upper`` exactly (``numpy.linspace`` keeps both ends).
    """
    integer_at_least("bins", bins, 2)
    lower, upper = float(lower), float(upper)
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise OptionError(f"a range grid needs finite bounds with lower < upper; got "
                          f"({lower!r}, {upper!r})")
    return np.linspace(lower, upper, bins + 1)


def column_edges(box, bins: int = DEFAULT_BINS) -> np.ndarray:
    """The public grid of one column's declared box: ``bins`` equal bins
    (:func:`grid_edges`), or a :class:`~dpreg.privacy.scale_box.ScaleBox`'s geometric
    grid (its own bins).

    Parameters
    ----------
    box : tuple of float or ScaleBox
        The declared box.
    bins : int
        Bins of an ordinary box.

    Returns
    -------
    ndarray
        Increasing edges from the box's lower to its upper end.
    """
    if isinstance(box, ScaleBox):
        return box.edges()
    return grid_edges(float(box[0]), float(box[1]), bins)


def column_histogram(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of ``values`` in the bins of ``edges`` (bins closed on the left, the last
    also on the right); values outside are first clipped into the box, as the design
    clips them.

    Parameters
    ----------
    values : ndarray (n,)
        One column of the rows.
    edges : ndarray (B + 1,)
        The grid (:func:`grid_edges`).

    Returns
    -------
    ndarray (B,)
        Counts (float64), summing to ``n``.
    """
    bins = len(edges) - 1
    x = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(x)):
        # the callers drop rows with missing values first; a NaN would land in a bin
        raise DataError("a column whose range is learned has missing or infinite values; "
                        "drop those rows (missing='drop') first")
    width = (edges[-1] - edges[0]) / bins
    if np.allclose(np.diff(edges), width, rtol=1e-9, atol=0):
        counts = np.zeros(bins)
        _equal_grid_counts(np.ascontiguousarray(x), np.ascontiguousarray(edges, dtype=float),
                           width, counts)
        return counts
    # a scale box's geometric grid: search the edges
    x = np.clip(x, edges[0], edges[-1])
    idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, bins - 1)
    return np.bincount(idx, minlength=bins).astype(float)


@njit(cache=True)
def _equal_grid_counts(x, edges, width, counts):
    """Add the values of ``x`` (clipped into the grid) to the ``counts`` of the bins of an
    equal grid: each value's bin by arithmetic, then moved by one where rounding put it
    across its bin's edge, so the bins are exactly those of ``edges`` (closed on the left,
    the last also on the right). One pass, no temporaries (five times faster than numpy's
    vectorized form at 10^6 rows, which needed six)."""
    bins = counts.shape[0]
    lo, hi = edges[0], edges[bins]
    for v in x:
        v = min(max(v, lo), hi)
        k = min(max(int((v - lo) / width), 0), bins - 1)
        if v < edges[k]:
            k -= 1
        if k < bins - 1 and v >= edges[k + 1]:
            k += 1
        counts[k] += 1.0


def histogram_sensitivity(k: int, adjacency: str) -> float:
    """L2 sensitivity of ``k`` histograms released together (module notes).

    Parameters
    ----------
    k : int
        Number of columns.
    adjacency : str
        ``"replace-one"`` (two counts per column move by 1: ``sqrt(2 k)``), or
        ``"add/remove"`` / zero-out (one count per column: ``sqrt(k)``).

    Returns
    -------
    float
    """
    integer_at_least("k", k)
    return math.sqrt((2.0 if adjacency == "replace-one" else 1.0) * k)


def tail_rows(n: int) -> float:
    """Rows allowed outside the learned range on each side: ``min(0.005 n, 0.5 sqrt(n))``.

    Parameters
    ----------
    n : int
        Rows of the fit (public).

    Returns
    -------
    float

    Notes
    -----
    Clipping ``t`` rows of a tail whose excess over the range is ``e`` moves a mean by at
    most ``t e / n``; with ``t <= 0.5 sqrt(n)`` that is at most half a standard error
    ``sd / sqrt(n)`` when ``e`` is one standard deviation ``sd``, and the 0.5% cap keeps
    small samples from clipping more than a sliver of their rows.
    """
    integer_at_least("n", n)
    return min(0.005 * n, 0.5 * math.sqrt(n))


def guard_bins(tail: float, noise_std: float) -> int:
    """Bins added outside each end of a learned range: ``max(GUARD_BINS,
    ceil(GUARD_PER_NOISE * sigma / t))`` (public: the noise sd ``sigma`` and the tail rows
    ``t``).

    Parameters
    ----------
    tail : float
        Rows allowed outside each end (:func:`tail_rows`).
    noise_std : float
        The noise's standard deviation per bin.

    Returns
    -------
    int

    Notes
    -----
    Counts under ``2 sigma`` are read as 0, so the tail beyond the first bin read holds
    rows in bins of up to ``2 sigma`` each; one guard bin covers them where ``sigma <= t``
    but not at small ``n mu`` (``sigma`` several times ``t``: n = 1000 at mu = 0.5).
    Measured (noisy histograms alone, 400 draws, :data:`DEFAULT_BINS` bins): a N(0, 2)
    outcome in (-10, 10) at n = 1000, mu = 0.5 (``sigma / t = 2.5``) had 4.6% of its rows
    clipped on average with one guard bin, 2.3% with three; a log wage N(2.5, 0.55) in
    (-3, 6), four columns at n = 1000, mu = 1 (``sigma / t = 2.5``), 2.4% and 0.7%; at
    mu = 0.5 (``sigma / t = 5.1``) 5.7% and 0.3% (six bins). Where ``sigma <= t`` one bin
    is kept (n = 1000 at mu = 2, n = 10,000 at mu = 0.5): clipped 0.3-0.9%.
    """
    if tail <= 0:
        return GUARD_BINS
    return max(GUARD_BINS, math.ceil(GUARD_PER_NOISE * noise_std / tail - 1e-9))


def kept_counts(noisy: np.ndarray, noise_std: float) -> np.ndarray:
    """The released counts with those not above :data:`THRESHOLD` noise standard
    deviations set to 0 (module notes): what the range and the quantiles read."""
    noisy = np.asarray(noisy, dtype=float)
    return np.where(noisy > THRESHOLD * noise_std, noisy, 0.0)


def range_start(noisy: np.ndarray, tail: float, noise_std: float) -> int | None:
    """The bin at which a range starts, counted from the first bin of ``noisy``: the first
    where the kept counts cumulated from there exceed ``tail``, after passing over lone
    noise bins (module notes); ``None`` when no bin does.

    Parameters
    ----------
    noisy : ndarray (B,)
        Released counts, ordered from the end the range starts at (reversed for the upper
        end).
    tail : float
        Rows allowed outside (:func:`tail_rows`).
    noise_std : float
        The noise's standard deviation per bin.
    """
    noisy = np.asarray(noisy, dtype=float)
    c = kept_counts(noisy, noise_std)
    kept = np.flatnonzero(c > 0)
    lone_level = noise_std * NormalDist().inv_cdf(1.0 - LONE_BIN_RATE / len(c))
    k = 0
    while k < len(kept):
        b = int(kept[k])
        nxt = int(kept[k + 1]) if k + 1 < len(kept) else len(c)
        if c[b] > lone_level or nxt - b <= ISOLATED_GAP:
            break
        m = nxt - b  # the isolated bin and the empty ones after it
        if noisy[b:nxt].sum() > tail + LONE_BIN_SUM_Z * noise_std * math.sqrt(m):
            break  # rows: a sparse tail, not noise
        k += 1
    if k == len(kept):
        return None
    counted = np.cumsum(c[int(kept[k]):]) > tail
    return int(kept[k]) + int(np.argmax(counted)) if counted.any() else None


def range_from_counts(noisy: np.ndarray, edges: np.ndarray, tail: float,
                      noise_std: float, n: int | None = None) -> tuple[float, float] | None:
    """The range read off one noisy histogram (post-processing; module notes).

    Parameters
    ----------
    noisy : ndarray (B,)
        Released counts.
    edges : ndarray (B + 1,)
        The grid.
    tail : float
        Rows allowed outside on each side (:func:`tail_rows`).
    noise_std : float
        The noise's standard deviation per bin (public): counts not above
        :data:`THRESHOLD` times it are taken as 0.
    n : int, optional
        Rows (public). Given, the declared box is kept (``None``) when the kept counts
        sum to less than ``n - 2 tail - 2 noise_std sqrt(B)`` (module notes).

    Returns
    -------
    tuple of float or None
        ``(edges[i - g], edges[j + 1 + g])`` with ``i`` the first bin where the cumulated
        kept count from below exceeds ``tail`` and ``j`` the last where the count from
        above does, each after passing over lone noise bins (:func:`range_start`), and
        ``g`` = :func:`guard_bins` (within the grid); ``None`` (keep the declared box)
        when no bin does or ``i > j``.
    """
    noisy = np.asarray(noisy, dtype=float)
    c = kept_counts(noisy, noise_std)
    if n is not None and c.sum() < n - 2 * tail - 2 * noise_std * math.sqrt(len(c)):
        return None  # the threshold dropped more rows than the range may clip
    below = range_start(noisy, tail, noise_std)
    above = range_start(noisy[::-1], tail, noise_std)
    if below is None or above is None:
        return None
    i, j = below, len(c) - 1 - above
    if i > j:
        return None
    g = guard_bins(tail, noise_std)
    i, j = max(i - g, 0), min(j + g, len(c) - 1)
    return float(edges[i]), float(edges[j + 1])


def quantile_from_counts(noisy: np.ndarray, edges: np.ndarray, noise_std: float,
                         level: float = 0.5) -> float | None:
    """A quantile read off one noisy histogram (post-processing, like the range).

    Parameters
    ----------
    noisy : ndarray (B,)
        Released counts.
    edges : ndarray (B + 1,)
        The grid.
    noise_std : float
        The noise's standard deviation per bin: counts not above :data:`THRESHOLD` times
        it are taken as 0, as for the range.
    level : float
        The quantile's level, in (0, 1).

    Returns
    -------
    float or None
        The point where the kept counts, cumulated from below, reach ``level`` of their
        total (linear within its bin); ``None`` when no count is kept.
    """
    c = kept_counts(noisy, noise_std)
    total = c.sum()
    if total <= 0:
        return None
    cum = np.cumsum(c)
    b = int(np.searchsorted(cum, level * total))
    share = (level * total - (cum[b] - c[b])) / c[b]
    return float(edges[b] + share * (edges[b + 1] - edges[b]))


def ranges_event(k: int, mu: float, adjacency: str, bins: int = DEFAULT_BINS,
                 n: int | None = None) -> GaussianMechanismEvent:
    """The Gaussian mechanism of ``k`` histograms at ``mu``-GDP.

    Parameters
    ----------
    k : int
        Number of columns.
    mu : float
        Its GDP parameter (noise ``sqrt(2 k) / mu`` under replace-one).
    adjacency : str
        The fit's adjacency (one ledger holds one adjacency).
    bins : int
        Bins per column (for the name only).
    n : int, optional
        Rows (for the name only).

    Returns
    -------
    GaussianMechanismEvent
    """
    sens = histogram_sensitivity(k, adjacency)
    return GaussianMechanismEvent(name=RANGES_EVENT, sensitivity=sens, noise_std=sens / mu,
                                  adjacency=adjacency)


def calibrate_ranges_event(request: PrivacyRequest, engine_build, k: int, share: float,
                           adjacency: str, bins: int = DEFAULT_BINS) -> GaussianMechanismEvent:
    """The histograms' event, calibrated with the engine's so that the whole fit meets
    ``request`` and the histograms get ``share`` of its GDP scale's square (of ``rho``
    itself for a zCDP request).

    Parameters
    ----------
    request : PrivacyRequest
        The fit's total budget.
    engine_build : callable
        The engine's builder ``mu_scale -> events`` (:mod:`dpreg.privacy.calibration`).
        Its events' privacy depends on their noise multipliers, sampling and counts
        only, not on the bounds their sensitivities come from, so the builder of the
        model with the declared boxes prices the fit that will run with the learned ones.
    k : int
        Number of columns.
    share : float
        In (0, 1).
    adjacency : str
        The engine's adjacency.
    bins : int
        Bins per column.

    Returns
    -------
    GaussianMechanismEvent

    Notes
    -----
    One scale ``s`` prices both: the histograms at ``s sqrt(share)``, the engine's
    mechanisms at ``s sqrt(1 - share)`` (their GDP composition is ``s``), ``s`` solved in
    the request's unit (:func:`dpreg.privacy.calibration.calibrate_mu_scale`). The engine
    then calibrates again with this event fixed in front of its own
    (:func:`dpreg.fits.common.calibrate_and_record`), which lands on the same scale and
    guarantees the total whatever the order of composition (the histograms are released
    first; the fit's mechanisms are chosen adaptively from them with privacy parameters
    fixed in advance).
    """
    number_in("ranges share", share, 0, 1)
    if request.unit == "rho":
        # zCDP composes by adding rho, and a subsampled engine's steps are charged as
        # unsampled there (its GDP scale is then tiny): the histograms take ``share`` of
        # rho itself (a Gaussian mechanism's rho is mu^2 / 2), the engine the rest
        return ranges_event(k, math.sqrt(2.0 * share * request.rho), adjacency, bins)

    def joint(scale: float) -> list[GaussianMechanismEvent]:
        return [ranges_event(k, scale * math.sqrt(share), adjacency, bins),
                *engine_build(scale * math.sqrt(1.0 - share))]

    return calibrate_mu_scale(request, joint).events[0]


@dataclass(frozen=True)
class RangesRelease:
    """What the histograms released: the learned ranges (public once released).

    Attributes
    ----------
    ranges : dict
        ``{column: (lower, upper)}`` learned, inside the declared box.
    declared : dict
        ``{column: (lower, upper)}`` declared.
    kept : tuple of str
        Columns whose declared box was kept (the noise swamped their counts).
    bins : int
        Bins per column.
    tail : float
        Rows allowed outside each end (:func:`tail_rows`).
    event : GaussianMechanismEvent
        The mechanism (its noise is ``event.noise_std`` per bin).
    quantiles : dict
        ``{column: (q01, q25, q50, q75, q99)}`` (:data:`TAIL_LEVELS`) read off the same
        counts (:func:`quantile_from_counts`; absent where no count passed the
        threshold).
    rows : int
        Rows counted (public).
    tail_bins : dict
        ``{column: (below, above)}``: the bins strictly between the 1% quantile's and the
        median's bins, and between the median's and the 99% quantile's, whose counts
        pass the threshold.
    scale_grids : tuple of str
        Columns declared by a :class:`~dpreg.privacy.scale_box.ScaleBox`, counted on its
        geometric grid instead of ``bins`` equal bins.
    grids : dict
        ``{column: edges}``: each column's grid (:func:`column_edges`).
    counts : dict
        ``{column: noisy counts}``: the released histogram of each column (public).
    """

    ranges: Mapping[str, tuple[float, float]]
    declared: Mapping[str, tuple[float, float]]
    kept: tuple[str, ...]
    bins: int
    tail: float
    event: GaussianMechanismEvent
    quantiles: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    rows: int = 0
    tail_bins: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    scale_grids: tuple[str, ...] = ()
    grids: Mapping[str, np.ndarray] = field(default_factory=dict)
    counts: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def guard(self) -> int:
        """Guard bins added outside each end (:func:`guard_bins`)."""
        return guard_bins(self.tail, self.event.noise_std)

    def tail_lengths(self, column: str) -> tuple[float, float] | None:
        """How far the 1% and the 99% quantiles lie from the median, in interquartile
        ranges (quantiles of the released histogram; the interquartile range taken as at
        least the median's bin, which the grid cannot resolve); ``None`` where they are
        unknown,
        the declared box was kept, or a bin of :data:`TAIL_RESOLVED` of the rows would
        not clear the counts' threshold (the noise, not the rows, would place the tail
        quantiles)."""
        if column not in self.quantiles or column in self.kept:
            return None
        if THRESHOLD * self.event.noise_std > TAIL_RESOLVED * self.rows:
            return None
        q01, q25, q50, q75, q99 = self.quantiles[column]
        edges = self.grids.get(column)
        if edges is None:
            box_lo, box_hi = self.declared[column]
            edges = grid_edges(box_lo, box_hi, self.bins)
        b50 = min(int(np.searchsorted(edges, q50, side="right")) - 1, len(edges) - 2)
        spread = max(q75 - q25, edges[b50 + 1] - edges[b50])
        return (q50 - q01) / spread, (q99 - q50) / spread

    def skewed(self, column: str) -> str | None:
        """``"right"`` or ``"left"`` when the 99% (1%) quantile lies more than
        :data:`SKEWED_TAIL` interquartile ranges above (below) the median and the other
        does not, the counts fill at least :data:`MIN_TAIL_BINS` bins between them (a
        tail, not a second value), and the learned range ends inside the declared box on
        that side (so the tail is clipped); else ``None``."""
        tails = self.tail_lengths(column)
        if tails is None:
            return None
        below, above = tails
        bins_below, bins_above = self.tail_bins.get(column, (0, 0))
        (lo, hi), (box_lo, box_hi) = self.ranges[column], self.declared[column]
        if above > SKEWED_TAIL >= below and bins_above >= MIN_TAIL_BINS and hi < box_hi:
            return "right"
        if below > SKEWED_TAIL >= above and bins_below >= MIN_TAIL_BINS and lo > box_lo:
            return "left"
        return None

    def share_at(self, column: str, value: float) -> float:
        """The released share of the rows in the bin of ``column``'s grid that holds
        ``value`` (a binary column's rate of ones at ``value = 1``), within ``[1/(2n),
        1 - 1/(2n)]`` (post-processing of the counts; the noise is
        ``event.noise_std / n``)."""
        n = max(self.rows, 1)
        edges = self.grids[column]
        b = min(max(int(np.searchsorted(edges, value, side="right")) - 1, 0), len(edges) - 2)
        return float(np.clip(self.counts[column][b] / n, 0.5 / n, 1.0 - 0.5 / n))

    def without(self, column: str) -> RangesRelease:
        """The release with ``column`` dropped from every per-column field (a column
        released for another use than its range: the design keeps its own values)."""
        def drop(mapping):
            return {k: v for k, v in mapping.items() if k != column}
        return dataclasses.replace(
            self, ranges=drop(self.ranges), declared=drop(self.declared),
            kept=tuple(c for c in self.kept if c != column), quantiles=drop(self.quantiles),
            tail_bins=drop(self.tail_bins),
            scale_grids=tuple(c for c in self.scale_grids if c != column),
            grids=drop(self.grids), counts=drop(self.counts))

    def describe(self) -> str:
        """One line: each column's learned range (and its declared box)."""
        return "; ".join(
            f"{c} [{lo:.4g}, {hi:.4g}]" + (" (declared kept)" if c in self.kept else
                                           f" (declared [{self.declared[c][0]:.4g}, "
                                           f"{self.declared[c][1]:.4g}])")
            for c, (lo, hi) in self.ranges.items())


def release_ranges(columns: Mapping[str, tuple[np.ndarray, Sequence[float]]],
                   event: GaussianMechanismEvent, rng: np.random.Generator,
                   bins: int = DEFAULT_BINS) -> RangesRelease:
    """Release the histograms of ``columns`` with ``event``'s noise and read the ranges.

    Parameters
    ----------
    columns : dict
        ``{name: (values, (lower, upper))}``: each column's ``n`` values and its declared
        box, in a fixed public order.
    event : GaussianMechanismEvent
        From :func:`calibrate_ranges_event` (its sensitivity must cover ``k`` columns).
    rng : numpy.random.Generator
        The noise's stream.
    bins : int
        Bins per column.

    Returns
    -------
    RangesRelease
    """
    k = len(columns)
    if k == 0:
        raise OptionError("no columns to learn ranges of")
    lengths = {len(np.asarray(v)) for v, _ in columns.values()}
    if len(lengths) != 1:
        raise OptionError("every column must have the same rows")
    n = lengths.pop()
    if event.sensitivity < histogram_sensitivity(k, event.adjacency) * (1 - 1e-12):
        raise OptionError(f"the event's sensitivity {event.sensitivity:.6g} is below that "
                          f"of {k} histograms under {event.adjacency} "
                          f"({histogram_sensitivity(k, event.adjacency):.6g})")
    tail = tail_rows(max(n, 1))
    learned, declared, kept, quantiles, tail_bins, grids = {}, {}, [], {}, {}, {}
    released = {}
    for name, (values, box) in columns.items():
        lo, hi = float(box[0]), float(box[1])
        edges = column_edges(box, bins)
        grids[name] = edges
        noisy = column_histogram(values, edges) + rng.normal(0.0, event.noise_std,
                                                             len(edges) - 1)
        released[name] = noisy
        found = range_from_counts(noisy, edges, tail, event.noise_std, n)
        q = [quantile_from_counts(noisy, edges, event.noise_std, level)
             for level in TAIL_LEVELS]
        if q[0] is not None:
            quantiles[name] = tuple(q)
            kept_bins = kept_counts(noisy, event.noise_std) > 0
            b01, b50, b99 = (min(int(np.searchsorted(edges, v, side="right")) - 1,
                                 len(edges) - 2) for v in (q[0], q[2], q[4]))
            tail_bins[name] = (int(kept_bins[b01 + 1:b50].sum()),
                               int(kept_bins[b50 + 1:b99].sum()))
        declared[name] = (lo, hi)
        if found is None:
            kept.append(name)
            found = (lo, hi)
        learned[name] = found
    return RangesRelease(ranges=learned, declared=declared, kept=tuple(kept), bins=int(bins),
                         tail=float(tail), event=event, quantiles=quantiles,
                         rows=int(n), tail_bins=tail_bins,
                         scale_grids=tuple(c for c, (_, box) in columns.items()
                                           if isinstance(box, ScaleBox)),
                         grids=grids, counts=released)
