"""The registry of interval methods: ``METHODS[name] -> Method``.

One record per name a fit's ``inferences`` may hold (and ``cov_type`` may choose): its
label in summaries, whether its scale is a standard error, one line for the command
line's help, and the engines (and other estimators: ``dp_iv2sls``) that offer it. The
engines' and ``dp_iv2sls``'s ``cov_types``, the summaries' labels
(:data:`dpreg.results.summary.METHOD_LABELS`) and ``python -m dpreg fit --cov-type``
read it.

Adding a method that post-processes another method's record (a different law, a
correction of the scale): its module in :mod:`dpreg.inference` and one line here with
its ``source`` and ``builder``; every fit that releases the source then carries it
(:func:`with_derived`, called by :func:`dpreg.fits.common.build_results`). A method
built from an engine's own output: its construction in :mod:`dpreg.inference`, one line
here, and its ``Inference`` record in the offering engines' fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from dpreg.inference.base import Inference

__all__ = ["Method", "METHODS", "method_labels", "engine_methods", "offered_methods",
           "base_method", "with_derived"]


@dataclass(frozen=True)
class Method:
    """One interval method (its fields are its attributes).

    Parameters
    ----------
    name : str
        Its key in ``Results.inferences`` and its ``cov_type``.
    label : str
        Its name in summaries.
    standard_error : bool
        Whether its per-coefficient scale is a standard error (``bse``); random scaling's
        is not (its pivot has a non-normal law).
    description : str
        One line for the command line's help.
    engines : tuple of str
        The engines (keys of :data:`dpreg.fits.registry.ENGINES`) that offer it.
    source : str or None
        For a method that post-processes another method's record: that method's name
        (which each of ``engines`` must offer); ``None`` for a method an engine's fit
        builds itself.
    builder : callable or None
        With ``source``: ``builder(record, cov) -> Inference``, from the source's
        :class:`~dpreg.inference.base.Inference` and its covariance matrix (``None``
        when it has none) to this method's record. Post-processing of released
        quantities: it reads no data and spends nothing.
    estimators : tuple of str
        The estimators outside the engine registry that offer it (``"iv2sls"``:
        :func:`dpreg.dp_iv2sls`, SSP's releases for instrumental variables); the
        command line's ``--cov-type`` lists the engines' methods only.
    """

    name: str
    label: str
    standard_error: bool
    description: str
    engines: tuple[str, ...]
    source: str | None = None
    builder: Callable[[Inference, np.ndarray | None], Inference] | None = None
    estimators: tuple[str, ...] = ()

    def __post_init__(self):
        if (self.source is None) != (self.builder is None):
            raise ValueError(f"method {self.name!r}: give both source and builder, or "
                             "neither")


#: The interval methods, in the order each engine lists those it offers after its
#: default (:func:`engine_methods`).
METHODS: dict[str, Method] = {m.name: m for m in (
    Method("plugin", "Plug-in", True,
           "plug-in covariance from the privately released Hessian (and score) matrices",
           ("dpsgd", "ldp_sgd", "adassp", "ssp", "newton"), estimators=("iv2sls",)),
    Method("rs", "RS", False,
           "random scaling of the averaged path (exact pivot law, no standard error)",
           ("dpsgd", "ldp_sgd")),
    Method("plugin_rs", "Plug-in, RS where floor-set", False,
           "plug-in intervals, random scaling's for the coefficients whose plug-in standard "
           "errors the private Hessian's eigenvalue floor set (DP-SGD's default when its "
           "floor check names some)", ()),
    Method("batch_means", "Batch means", True,
           "batch means of the path (t law)", ("ldp_sgd", "dpgd")),
    Method("checkpoints", "Checkpoints (t)", True,
           "t interval over checkpoint estimates of one DP-GD path", ("dpgd",)),
    Method("runs", "Independent runs (t)", True,
           "t interval over independent DP-GD runs, each paid from the budget", ("dpgd",)),
    Method("pboot", "Parametric bootstrap (percentile)", True,
           "parametric bootstrap of the released sums, percentile interval", ("ssp",),
           estimators=("iv2sls",)),
    Method("pboot_basic", "Parametric bootstrap (basic)", True,
           "parametric bootstrap of the released sums, basic interval", ("ssp",),
           estimators=("iv2sls",)),
    Method("sandwich", "Sandwich", True,
           "heteroskedasticity-robust sandwich from a private meat (robust=True)", ("ssp",)),
    Method("cluster", "Cluster-robust", True,
           "cluster-robust (CR1) sandwich from a private cluster meat, t(G-1) (groups=, "
           "robust=True)", ("ssp",)),
    Method("oracle", "Oracle", True,
           "the non-private oracle's standard errors (NOT private)", ()),
)}


def method_labels() -> dict[str, str]:
    """``{name: label}`` of every method (what summaries print).

    Returns
    -------
    dict
        The labels, in registry order.
    """
    return {name: m.label for name, m in METHODS.items()}


def engine_methods(engine: str, default: str) -> tuple[str, ...]:
    """The methods ``engine`` offers, ``default`` first (an options record's
    ``cov_types``).

    Parameters
    ----------
    engine : str
        An engine's name, or an estimator's (:attr:`Method.estimators`).
    default : str
        Its default method, which it must offer.

    Returns
    -------
    tuple of str
        ``default``, then the engine's other methods in registry order.
    """
    offered = [name for name, m in METHODS.items()
               if engine in m.engines or engine in m.estimators]
    if default not in offered:
        raise ValueError(f"engine {engine!r} does not offer its default {default!r}")
    return (default, *[name for name in offered if name != default])


def offered_methods() -> tuple[str, ...]:
    """Every method that some engine offers, in registry order (``--cov-type``'s
    choices).

    Returns
    -------
    tuple of str
        The names.
    """
    return tuple(name for name, m in METHODS.items() if m.engines)


def base_method(name: str) -> str:
    """The method an engine's fit builds for ``cov_type=name``: ``name`` itself, or the
    source of a method derived from another (:attr:`Method.source`).

    Parameters
    ----------
    name : str
        A method's name.

    Returns
    -------
    str
        The name of the method the fit builds.
    """
    method = METHODS.get(name)
    return name if method is None or method.source is None else method.source


def with_derived(inferences: Mapping[str, Inference],
                 cov_matrix: np.ndarray | None = None) -> dict[str, Inference]:
    """``inferences`` and the record of every derived method whose source is among them.

    Parameters
    ----------
    inferences : mapping
        A fit's records by method name.
    cov_matrix : ndarray or None
        The fit's covariance matrix (``cov_params``): a source record without a
        covariance of its own has this one when its standard errors are its diagonal.

    Returns
    -------
    dict
        The records, the derived ones after those they derive from.
    """
    out = dict(inferences)
    for name, method in METHODS.items():
        if method.source is None or method.source not in out or name in out:
            continue
        source = out[method.source]
        cov = source.cov
        if cov is None and cov_matrix is not None and source.is_standard_error \
                and np.allclose(np.sqrt(np.diag(cov_matrix)), source.scale, rtol=1e-9,
                                atol=0.0):
            cov = cov_matrix
        out[name] = method.builder(source, cov)
    return out
