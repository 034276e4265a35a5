"""The one list of engines: ``{name: Engine(fit, options, label)}``.

:meth:`dpreg.DPRegression.fit` validates the options through :func:`fit_options` (the
engine's own options record: an option it lacks does not apply to it) and calls
``ENGINES[name].fit(problem, opts, request, given)``. Adding an engine is one module in
:mod:`dpreg.fits` (with its driver and kernel in :mod:`dpreg.engines`) and one line here.
"""

from __future__ import annotations

import difflib
from dataclasses import MISSING, dataclass, fields
from typing import Any, Callable, Mapping

from dpreg.exceptions import OptionError
from dpreg.fits import adassp, dpgd, dpsgd, ldp_sgd, newton, ssp
from dpreg.fits.options import MODEL_OPTIONS, CommonOptions

__all__ = ["Engine", "ENGINES", "fit_options", "check_known", "option_names",
           "refused_option"]


@dataclass(frozen=True)
class Engine:
    """One engine: its fit, its options record and its display name.

    Attributes
    ----------
    fit : callable
        ``fit(problem, opts, request, given) -> DPRegressionResults``.
    options : type
        Its options record (a :class:`~dpreg.fits.options.CommonOptions` subclass).
    label : str
        The name in summaries.
    events : callable, optional
        ``events(problem, opts) -> builder``: the builder ``mu_scale -> events`` of a
        central engine's mechanisms, from public quantities only (it prices the fit
        before the data are read, for ``ranges="private"``); ``None`` for a local engine.
    learns_ranges : bool
        Whether ``ranges="auto"`` learns the ranges privately for this engine: its
        intervals are for the population coefficients, which clipping a small tail share
        of the rows barely moves. Engines whose intervals are for a statistic of the
        given rows (AdaSSP: OLS on them; DP-GD: the clipped minimizer on them) keep the
        declared boxes, since clipping to learned ranges changes that statistic.
    """

    fit: Callable
    options: type[CommonOptions]
    label: str
    events: Callable | None = None
    learns_ranges: bool = False

    @property
    def cov_types(self) -> tuple[str, ...]:
        """Its interval methods; the first is the default ``cov_type``."""
        return self.options.cov_types


ENGINES: dict[str, Engine] = {
    "dpsgd": Engine(dpsgd.fit_dpsgd, dpsgd.DPSGDOptions, dpsgd.LABEL, dpsgd.events_builder,
                    learns_ranges=True),
    "ldp_sgd": Engine(ldp_sgd.fit_ldp_sgd, ldp_sgd.LDPOptions, ldp_sgd.LABEL),
    "dpgd": Engine(dpgd.fit_dpgd, dpgd.DPGDOptions, dpgd.LABEL, dpgd.events_builder),
    "adassp": Engine(adassp.fit_adassp, adassp.AdaSSPOptions, adassp.LABEL,
                     adassp.events_builder),
    "ssp": Engine(ssp.fit_ssp, ssp.SSPOptions, ssp.LABEL, ssp.events_builder,
                  learns_ranges=True),
    "newton": Engine(newton.fit_newton, newton.NewtonOptions, newton.LABEL,
                     newton.events_builder, learns_ranges=True),
}


def option_names() -> list[str]:
    """Every fit option some engine takes, in the order of their records."""
    names = {f.name: None for e in ENGINES.values() for f in fields(e.options)}
    return list(names)


def check_known(options: Mapping[str, Any], extra: tuple[str, ...] = ()) -> None:
    """Raise :class:`OptionError` for an option name that no function knows."""
    known = option_names() + list(MODEL_OPTIONS) + list(extra)
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise OptionError(f"unknown option {name!r}{hint}")


def _neutral(name: str, value) -> bool:
    """Whether ``value`` of option ``name`` asks for nothing: ``None``, or the option's
    default in the engines that take it (so one set of defaults suits every engine)."""
    if value is None:
        return True
    for engine in ENGINES.values():
        for f in fields(engine.options):
            if f.name == name and f.default is not MISSING:
                try:
                    if type(value) is type(f.default) and value == f.default:
                        return True
                except (TypeError, ValueError):
                    pass
    return False


def refused_option(engine: str, options: Mapping[str, Any]) -> str | None:
    """The first of ``options`` that does not apply to ``engine`` (its record lacks it and
    its value asks for something, or a ``cov_type`` it does not offer), or ``None``."""
    record = ENGINES[engine].options
    names = {f.name for f in fields(record)}
    for name, value in options.items():
        if name == "engine":
            continue
        if name not in names and not _neutral(name, value):
            return name
        if name == "cov_type" and value is not None and value not in record.cov_types:
            return name
    return None


def fit_options(**options) -> CommonOptions:
    """The validated options record of ``options["engine"]`` (default ``"dpsgd"``).

    An option the engine's record lacks is refused, naming the option and the engine,
    unless its value asks for nothing (``None``, or its default where it applies).
    """
    check_known(options)
    engine = options.get("engine", "dpsgd")
    if not isinstance(engine, str) or engine not in ENGINES:
        raise OptionError(f"unknown engine {engine!r}; choose one of {tuple(ENGINES)}")
    record = ENGINES[engine].options
    names = {f.name for f in fields(record)}
    for name, value in options.items():
        if name not in names and not _neutral(name, value):
            raise OptionError(f"{name} does not apply to engine={engine!r} ({record.scope}); "
                              f"got {name}={value!r}")
    return record(**{k: v for k, v in options.items() if k in names})
