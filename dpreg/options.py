"""Fit options: one spelling each, validated once at the boundary.

:class:`FitOptions` holds what the user asked for; the model fills the defaults from
public quantities only (``n``, ``p``, declared bounds) and records why.
"""

from __future__ import annotations

import difflib
import math
import numbers
from dataclasses import dataclass, fields
from typing import Any, Mapping

import numpy as np

from dpreg.engines import ENGINES
from dpreg.exceptions import OptionError
from dpreg.privacy.request import split_budget

__all__ = ["FitOptions", "MODEL_OPTIONS", "check_known", "checked_split", "ENGINES", "COV_TYPES",
           "ENGINE_COV_TYPES", "AGGREGATES", "SAMPLINGS"]

#: Interval constructions each engine offers (``cov_type`` and ``conf_int(method=)``).
ENGINE_COV_TYPES = {
    "dpsgd": ("plugin", "rs"),
    "ldp_sgd": ("rs", "plugin", "batch_means"),
    "dpgd": ("batch_means", "checkpoints", "runs"),
    "adassp": ("plugin",),
}
COV_TYPES = tuple(dict.fromkeys(c for cs in ENGINE_COV_TYPES.values() for c in cs))
AGGREGATES = ("last", "mean", "ema", "upa")
#: Default step-size decay per engine: 0.501 for DP-SGD (dpsgd-inference paper), 0.51 for
#: LDP-SGD (ldp-sgd paper, s.5). DP-GD uses a constant step.
DEFAULT_LR_DECAY = {"dpsgd": 0.501, "ldp_sgd": 0.51}
SAMPLINGS = ("uniform", "poisson")
#: ``condition=``: map bounded numeric columns into [-1, 1] and precondition DP-SGD and
#: DP-GD with a private second-moment matrix (``"private"``, default), the public map only
#: (``"bounds"``), or the design as given (``"none"``); see :mod:`dpreg.conditioning`.
CONDITIONS = ("private", "bounds", "none")
MODEL_OPTIONS = ("family", "c", "tau", "weights", "missing", "bounds", "levels",
                 "eval_env")
#: Shares of mu^2 (GDP) or rho (zCDP). The Hessian gets a large share because its noise
#: enters the plug-in variance through A^{-2}: on STAR (mu = 2, 16 seeds) this split gave
#: plug-in s.e. closer to the run-to-run spread and less variable than 0.8/0.1/0.1.
DEFAULT_BUDGET_SPLIT = {"path": 0.6, "hessian": 0.3, "score": 0.1}
#: DP-SGD with ``condition="private"``: 5% of mu^2 buys the preconditioner, a private
#: second-moment matrix of the conditioned rows. It only sets the speed of convergence
#: (its noise never enters the intervals), so a small share suffices.
PRECONDITIONED_SPLIT = {"path": 0.6, "precondition": 0.05, "hessian": 0.25, "score": 0.1}
SPLIT_KEYS = ("path", "precondition", "hessian", "score")
#: LDP-SGD with the private plug-in: equal shares, so that the local path and the two
#: central matrices are each mu / sqrt(3) (the ldp-sgd paper gives each mu, Thm 3).
LDP_PLUGIN_SPLIT = {"path": 1 / 3, "hessian": 1 / 3, "score": 1 / 3}


