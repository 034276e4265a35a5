"""What a private fit tells its user beside the ledger: adjacency, seeds.

Small helpers called by the fit paths so that every engine labels its adjacency the
same way and warns about fixed seeds the same way.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from dpreg.exceptions import SeedReuseWarning
from dpreg.privacy.events import ZERO_OUT

__all__ = ["sampling_adjacency", "adjacency_notes", "cluster_note", "warn_fixed_seed", "SEED_NOTE"]

SEED_NOTE = ("An integer random_state reproduces a run on the same data; never use it for a "
             "second release (the same noise on neighbouring data cancels in the difference).")


def sampling_adjacency(sampling: str) -> str:
    """The adjacency a central DP-SGD fit with public n provides under ``sampling``.

    ``"uniform"`` (fixed-size batches): replace-one. ``"poisson"``: zero-out with n
    public (:data:`dpreg.privacy.events.ZERO_OUT`): n sets the sampling rate, the
    default number of steps and the divisors of the plug-in matrices, and is printed,
    so a data set with one more row is told apart from it; what the noise covers is a
    row replaced by a null row.
    """
    return "replace-one" if sampling == "uniform" else ZERO_OUT


def adjacency_notes(ledger) -> tuple[str, ...]:
    """Summary notes on the adjacency of ``ledger``: for zero-out, the replace-one
    equivalent by group privacy (``2 mu``) and its epsilon."""
    equivalent = ledger.replace_one_equivalent
    if equivalent is None:
        return ()
    mu2, eps2 = equivalent
    return (f"Adjacency: {ZERO_OUT}, i.e. one row replaced by a null row with n unchanged "
            f"(Poisson sampling with the public n). A replace-one change is two such "
            f"changes: by group privacy it is protected at mu = {mu2:.4g} (epsilon = "
            f"{eps2:.4g} at delta = {ledger.delta:.3g}, GDP view), not at the ledger's "
            "totals. Use sampling='uniform' for replace-one accounting.",)


def cluster_note(groups, max_group_size: int, n_groups: int, sampled: str = "") -> str:
    """The summary's note on clusters as the privacy unit (``groups=``), shared by the
    engines that take it.

    ``G`` is public by assumption; a neighbour replaces one whole cluster by any other of
    at most ``K`` kept rows, so a cluster's values and its size are protected, and the
    rows used (and dropped) are not reported.

    Parameters
    ----------
    groups : str or array-like
        The ``groups=`` option (a column name is shown).
    max_group_size, n_groups : int
        ``K`` and ``G``.
    sampled : str
        What a step samples, for engines that subsample (e.g. ``"a batch samples 3 of
        the G clusters"``).

    Returns
    -------
    str
    """
    label = repr(groups) if isinstance(groups, str) else "groups"
    batch = f"; {sampled}" if sampled else ""
    return (f"Privacy unit: a cluster of {label} (replace-one cluster); each cluster keeps "
            f"its first max_group_size = {max_group_size} rows in the data's order and the "
            f"sensitivities are per cluster{batch}. G = {n_groups} clusters is public by "
            "assumption; a neighbour replaces a cluster by one of any size up to "
            "max_group_size, so a cluster's values and its size are protected: the rows "
            "used are not reported, and where a fit needs a count of rows (the CR1 "
            "factor, a mean's divisor) it uses the public bound G K.")


def _outside_dpreg() -> int:
    """Stack level (for ``warnings.warn`` called here) of the first frame outside dpreg."""
    import sys

    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("dpreg"):
        frame, level = frame.f_back, level + 1
    return level


def warn_fixed_seed(random_state) -> None:
    """Warn (:class:`~dpreg.exceptions.SeedReuseWarning`) when a private fit is given an
    integer seed or a :class:`numpy.random.SeedSequence`: the noise is then
    reproducible, which is for re-running on the same data, never for a second release.
    ``None`` (fresh OS entropy) and a Generator are not warned about."""
    fixed = (isinstance(random_state, (numbers.Integral, np.random.SeedSequence))
             and not isinstance(random_state, bool))
    if fixed:
        warnings.warn(f"random_state={random_state!r} fixes the privacy noise. Use a seed "
                      "to reproduce a run on the same data, never for a second release: "
                      "two releases with one seed on data sets that differ in one person "
                      "share their noise, which cancels in the difference. Omit "
                      "random_state (fresh OS entropy) for a release.", SeedReuseWarning,
                      stacklevel=_outside_dpreg())
