"""What the user asked for: one privacy budget in one unit, and how to split it.

Notes
-----
Units: mu-GDP (Dong, Roth and Su 2022), (epsilon, delta)-DP (Dwork et al. 2006), or
rho-zCDP (Bun and Steinke 2016). A request is a promise: the fit's mechanisms are
calibrated so that the composed guarantee, in the request's unit and under the
accountant named in the ledger, does not exceed it.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from dpreg._checks import number_in, one_of
from dpreg.exceptions import BudgetExceededError, OptionError

__all__ = ["PrivacyRequest", "split_budget", "UNITS", "format_number"]

UNITS = ("mu", "epsilon-delta", "rho")


def format_number(x: float) -> str:
    """A number in short form: 2 -> '2', 0.5 -> '0.5', 1e-05 -> '1e-5'.

    Parameters
    ----------
    x : float
        The number.

    Returns
    -------
    str
        ``x`` to six significant digits, with an exponent written without padding.
    """
    text = f"{x:.6g}"
    if "e" in text:
        mant, exp = text.split("e")
        text = f"{mant}e{int(exp)}"
    return text


@dataclass(frozen=True)
class PrivacyRequest:
    """A privacy budget in exactly one unit.

    Parameters
    ----------
    unit : {"mu", "epsilon-delta", "rho"}
    mu, epsilon, delta, rho : float or None
        The fields of the unit; the others are None.

    Examples
    --------
    >>> PrivacyRequest.from_options(epsilon=1, delta=1e-5).describe()
    '(epsilon, delta) = (1, 1e-5)'
    """

    unit: str
    mu: float | None = None
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None

    def __post_init__(self):
        fields = {"mu": ("mu",), "epsilon-delta": ("epsilon", "delta"), "rho": ("rho",)}
        one_of("unit", self.unit, UNITS, error=BudgetExceededError)
        for name in ("mu", "epsilon", "delta", "rho"):
            value = getattr(self, name)
            if name in fields[self.unit]:
                upper = 1.0 if name == "delta" else math.inf
                object.__setattr__(self, name, number_in(name, value, 0, upper,
                                                         error=BudgetExceededError))
            elif value is not None:
                raise BudgetExceededError(f"{name} must be None for a request in "
                                          f"unit={self.unit!r}; got {value!r}")

    @classmethod
    def from_options(cls, mu=None, epsilon=None, delta=None, rho=None) -> PrivacyRequest:
        """Build a request from the user's keywords: exactly one of ``mu``,
        ``epsilon`` with ``delta``, or ``rho``.

        Raises
        ------
        BudgetExceededError
            If none or several budgets are given, ``epsilon`` comes without ``delta``
            (or ``delta`` alone), or a value is out of range: mu > 0, epsilon > 0,
            rho > 0 (finite), 0 < delta < 1.
        """
        given = {k: v for k, v in
                 {"mu": mu, "epsilon": epsilon, "delta": delta, "rho": rho}.items()
                 if v is not None}
        budgets = [k for k in ("mu", "epsilon", "rho") if k in given]
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items()) or "nothing"
        if len(budgets) != 1:
            raise BudgetExceededError(
                "give exactly one privacy budget: mu=, epsilon= with delta=, or rho=; "
                f"got {shown}")
        if budgets == ["epsilon"]:
            if delta is None:
                raise BudgetExceededError(f"epsilon needs delta in (0, 1); got {shown}")
            return cls("epsilon-delta", epsilon=epsilon, delta=delta)
        if delta is not None:
            raise BudgetExceededError(f"delta goes with epsilon only; got {shown}")
        if budgets == ["mu"]:
            return cls("mu", mu=mu)
        return cls("rho", rho=rho)

    def describe(self) -> str:
        """One line: ``"mu = 2 (Gaussian DP)"``, ``"(epsilon, delta) = (1, 1e-5)"``,
        ``"rho = 0.5 (zCDP)"``."""
        if self.unit == "mu":
            return f"mu = {format_number(self.mu)} (Gaussian DP)"
        if self.unit == "rho":
            return f"rho = {format_number(self.rho)} (zCDP)"
        return f"(epsilon, delta) = ({format_number(self.epsilon)}, {format_number(self.delta)})"

    @property
    def value(self) -> float:
        """The budget in its own unit (mu, epsilon or rho)."""
        return {"mu": self.mu, "epsilon-delta": self.epsilon, "rho": self.rho}[self.unit]

    @property
    def gdp_mu(self) -> float:
        """The Gaussian-DP ``mu`` of the request (for (epsilon, delta), the mu whose
        Gaussian tradeoff curve meets it exactly; for rho, the mu of a Gaussian
        mechanism with that zCDP rho): what the public rules in ``n mu`` read."""
        from dpreg.privacy.gdp import epsilon_to_mu, rho_to_mu

        if self.unit == "mu":
            return float(self.mu)
        if self.unit == "rho":
            return float(rho_to_mu(self.rho))
        return float(epsilon_to_mu(self.epsilon, self.delta))


def split_budget(budget_split: dict[str, float]) -> dict[str, float]:
    """Validate the shares of a budget among mechanisms.

    Parameters
    ----------
    budget_split : dict of str to float
        Weights > 0 that sum to 1 (to 1e-9), one per mechanism, e.g.
        ``{"path": 0.8, "hessian": 0.1, "score": 0.1}``.

    Returns
    -------
    dict of str to float
        The weights as floats, rescaled to sum to 1 exactly.

    Notes
    -----
    Weights split the additive quantity of the unit. In GDP that is mu^2
    (``mu_total^2 = sum mu_i^2``), so mechanism i gets ``mu_i = mu sqrt(w_i)``; in
    zCDP it is rho (``rho_i = w_i rho``), which for Gaussian mechanisms is the same
    split since ``rho = mu^2/2``. For an (epsilon, delta) request the split applies
    to the GDP scale that is then calibrated as a whole (see
    :func:`dpreg.privacy.calibration.calibrate_to_budget`).
    """
    if not isinstance(budget_split, dict) or not budget_split:
        raise OptionError(f"budget_split must be a non-empty dict of weights; "
                          f"got {budget_split!r}")
    out = {}
    for key, w in budget_split.items():
        if not isinstance(key, str) or not key:
            raise OptionError(f"budget_split keys must be non-empty strings; got {key!r}")
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not (
                math.isfinite(w) and w > 0):
            raise OptionError(f"budget_split[{key!r}] must be in (0, 1]; got {w!r}")
        out[key] = float(w)
    total = math.fsum(out.values())
    if abs(total - 1.0) > 1e-9:
        raise OptionError(f"budget_split weights must sum to 1; got {total!r} "
                          f"from {budget_split!r}")
    return {k: w / total for k, w in out.items()}
