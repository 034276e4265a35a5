"""The privacy ledger: an append-only record of every mechanism a fit ran.

The ledger holds events (descriptions of mechanisms) and the request, never data. It
checks the budget *before* it records a mechanism, and reports the totals in every
unit: GDP (mu), the rigorous (epsilon, delta) of dp_accounting (the headline), the
GDP-CLT (epsilon, delta) beside it, and zCDP.

Notes
-----
Design after diffprivlib's ``BudgetAccountant`` (check before spend, no global
default accountant) and dp_accounting's ``PrivacyAccountant.compose`` (which checks
``supports(event)`` before changing any state).
"""

from __future__ import annotations

import math

import pandas as pd

from dpreg._checks import number_in
from dpreg.exceptions import BudgetExceededError, OptionError
from dpreg.privacy.accountants import zcdp_rho_upper
from dpreg.privacy.accounting import ACCOUNTANTS, HEADLINE, budget_accountant
from dpreg.privacy.events import ZERO_OUT, GaussianMechanismEvent
from dpreg.privacy.gdp import mu_to_epsilon
from dpreg.privacy.request import PrivacyRequest, format_number

__all__ = ["Ledger", "DEFAULT_DELTA"]

DEFAULT_DELTA = 1e-5
_RTOL = 1e-9  # round-off allowance when comparing a total with the request
_COLUMNS = ["name", "scope", "adjacency", "sampling", "sample_rate", "steps", "sensitivity",
            "noise_std", "noise_multiplier", "mu"]


