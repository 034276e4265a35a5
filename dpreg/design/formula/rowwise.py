"""The row-wise term check: a term must be computed from its own row alone.

Terms that read other rows (``I(x - x.mean())``, ``I(x / x.max())``) would release a
statistic of the private data through their coefficient, unpaid. Each design is also
built for a few rows alone and compared with the same rows of the full design
(:func:`check_rowwise_terms`); the error spells the term with public constants.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import patsy

from dpreg.exceptions import PrivacyLeakError

__all__ = ["check_rowwise_terms"]


_AGGREGATE = re.compile(
    r"(?:\b(?:np|numpy|pd|math|statistics)\.\w+|[A-Za-z_][\w.]*\."
    r"(?:mean|median|std|var|max|min|sum|quantile|mad|sem|count|nunique|mode|rank|cumsum|"
    r"cumprod|cummax|cummin|shift|diff|pct_change|abs\(\)\.max|prod|idxmax|idxmin))"
    r"\([^()]*\)")


_REDUCERS = ("mean", "median", "std", "var", "max", "min", "sum", "amax", "amin", "ptp",
             "percentile", "quantile", "average", "nanmean", "nanmedian", "nanstd", "nanvar",
             "nanmax", "nanmin", "nansum", "prod", "cumsum", "sort", "argsort", "diff",
             "fmean", "pstdev", "stdev")


def _public_spelling(term: str) -> str:
    """``term`` with its data-wide statistics replaced by public constants c1, c2, ...

    >>> _public_spelling("I((x - np.median(x)) / np.std(x))")
    'I((x - c1) / c2)'
    """
    count = 0

    def sub(match):
        nonlocal count
        text = match.group(0)
        head = text.split("(")[0]
        if re.match(r"(np|numpy|pd|math|statistics)\.", head) and \
                head.split(".")[-1] not in _REDUCERS:
            return text  # a row-wise function such as np.log: keep it
        count += 1
        return f"c{count}"

    out = _AGGREGATE.sub(sub, term)
    return out if count else "I((x - 50) / 10)"


def check_rowwise_terms(y_info, design_info, data: pd.DataFrame, kept: np.ndarray,
                   y_full: np.ndarray, X_full: np.ndarray) -> None:
    """Refuse terms that are not computed row by row.

    The design of a few rows alone (the first, middle and last kept rows, each on its
    own) must equal the same rows of the full design: a term such as
    ``I(x - x.mean())`` or ``I(x / x.max())`` reads other rows of the private data, and
    its coefficient would release that statistic without a mechanism paying for it.
    Raises :class:`~dpreg.exceptions.PrivacyLeakError` naming the term and its spelling
    with public constants. ``kept`` are the positions in ``data`` of the rows of the
    full outcome and design ``y_full`` and ``X_full``.
    """
    if len(kept) == 0:
        return
    ys_full, Xs_full = np.asarray(y_full, dtype=float), np.asarray(X_full, dtype=float)
    for k in sorted({0, len(kept) // 2, len(kept) - 1}):
        row = data.iloc[[int(kept[k])]]
        try:
            ys, Xs = patsy.build_design_matrices([y_info, design_info], row,
                                                 NA_action=patsy.NAAction(NA_types=[]),
                                                 return_type="matrix")
        except Exception as err:  # noqa: BLE001 - any failure on one row is the finding
            raise PrivacyLeakError(
                f"the formula cannot be evaluated on one row alone ({type(err).__name__}: "
                f"{str(err).splitlines()[0]}): some term reads other rows of the data. "
                "Write every transformation with public constants, e.g. "
                "I((x - 50) / 10)") from None
        for info, full, alone in ((y_info, ys_full[k], np.asarray(ys)[0]),
                                  (design_info, Xs_full[k], np.asarray(Xs)[0])):
            same = np.isclose(full, alone, rtol=1e-9, atol=1e-12, equal_nan=True)
            if same.all():
                continue
            bad = np.flatnonzero(~same)
            for term, cols in info.term_slices.items():
                if any(cols.start <= j < cols.stop for j in bad):
                    name = term.name()
                    raise PrivacyLeakError(
                        f"the term {name!r} is not computed row by row: on a row alone it "
                        "differs from the same row of the full design, so it reads other "
                        "rows of the private data (a mean, maximum, scale, ...) and its "
                        "coefficient would release that statistic unpaid. Use public "
                        f"constants instead: {_public_spelling(name)}, with each c a number "
                        "fixed without looking at these data")
