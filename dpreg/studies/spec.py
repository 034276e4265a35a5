"""Declarative Monte Carlo studies: a :class:`Study` and the :class:`Cell` s it expands to.

A study is a grid of factors (data design, method, ``n``, budget, ...) crossed into
cells, a replicate function that simulates one data set and fits it, and a number of
replications. Every replication of every cell has its own seed, derived from the
study's seed and the cell's *values* (not its position), so that results do not depend
on the backend, the order of execution, the chunking, or which other cells exist.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from dpreg._checks import integer_at_least
from dpreg.exceptions import OptionError

__all__ = ["Study", "Cell", "FigureSpec", "StudyUnavailableError", "ROW_FIELDS",
           "canonical_json"]

#: Columns a replicate's rows may carry besides grouping keys (see :class:`Study`).
ROW_FIELDS = ("method", "coef", "truth", "estimate", "lower", "upper", "pvalue", "alpha")


class StudyUnavailableError(OptionError):
    """A study needs something this installation does not have (an engine, a package)."""


def _plain(value, where: str):
    """``value`` as a JSON-able scalar or tuple (numpy scalars unwrapped); else raise."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise OptionError(f"{where} must be finite, got {value!r}")
        return value
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v, where) for v in value)
    raise OptionError(f"{where} must be a str, bool, int, float, None or a tuple of these "
                      f"(it names a cell and seeds it), got {type(value).__name__}: {value!r}")


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces): the input of every hash in a study."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _function_id(func: Callable) -> str:
    """``"module:qualname"`` of a module-level function; raise for lambdas and closures."""
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", None)
    if not callable(func) or module is None or qualname is None \
            or "<" in qualname or module == "__main__":
        raise OptionError(
            "replicate must be a function defined at the top level of an importable module "
            f"(it is sent to worker processes by reference and names the cache); got {func!r}")
    return f"{module}:{qualname}"