class Ledger:
    """Append-only record of the mechanisms of one fit, checked against a request.

    Parameters
    ----------
    request : PrivacyRequest
        The budget that the recorded mechanisms may not exceed.
    delta : float, optional
        delta at which (epsilon, delta) is reported. For an (epsilon, delta) request it
        is the request's delta (passing another one is an error); otherwise the
        caller's value, by default ``1e-5``.

    Notes
    -----
    ``record`` compares the new total with the request in the request's unit: GDP
    composition ``sqrt(sum mu_i^2)`` for mu (CLT mu for subsampled events, exact
    otherwise), the rigorous epsilon of all events at the request's delta for
    (epsilon, delta), and :func:`zcdp_rho_upper` for rho; a relative 1e-9 allows for
    round-off. The ledger pickles, and holds no data.
    """

    def __init__(self, request: PrivacyRequest, delta: float | None = None):
        if not isinstance(request, PrivacyRequest):
            raise OptionError(f"request must be a PrivacyRequest; got {type(request).__name__}")
        if delta is not None:
            number_in("delta", delta, 0, 1)
        if request.delta is not None and delta is not None and delta != request.delta:
            raise OptionError(f"delta={delta!r} differs from the request's delta="
                              f"{request.delta!r}; the ledger reports at the request's delta")
        self._request = request
        self._delta = float(request.delta or delta or DEFAULT_DELTA)
        self._events: list[GaussianMechanismEvent] = []
        self._rigorous: tuple[int, float, str] | None = None

    # ------------------------------------------------------------------ recording
    def _spent(self, events) -> tuple[float, str | None]:
        """What ``events`` spend in the request's unit, by its budget accountant
        (:func:`dpreg.privacy.accounting.budget_accountant`), and the name of the
        accountant when it is the headline's (its epsilon is then kept), else ``None``."""
        accountant = budget_accountant(self._request.unit)
        spent, name = accountant.compose(events, delta=self._delta)
        return spent, name if accountant is HEADLINE else None

    def record(self, event: GaussianMechanismEvent) -> None:
        """Append ``event`` if the budget allows it; otherwise raise and change nothing.

        Raises
        ------
        BudgetExceededError
            If the events with ``event`` would spend more than the request.
        OptionError
            If ``event`` is not a GaussianMechanismEvent or its adjacency differs from
            the events already recorded.
        """
        if not isinstance(event, GaussianMechanismEvent):
            raise OptionError(f"event must be a GaussianMechanismEvent; "
                              f"got {type(event).__name__}")
        for accountant in {budget_accountant(self._request.unit), HEADLINE}:
            if not accountant.supports(event):
                raise OptionError(f"the {accountant.name} accountant does not support "
                                  f"event {event.name!r}")
        if self._events and event.adjacency != self._events[0].adjacency:
            raise OptionError(f"event {event.name!r} has adjacency {event.adjacency!r}; the "
                              f"ledger's events use {self._events[0].adjacency!r}")
        candidate = [*self._events, event]
        spent, accountant = self._spent(candidate)
        if not spent <= self._request.value * (1 + _RTOL):
            unit = {"mu": "mu", "rho": "rho", "epsilon-delta": "epsilon"}[self._request.unit]
            raise BudgetExceededError(
                f"recording {event.name!r} would spend {unit} = {spent:.6g} in total, more "
                f"than the request {self._request.describe()}; nothing was recorded")
        self._events.append(event)
        if accountant is not None:  # the rigorous epsilon was just computed: keep it
            self._rigorous = (len(self._events), spent, accountant)

    # ------------------------------------------------------------------ totals
    @property
    def request(self) -> PrivacyRequest:
        """The budget."""
        return self._request

    @property
    def delta(self) -> float:
        """delta at which (epsilon, delta) is reported."""
        return self._delta

    @property
    def events(self) -> tuple[GaussianMechanismEvent, ...]:
        """The recorded events, in order (a tuple: the ledger cannot be edited)."""
        return tuple(self._events)

    def __len__(self) -> int:
        return len(self._events)

    @property
    def total_mu(self) -> float:
        """GDP composition ``sqrt(sum mu_i^2)`` (CLT mu for subsampled events)."""
        return math.sqrt(math.fsum(e.mu() ** 2 for e in self._events))

    @property
    def epsilon_gdp(self) -> float:
        """epsilon at :attr:`delta` from :attr:`total_mu` (GDP-CLT; an approximation)."""
        return mu_to_epsilon(self.total_mu, self._delta) if self._events else 0.0

    @property
    def epsilon_rigorous(self) -> tuple[float, str]:
        """``(epsilon, accountant name)``: the rigorous epsilon at :attr:`delta` of all
        events by dp_accounting (cached)."""
        if not self._events:
            return 0.0, "none"
        if self._rigorous is None or self._rigorous[0] != len(self._events):
            eps, name = HEADLINE.epsilon_at_delta(self._events, self._delta)
            self._rigorous = (len(self._events), eps, name)
        return self._rigorous[1], self._rigorous[2]

    @property
    def epsilon_rdp_check(self) -> tuple[float, str] | None:
        """``(epsilon, accountant name)`` at :attr:`delta` by dp_accounting's RDP
        accountant when a step samples without replacement (the cross-check of the PLD
        headline, :func:`dpreg.privacy.accountants.rdp_epsilon`; looser), else ``None``.
        """
        if not any(e.is_subsampled and e.sampling == "uniform" for e in self._events):
            return None
        cached = getattr(self, "_rdp_check", None)
        if cached is None or cached[0] != len(self._events):
            self._rdp_check = (len(self._events),
                               *ACCOUNTANTS["rdp"].epsilon_at_delta(self._events, self._delta))
            cached = self._rdp_check
        return cached[1], cached[2]

    @property
    def rho_total(self) -> float:
        """zCDP total: ``total_mu^2 / 2`` (GDP view) for mu and (epsilon, delta)
        requests; the rigorous :func:`zcdp_rho_upper` for rho requests.

        For subsampled events the GDP view is not a zCDP guarantee (zCDP gains nothing
        from subsampling; :attr:`rho_rigorous` is the guarantee), which is why
        :meth:`as_text` prints the rigorous value for them (:meth:`rho_line`)."""
        if self._request.unit == "rho":
            return self.rho_rigorous
        return self.total_mu ** 2 / 2.0

    @property
    def rho_rigorous(self) -> float:
        """The smallest rho for which all events are rho-zCDP (no amplification by
        subsampling: see :func:`zcdp_rho_upper`)."""
        return zcdp_rho_upper(self._events) if self._events else 0.0

    @property
    def replace_one_equivalent(self) -> tuple[float, float] | None:
        """``(mu, epsilon)`` that protect a replace-one change when the events are
        accounted under zero-out adjacency (Poisson sampling with n public), else ``None``.

        A replace-one change (row x to row x') is two zero-out changes (x to a null
        row, the null row to x'), so by group privacy of GDP the fit is ``2 mu``-GDP
        for it (Dong, Roth and Su 2022, s.2.5); epsilon is that ``2 mu`` converted at
        :attr:`delta` (GDP view, as the CLT total it doubles). At mu = 1, delta = 1e-5
        epsilon grows from about 4.4 to about 10.
        """
        if not self._events or self._events[0].adjacency != ZERO_OUT:
            return None
        mu2 = 2.0 * self.total_mu
        return mu2, mu_to_epsilon(mu2, self._delta)

    def rho_line(self) -> str:
        """The zCDP line of :meth:`as_text`: the rigorous rho wherever a step is
        subsampled (zCDP does not improve with subsampling), so that no figure is
        read as a zCDP guarantee that does not hold."""
        if self._request.unit == "rho":
            return f"zCDP rho: {self.rho_rigorous:.4g} (rigorous)"
        if any(e.is_subsampled for e in self._events):
            return (f"zCDP rho: {self.rho_rigorous:.4g} (rigorous; subsampling gives no "
                    "zCDP amplification, so this is far above mu^2/2)")
        return f"zCDP rho: {self.rho_total:.4g} (exact for unsampled Gaussians: mu^2/2)"

    # ------------------------------------------------------------------ output
    def to_frame(self) -> pd.DataFrame:
        """One row per mechanism: name, scope, adjacency, sampling, sample_rate, steps,
        sensitivity, noise_std, noise_multiplier, mu."""
        rows = [[e.name, e.scope, e.adjacency, e.sampling, e.sample_rate, int(e.count),
                 e.sensitivity, e.noise_std, e.noise_multiplier, e.mu()] for e in self._events]
        return pd.DataFrame(rows, columns=_COLUMNS)

    def as_text(self) -> str:
        """A table of the mechanisms with the totals, for printing under a summary."""
        frame = self.to_frame()
        lines = [f"Privacy ledger: request {self._request.describe()}"]
        if len(frame):
            shown = frame.copy()
            for col in ("sample_rate", "sensitivity", "noise_std", "noise_multiplier", "mu"):
                shown[col] = [f"{v:.4g}" for v in frame[col]]
            lines.append(shown.to_string(index=False))
        else:
            lines.append("(no mechanisms recorded)")
        local = [e for e in self._events if e.scope == "local"]
        for e in local:
            lines.append(f"Local guarantee ({e.name}): each row is mu = {e.mu():.4g} GDP on its "
                         "own before it leaves its owner (parallel composition over rows).")
        if local and len(local) < len(self._events):
            central = [e for e in self._events if e.scope == "central"]
            mu_c = math.sqrt(math.fsum(e.mu() ** 2 for e in central))
            lines.append(f"Central mechanisms ({', '.join(e.name for e in central)}) need a "
                         f"curator who sees their inputs: mu = {mu_c:.4g} on their own; the "
                         "totals below compose everything.")
        eps, name = self.epsilon_rigorous
        d = format_number(self._delta)
        lines += [
            f"Total mu (GDP composition, CLT for subsampled steps): {self.total_mu:.4g}",
            f"(epsilon, delta) rigorous: ({eps:.4g}, {d})   "
            f"[GDP-CLT: ({self.epsilon_gdp:.4g}, {d})]",
            self.rho_line(),
            f"Accountant for the rigorous (epsilon, delta): {name}",
        ]
        check = self.epsilon_rdp_check
        if check is not None:
            lines.append(f"Cross-check by {check[1]} (a looser bound for sampling without "
                         f"replacement): epsilon = {check[0]:.4g} at delta = {d}")
        equivalent = self.replace_one_equivalent
        if equivalent is not None:
            lines.append(f"Adjacency {ZERO_OUT}: a row replaced by a null row. Replace-one "
                         f"equivalent (group privacy, 2 mu): mu = {equivalent[0]:.4g}, "
                         f"epsilon = {equivalent[1]:.4g} at delta = {d} (GDP view)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Ledger {self._request.describe()}: {len(self._events)} mechanism(s), "
                f"mu = {self.total_mu:.4g}>")
