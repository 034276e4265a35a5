"""Linear restrictions in statsmodels' spellings (``"x1 = 0"``, ``"x1 = x2, x3 = 1"``,
a matrix or a pair ``(R, q)``) as the arrays of ``H0: R theta = q``, for the tests of a
fitted result (:mod:`dpreg.results.hypothesis`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import patsy

from dpreg.exceptions import OptionError

__all__ = ["linear_constraint"]


def linear_constraint(names: Sequence[str], spec) -> tuple[np.ndarray, np.ndarray]:
    """``(R, q)`` of ``H0: R theta = q`` from statsmodels' spellings of a restriction.

    Parameters
    ----------
    names : sequence of str
        Coefficient names.
    spec : str, list of str, dict, array-like or tuple ``(R, q)``
        ``"x1 = 0"``, ``"x1 = x2, x3 = 1"``, ``["x1", "x2 = 2"]``, ``{"x1": 0}``, a
        restriction matrix ``R`` (then ``q = 0``) or a pair ``(R, q)``, parsed by
        patsy's ``DesignInfo.linear_constraint`` as statsmodels does.
    """
    try:
        lc = patsy.DesignInfo(list(names)).linear_constraint(spec)
    except (patsy.PatsyError, ValueError, TypeError, KeyError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise OptionError(f"cannot read the restriction r_matrix={spec!r}: {first}. "
                          f"Coefficients: {list(names)}") from None
    return np.asarray(lc.coefs, dtype=float), np.asarray(lc.constants, dtype=float).ravel()
