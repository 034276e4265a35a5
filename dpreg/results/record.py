"""What a Results object is made of: one frozen record, :class:`ResultsRecord`.

Every :class:`~dpreg.results.DPRegressionResults` is built from one record and from
nothing else: a private fit's (:func:`dpreg.fits.common.build_results`), an oracle's
(:func:`dpreg.fits.oracle.fit_oracle`) and a loaded file's alike. A Results object's
public attributes are the record's fields (``params`` labelled by ``names``); assigning
one replaces the record with a copy that has the new value.

Optional parts
--------------
Some results have parts that others lack (:data:`OPTIONAL_PARTS`): ``convergence``
(engines that run the free convergence checks; ``None`` when the checks ran but made no
report), ``checkpoint_sd`` (DP-GD), ``diagnostics`` (``diagnostics=True``),
``floor_sensitivity`` (SSP) and ``first_stage`` (IV-2SLS). A part that a result lacks is
:data:`ABSENT` in its record (the field's default), and the Results object then has no
such attribute (``hasattr`` is false), as a statsmodels result lacks the attributes of
other models. ``None`` is never used for "absent": it is a value (``convergence=None``).

What a file holds
-----------------
Pickling a record (and so saving a result) leaves out :data:`NOT_SAVED`: the patsy design
(``design_info``, rebuilt from ``design_prototype`` after loading) and the non-private
``diagnostics``, which are never written to a file.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from dpreg.results.settings import Settings

if TYPE_CHECKING:
    from dpreg.inference.base import Inference
    from dpreg.privacy.ledger import Ledger

__all__ = ["ResultsRecord", "ABSENT", "OPTIONAL_PARTS", "NOT_SAVED"]


class Absent(enum.Enum):
    """The type of :data:`ABSENT` (an enum, so that pickles keep it one object)."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"


#: The value of an optional part that a result lacks (see :data:`OPTIONAL_PARTS`).
ABSENT = Absent.ABSENT

#: The optional parts of a result: the fields of :class:`ResultsRecord` that may be
#: :data:`ABSENT`, and then are not attributes of the Results object.
OPTIONAL_PARTS = ("convergence", "checkpoint_sd", "diagnostics", "floor_sensitivity",
                  "first_stage")

#: The fields a pickled record leaves out (at their defaults): the patsy design, which
#: cannot be pickled and is rebuilt from the prototype, and the non-private diagnostics.
NOT_SAVED = {"design_info": None, "diagnostics": ABSENT}


def _optional_int(value) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True, eq=False)
class ResultsRecord:
    """Everything a Results object is made of.

    A frozen dataclass: every parameter is also an attribute of the same name, and
    ``DPRegressionResults(record)`` builds a Results object from it (``res.record`` gives
    a result's). The fits, the oracle and loading build records; a user reads them, or
    copies one with :func:`dataclasses.replace` to build a result with other values.

    Parameters
    ----------
    params : ndarray (p,)
        The estimate.
    names : tuple of str
        The coefficients' names (the labels of ``params``).
    endog_name : str
        The outcome's name.
    inferences : dict
        :class:`~dpreg.inference.base.Inference` records by method name.
    cov_type : str
        The method behind ``bse``, ``pvalues`` and ``conf_int()``.
    nobs : int or None
        Rows used; ``None`` when clusters are the privacy unit (their sizes are
        protected).
    df_model : int
        Regressors, not counting the intercept.
    private : bool
        ``False`` for an oracle.
    family_label : str
        The family's label with its constants (:meth:`dpreg.families.Family.describe`).
    engine : str
        The engine's display name.
    settings : Settings
        The public settings (a mapping of values is turned into one).
    n_dropped : int or None
        Rows dropped for missing values (``None``: protected, as ``nobs``).
    df_resid : int, optional
        The residual degrees of freedom when they are not ``nobs`` less the number of
        coefficients (absorbed fixed effects, clusters).
    formula : str, optional
        The model's formula.
    ledger : Ledger, optional
        What the fit spent (``None`` for an oracle).
    cov_matrix : ndarray (p, p), optional
        The covariance behind ``cov_params()``.
    trajectory : dict, optional
        Running estimates for plots.
    notes : tuple of str
        Reasons for the defaults and notes on the release, in order.
    design_info : patsy.DesignInfo, optional
        The formula's design, which ``predict`` builds rows with; never pickled.
    design_prototype : dict, optional
        The public description of that design (variable kinds and declared
        categories) that rebuilds it after loading; derived from ``design_info`` when
        the record has a formula and none is given.
    convergence, checkpoint_sd, diagnostics, floor_sensitivity, first_stage : object
        The optional parts (:data:`OPTIONAL_PARTS`), :data:`ABSENT` unless the fit
        made them: the free convergence checks' report (or ``None``), DP-GD's spread
        of the last checkpoints, the non-private counts of ``diagnostics=True``
        (never pickled), SSP's sensitivity to its eigenvalue floor, IV-2SLS's private
        first-stage F statistics.
    """

    params: np.ndarray
    names: tuple[str, ...]
    endog_name: str
    inferences: Mapping[str, Inference]
    cov_type: str
    nobs: int | None
    df_model: int
    private: bool
    family_label: str
    engine: str
    settings: Settings
    n_dropped: int | None = 0
    df_resid: int | None = None
    formula: str | None = None
    ledger: Ledger | None = None
    cov_matrix: np.ndarray | None = None
    trajectory: dict | None = None
    notes: tuple[str, ...] = ()
    design_info: Any = None
    design_prototype: Any = None
    convergence: Any = ABSENT
    checkpoint_sd: Any = ABSENT
    diagnostics: Any = ABSENT
    floor_sensitivity: Any = ABSENT
    first_stage: Any = ABSENT

    def __post_init__(self):
        settings = self.settings if isinstance(self.settings, Settings) else \
            Settings.from_values(dict(self.settings))
        prototype = self.design_prototype
        if prototype is None and self.design_info is not None and self.formula is not None:
            from dpreg.design.formula import design_prototype

            prototype = design_prototype(self.design_info)
        normal = {"params": np.asarray(self.params, dtype=float),
                  "names": tuple(self.names), "inferences": dict(self.inferences),
                  "nobs": _optional_int(self.nobs), "df_model": int(self.df_model),
                  "private": bool(self.private), "settings": settings,
                  "n_dropped": _optional_int(self.n_dropped),
                  "df_resid": _optional_int(self.df_resid), "notes": tuple(self.notes),
                  "design_prototype": prototype}
        for name, value in normal.items():
            object.__setattr__(self, name, value)

    def parts(self) -> dict[str, Any]:
        """The optional parts this record has, by name.

        Returns
        -------
        dict
            ``{name: value}`` of the fields of :data:`OPTIONAL_PARTS` that are not
            :data:`ABSENT`.
        """
        return {name: getattr(self, name) for name in OPTIONAL_PARTS
                if getattr(self, name) is not ABSENT}

    def __getstate__(self) -> dict[str, Any]:
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        state.update(NOT_SAVED)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # fields added after a file was written take their defaults
        for f in fields(self):
            object.__setattr__(self, f.name, state.get(f.name, f.default))
