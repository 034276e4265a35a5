"""``engine="auto"``: the engine and interval that the engines study found shortest
among those that covered, chosen from public information only.

The rule is the table of :mod:`dpreg.fits._engine_choice_table`, written by
``python validation/engine_comparison.py --write-choice`` from the recorded run of the
``engines`` study (:mod:`dpreg.studies.engine_comparison`): for each studied ``(n, p,
budget)`` of the linear family, the shortest interval for the population coefficients
whose fits covered within 3 Monte Carlo standard errors under both error laws. A fit is
matched to the nearest studied cell in ``log n``, ``log mu`` (an ``(epsilon, delta)`` or
``rho`` request is converted to its Gaussian-DP ``mu``) and ``p``; the inputs are the
number of rows, the number of columns, the family and the request, all public. Other
families keep the default engine, DP-SGD: there the study compares it with DP-GD, whose
intervals are for the clipped minimizer on the sample rather than the population.

The same rule is the linear family's default (no ``engine=`` given;
:func:`default_engine`), among the engines that take every option the user gave.
"""

from __future__ import annotations

import functools
import math

from dpreg.families import Family, get_family
from dpreg.fits import _engine_choice_table as table
from dpreg.privacy.gdp import epsilon_to_mu
from dpreg.privacy.request import PrivacyRequest

__all__ = ["choose_engine", "default_engine", "newton_reason", "request_mu", "DEFAULT_ENGINE",
           "STATISTICS_ENGINES", "NEWTON_MIN_N_MU", "NEWTON_MAX_P",
           "NEWTON_WIDE_MIN_N_MU", "NEWTON_WIDE_MAX_P", "NEWTON_MIN_RATE_N_MU",
           "newton_min_n_mu", "newton_rate_reason"]

#: Where a summary's reason line points for the study (its runs and replications:
#: ``dpreg.fits._engine_choice_table.SOURCE``).
CITATION = "docs: Engines compared (python -m dpreg study engines)"

#: The engine of families the study does not cover.
DEFAULT_ENGINE = "dpsgd"

#: Logistic, Huber and expectile regression run noisy Newton (``engine="newton"``) where
#: ``n mu`` is at least this and ``p`` at most :data:`NEWTON_MAX_P` (or ``n mu`` at least
#: :data:`NEWTON_WIDE_MIN_N_MU` and ``p`` at most :data:`NEWTON_WIDE_MAX_P`): the Newton
#: studies' region where its fits were unwarned and covered like the non-private fit, at
#: about its length (``validation/newton_logit.py --engine``,
#: ``validation/newton_location.py``; the logistic family's user guide page).
NEWTON_MIN_N_MU = 25_000
#: The most columns at :data:`NEWTON_MIN_N_MU` (statsmodels' fair logit, p = 8, was
#: unwarned there in every fit).
NEWTON_MAX_P = 8
#: The ``n mu`` from which wider models (up to :data:`NEWTON_WIDE_MAX_P` columns) run
#: noisy Newton: a logit with a 7-level year factor (p = 12) was unwarned in 85% of fits
#: at ``n mu`` = 25,000 (DP-SGD in 98%) and in every fit from 40,000; statsmodels' randhie
#: Huber regression (p = 10) in 5% at 40,380 (DP-SGD in every fit) and in every fit at
#: 100,950 and 201,900 (``validation/newton_logit.py --engine --design
#: participation_years``, ``validation/statsmodels_datasets.py``).
NEWTON_WIDE_MIN_N_MU = 50_000
#: The most columns the Newton studies measured (p = 15, logistic and Huber regression
#: in natural units: ``validation/newton_location.py --natural 10 15``).
NEWTON_WIDE_MAX_P = 15


#: Logistic regression's default is noisy Newton only where also ``n mu r (1 - r)`` is at
#: least this, ``r`` the outcome's rate released with the ranges' histograms (the
#: information per row of a logit scales with ``r (1 - r)``): a logit of about 3.5% ones
#: (``r (1 - r) = 0.034``) warned in 88-93% of its noisy Newton fits at ``n mu = 25,000``
#: (845) and in 8% at 50,000 (1,690), where the approval logit (``0.086``; 2,160) warned
#: in 0-3% (``validation/newton_logit.py --default-engine``,
#: ``validation/results/newton_logit_rate.txt``).
NEWTON_MIN_RATE_N_MU = 2_000


