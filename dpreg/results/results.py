"""Results of a dpreg fit, in the statsmodels vocabulary.

One class serves private fits and oracles. A private Results object holds the private
estimate, the inference records built from private quantities, the ledger and the
public settings: no raw data and no non-private statistic, so it is safe to pickle,
print and publish (user guide, Privacy: "Threat model"). An oracle is always a separate
object, labelled non-private.

A Results object is built from one frozen :class:`~dpreg.results.record.ResultsRecord`
and from nothing else (a fit's, an oracle's, a loaded file's), and a file holds that
record (:meth:`DPRegressionResults.save`).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from dpreg._checks import number_in
from dpreg.exceptions import DataError, OptionError, PrivateStatisticError
from dpreg.families import FAMILIES, Family, get_family
from dpreg.inference.base import Inference
from dpreg.pickling import read_instance, write_pickle
from dpreg.results.record import ABSENT, OPTIONAL_PARTS, ResultsRecord
from dpreg.results.summary import coefficient_frame, fit_summary
from dpreg.results.tables import Summary

__all__ = ["DPRegressionResults", "ResultsModel", "record_from_attributes"]

#: statsmodels attributes that would release statistics of the private data, and the
#: private alternative dpreg offers (or why there is none).
PRIVATE_ATTRIBUTES = {
    "fittedvalues": "predict(exog) at public covariate values",
    "resid": None, "resid_pearson": None, "resid_response": None, "resid_dev": None,
    "resid_generalized": None, "resid_anscombe": None, "wresid": None,
    "rsquared": None, "rsquared_adj": None, "prsquared": None,
    "llf": None, "llnull": None, "llr": None, "llr_pvalue": None,
    "aic": None, "bic": None, "deviance": None, "pearson_chi2": None,
    "ssr": None, "ess": None, "centered_tss": None, "uncentered_tss": None,
    "mse_model": None, "mse_resid": None, "mse_total": None, "scale": None,
    "condition_number": None, "eigenvals": None,
    "fvalue": "f_test('x1 = 0, x2 = 0, ...') of the slopes",
    "f_pvalue": "f_test('x1 = 0, x2 = 0, ...') of the slopes",
    "influence": None, "outlier_test": None, "get_influence": None,
}


def _cached_names(cls: type) -> list[str]:
    """The cached properties of ``cls`` (statistics computed once from the record)."""
    return [name for klass in cls.__mro__ for name, value in vars(klass).items()
            if isinstance(value, cached_property)]


def _field(name: str, doc: str) -> property:
    """The public attribute that is the record's field ``name``: assigning it replaces
    the record with a copy that has the new value."""

    def get(self):
        return getattr(self.record, name)

    def put(self, value):
        self._use(dataclasses.replace(self.record, **{name: value}))

    return property(get, put, doc=doc)


def _part(name: str, doc: str) -> property:
    """The public attribute of the optional part ``name``: not there (``AttributeError``)
    while the record's field is :data:`~dpreg.results.record.ABSENT`; deleting it makes
    it absent."""

    def get(self):
        value = getattr(self.record, name)
        if value is ABSENT:
            raise AttributeError(name)
        return value

    def put(self, value):
        self._use(dataclasses.replace(self.record, **{name: value}))

    def remove(self):
        put(self, ABSENT)

    return property(get, put, remove, doc=doc)


class DPRegressionResults:
    """Estimates, standard errors, intervals, p-values and the privacy ledger of a fit.

    Attributes
    ----------
    params : pandas.Series
        Estimates, labelled by the design's column names.
    bse : pandas.Series
        Standard errors: the private plug-in standard errors (all three variance parts
        of Theorem 2 of the dpsgd-inference paper) for a private fit, the usual ones
        for an oracle.
    tvalues, zvalues : pandas.Series
        ``params / bse``.
    pvalues : pandas.Series
        Two-sided p-values of ``H0: theta_j = 0`` by the fit's ``cov_type`` (plug-in:
        normal; random scaling: the exact law of the random-scaling pivot).
    nobs : int or None
        Rows used (after dropping missing values); ``None`` when clusters are the
        privacy unit (``groups=``): their sizes are protected, so the rows used and
        dropped (``n_dropped``) are not reported, and ``df_resid`` is ``G - 1``.
    df_model : int
        Number of regressors, not counting the intercept.
    ledger : dpreg.privacy.ledger.Ledger or None
        What the fit spent, per mechanism (``None`` for an oracle).
    private : bool
    settings : Settings
        Every public setting of the fit (engine options, defaults and why): a mapping of
        the summary's labels to values; ``settings.value(name)`` reads one by name.
    model : ResultsModel
        What statsmodels' own tools read from ``results.model`` (``exog_names``,
        ``endog_names``, ``formula``); no data.
    record : ResultsRecord
        The frozen record the result is built from: every attribute above is one of its
        fields or computed from them (:mod:`dpreg.results.record`).
    convergence, checkpoint_sd, diagnostics, floor_sensitivity, first_stage
        Optional parts, attributes only of the results that have them: the report of
        the free convergence checks (DP-SGD, DP-GD, LDP-SGD), DP-GD's spread of the last
        checkpoints, the non-private counts of ``diagnostics=True`` (never saved), SSP's
        sensitivity to its eigenvalue floor, IV-2SLS's private first-stage F.

    Notes
    -----
    Statistics of the private data that no mechanism released are not attributes:
    ``fittedvalues``, ``resid``, ``rsquared``, ``llf``, ``aic``, ``bic`` and their
    relatives raise :class:`~dpreg.exceptions.PrivateStatisticError` (an
    ``AttributeError``) saying so, and name a private alternative where one exists.
    """

    def __init__(self, record: ResultsRecord):
        if not isinstance(record, ResultsRecord):
            raise TypeError("a Results object is built from a ResultsRecord "
                            f"(dpreg.results.record), not a {type(record).__name__}")
        self._design_info = record.design_info
        self._use(record)

    def _use(self, record: ResultsRecord) -> None:
        """Hold ``record``, label its estimate and drop what was computed from the last
        one (the cached statistics)."""
        for name in _cached_names(type(self)):
            self.__dict__.pop(name, None)
        self._record = record
        self._names = list(record.names)
        self._params = pd.Series(record.params, index=self._names, name="params", copy=True)

    @property
    def record(self) -> ResultsRecord:
        """The frozen record the result is built from: every attribute is one of its
        fields or computed from them (:mod:`dpreg.results.record`)."""
        return self._record

    @property
    def params(self) -> pd.Series:
        """Estimates, labelled by the design's column names (assigning replaces the
        record's)."""
        return self._params

    @params.setter
    def params(self, value) -> None:
        self._use(dataclasses.replace(self._record, params=value))

    endog_name = _field("endog_name", "The outcome's name.")
    inferences = _field("inferences", "Inference records by method name "
                        "(:class:`~dpreg.inference.base.Inference`).")
    cov_type = _field("cov_type", "The method behind ``bse``, ``pvalues`` and "
                      "``conf_int()``.")
    nobs = _field("nobs", "Rows used (after dropping missing values); ``None`` when "
                  "clusters are the privacy unit (``groups=``): their sizes are "
                  "protected, so the rows used and dropped (``n_dropped``) are not "
                  "reported, and ``df_resid`` is ``G - 1``.")
    df_model = _field("df_model", "Number of regressors, not counting the intercept.")
    private = _field("private", "Whether the fit is private (``False`` for an oracle).")
    family_label = _field("family_label", "The family's label with its constants.")
    engine = _field("engine", "The engine's display name.")
    settings = _field("settings", "Every public setting of the fit (engine options, "
                      "defaults and why): a mapping of the summary's labels to values; "
                      "``settings.value(name)`` reads one by name.")
    n_dropped = _field("n_dropped", "Rows dropped for missing values, or ``None`` "
                       "(protected, as ``nobs``).")
    formula = _field("formula", "The model's formula, or ``None``.")
    ledger = _field("ledger", "What the fit spent, per mechanism (``None`` for an "
                    "oracle).")
    trajectory = _field("trajectory", "Running estimates for plots, or ``None``.")
    notes = _field("notes", "Reasons for the defaults and notes on the release.")
    convergence = _part("convergence", "The report of the free convergence checks "
                        "(``None`` when they made none); absent where none ran.")
    checkpoint_sd = _part("checkpoint_sd", "DP-GD: the spread of the last checkpoints.")
    diagnostics = _part("diagnostics", "NON-PRIVATE counts asked for with "
                        "``diagnostics=True``; never saved.")
    floor_sensitivity = _part("floor_sensitivity", "SSP: each coefficient's move and "
                              "standard-error change when the eigenvalue floor doubles.")
    first_stage = _part("first_stage", "IV-2SLS: the private first-stage F statistics.")

    def __getattr__(self, name):
        # only called for attributes that do not exist
        if name in OPTIONAL_PARTS:
            raise AttributeError(f"this {type(self).__name__} has no {name}: an optional "
                                 "part that only some fits make (dpreg.results.record)")
        if name in PRIVATE_ATTRIBUTES:
            alt = PRIVATE_ATTRIBUTES[name]
            hint = (f"Private alternative: {alt}." if alt else
                    "dpreg offers no private version of it.")
            raise PrivateStatisticError(
                f"{name} would release a statistic of the private data that no mechanism "
                f"in the ledger paid for, so a dpreg result does not have it. {hint}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def model(self) -> "ResultsModel":
        """The public description of the model (what statsmodels' tools read)."""
        return ResultsModel(formula=self.formula, exog_names=tuple(self._names),
                            endog_names=self.endog_name, family=self.family_name,
                            nobs=self.nobs)

    @property
    def family_name(self) -> str:
        """Registry name of the family (``"linear"``, ``"huber"``, ``"expectile"``,
        ``"logistic"``, ...), read off the fit's label: the family whose label it is,
        followed by nothing, its constants ``" (...)"`` or its weights ``", ..."``
        (:meth:`dpreg.families.Family.describe`); the longest such label if several."""
        label = self.family_label
        found = [name for name, fam in FAMILIES.items()
                 if label == fam.label or label.startswith((fam.label + " (", fam.label + ","))]
        if not found:
            raise OptionError(f"unknown family label {label!r}")
        return max(found, key=lambda name: len(FAMILIES[name].label))

    @property
    def family(self) -> Family:
        """The fit's family record (:class:`dpreg.families.Family`), looked up by
        :attr:`family_name`: what predictions and marginal effects read (its inverse link,
        whether the outcome is 0/1)."""
        return get_family(self.family_name)

    # -- pickling: the record (which leaves out the patsy design and the non-private
    # diagnostics, dpreg.results.record.NOT_SAVED) and any attribute set by hand --------
    def __getstate__(self):
        runtime = {"_record", "_names", "_params", "_design_info", *_cached_names(type(self))}
        state = {k: v for k, v in self.__dict__.items() if k not in runtime}
        state["_record"] = self._record
        return state

    def __setstate__(self, state):
        state = dict(state)
        record = state.pop("_record", None)
        if record is None:  # written before results were built from a record
            record, state = record_from_attributes(state)
        self.__init__(record)
        self.__dict__.update(state)

    def _series(self, values, name):
        return pd.Series(np.asarray(values, dtype=float), index=self._names, name=name)

    def inference(self, method: str | None = None) -> Inference:
        """The inference record of ``method``, the fit's ``cov_type`` by default.

        Parameters
        ----------
        method : str, optional
            A key of :attr:`inferences`.

        Returns
        -------
        dpreg.inference.Inference
            Its scale per coefficient, reference law and note (what ``conf_int``,
            ``pvalues_by``, the summaries and the tests read).
        """
        method = self.cov_type if method is None else method
        try:
            return self.inferences[method]
        except KeyError:
            raise OptionError(f"method {method!r} is not available for this fit; available: "
                              f"{sorted(self.inferences)}") from None

    @cached_property
    def bse(self) -> pd.Series:
        """Standard errors of the fit's default inference (``cov_type``, the one
        ``conf_int()``, ``pvalues`` and the summary's header follow).

        Raises :class:`~dpreg.exceptions.OptionError` when the default has no standard
        error (random scaling): then :meth:`bse_by` gives another method's.
        """
        return self.bse_by(None)

    def bse_by(self, method: str | None = None) -> pd.Series:
        """Standard errors by ``method``.

        Parameters
        ----------
        method : str, optional
            Defaults to the fit's ``cov_type``; :attr:`inferences` lists those that
            exist. Random scaling has none.

        Returns
        -------
        pandas.Series
            One standard error per coefficient.
        """
        inf = self._standard_error_inference(method)
        return self._series(inf.scale, "bse")

    def _standard_error_inference(self, method: str | None = None) -> Inference:
        """The inference of ``method`` (default ``cov_type``) if it has standard
        errors; never another method's in its place."""
        inf = self.inference(method)
        if inf.is_standard_error:
            return inf
        others = sorted(k for k, v in self.inferences.items() if v.is_standard_error)
        which = "this fit's default inference" if method is None else f"method {method!r}"
        label = {"rs": "random scaling",
                 "plugin_rs": "the plug-in with random scaling's intervals for the "
                              "coefficients whose plug-in standard errors the eigenvalue "
                              "floor set"}.get(inf.method, inf.method)
        hint = (f"bse_by({others[0]!r}) gives the {others[0]} standard errors"
                if others else "no budget was spent on the plug-in matrices (see "
                "budget_split)")
        raise OptionError(f"{which} is {label}, which gives intervals and p-values "
                          "(conf_int(), pvalues) but no consistent standard error; "
                          f"{hint}")

    @cached_property
    def tvalues(self) -> pd.Series:
        """Wald statistics against zero, ``params / bse`` (for intervals from iterates,
        the construction's own centre over its scale: what ``pvalues`` uses); of the
        default inference, as :attr:`bse`."""
        inf = self._standard_error_inference()
        return self._series(inf.statistic(self.params.to_numpy()), "tvalues")

    @property
    def zvalues(self) -> pd.Series:
        """Alias of :attr:`tvalues` (the private reference law is normal)."""
        return self.tvalues

    @cached_property
    def pvalues(self) -> pd.Series:
        """Two-sided p-values of ``H0: theta_j = 0`` by the fit's ``cov_type``."""
        return self.pvalues_by(None)

    def pvalues_by(self, method: str | None = None) -> pd.Series:
        """Two-sided p-values of ``H0: theta_j = 0`` by ``method``.

        Parameters
        ----------
        method : {"plugin", "rs", "batch_means", "runs", "checkpoints", "oracle"}, optional
            Defaults to the fit's ``cov_type``; the engine decides which exist.

        Returns
        -------
        pandas.Series
            One p-value per coefficient.
        """
        inf = self.inference(method)
        return self._series(inf.pvalues(self.params.to_numpy()), "pvalues")

    def conf_int(self, alpha: float = 0.05, method: str | None = None) -> pd.DataFrame:
        """Confidence intervals at level ``1 - alpha``.

        Parameters
        ----------
        alpha : float
            In (0, 1).
        method : {"plugin", "rs", "batch_means", "runs", "checkpoints", "oracle"}, optional
            Defaults to the fit's ``cov_type``; the engine decides which exist.

        Returns
        -------
        pandas.DataFrame
            Lower (column 0) and upper (column 1) end of each coefficient's interval.
        """
        number_in("alpha", alpha, 0, 1)
        inf = self.inference(method)
        ci = inf.conf_int(self.params.to_numpy(), float(alpha))
        return pd.DataFrame(ci, index=self._names, columns=[0, 1])

    def cov_params(self) -> pd.DataFrame:
        """Covariance matrix of the estimate (private plug-in estimate for a private fit).

        Returns
        -------
        pandas.DataFrame
            ``p x p``, labelled by the coefficients' names.
        """
        if self._record.cov_matrix is None:
            raise OptionError("no covariance matrix: this fit spent no budget on the plug-in "
                              "matrices (see budget_split)")
        return pd.DataFrame(self._record.cov_matrix, index=self._names, columns=self._names)

    @property
    def df_resid(self) -> int:
        """``nobs`` minus the number of coefficients (absorbed fixed effects included)."""
        if self._record.df_resid is not None:
            return self._record.df_resid
        return self.nobs - len(self._names)

    @property
    def cov_matrix(self) -> np.ndarray | None:
        """The private plug-in covariance matrix as an array, or ``None`` when the fit
        released none (what :meth:`cov_params` labels, without its refusal)."""
        return self._record.cov_matrix

    def exog_matrix(self, exog, transform: bool = True,
                    name: str = "exog") -> tuple[np.ndarray, list]:
        """Design rows for public covariate values, and their labels.

        Parameters
        ----------
        exog : DataFrame, dict or array-like
            As for :meth:`predict`.
        transform : bool
            Build the design from a DataFrame (or dict) through the formula.
        name : str
            The parameter named in error messages.

        Returns
        -------
        X : ndarray
            ``(k, p)`` design rows.
        labels : list or None
            The rows' labels (a DataFrame's index).
        """
        if exog is None:
            raise OptionError(f"{name} is required: a Results object holds no data, so pass "
                              "the (public) rows to predict for")
        try:
            absorbed = self.settings.value("absorb")
        except KeyError:
            absorbed = None
        if absorbed is not None:
            raise OptionError(f"predictions and margins need the absorbed fixed effects "
                              f"({absorbed}), which this fit does not report; refit with "
                              "the factor as a regressor (+ C(column)) to predict")
        if isinstance(exog, pd.DataFrame) and transform and self.formula is not None:
            design_info = self._design_info or self._rebuild_design_info()
            if design_info is not None:
                from dpreg.design.formula import build_exog

                return build_exog(design_info, exog), list(exog.index)
            missing = [c for c in self._names if c not in exog.columns]
            if missing:
                raise DataError("this result cannot rebuild its design; exog needs the "
                                f"design matrix columns {self._names}; missing {missing}")
            return exog[self._names].to_numpy(dtype=float), list(exog.index)
        if isinstance(exog, pd.DataFrame) and not transform:
            return exog.to_numpy(dtype=float), list(exog.index)
        if isinstance(exog, dict) and transform and self.formula is not None:
            return self.exog_matrix(pd.DataFrame(exog, index=None if any(
                np.ndim(v) for v in exog.values()) else [0]), name=name)
        labels = list(exog.index) if isinstance(exog, pd.DataFrame) else None
        try:
            X = np.asarray(exog, dtype=float)
        except (TypeError, ValueError):
            raise DataError(f"{name} must be a DataFrame of the formula's variables or a "
                            "numeric design matrix") from None
        if X.ndim == 1:
            X = X[None, :] if X.shape[0] == len(self._names) else X[:, None]
        if X.ndim != 2 or X.shape[1] != len(self._names):
            width = X.shape[-1] if X.ndim else 0
            raise DataError(f"{name} has {width} columns; the model has "
                            f"{len(self._names)}: {self._names}")
        if labels is None or len(labels) != X.shape[0]:
            labels = list(range(X.shape[0]))
        return X, labels

    def _rebuild_design_info(self):
        """The formula's design rebuilt from the stored prototype (after loading)."""
        prototype = self._record.design_prototype
        if prototype is None:
            return None
        from dpreg.design.formula import design_info_from_prototype

        level, frame = 0, sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__", "").startswith("dpreg"):
            frame, level = frame.f_back, level + 1
        self._design_info = design_info_from_prototype(self.formula, prototype,
                                                       eval_env=level)
        return self._design_info

    def predict(self, exog=None, transform: bool = True, which: str = "mean") -> np.ndarray:
        """Predicted means (or the linear index) at public covariate values.

        Parameters
        ----------
        exog : DataFrame, dict or array-like
            A DataFrame with the formula's variables (also after :meth:`save` and
            :func:`dpreg.load`), or a design matrix with the model's columns. Results
            hold no data, so ``exog`` is required.
        transform : bool
            Build the design from a DataFrame through the formula (statsmodels'
            meaning); ``False`` takes the DataFrame as the design matrix.
        which : {"mean", "linear"}
            ``"mean"``: ``E[y | x]``, the probability for logistic fits (statsmodels'
            default); ``"linear"``: the linear index ``x' theta``.

        Returns
        -------
        ndarray
        """
        if which not in ("mean", "linear"):
            raise OptionError(f"which must be 'mean' or 'linear', got {which!r}")
        X, _ = self.exog_matrix(exog, transform)
        eta = X @ self.params.to_numpy()
        link = self.family.inverse_link
        if which == "mean" and link is not None:
            return link(eta)[0]
        return eta

    def get_prediction(self, exog=None, transform: bool = True, *, method: str | None = None,
                       row_labels=None):
        """Predicted means at public rows with standard errors and intervals.

        Parameters
        ----------
        exog : DataFrame, dict or array-like
            As for :meth:`predict`.
        transform : bool
            As for :meth:`predict`.
        method : str, optional
            Inference method (default: the fit's ``cov_type``): delta method with the
            method's covariance, or the random-scaling scale of ``x' theta`` for
            ``"rs"`` (see :mod:`dpreg.results.prediction`).
        row_labels : sequence, optional
            Index of the ``summary_frame`` (default: ``exog``'s index).

        Returns
        -------
        dpreg.results.prediction.PredictionResults
            With ``predicted``, ``se``, ``conf_int(alpha)`` and ``summary_frame(alpha)``.
        """
        from dpreg.results.prediction import predict_rows

        X, labels = self.exog_matrix(exog, transform)
        return predict_rows(self, X, labels if row_labels is None else row_labels, method)

    def get_margeff(self, at: Any = "overall", method: str = "dydx", atexog=None,
                    dummy: bool = False, count: bool = False, *, inference: str | None = None):
        """Marginal effects ``d E[y | x] / d x`` at public covariate values.

        Parameters
        ----------
        at : {"zero"} or DataFrame, dict or array-like
            ``"zero"``: every regressor 0 and the intercept 1 (statsmodels' meaning).
            Rows of public covariate values (as for :meth:`predict`): the effects at
            each row, averaged over the rows. statsmodels' default ``"overall"`` and
            ``"mean"``, ``"median"``, ``"all"`` average over or evaluate at the private
            rows and are refused (no mechanism paid for them).
        method : {"dydx"}
        atexog : dict, optional
            ``{column name or index: value}`` set after ``at`` (so ``at="zero"`` with
            ``atexog`` evaluates at those values and zero elsewhere).
        dummy, count : bool
            Not supported (must be False).
        inference : str, optional
            Inference method (default: the fit's ``cov_type``).

        Returns
        -------
        dpreg.results.margins.Margins
        """
        from dpreg.results.margins import margins

        return margins(self, at=at, method=method, atexog=atexog, dummy=dummy, count=count,
                       inference=inference)

    # -- tests of linear restrictions (dpreg.results.hypothesis) --------------------------
    def t_test(self, r_matrix, cov_p=None, use_t=None, *, method: str | None = None):
        """The t test of each row of ``H0: R theta = q``, in statsmodels' spellings.

        Parameters
        ----------
        r_matrix : str, list of str, dict, array-like or tuple ``(R, q)``
            E.g. ``"x1 = 0"``, ``"x1 = x2"``, ``["x1", "x2 = 1"]``, or a matrix.
        cov_p : None
            statsmodels' option for another covariance: not supported (use
            ``method=``); must be None.
        use_t : None
            statsmodels' option for another reference law: not supported; must be None.
        method : str, optional
            Inference method (default: the fit's ``cov_type``). See
            :mod:`dpreg.results.hypothesis` for the law each method uses.

        Returns
        -------
        dpreg.results.hypothesis.ContrastResults
            ``effect``, ``sd``, ``tvalue``/``statistic``, ``pvalue``, ``conf_int()``,
            ``summary()``, ``summary_frame()``.
        """
        self._no_sm_options(cov_p=cov_p, use_t=use_t)
        from dpreg.results.hypothesis import restriction_test

        return restriction_test(self, r_matrix, "t", method=method)

    def wald_test(self, r_matrix, cov_p=None, invcov=None, use_f=None, df_constraints=None,
                  scalar=True, *, method: str | None = None):
        """Joint Wald test of ``H0: R theta = q`` (statsmodels' spellings).

        Parameters
        ----------
        r_matrix : str, list of str, dict, array-like or tuple ``(R, q)``
            As for :meth:`t_test`.
        cov_p, invcov : None
            statsmodels' options for another covariance: not supported; must be None.
        use_f : bool, optional
            F or chi-square for covariance-based methods (default: F when the method's
            law is Student's t, as statsmodels' ``use_t``). Random scaling uses the
            multivariate random-scaling pivot up to two restrictions and the Bonferroni
            combination of its exact scalar tests beyond (``distribution ==
            "bonferroni"``: ``statistic`` is ``max |t_j|``; see
            :mod:`dpreg.results.hypothesis`).
        df_constraints : None
            Not supported; must be None.
        scalar : bool
            Accepted for statsmodels compatibility (the statistic is always a float).
        method : str, optional
            Inference method (default: the fit's ``cov_type``).

        Returns
        -------
        dpreg.results.hypothesis.ContrastResults
            ``statistic``, ``pvalue``, ``df_num``, ``df_denom``, ``summary()``.
        """
        self._no_sm_options(cov_p=cov_p, invcov=invcov, df_constraints=df_constraints)
        from dpreg.results.hypothesis import restriction_test

        return restriction_test(self, r_matrix, "wald", method=method, use_f=use_f)

    def f_test(self, r_matrix, cov_p=None, invcov=None, *, method: str | None = None):
        """Joint F test of ``H0: R theta = q``.

        ``W / q`` against ``F(q, df)``; random scaling: the multivariate random-scaling
        pivot up to two restrictions, the Bonferroni combination of its exact scalar
        tests beyond (whose ``fvalue`` is NaN: no F statistic; ``statistic`` is ``max
        |t_j|``).

        Parameters
        ----------
        r_matrix : str, list of str, dict, array-like or tuple ``(R, q)``
            As for :meth:`t_test`.
        cov_p, invcov : None
            statsmodels' options for another covariance: not supported; must be None.
        method : str, optional
            Inference method (default: the fit's ``cov_type``).

        Returns
        -------
        dpreg.results.hypothesis.ContrastResults
            ``fvalue``, ``pvalue``, ``df_num``, ``df_denom``, ``summary()``.
        """
        self._no_sm_options(cov_p=cov_p, invcov=invcov)
        from dpreg.results.hypothesis import restriction_test

        return restriction_test(self, r_matrix, "f", method=method)

    @staticmethod
    def _no_sm_options(**options) -> None:
        given = [k for k, v in options.items() if v is not None]
        if given:
            raise OptionError(f"{given[0]} is not supported: tests use the fit's released "
                              "covariance or random-scaling matrix; choose among them with "
                              "method=")

    # -- saving -------------------------------------------------------------------------
    def save(self, fname, remove_data: bool = False) -> None:
        """Pickle the result to ``fname``.

        The file holds the result's record (:attr:`record`): private estimates,
        inference records, the ledger, public settings and the formula's public design
        description (declared categories), never data and never the non-private
        ``diagnostics``. Load it with :func:`dpreg.load`. A path is written atomically
        (:func:`dpreg.pickling.write_pickle`).

        Parameters
        ----------
        fname : str, path or writable binary file object
            Where to write.
        remove_data : bool
            Accepted for statsmodels compatibility (there is no data to remove).
        """
        write_pickle(self, fname)

    @classmethod
    def load(cls, fname) -> "DPRegressionResults":
        """Load a result saved by :meth:`save` (statsmodels' ``Results.load``).

        Parameters
        ----------
        fname : str, path or readable binary file object
            The file written by :meth:`save`.

        Returns
        -------
        DPRegressionResults
            The saved result (see :func:`dpreg.load`).

        Notes
        -----
        Loading runs pickle: load only files you trust, as with statsmodels'
        ``load_pickle``.
        """
        return read_instance(fname, (DPRegressionResults,), "dpreg result")

    def plot_trajectory(self, *, alpha: float = 0.05, methods=None, start: float = 0.005,
                        truth=None, path=None, show: bool = False):
        """Running estimates with their intervals against rows used (matplotlib).

        Parameters
        ----------
        alpha : float
            Intervals at level ``1 - alpha``.
        methods : list of str, optional
            Which intervals (``"plugin"``, ``"batch_means"``, ``"rs"``); default all.
        start : float
            Share of the path left out at the start.
        truth : array-like, optional
            True coefficients (simulations), drawn as dotted lines.
        path : str or path-like, optional
            Save the figure there (format from the suffix).
        show : bool
            Call ``matplotlib.pyplot.show()``.

        Returns
        -------
        matplotlib.figure.Figure
            See :func:`dpreg.results.plotting.plot_trajectory`.
        """
        from dpreg.results.plotting import plot_trajectory

        return plot_trajectory(self, alpha=alpha, methods=methods, start=start, truth=truth,
                               path=path, show=show)

    # -- presentation ------------------------------------------------------------------
    @property
    def privacy_description(self) -> str:
        """The budget in one line (``"mu = 1 (Gaussian DP)"``), or ``"non-private"``."""
        if not self.private or self.ledger is None:
            return "non-private"
        return self.ledger.request.describe()

    def summary(self, alpha: float = 0.05) -> Summary:
        """A statsmodels :class:`~statsmodels.iolib.summary2.Summary` of the fit.

        Shows the estimates, plug-in standard errors and intervals, random-scaling
        intervals and p-values (private fits), the settings and the privacy ledger.

        Parameters
        ----------
        alpha : float
            Intervals at level ``1 - alpha``.

        Returns
        -------
        dpreg.results.tables.Summary
            Render with ``.as_text()``, ``.as_latex()`` or ``.as_html()``.
        """
        return fit_summary(self, alpha)

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """The coefficient table of :meth:`summary` as a DataFrame.

        Parameters
        ----------
        alpha : float
            Intervals at level ``1 - alpha``.

        Returns
        -------
        pandas.DataFrame
            Estimates, standard errors, statistics, p-values and intervals of every
            method with a column (see :func:`dpreg.results.summary.coefficient_frame`).
        """
        number_in("alpha", alpha, 0, 1)
        return coefficient_frame(self, float(alpha))

    def __repr__(self) -> str:
        kind = "private" if self.private else "oracle"
        n = "protected" if self.nobs is None else self.nobs
        return (f"<DPRegressionResults {kind} {self.family_label} n={n} "
                f"engine={self.engine} privacy={self.privacy_description!r}>")


#: The record's fields under the attribute names of results saved before results were
#: built from a record (their ``__dict__``), where the two differ.
OLD_ATTRIBUTES = {"_names": "names", "_cov": "cov_matrix", "_df_resid": "df_resid",
                  "_prototype": "design_prototype", "_design_info": "design_info"}


def record_from_attributes(attributes: dict[str, Any]) -> tuple[ResultsRecord, dict[str, Any]]:
    """The record of a result saved before results were built from one, from its
    attributes (the ``__dict__`` it was pickled with), and the attributes no field
    holds (set by hand before saving; they stay attributes).

    Parameters
    ----------
    attributes : dict
        The saved attributes: ``params`` (a Series), ``_names``, ``_cov``, ... and the
        optional parts it had.

    Returns
    -------
    record : ResultsRecord
    rest : dict
        The attributes left over.
    """
    known = {f.name for f in dataclasses.fields(ResultsRecord)}
    values, rest = {}, {}
    for key, value in attributes.items():
        name = OLD_ATTRIBUTES.get(key, key)
        if name in known:
            values[name] = value
        else:
            rest[key] = value
    values["params"] = np.asarray(values["params"], dtype=float)
    return ResultsRecord(**values), rest


@dataclass(frozen=True)
class ResultsModel:
    """The public part of the model, under the names statsmodels' tools read.

    ``statsmodels.iolib.summary2.summary_col`` reads ``results.model.exog_names`` and
    ``endog_names``; a statsmodels model would also carry the data, which a dpreg
    result never does.
    """

    formula: str | None
    exog_names: tuple[str, ...]
    endog_names: str
    family: str
    nobs: int | None

    @property
    def param_names(self) -> list[str]:
        """The coefficients' names (statsmodels' ``model.param_names``)."""
        return list(self.exog_names)