@dataclass(frozen=True)
class FigureSpec:
    """One figure a study draws from its summary.

    Attributes
    ----------
    name : str
        File stem: the figure is written to ``<out>/<study>-<name>.png``.
    draw : callable
        ``draw(summary, path, **kwargs)``: typically :func:`dpreg.studies.plot_coverage`,
        :func:`dpreg.studies.plot_length` or :func:`dpreg.studies.plot_metric`, or a
        study's own function.
    kwargs : dict
        Keyword arguments of ``draw``.
    """

    name: str
    draw: Callable
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Cell:
    """One combination of factor values of a study, with its seeds and cache key.

    Attributes
    ----------
    study : str
        Name of the study.
    factors : tuple of (str, value)
        The grid factors of this cell, in the grid's order.
    constants : tuple of (str, value)
        Settings shared by all cells (passed to the replicate function too).
    seed : int
        The study's seed.
    replicate_id : str
        ``"module:qualname"`` of the replicate function.
    revision : str
        The study's revision (bumped when the replicate's meaning changes).
    """

    study: str
    factors: tuple[tuple[str, Any], ...]
    constants: tuple[tuple[str, Any], ...]
    seed: int
    replicate_id: str
    revision: str

    @property
    def params(self) -> dict[str, Any]:
        """Factors as a dict (the columns this cell adds to its rows)."""
        return dict(self.factors)

    @property
    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the replicate function: factors and constants."""
        return {**dict(self.constants), **dict(self.factors)}

    @property
    def label(self) -> str:
        """``"family=linear, n=500"``: for progress bars and messages."""
        return ", ".join(f"{k}={v}" for k, v in self.factors) or self.study

    def _seed_words(self) -> tuple[int, ...]:
        text = canonical_json({"study": self.study, "params": self.kwargs})
        digest = hashlib.sha256(text.encode()).digest()
        return tuple(int(w) for w in np.frombuffer(digest[:16], dtype="<u4"))

    def seed_sequence(self, rep: int) -> np.random.SeedSequence:
        """The seed of replication ``rep`` of this cell.

        ``SeedSequence(seed, spawn_key=(w1, w2, w3, w4, rep))`` where ``w1..w4`` are the
        first 128 bits of the SHA-256 of the study's name and the cell's parameters.
        This is a node of the same tree that ``SeedSequence(seed).spawn`` walks,
        addressed by the cell's values instead of its position, so a replication's
        numbers depend only on (study name, seed, cell parameters, ``rep``).
        """
        integer_at_least("rep", rep, 0)
        return np.random.SeedSequence(self.seed, spawn_key=self._seed_words() + (int(rep),))

    @property
    def key(self) -> str:
        """Hex SHA-256 of everything that determines this cell's replications.

        Study name, factors, constants, seed, replicate function and revision (but
        not the number of replications: caches grow by replication).
        """
        text = canonical_json({"study": self.study, "factors": [list(f) for f in self.factors],
                               "constants": [list(c) for c in self.constants],
                               "seed": self.seed, "replicate": self.replicate_id,
                               "revision": self.revision})
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        """A JSON-able description (written next to the cell's cache)."""
        return {"study": self.study, "factors": dict(self.factors),
                "constants": dict(self.constants), "seed": self.seed,
                "replicate": self.replicate_id, "revision": self.revision, "key": self.key}


@dataclass(frozen=True, eq=False)
class Study:
    """A Monte Carlo study: data design x method x n x budget x replications.

    Parameters
    ----------
    name : str
        Identifier (used by the command line, cache folders and file names).
    replicate : callable
        ``replicate(seed, **params) -> list of dict``, defined at the top level of an
        importable module. ``seed`` is a :class:`numpy.random.SeedSequence` (draw every
        random number from generators made from it); ``params`` are one cell's factors
        and the constants. Each returned dict is one row: ``method`` (str), ``coef``
        (str), ``truth`` and ``estimate`` (floats), optionally ``lower``, ``upper``
        (an interval), ``pvalue`` (two-sided p-value of ``H0: theta = truth``, a true
        null) and ``alpha`` (the interval's nominal miscoverage). Any other key is a
        grouping key (for example ``steps`` when one replication fits several ``T`` on
        the same data); keys must not reuse a factor's name.
        :func:`dpreg.studies.result_rows` and :func:`dpreg.studies.estimate_rows` build
        such rows.
    grid : dict or sequence of dict
        Factor name -> list of values; cells are the Cartesian product. A sequence of
        dicts gives the union of their products (as scikit-learn's ``ParameterGrid``).
        Values must be str, bool, int, float, None or tuples of these.
    constants : dict, optional
        Settings shared by every cell (passed to ``replicate``, part of the cache key).
    reps : int
        Default number of replications per cell.
    seed : int
        The study's seed (non-negative).
    title, description : str
        For figures, the command line and the docs.
    revision : str
        Bump it when the replicate function changes meaning: caches are keyed on it.
    requires : tuple of str
        Engines the study needs (e.g. ``("dpgd",)``); checked before running.
    figures : tuple of FigureSpec
        What ``python -m dpreg study NAME`` draws.
    reference : pandas.DataFrame, optional
        Numbers printed in the paper, in the summary's columns, for comparison.

    Examples
    --------
    >>> import dpreg.studies as ds
    >>> study = ds.get_study("smoke")
    >>> [c.label for c in study.cells()]
    ['n=200', 'n=400']
    """

    name: str
    replicate: Callable
    grid: Mapping[str, Sequence] | Sequence[Mapping[str, Sequence]]
    constants: Mapping[str, Any] = field(default_factory=dict)
    reps: int = 200
    seed: int = 0
    title: str = ""
    description: str = ""
    revision: str = "1"
    requires: tuple[str, ...] = ()
    figures: tuple[FigureSpec, ...] = ()
    reference: Any = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise OptionError(f"name must be a non-empty string without '/', got {self.name!r}")
        object.__setattr__(self, "_replicate_id", _function_id(self.replicate))
        grids = [self.grid] if isinstance(self.grid, Mapping) else list(self.grid)
        if not grids:
            raise OptionError("grid must be a dict of factor -> values or a non-empty list "
                              "of such dicts")
        clean = []
        for g in grids:
            if not isinstance(g, Mapping):
                raise OptionError(f"each grid must be a dict of factor -> values, got {g!r}")
            one = {}
            for k, values in g.items():
                if not isinstance(k, str) or k in ROW_FIELDS or k == "rep":
                    raise OptionError(f"factor names must be strings other than "
                                      f"{list(ROW_FIELDS) + ['rep']}, got {k!r}")
                if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) \
                        or len(values) == 0:
                    raise OptionError(f"grid[{k!r}] must be a non-empty list of values, "
                                      f"got {values!r}")
                one[k] = tuple(_plain(v, f"grid[{k!r}]") for v in values)
            clean.append(one)
        object.__setattr__(self, "_grids", tuple(clean))
        consts = {}
        for k, v in dict(self.constants).items():
            if any(k in g for g in clean):
                raise OptionError(f"{k!r} is both a factor and a constant")
            consts[k] = _plain(v, f"constants[{k!r}]")
        object.__setattr__(self, "_constants", tuple(sorted(consts.items())))
        integer_at_least("reps", self.reps)
        integer_at_least("seed", self.seed, 0)
        if not isinstance(self.revision, str):
            raise OptionError(f"revision must be a string, got {self.revision!r}")

    @property
    def replicate_id(self) -> str:
        """``"module:qualname"`` of the replicate function."""
        return self._replicate_id

    @property
    def factor_names(self) -> list[str]:
        """All factor names, in first-seen order."""
        return list(dict.fromkeys(k for g in self._grids for k in g))

    def cells(self, where: Mapping[str, Any] | Callable[[dict], bool] | None = None
              ) -> list[Cell]:
        """The cells of the grid, optionally filtered.

        Parameters
        ----------
        where : dict or callable, optional
            Keep cells whose factors equal the dict's values (a list value means "one
            of"), or for which ``where(params)`` is true.

        Returns
        -------
        list of Cell
            Duplicates (from overlapping grids) are dropped.
        """
        out, seen = [], set()
        for g in self._grids:
            names = list(g)
            for values in itertools.product(*(g[k] for k in names)):
                factors = tuple(zip(names, values, strict=True))
                if factors in seen:
                    continue
                seen.add(factors)
                cell = Cell(self.name, factors, self._constants, int(self.seed),
                            self._replicate_id, self.revision)
                if _keep(cell.params, where):
                    out.append(cell)
        if where is not None and not out:
            raise OptionError(f"no cell of study {self.name!r} matches where={where!r}")
        return out


def _keep(params: dict, where) -> bool:
    if where is None:
        return True
    if callable(where):
        return bool(where(params))
    if not isinstance(where, Mapping):
        raise OptionError(f"where must be a dict or a callable, got {where!r}")
    for k, v in where.items():
        if k not in params:
            return False
        allowed = v if isinstance(v, (list, tuple, set)) else (v,)
        if params[k] not in allowed:
            return False
    return True
