"""Instrumental-variables formulas in linearmodels' syntax:
``"y ~ 1 + x + [d ~ z1 + z2]"`` split into its parts (:func:`parse_iv_formula`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import patsy

from dpreg.exceptions import FormulaError

__all__ = ["IVFormula", "parse_iv_formula"]


@dataclass(frozen=True)
class IVFormula:
    """The parts of an instrumental-variables formula ``"y ~ 1 + x + [d ~ z1 + z2]"``.

    Attributes
    ----------
    outcome : str
        The left-hand side (``"y"``).
    exog : str
        Right-hand side of the exogenous regressors, as patsy reads it: ``"1 + x"``, or
        ``"0 + x"`` when the formula has no explicit ``1`` (linearmodels' rule: an
        intercept only where the formula asks for one).
    endog : str
        The endogenous regressors (``"d"``), without an intercept.
    instruments : str
        The excluded instruments (``"z1 + z2"``), without an intercept.
    intercept : bool
        Whether the exogenous part has the intercept.
    exog_terms, endog_terms, instrument_terms : tuple of str
        Patsy's names of the terms of each part (no intercept).
    """

    outcome: str
    exog: str
    endog: str
    instruments: str
    intercept: bool
    exog_terms: tuple[str, ...]
    endog_terms: tuple[str, ...]
    instrument_terms: tuple[str, ...]

    @property
    def structural(self) -> str:
        """``outcome ~ exog + endog``: the design of the regressors ``X``."""
        return f"{self.outcome} ~ {self.exog} + {self.endog}"

    @property
    def instrumental(self) -> str:
        """``outcome ~ exog + instruments``: the design of the instruments ``W``."""
        return f"{self.outcome} ~ {self.exog} + {self.instruments}"

    @property
    def combined(self) -> str:
        """Every variable of the model (which rows are complete)."""
        return f"{self.outcome} ~ {self.exog} + {self.endog} + {self.instruments}"


_IV_EXAMPLE = "e.g. 'y ~ 1 + x + [d ~ z1 + z2]'"


def _iv_terms(rhs: str, what: str, formula: str) -> tuple[list[str], bool]:
    """Patsy's term names of ``rhs`` (intercept excluded) and whether it has one."""
    try:
        desc = patsy.ModelDesc.from_formula("__lhs__ ~ " + rhs)
    except patsy.PatsyError as err:
        raise FormulaError(f"cannot parse the {what} {rhs!r} of the IV formula "
                           f"{formula!r}: {err}") from None
    names = [t.name() for t in desc.rhs_termlist]
    return [n for n in names if n != "Intercept"], "Intercept" in names


def parse_iv_formula(formula: str) -> IVFormula:
    """Split an IV formula in linearmodels' syntax into its parts.

    Parameters
    ----------
    formula : str
        ``"outcome ~ exogenous + [endogenous ~ instruments]"``, e.g.
        ``"y ~ 1 + x + [d ~ z1 + z2]"``. As in linearmodels, the exogenous part has an
        intercept only where it says ``1``.

    Returns
    -------
    IVFormula

    Raises
    ------
    FormulaError
        Not one bracketed ``[endogenous ~ instruments]`` part on the right-hand side,
        an empty part, or a term in two parts; the message names the problem.
    """
    if not isinstance(formula, str) or "~" not in formula:
        raise FormulaError(f"an IV formula must be a string 'outcome ~ exogenous + "
                           f"[endogenous ~ instruments]' ({_IV_EXAMPLE}), got {formula!r}")
    opens, closes = formula.count("["), formula.count("]")
    if opens == 0 and closes == 0:
        raise FormulaError(f"the IV formula {formula!r} has no bracketed part "
                           f"[endogenous ~ instruments] ({_IV_EXAMPLE}); without endogenous "
                           "regressors use dp_ols")
    if opens != 1 or closes != 1:
        raise FormulaError(f"the IV formula {formula!r} must have exactly one bracketed part "
                           f"[endogenous ~ instruments] ({_IV_EXAMPLE}); list several "
                           "endogenous regressors inside it: [d1 + d2 ~ z1 + z2 + z3]")
    start, stop = formula.index("["), formula.index("]")
    if stop < start:
        raise FormulaError(f"the brackets of the IV formula {formula!r} are reversed "
                           f"({_IV_EXAMPLE})")
    inner = formula[start + 1:stop]
    outer = formula[:start] + formula[stop + 1:]
    if outer.count("~") != 1 or outer.index("~") > start:
        raise FormulaError(f"the IV formula {formula!r} needs one '~' before the bracketed "
                           f"part: 'outcome ~ exogenous + [endogenous ~ instruments]' "
                           f"({_IV_EXAMPLE})")
    if inner.count("~") != 1:
        raise FormulaError(f"the bracketed part [{inner}] of the IV formula {formula!r} needs "
                           f"exactly one '~': [endogenous ~ instruments] ({_IV_EXAMPLE})")
    outcome, rest = (part.strip() for part in outer.split("~"))
    endog, instruments = (part.strip() for part in inner.split("~"))
    if not outcome:
        raise FormulaError(f"the IV formula {formula!r} has no outcome before '~' "
                           f"({_IV_EXAMPLE})")
    if not endog:
        raise FormulaError(f"the IV formula {formula!r} names no endogenous regressor "
                           f"before the '~' in its brackets ({_IV_EXAMPLE})")
    if not instruments:
        raise FormulaError(f"the IV formula {formula!r} names no instrument after the '~' "
                           f"in its brackets ({_IV_EXAMPLE})")
    # the exogenous part: what is left of the right-hand side, without stray '+'
    exog = re.sub(r"\+\s*\+", "+", rest).strip().strip("+").strip()
    explicit = bool(re.search(r"(^|[+\s])1(\s*$|\s*\+)", exog))
    if re.search(r"(^|[+\s])(0|-\s*1)(\s*$|\s*[+-])", exog):
        explicit = False
    exog_terms = _iv_terms(exog or "0", "exogenous part", formula)[0] if exog else []
    endog_terms = _iv_terms(endog, "endogenous part", formula)[0]
    instrument_terms = _iv_terms(instruments, "instruments", formula)[0]
    if not endog_terms:
        raise FormulaError(f"the endogenous part {endog!r} of {formula!r} has no variable")
    if not instrument_terms:
        raise FormulaError(f"the instruments {instruments!r} of {formula!r} have no variable")
    for (a, ta), (b, tb) in itertools.combinations(
            [("exogenous regressors", exog_terms), ("endogenous regressors", endog_terms),
             ("instruments", instrument_terms)], 2):
        both = [t for t in ta if t in tb]
        if both:
            raise FormulaError(f"{both} appear among both the {a} and the {b} of "
                               f"{formula!r}: each variable belongs to one part")
    body = " + ".join(exog_terms)
    exog_rhs = ("1" if explicit else "0") + (" + " + body if body else "")
    return IVFormula(outcome=outcome, exog=exog_rhs, endog=" + ".join(endog_terms),
                     instruments=" + ".join(instrument_terms), intercept=explicit,
                     exog_terms=tuple(exog_terms), endog_terms=tuple(endog_terms),
                     instrument_terms=tuple(instrument_terms))