def newton_rate_reason(n: int, mu: float, rate: float, newton: str) -> tuple[bool, str]:
    """Whether a logit that meets the Newton rule keeps noisy Newton once its rate is
    known, and the summary's reason line.

    Parameters
    ----------
    n : int
        Rows (public).
    mu : float
        The request's Gaussian-DP ``mu``.
    rate : float
        The outcome's rate of ones, released with the ranges' histograms.
    newton : str
        :func:`newton_reason`'s line.

    Returns
    -------
    keep : bool
        ``n mu r (1 - r) >=`` :data:`NEWTON_MIN_RATE_N_MU`.
    reason : str
    """
    info = n * mu * rate * (1.0 - rate)
    released = (f"the outcome's rate of ones, released with the ranges' histograms, is "
                f"{rate:.3g}, so n mu r (1 - r) = {info:,.0f}")
    if info >= NEWTON_MIN_RATE_N_MU:
        return True, f"{newton[:-1]}; {released} >= {NEWTON_MIN_RATE_N_MU:,}."
    head = newton.partition(": newton")[0]  # "engine='auto'" or "default engine"
    return False, (
        f"{head}: dpsgd for logistic regression: n mu = {n * mu:,.0f} meets noisy "
        f"Newton's rule, but {released} < {NEWTON_MIN_RATE_N_MU:,}: with rare events the "
        f"Newton Hessian is mostly noise (a 3.5%-ones logit's Newton fits warned in "
        f"88-93% of data sets at n mu = 25,000); {NEWTON_CITATION}.")


def newton_min_n_mu(p: int) -> float:
    """The ``n mu`` from which noisy Newton is the default with ``p`` columns:
    :data:`NEWTON_MIN_N_MU` up to :data:`NEWTON_MAX_P` columns,
    :data:`NEWTON_WIDE_MIN_N_MU` up to :data:`NEWTON_WIDE_MAX_P`, never above."""
    if p <= NEWTON_MAX_P:
        return NEWTON_MIN_N_MU
    return NEWTON_WIDE_MIN_N_MU if p <= NEWTON_WIDE_MAX_P else math.inf


#: Where a summary's reason line points for the Newton rule.
NEWTON_CITATION = "docs: the logistic family, 'Noisy Newton'"


def request_mu(request: PrivacyRequest) -> float:
    """The Gaussian-DP ``mu`` of a request (:attr:`PrivacyRequest.gdp_mu`)."""
    return request.gdp_mu


@functools.lru_cache(maxsize=None)
def _budget_mu(budget: str) -> float:
    parts = dict(part.split("=") for part in budget.split(","))
    if "mu" in parts:
        return float(parts["mu"])
    return float(epsilon_to_mu(float(parts["eps"]), float(parts["delta"])))


#: Engines that release sufficient statistics: they need public bounds on the outcome
#: and take no Mallows weights.
STATISTICS_ENGINES = ("ssp", "adassp")


def newton_reason(n: int, p: int, family: str | Family, request: PrivacyRequest,
                  options=None) -> str | None:
    """The reason line if the default is noisy Newton, else ``None``.

    Noisy Newton is chosen for the logistic, Huber and expectile families where
    ``n mu >=`` :func:`newton_min_n_mu` (25,000 up to 8 columns, 50,000 up to 15, public
    numbers), if its ranges are learned (not ``ranges="declared"``: in codebook boxes its
    Hessian is floored and its intervals undercover) and the engine takes every option
    in ``options``. A logit that meets the rule keeps noisy Newton only if its outcome's
    rate, released with the ranges' histograms, passes :func:`newton_rate_reason` (the
    fit decides that, after the release).

    Parameters
    ----------
    n, p, family, request
        As for :func:`choose_engine`.
    options : Mapping, optional
        The options the user gave.

    Returns
    -------
    str or None
    """
    from dpreg.fits.registry import refused_option

    options = dict(options or {})
    family = get_family(family)
    mu = request_mu(request)
    if family.squared_loss or n * mu < newton_min_n_mu(p) \
            or options.get("ranges") == "declared" \
            or refused_option("newton", options) is not None:
        return None
    return (f"engine='auto': newton (noisy Newton) for {family.name} regression at n mu = "
            f"{n * mu:,.0f} >= {newton_min_n_mu(p):,} and p = {p} <= "
            f"{NEWTON_MAX_P if p <= NEWTON_MAX_P else NEWTON_WIDE_MAX_P}, where "
            f"its fits covered unwarned at about the non-private length, in a fraction of "
            f"DP-SGD's time; {NEWTON_CITATION}.")


