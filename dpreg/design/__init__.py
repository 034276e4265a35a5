"""The design layer: what a regression is fitted on, from public inputs only.

- :mod:`dpreg.design.design`: the :class:`Design` record (outcome, design matrix, names,
  declared bounds) and its checks, built from arrays (:func:`design_from_arrays`) or
  from a formula;
- :mod:`dpreg.design.formula`: formulas to designs (the only package that imports
  patsy), one module per step;
- :mod:`dpreg.design.intervals`: bounds of transformed terms by interval arithmetic;
- :mod:`dpreg.design.conditioning`: the public map of the covariates into ``[-1, 1]``
  that the engines work in;
- :mod:`dpreg.design.reference_design`: rows the declared bounds and levels allow,
  drawn without the data.

The names below are :mod:`dpreg.design.design`'s, which the fits import from here.
"""

from dpreg.design.design import (
    BOUND_LIMIT,
    INTERCEPT_NAMES,
    MISSING_POLICIES,
    Design,
    check_bounds,
    check_finite_full_rank,
    check_identified,
    check_missing,
    check_public_size,
    degenerate_note,
    design_from_arrays,
    design_notes,
)

__all__ = ["Design", "design_from_arrays", "check_bounds", "check_identified", "design_notes",
           "MISSING_POLICIES", "BOUND_LIMIT", "INTERCEPT_NAMES", "check_missing",
           "check_finite_full_rank", "check_public_size", "degenerate_note"]