@dataclass(frozen=True)
class FitOptions:
    """Options of :meth:`dpreg.DPRegression.fit` (see its docstring for meanings)."""

    mu: float | None = None
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    engine: str = "dpsgd"
    cov_type: str | None = None
    batch_size: int | None = None
    sampling: str = "uniform"
    steps: int | None = None
    clip: float | None = None
    lr: float | None = None
    lr_decay: float | None = None
    x_bound: float | None = None
    budget_split: Mapping[str, float] | None = None
    random_state: Any = None
    progress: bool = False
    strict: bool = False
    start_params: Any = None
    diagnostics: bool = False
    n_batches: int | None = None
    n_estimates: int = 10
    burn_in: int = 20
    aggregate: str = "mean"
    ema_beta: float = 0.999
    upa_k: int | None = None
    runs: int = 1
    condition: str = "private"

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise OptionError(f"unknown engine {self.engine!r}; choose one of {ENGINES}")
        allowed = ENGINE_COV_TYPES[self.engine]
        if self.cov_type is None:
            object.__setattr__(self, "cov_type", allowed[0])
        if self.cov_type not in allowed:
            raise OptionError(f"cov_type {self.cov_type!r} is not available with engine "
                              f"{self.engine!r}; choose one of {allowed}")
        if self.lr_decay is None and self.engine in DEFAULT_LR_DECAY:
            object.__setattr__(self, "lr_decay", DEFAULT_LR_DECAY[self.engine])
        _choice("aggregate", self.aggregate, AGGREGATES)
        _positive_int("n_batches", self.n_batches)
        _positive_int("n_estimates", self.n_estimates)
        _positive_int("upa_k", self.upa_k)
        _positive_int("runs", self.runs)
        if self.n_batches is not None and self.n_batches < 2:
            raise OptionError(f"n_batches must be at least 2 (batch means need a spread), "
                              f"got {self.n_batches}")
        if self.n_estimates < 2:
            raise OptionError(f"n_estimates must be at least 2 (a t interval needs a "
                              f"spread), got {self.n_estimates}")
        if isinstance(self.burn_in, bool) or not isinstance(self.burn_in, numbers.Integral) \
                or self.burn_in < 0:
            raise OptionError(f"burn_in must be a non-negative integer, got {self.burn_in!r}")
        if isinstance(self.ema_beta, bool) or not isinstance(self.ema_beta, numbers.Real) \
                or not 0 < self.ema_beta < 1:
            raise OptionError(f"ema_beta must be in (0, 1), got {self.ema_beta!r}")
        _choice("sampling", self.sampling, SAMPLINGS)
        _choice("condition", self.condition, CONDITIONS)
        _positive_int("batch_size", self.batch_size)
        _positive_int("steps", self.steps)
        if self.steps is not None and self.steps < 2:
            raise OptionError(f"steps must be at least 2 (random scaling needs a path), "
                              f"got {self.steps}")
        _positive("clip", self.clip)
        _positive("lr", self.lr)
        _positive("x_bound", self.x_bound)
        if self.engine not in DEFAULT_LR_DECAY:
            if self.lr_decay not in (None, 0, 0.0):
                raise OptionError(f"lr_decay does not apply to engine {self.engine!r} "
                                  f"(constant step), got {self.lr_decay!r}")
        elif isinstance(self.lr_decay, bool) or not isinstance(self.lr_decay, numbers.Real) \
                or not 0.5 < self.lr_decay < 1:
            raise OptionError(f"lr_decay must be in (0.5, 1) (Theorem 2 needs "
                              f"eta_t = lr * t^-lr_decay with lr_decay in (1/2, 1)), "
                              f"got {self.lr_decay!r}")
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

    def split(self) -> dict[str, float]:
        """The validated budget split (shares of mu^2 or rho; they sum to 1).

        Shares are validated by :func:`dpreg.privacy.request.split_budget`; here only the
        model's rules are added: known keys, a share for the path, and both plug-in
        matrices or neither. A share of exactly 0 drops the mechanism.
        """
        split = self.budget_split
        if split is None:
            split = DEFAULT_BUDGET_SPLIT
            if self.engine == "dpsgd" and self.condition == "private":
                split = PRECONDITIONED_SPLIT
            if self.engine == "ldp_sgd":  # PRS and PBM are free; PPI as in the paper
                split = LDP_PLUGIN_SPLIT if self.cov_type == "plugin" else {"path": 1.0}
        keys = tuple(DEFAULT_BUDGET_SPLIT)
        if self.engine == "dpsgd" and self.condition == "private":
            keys = SPLIT_KEYS
        out = checked_split(split, keys, DEFAULT_BUDGET_SPLIT)
        if ("hessian" in out) != ("score" in out):
            raise OptionError("budget_split must give both 'hessian' and 'score' a share (the "
                              "plug-in needs both matrices) or neither (random scaling only)")
        return out


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


def check_known(options: Mapping[str, Any], extra: tuple[str, ...] = ()) -> None:
    """Raise :class:`OptionError` for an option name that no function knows."""
    known = [f.name for f in fields(FitOptions)] + list(MODEL_OPTIONS) + list(extra)
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise OptionError(f"unknown option {name!r}{hint}")


def _choice(name, value, allowed):
    if value not in allowed:
        raise OptionError(f"{name} must be one of {allowed}, got {value!r}")


def _positive(name, value):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0 \
            or not math.isfinite(value):
        raise OptionError(f"{name} must be a positive finite number, got {value!r}")


def _positive_int(name, value):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise OptionError(f"{name} must be a positive integer, got {value!r}")
