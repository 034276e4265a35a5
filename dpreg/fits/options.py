"""Fit options: one spelling each, validated once at the boundary.

Each engine declares its own options record (in its module of :mod:`dpreg.fits`): the
options every engine takes (:class:`CommonOptions`), those of the iterative engines
(:class:`PathOptions`), and its own, with their defaults, and its interval methods
(``cov_types``, the first the default ``cov_type``). An option that an engine's record
lacks does not apply to it (:func:`dpreg.fits.registry.fit_options` says so). The fits
fill the remaining defaults from public quantities only (``n``, ``p``, declared bounds)
and record why.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from dpreg._checks import integer_at_least, one_of, positive_number
from dpreg.exceptions import OptionError
from dpreg.inference.methods import base_method
from dpreg.privacy.ranges import DEFAULT_RANGES_SHARE
from dpreg.privacy.request import split_budget

__all__ = ["CommonOptions", "PathOptions", "MODEL_OPTIONS", "DEFAULT_BUDGET_SPLIT",
           "CONDITIONS", "RANGES", "checked_split", "plugin_split", "check_lr_decay"]

#: ``condition=``: map bounded numeric columns into [-1, 1] and precondition DP-SGD and
#: DP-GD with a private second-moment matrix (``"private"``, default), the public map only
#: (``"bounds"``), or the design as given (``"none"``); see :mod:`dpreg.design.conditioning`.
CONDITIONS = ("private", "bounds", "none")
#: ``ranges=``: the numeric columns' boxes as declared (``"declared"``), learned privately
#: inside them first (``"private"``; :mod:`dpreg.privacy.ranges`), or ``"auto"`` (the
#: default of :meth:`dpreg.DPRegression.fit`: private wherever the model and the engine
#: allow, resolved there from public inputs; options built without a model read it as
#: ``"declared"``).
RANGES = ("auto", "declared", "private")
MODEL_OPTIONS = ("family", "c", "tau", "weights", "missing", "bounds", "levels",
                 "eval_env")
#: Shares of mu^2 (GDP) or rho (zCDP). The Hessian gets a large share because its noise
#: enters the plug-in variance through A^{-2}: on STAR (mu = 2, 16 seeds) this split gave
#: plug-in s.e. closer to the run-to-run spread and less variable than 0.8/0.1/0.1.
DEFAULT_BUDGET_SPLIT = {"path": 0.6, "hessian": 0.3, "score": 0.1}


@dataclass(frozen=True)
class CommonOptions:
    """Options every engine takes (see :meth:`dpreg.DPRegression.fit` for meanings).

    Subclasses set ``cov_types`` (the engine's interval methods, the first the default)
    and ``scope`` (what the engine is, for the message when an option does not apply).
    """

    cov_types: ClassVar[tuple[str, ...]] = ()
    scope: ClassVar[str] = ""

    mu: float | None = None
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    engine: str = "dpsgd"
    cov_type: str | None = None
    x_bound: float | None = None
    random_state: Any = None
    progress: bool = False
    strict: bool = False
    diagnostics: bool = False
    condition: str = "private"
    ranges: str = "declared"

    def __post_init__(self):
        one_of("ranges", self.ranges, RANGES)
        if self.ranges == "auto":  # resolved by the model; without one, nothing to learn
            object.__setattr__(self, "ranges", "declared")
        self._check_ranges()
        allowed = self.cov_types
        if self.cov_type is None:
            object.__setattr__(self, "cov_type", allowed[0])
        if self.cov_type not in allowed:
            raise OptionError(f"cov_type {self.cov_type!r} is not available with engine "
                              f"{self.engine!r}; choose one of {allowed}")
        one_of("condition", self.condition, CONDITIONS)
        _optional(positive_number, "x_bound", self.x_bound)
        for name in ("progress", "strict", "diagnostics"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise OptionError(f"{name} must be True or False, got {getattr(self, name)!r}")
        rs = self.random_state
        if rs is not None and not isinstance(rs, (numbers.Integral, np.random.Generator,
                                                  np.random.SeedSequence)):
            raise OptionError(f"random_state must be an int, a numpy Generator or None, got "
                              f"{type(rs).__name__}")
        if isinstance(rs, numbers.Integral) and rs < 0:
            raise OptionError(f"random_state must be non-negative, got {rs}")

    @property
    def base_cov_type(self) -> str:
        """The interval method the engine's fit builds for ``cov_type``: ``cov_type``
        itself, or the method a derived one post-processes
        (:func:`dpreg.inference.methods.base_method`). The fits branch on this."""
        return base_method(self.cov_type)

    @property
    def ranges_share(self) -> float:
        """The share of the budget (of ``mu^2``, or ``rho``) that buys the private
        ranges: 0 with ``ranges="declared"``, ``budget_split["ranges"]`` if given, else
        :data:`~dpreg.privacy.ranges.DEFAULT_RANGES_SHARE`."""
        if self.ranges == "declared":
            return 0.0
        split = getattr(self, "budget_split", None)
        if split is None:
            return DEFAULT_RANGES_SHARE
        return self._ranges_split()[0]

    def engine_split(self) -> dict[str, float] | None:
        """The given ``budget_split`` without ``"ranges"``, its shares rescaled to sum to
        1 (the engine's shares of what the ranges leave), or ``None`` if none was given.
        """
        split = getattr(self, "budget_split", None)
        if split is None or not isinstance(split, Mapping) or "ranges" not in split:
            return split
        return self._ranges_split()[1]

    def _ranges_split(self) -> tuple[float, dict[str, float]]:
        split = self.budget_split
        w = split["ranges"]
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not 0 < w < 1:
            raise OptionError(f"budget_split['ranges'] must be in (0, 1), got {w!r}")
        if not any(k != "ranges" for k in split):
            raise OptionError("budget_split must give the engine's releases a share besides "
                              "'ranges'")
        # positive shares summing to 1 (a share of exactly 0 drops its release)
        full = split_budget({k: v for k, v in split.items()
                             if not (isinstance(v, numbers.Real) and v == 0)})
        share = full["ranges"]
        return share, {k: v / (1.0 - share) for k, v in full.items() if k != "ranges"}

    def _check_ranges(self) -> None:
        """``ranges`` and ``budget_split["ranges"]`` agree: with ``ranges="private"`` a
        given split names the ranges' share (all shares summing to 1); with
        ``"declared"`` it must not."""
        split = getattr(self, "budget_split", None)
        has_key = isinstance(split, Mapping) and "ranges" in split
        if self.ranges == "declared" and has_key:
            raise OptionError("budget_split['ranges'] buys the private ranges of "
                              "ranges='private'; it does not apply to ranges='declared'")
        if self.ranges == "private" and split is not None:
            if not has_key:
                raise OptionError(
                    "with ranges='private' a budget_split must give 'ranges' its share too "
                    "(the shares of every release sum to 1), e.g. budget_split={'ranges': "
                    f"{DEFAULT_RANGES_SHARE}, ...}}; or leave budget_split out for the "
                    "defaults")
            self._ranges_split()


@dataclass(frozen=True)
class PathOptions(CommonOptions):
    """Options of the engines that follow a noisy path: clipping, step size, the budget
    split and the starting point."""

    clip: float | None = None
    lr: float | None = None
    budget_split: Mapping[str, float] | None = None
    start_params: Any = None

    def __post_init__(self):
        super().__post_init__()
        _optional(positive_number, "clip", self.clip)
        _optional(positive_number, "lr", self.lr)


def check_lr_decay(value) -> None:
    """``lr_decay`` in (1/2, 1): Theorem 2 of the dpsgd-inference paper (and the ldp-sgd
    paper's) needs ``eta_t = lr * t^-lr_decay`` with ``lr_decay`` in (1/2, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.5 < value < 1:
        raise OptionError(f"lr_decay must be in (0.5, 1) (Theorem 2 needs "
                          f"eta_t = lr * t^-lr_decay with lr_decay in (1/2, 1)), "
                          f"got {value!r}")


def check_steps(value) -> None:
    """``steps``: an integer of at least 2 (random scaling needs a path), or ``None``."""
    _optional(integer_at_least, "steps", value)
    if value is not None and value < 2:
        raise OptionError(f"steps must be at least 2 (random scaling needs a path), "
                          f"got {value}")


def checked_split(split, keys: tuple[str, ...], example) -> dict[str, float]:
    """Validate a ``budget_split`` against the keys an engine knows.

    A non-empty dict with known keys whose shares pass
    :func:`dpreg.privacy.request.split_budget` (positive, summing to 1); a share of
    exactly 0 drops its mechanism; the path must keep a positive share.
    """
    if not isinstance(split, Mapping) or not split:
        raise OptionError(f"budget_split must be a non-empty dict such as {example}")
    unknown = [k for k in split if k not in keys]
    if unknown:
        raise OptionError(f"budget_split has unknown key(s) {unknown}; keys are {list(keys)}")
    out = split_budget({k: w for k, w in split.items()
                        if not (isinstance(w, numbers.Real) and w == 0)})
    if "path" not in out:
        raise OptionError("budget_split must give the path a positive share ('path')")
    return out


def plugin_split(split, keys: tuple[str, ...]) -> dict[str, float]:
    """:func:`checked_split` for engines with a private plug-in: both ``"hessian"`` and
    ``"score"`` get a share (the plug-in needs both matrices) or neither."""
    out = checked_split(split, keys, DEFAULT_BUDGET_SPLIT)
    if ("hessian" in out) != ("score" in out):
        raise OptionError("budget_split must give both 'hessian' and 'score' a share (the "
                          "plug-in needs both matrices) or neither (random scaling only)")
    return out


def _optional(check, name, value):
    if value is not None:
        check(name, value)
