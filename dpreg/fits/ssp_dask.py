"""Dask input for ``engine="ssp"``: the clipped sums, partition by partition.

``dp_ols(formula, ddf, engine="ssp", bounds=..., levels=...)`` with ``ddf`` a
``dask.dataframe.DataFrame`` never brings the rows together. Each partition is turned
into design rows by the *public* formula specification (the formula, the declared
bounds and levels, the column types of ``ddf``'s metadata), clipped, and reduced to its
sums ``X'X``, ``X'y``, ``y'y`` and row counts; the sums are added up
(``DataFrame.reduction``) and only they reach the client, where the fit adds the noise
once, from the same generator as for a pandas frame. The same seed gives the same
numbers as the pandas path up to the order of the floating-point sums. The sandwich's
meat is a second reduction at the released estimate.

What the partitions must agree on is fixed before any row is read, from public inputs
only: categorical columns need ``levels=`` (partitions cannot agree on categories read
off the data without a mechanism paying for them) and stateful transforms
(``center``, ``standardize``, splines), whose constants would be statistics of the data,
are refused. ``n`` is the total count of rows used (public under replace-one adjacency)
and the count of rows dropped for missing values is public by assumption, as for a
pandas frame (user guide, Privacy: "Threat model").

dask is an optional dependency: this module imports it only when a Dask frame is
given, and recognises one without importing it.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dpreg.design import Design, design_notes
from dpreg.design.conditioning import Conditioning
from dpreg.design.formula import build_design, build_rows, formula_namespace, namespace_env
from dpreg.engines.ssp import SSPSettings, SSPSums, meat_sum, ssp_sums
from dpreg.exceptions import DataError, OptionError, PrivacyLeakError

__all__ = ["is_dask_frame", "dask_design", "DaskRows", "DaskSource", "public_prototype"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Templates already built in this process, by the token of their specification.
_TEMPLATES: dict[str, Design] = {}


def is_dask_frame(data: Any) -> bool:
    """Whether ``data`` is a ``dask.dataframe.DataFrame`` (without importing dask)."""
    return type(data).__module__.startswith("dask.") and hasattr(data, "map_partitions") \
        and hasattr(data, "reduction") and hasattr(data, "columns")


def public_prototype(meta: pd.DataFrame, formula: str, bounds: Mapping | None,
                     levels: Mapping | None) -> pd.DataFrame:
    """Three rows of public placeholders with the columns and kinds of ``meta``.

    Parameters
    ----------
    meta : pandas.DataFrame
        The Dask frame's metadata (no rows).
    formula : str
    bounds, levels : dict or None
        The declared bounds and categories.

    Returns
    -------
    pandas.DataFrame
        Numeric columns at a quarter, three quarters and half of their declared range
        (of ``[1, 2]`` without one), booleans ``False, True, False``, declared
        categories in turn; a categorical or text column the formula uses without
        declared ``levels`` is refused.

    Raises
    ------
    OptionError
        For a column of the formula whose categories are not declared.
    """
    words = set(_WORD.findall(formula))
    bounds = dict(bounds or {})
    levels = dict(levels or {})
    cols = {}
    for col in meta.columns:
        dtype = meta[col].dtype
        if col in levels:
            cats = list(levels[col])
            cols[col] = [cats[i % len(cats)] for i in range(3)] if cats else [None] * 3
        elif pd.api.types.is_bool_dtype(dtype):
            cols[col] = [False, True, False]
        elif pd.api.types.is_numeric_dtype(dtype):
            try:
                lo, hi = (float(v) for v in bounds.get(col, (1.0, 2.0)))
            except (TypeError, ValueError):
                lo, hi = 1.0, 2.0  # check_bounds names the bad bound later
            cols[col] = [lo + 0.25 * (hi - lo), lo + 0.75 * (hi - lo), lo + 0.5 * (hi - lo)]
        elif str(col) in words and (pd.api.types.is_object_dtype(dtype)
                                    or pd.api.types.is_string_dtype(dtype)
                                    or isinstance(dtype, pd.CategoricalDtype)):
            raise OptionError(f"a Dask DataFrame needs the categories of {col!r} declared "
                              f"with levels={{{col!r}: [...]}}: its partitions cannot agree "
                              "on categories read off the data")
        else:  # a column the formula does not use, or one build_design refuses by type
            try:
                cols[col] = pd.Series([None] * 3, dtype=dtype)
            except (TypeError, ValueError):
                cols[col] = pd.Series([None] * 3, dtype=object)
    return pd.DataFrame(cols)


@dataclass(frozen=True)
class RowSpec:
    """What a worker needs to build a partition's design rows (picklable, public).

    Attributes
    ----------
    formula : str
    prototype : pandas.DataFrame
        :func:`public_prototype` (three rows of placeholders).
    bounds, levels : dict or None
    missing : {"drop", "raise"}
    binary_outcome : bool
    namespace : dict
        The functions and modules the formula names.
    token : str
        Identifies the specification (templates are built once per process).
    """

    formula: str
    prototype: pd.DataFrame = field(repr=False)
    bounds: Mapping | None
    levels: Mapping | None
    missing: str
    binary_outcome: bool
    namespace: dict = field(repr=False)
    token: str

    def template(self) -> Design:
        """The design built from the prototype (its ``design_info`` builds the rows)."""
        if self.token not in _TEMPLATES:
            if len(_TEMPLATES) >= 64:  # a long session's old fits
                _TEMPLATES.clear()
            _TEMPLATES[self.token] = build_design(
                self.formula, self.prototype, missing=self.missing, bounds=self.bounds,
                levels=self.levels, eval_env=namespace_env(self.namespace),
                binary_outcome=self.binary_outcome)
        return _TEMPLATES[self.token]

    def rows(self, part: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int]:
        """``(endog, exog, n_dropped)`` of one partition."""
        return build_rows(self.template(), part, missing=self.missing, bounds=self.bounds,
                          levels=self.levels)


def _upper(M: np.ndarray) -> np.ndarray:
    return M[np.triu_indices(M.shape[0])]


def _from_upper(values: np.ndarray, p: int) -> np.ndarray:
    M = np.zeros((p, p))
    M[np.triu_indices(p)] = values
    return M + np.triu(M, 1).T


def _partition_sums(part: pd.DataFrame, spec: RowSpec, cond: Conditioning,
                    settings: SSPSettings, p: int) -> pd.Series:
    """``[n, n_dropped, rows_clipped, upper(X'X), X'y, y'y]`` of one partition."""
    y, X, dropped = spec.rows(part)
    if len(y):
        s = ssp_sums(cond.design(X), y, settings)
        gram, xty, yty, clipped = s.gram, s.xty, s.yty, s.rows_clipped
    else:
        gram, xty, yty, clipped = np.zeros((p, p)), np.zeros(p), 0.0, 0
    return pd.Series(np.r_[len(y), dropped, clipped, _upper(gram), xty, yty])


def _partition_meat(part: pd.DataFrame, spec: RowSpec, cond: Conditioning,
                    settings: SSPSettings, theta: np.ndarray, p: int) -> pd.Series:
    """``[upper(meat), scores_clipped]`` of one partition at the released ``theta``."""
    y, X, _ = spec.rows(part)
    if len(y):
        meat, clipped = meat_sum(cond.design(X), y, settings, theta)
    else:
        meat, clipped = np.zeros((p, p)), 0
    return pd.Series(np.r_[_upper(meat), clipped])


def _add(frame: pd.DataFrame) -> pd.Series:
    """Sum of the partitions' vectors (the reduction's combine and aggregate step)."""
    return frame.sum(axis=0)


class DaskSource:
    """The rows of a Dask frame, summed partition by partition (the ``source`` of
    :func:`dpreg.fits.ssp.fit_ssp`).

    Parameters
    ----------
    rows : DaskRows
    template : Design
        The model's design (no rows).
    cond : Conditioning
        The engine's coordinates.
    """

    def __init__(self, rows: "DaskRows", template: Design, cond: Conditioning):
        self._rows = rows
        self._template = template
        self._cond = cond
        self._p = template.k_exog
        self.nobs: int | None = None
        self.n_dropped: int | None = None

    def _reduce(self, chunk, **kwargs) -> np.ndarray:
        out = self._rows.ddf.reduction(chunk, aggregate=_add, combine=_add,
                                       meta=pd.Series(dtype="float64"),
                                       chunk_kwargs=dict(spec=self._rows.spec,
                                                         cond=self._cond, p=self._p,
                                                         **kwargs))
        return np.asarray(out.compute(), dtype=float)

    def sums(self, settings: SSPSettings) -> SSPSums:
        """The sums of every partition's clipped rows, added (one pass)."""
        p = self._p
        vec = self._reduce(_partition_sums, settings=settings)
        k = p * (p + 1) // 2
        self.nobs, self.n_dropped = int(vec[0]), int(vec[1])
        return SSPSums(gram=_from_upper(vec[3:3 + k], p), xty=vec[3 + k:3 + k + p],
                       yty=float(vec[3 + k + p]), nobs=self.nobs, rows_clipped=int(vec[2]))

    def meat(self, settings: SSPSettings, theta: np.ndarray) -> tuple[np.ndarray, int]:
        """The meat at the released ``theta`` (a second pass)."""
        vec = self._reduce(_partition_meat, settings=settings,
                           theta=np.asarray(theta, dtype=float))
        return _from_upper(vec[:-1], self._p), int(vec[-1])

    def notes(self) -> tuple[str, ...]:
        """The design's notes with the counts of the pass, and where the rows were."""
        notes = design_notes(self._template, nobs=self.nobs, n_dropped=self.n_dropped)
        return notes + (f"Rows read from a Dask DataFrame ({self._rows.ddf.npartitions} "
                        "partitions): each partition reduced to its clipped sums, the sums "
                        "added, the noise drawn once on the client.",)


@dataclass(frozen=True, eq=False)
class DaskRows:
    """Where a model's rows are when they are in a Dask frame.

    Attributes
    ----------
    ddf : dask.dataframe.DataFrame
    spec : RowSpec
    """

    ddf: Any
    spec: RowSpec

    def ssp_source(self, problem, cond: Conditioning) -> DaskSource:
        """The source :func:`dpreg.fits.ssp.fit_ssp` reads."""
        return DaskSource(self, problem.design, cond)


def dask_design(formula: str, ddf, *, missing: str = "drop", bounds=None, levels=None,
                eval_env=0, binary_outcome: bool = False) -> tuple[Design, DaskRows]:
    """The design (with no rows) of ``formula`` on a Dask frame, and where its rows are.

    Parameters
    ----------
    formula : str
    ddf : dask.dataframe.DataFrame
    missing : {"drop", "raise"}
    bounds, levels : dict, optional
        As for :func:`dpreg.design.formula.build_design`.
    eval_env : int or captured environment
        Where the formula's functions are looked up (:func:`dpreg.design.formula.capture_env`).
    binary_outcome : bool
        As for :func:`dpreg.design.formula.build_design`.

    Returns
    -------
    (Design, DaskRows)

    Raises
    ------
    OptionError
        A categorical column without declared ``levels``.
    PrivacyLeakError
        A stateful transform.
    """
    if not isinstance(formula, str) or "~" not in formula:
        raise OptionError(f"formula must be a string 'outcome ~ terms', got {formula!r}")
    meta = getattr(ddf, "_meta", None)
    if not isinstance(meta, pd.DataFrame):
        raise DataError("the Dask collection has no pandas metadata (_meta): pass a "
                        "dask.dataframe.DataFrame")
    spec = RowSpec(formula=formula, prototype=public_prototype(meta, formula, bounds, levels),
                   bounds=None if bounds is None else dict(bounds),
                   levels=None if levels is None else {k: list(v) for k, v in levels.items()},
                   missing=missing, binary_outcome=binary_outcome,
                   namespace=formula_namespace(formula, eval_env), token=uuid.uuid4().hex)
    template = spec.template()
    if template.stateful:
        raise PrivacyLeakError(f"the formula uses stateful transforms in "
                               f"{list(template.stateful)}: on a Dask frame (as on any data) "
                               "their constants would be statistics of the data; transform "
                               "with public constants instead, e.g. I((x - 50) / 10)")
    if template.undeclared_levels:
        raise OptionError(f"a Dask DataFrame needs the categories of "
                          f"{list(template.undeclared_levels)} declared with levels=: its "
                          "partitions cannot agree on categories read off the data")
    p = template.k_exog
    empty = dataclasses.replace(template, endog=np.empty(0), exog=np.empty((0, p)),
                                n_dropped=0, missing_rows=None)
    return empty, DaskRows(ddf=ddf, spec=spec)
