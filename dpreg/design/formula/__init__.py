"""Formulas to designs: the only package of dpreg that imports patsy.

One module per step, lowest first:

- :mod:`~dpreg.design.formula.namespace`: the functions and modules a formula names in
  its caller's scope (captured, carried to a Dask worker, pickled with a checkpoint);
- :mod:`~dpreg.design.formula.term_bounds`: public bounds of terms and design columns
  from the declared bounds (derived, enforced, checked by name);
- :mod:`~dpreg.design.formula.frames`: the data side: frame checks, declared levels,
  clipping, patsy's calls and errors;
- :mod:`~dpreg.design.formula.rowwise`: the check that every term is computed row by row;
- :mod:`~dpreg.design.formula.numeric`: designs of raw numeric products built with numpy;
- :mod:`~dpreg.design.formula.build`: :func:`build_design`, a formula and a DataFrame to
  a :class:`~dpreg.design.Design`;
- :mod:`~dpreg.design.formula.rows`: more rows of a built design (a stream's chunks, a
  Dask frame's partitions, new data to predict on);
- :mod:`~dpreg.design.formula.prototype`: a design described without data and rebuilt
  from that description (saved results, stream checkpoints);
- :mod:`~dpreg.design.formula.iv`: instrumental-variables formulas in linearmodels'
  syntax;
- :mod:`~dpreg.design.formula.fixed_effects`: absorbed fixed effects in pyfixest's syntax
  (``y ~ x | state``);
- :mod:`~dpreg.design.formula.restrictions`: linear restrictions in statsmodels'
  spellings.

The names below are what the rest of dpreg imports from here.
"""

from dpreg.design.formula.build import build_design
from dpreg.design.formula.fixed_effects import split_fixed_effects
from dpreg.design.formula.iv import IVFormula, parse_iv_formula
from dpreg.design.formula.namespace import (
    capture_env,
    formula_namespace,
    namespace_env,
    portable_namespace,
    restore_namespace,
)
from dpreg.design.formula.prototype import (
    design_info_from_prototype,
    design_prototype,
    numerical_columns,
    template_from_prototype,
    template_prototype,
)
from dpreg.design.formula.restrictions import linear_constraint
from dpreg.design.formula.rows import build_chunk, build_exog, build_rows, column_kinds
from dpreg.design.formula.term_bounds import column_combos

__all__ = ["build_design", "build_exog", "build_chunk", "build_rows", "column_kinds",
           "capture_env", "formula_namespace", "namespace_env", "template_prototype",
           "template_from_prototype", "portable_namespace", "restore_namespace",
           "IVFormula", "parse_iv_formula", "linear_constraint", "design_prototype",
           "design_info_from_prototype", "numerical_columns", "column_combos",
           "split_fixed_effects"]