def choose_engine(n: int, p: int, family: str | Family, request: PrivacyRequest, *,
                  statistics_possible: bool = True,
                  options=None) -> tuple[str, str | None, str]:
    """``(engine, cov_type, reason)`` for ``engine="auto"``.

    Parameters
    ----------
    n, p : int
        Rows and columns of the design (public).
    family : str or Family
        The family (or its registry name).
    request : PrivacyRequest
        The total budget.
    statistics_possible : bool
        Whether the model can be fitted by the sufficient-statistics engines (the
        outcome has declared bounds and there are no Mallows weights). Where the rule
        picks one of them and they cannot run, the default engine is chosen instead.
    options : Mapping, optional
        The options the user gave (noisy Newton is chosen only if it takes them all).

    Returns
    -------
    engine : str
    cov_type : str or None
        The chosen interval (``None``: the engine's default).
    reason : str
        One line for the summary.
    """
    family = get_family(family)
    newton = newton_reason(n, p, family, request, options)
    if newton is not None:
        return "newton", None, newton
    if not family.squared_loss or not table.RULES:
        # the engines study measured the squared loss only
        return DEFAULT_ENGINE, None, (
            f"engine='auto': {DEFAULT_ENGINE} (for the {family.name} family the engines study "
            f"compares it with DP-GD, whose intervals are for the clipped minimizer on the "
            f"sample, not the population; {DEFAULT_ENGINE} is the default).")
    mu = request_mu(request)
    if n < 1:  # no rows: nothing to choose by; the fit's own checks refuse it by name
        return DEFAULT_ENGINE, None, f"engine='auto': {DEFAULT_ENGINE} (no rows)."

    def distance(rule):
        return (abs(math.log(n / rule["n"])) + abs(math.log(mu / _budget_mu(rule["budget"])))
                + abs(p - rule["p"]) / 7.0)

    rule = min(table.RULES, key=distance)
    where = f"(n = {rule['n']}, p = {rule['p']}, {rule['budget']})"
    if not rule["engine"]:
        return DEFAULT_ENGINE, None, (
            f"engine='auto': {DEFAULT_ENGINE}, the default: in the engines study's nearest "
            f"cell {where} no interval for the population covered under both error laws "
            f"(every engine warned or undercovered there), so heed this fit's warnings; "
            f"{CITATION}.")
    if rule["engine"].partition(":")[0] in STATISTICS_ENGINES and not statistics_possible:
        return DEFAULT_ENGINE, None, (
            f"engine='auto': {DEFAULT_ENGINE}, the default: the engines study's nearest cell "
            f"{where} found {rule['engine']} shortest, but it needs declared bounds on the "
            f"outcome (and no Mallows weights); {CITATION}.")
    # "ssp:robust": SSP with robust=True (its sandwich needs the released meat)
    engine, _, variant = rule["engine"].partition(":")
    shown = f"{engine} (robust=True)" if variant == "robust" else engine
    runner = (f"; next best {rule['next']}, {rule['ratio']:.2f} times longer"
              if rule["next"] else "")
    reason = (f"engine='auto': {shown} with {rule['method']} intervals, the "
              f"shortest that covered (unwarned coverage {rule['coverage']:.3f} over "
              f"{rule['reps']} fits, both error laws) in the engines study's nearest cell "
              f"{where}{runner}; "
              f"{CITATION}.")
    return engine, rule["method"], reason


#: The engines a default fit falls back to, in order, when the rule's choice does not
#: take an option the user gave (DP-SGD takes the most; SSP takes ``groups``, ``absorb``).
FALLBACK_ENGINES = (DEFAULT_ENGINE, "ssp")


def default_engine(n: int, p: int, family: str | Family, request: PrivacyRequest,
                   options, *, statistics_possible: bool = True
                   ) -> tuple[str, str | None, str | None]:
    """``(engine, cov_type, reason)`` when no ``engine=`` is given.

    The linear family takes :func:`choose_engine`'s choice (the shortest interval that
    covered in the engines study's nearest cell) if that engine takes every option in
    ``options``; otherwise the first of :data:`FALLBACK_ENGINES` that does (so that an
    option such as ``steps=`` or ``groups=`` keeps meaning what it says). The other
    families take noisy Newton where :func:`newton_reason` gives it, and
    :data:`DEFAULT_ENGINE` otherwise, with no reason line. Every input is public.

    Parameters
    ----------
    n, p, family, request, statistics_possible
        As for :func:`choose_engine`.
    options : Mapping
        The options the user gave.

    Returns
    -------
    engine : str
    cov_type : str or None
        The chosen interval, ``None`` for the engine's default or where the user gave one.
    reason : str or None
        One line for the summary (``None`` for the other families).
    """
    from dpreg.fits.registry import refused_option

    family = get_family(family)
    newton = newton_reason(n, p, family, request, options)
    if newton is not None:
        return "newton", None, newton.replace("engine='auto'", "default engine", 1)
    if not family.squared_loss:
        return DEFAULT_ENGINE, None, None
    if options.get("groups") is not None and refused_option("ssp", options) is None:
        # the engines study is of independent rows; with clusters the linear default
        # stays SSP's cluster-robust sandwich (validated in the clusters study)
        return "ssp", None, ("default engine: ssp with clusters as the privacy unit (its "
                             "cluster-robust sandwich; engine='dpsgd' also takes groups=)")
    engine, cov_type, reason = choose_engine(n, p, family, request,
                                             statistics_possible=statistics_possible)
    reason = reason.replace("engine='auto'", "default engine (engine='auto')", 1)
    if options.get("cov_type") is not None:
        cov_type = None
    refused = refused_option(engine, options)
    if refused is None:
        return engine, cov_type, reason
    for fallback in FALLBACK_ENGINES:
        if fallback != engine and refused_option(fallback, options) is None:
            return fallback, None, (
                f"default engine: {fallback}, since {refused}= does not apply to "
                f"{engine}, the choice of engine='auto' here")
    return DEFAULT_ENGINE, None, None
