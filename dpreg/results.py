"""Results of a dpreg fit, in the statsmodels vocabulary.

One class serves private fits and oracles. A private Results object holds the private
estimate, the inference records built from private quantities, the ledger and the
public settings: no raw data and no non-private statistic, so it is safe to pickle,
print and publish (DESIGN.md, privacy rule 5). An oracle is always a separate object,
labelled non-private.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.iolib.summary2 import Summary

from dpreg.exceptions import DataError, OptionError
from dpreg.inference.base import Inference, StudentLaw

__all__ = ["DPRegressionResults"]

METHOD_LABELS = {"plugin": "Plug-in", "rs": "RS", "oracle": "Oracle",
                 "batch_means": "Batch means", "runs": "Independent runs (t)",
                 "checkpoints": "Checkpoints (t)"}


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
    nobs : int
        Rows used (after dropping missing values).
    df_model : int
        Number of regressors, not counting the intercept.
    ledger : dpreg.privacy.ledger.Ledger or None
        What the fit spent, per mechanism (``None`` for an oracle).
    private : bool
    settings : dict
        Every public setting of the fit (engine options, defaults and why).
    """

    def __init__(self, *, params: np.ndarray, names: tuple[str, ...], endog_name: str,
                 inferences: dict[str, Inference], cov_type: str, nobs: int, df_model: int,
                 private: bool, family_label: str, engine: str, settings: dict[str, Any],
                 n_dropped: int = 0, formula: str | None = None, ledger=None,
                 cov_matrix: np.ndarray | None = None, design_info=None,
                 trajectory: dict[str, np.ndarray] | None = None, notes: tuple[str, ...] = ()):
        self._names = list(names)
        self.params = pd.Series(np.asarray(params, dtype=float), index=self._names, name="params")
        self.endog_name = endog_name
        self.inferences = dict(inferences)
        self.cov_type = cov_type
        self.nobs = int(nobs)
        self.df_model = int(df_model)
        self.private = bool(private)
        self.family_label = family_label
        self.engine = engine
        self.settings = dict(settings)
        self.n_dropped = int(n_dropped)
        self.formula = formula
        self.ledger = ledger
        self._cov = cov_matrix
        self._design_info = design_info
        self.trajectory = trajectory
        self.notes = tuple(notes)

    # -- pickling: patsy's DesignInfo cannot be pickled; it only serves predict() ----
    def __getstate__(self):
        state = self.__dict__.copy()
        state["_design_info"] = None
        for key in [k for k in state if k in type(self).__dict__
                    and isinstance(type(self).__dict__[k], cached_property)]:
            del state[key]
        return state

    def _series(self, values, name):
        return pd.Series(np.asarray(values, dtype=float), index=self._names, name=name)

    def _inference(self, method: str | None) -> Inference:
        method = self.cov_type if method is None else method
        try:
            return self.inferences[method]
        except KeyError:
            raise OptionError(f"method {method!r} is not available for this fit; available: "
                              f"{sorted(self.inferences)}") from None

    @cached_property
    def bse(self) -> pd.Series:
        """Standard errors (private plug-in for a private fit); raises if none exist."""
        inf = self._standard_error_inference()
        return self._series(inf.scale, "bse")

    def _standard_error_inference(self) -> Inference:
        for inf in (self.inferences.get(self.cov_type), *self.inferences.values()):
            if inf is not None and inf.is_standard_error:
                return inf
        raise OptionError("this fit has no standard errors: random scaling gives intervals "
                          "and p-values but no consistent standard error, and no budget was "
                          "spent on the plug-in matrices (see budget_split)")

    @cached_property
    def tvalues(self) -> pd.Series:
        """Wald statistics against zero, ``params / bse`` (for intervals from iterates,
        the construction's own centre over its scale: what ``pvalues`` uses)."""
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
        """Two-sided p-values of ``H0: theta_j = 0`` by ``method`` (``"plugin"``, ``"rs"``)."""
        inf = self._inference(method)
        return self._series(inf.pvalues(self.params.to_numpy()), "pvalues")

    def conf_int(self, alpha: float = 0.05, method: str | None = None) -> pd.DataFrame:
        """Confidence intervals at level ``1 - alpha``.

        Parameters
        ----------
        alpha : float
            In (0, 1).
        method : {"plugin", "rs", "batch_means", "runs", "checkpoints", "oracle"}, optional
            Defaults to the fit's ``cov_type``; the engine decides which exist.
        """
        if not isinstance(alpha, (float, int)) or not 0 < alpha < 1:
            raise OptionError(f"alpha must be in (0, 1), got {alpha!r}")
        inf = self._inference(method)
        ci = inf.conf_int(self.params.to_numpy(), float(alpha))
        return pd.DataFrame(ci, index=self._names, columns=[0, 1])

    def cov_params(self) -> pd.DataFrame:
        """Covariance matrix of the estimate (private plug-in estimate for a private fit)."""
        if self._cov is None:
            raise OptionError("no covariance matrix: this fit spent no budget on the plug-in "
                              "matrices (see budget_split)")
        return pd.DataFrame(self._cov, index=self._names, columns=self._names)

    @property
    def df_resid(self) -> int:
        """``nobs`` minus the number of coefficients."""
        return self.nobs - len(self._names)

    def predict(self, exog=None) -> np.ndarray:
        """Linear index ``exog @ params`` for new data.

        Parameters
        ----------
        exog : DataFrame or array-like
            A DataFrame with the formula's variables (for formula fits, before
            pickling), or a design matrix with the model's columns. Results hold no
            data, so ``exog`` is required.
        """
        if exog is None:
            raise OptionError("predict needs exog: a Results object holds no data, so pass "
                              "the rows to predict for")
        if isinstance(exog, pd.DataFrame) and self._design_info is not None:
            from dpreg.formula import build_exog

            X = build_exog(self._design_info, exog)
        elif isinstance(exog, pd.DataFrame) and self.formula is not None:
            missing = [c for c in self._names if c not in exog.columns]
            if missing:
                raise DataError("after unpickling, predict needs the design matrix columns "
                                f"{self._names}; missing {missing}")
            X = exog[self._names].to_numpy(dtype=float)
        else:
            X = np.asarray(exog, dtype=float)
            if X.ndim == 1:
                X = X[None, :] if X.shape[0] == len(self._names) else X[:, None]
        if X.shape[1] != len(self._names):
            raise DataError(f"exog has {X.shape[1]} columns; the model has {len(self._names)}: "
                            f"{self._names}")
        return X @ self.params.to_numpy()

    def plot_trajectory(self, *, alpha: float = 0.05, methods=None, start: float = 0.005,
                        truth=None, path=None, show: bool = False):
        """Running estimates with their intervals against rows used (matplotlib).

        See :func:`dpreg.plotting.plot_trajectory` for the parameters; returns the
        Figure, saved to ``path`` if given.
        """
        from dpreg.plotting import plot_trajectory

        return plot_trajectory(self, alpha=alpha, methods=methods, start=start, truth=truth,
                               path=path, show=show)

    # -- presentation ------------------------------------------------------------------
    def _privacy_line(self) -> str:
        if not self.private or self.ledger is None:
            return "non-private"
        return self.ledger.request.describe()

    def summary(self, alpha: float = 0.05) -> Summary:
        """A statsmodels :class:`~statsmodels.iolib.summary2.Summary` of the fit.

        Shows the estimates, plug-in standard errors and intervals, random-scaling
        intervals and p-values (private fits), the settings and the privacy ledger. Use
        ``.as_text()``, ``.as_latex()`` or ``.as_html()``.
        """
        smry = Summary()
        kind = "DP regression" if self.private else "Oracle regression (NON-PRIVATE)"
        smry.add_title(f"{kind} results")
        top = {
            "Dep. Variable:": self.endog_name,
            "Family:": self.family_label,
            "Engine:": self.engine,
            "Inference:": METHOD_LABELS.get(self.cov_type, self.cov_type),
            "No. Observations:": str(self.nobs),
            "Rows dropped (missing):": str(self.n_dropped),
            "Df Model:": str(self.df_model),
            "Privacy:": self._privacy_line(),
        }
        if self.private and self.ledger is not None:
            eps, acct = self.ledger.epsilon_rigorous
            top["(eps, delta):"] = f"({eps:.4g}, {self.ledger.delta:.3g}) [{acct}]"
        smry.add_dict(top, ncols=2)
        smry.add_df(self._params_frame(alpha), float_format="%.4f")
        if self.settings:
            smry.add_dict({f"{k}:": _fmt(v) for k, v in self.settings.items()}, ncols=2)
        for note in self.notes:
            smry.add_text(note)
        for inf in self.inferences.values():
            if inf.note:
                smry.add_text(inf.note)
        if self.ledger is not None:
            self._add_ledger(smry)
        return smry

    def _add_ledger(self, smry: Summary) -> None:
        led = self.ledger
        frame = led.to_frame().set_index("name")
        frame.index.name = "Privacy ledger"
        frame = frame.map(lambda v: f"{v:.4g}" if isinstance(v, float) else str(v))
        smry.add_df(frame.reset_index(), index=False)
        eps, acct = led.epsilon_rigorous
        smry.add_dict({
            "Request:": led.request.describe(),
            "Total mu (GDP; CLT for subsampled steps):": f"{led.total_mu:.4g}",
            "(eps, delta) rigorous [headline]:": f"({eps:.4g}, {led.delta:.3g})",
            "(eps, delta) from GDP-CLT:": f"({led.epsilon_gdp:.4g}, {led.delta:.3g})",
            "Accountant:": acct,
        }, ncols=1)

    def _params_frame(self, alpha: float) -> pd.DataFrame:
        lo, hi = f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"
        cols = {"coef": self.params.to_numpy()}
        try:
            se_inf = self._standard_error_inference()
            cols["std err"] = se_inf.scale
            stat = "t" if isinstance(se_inf.law, StudentLaw) else "z"
            cols[stat] = se_inf.statistic(self.params.to_numpy())
            cols[f"P>|{stat}|"] = se_inf.pvalues(self.params.to_numpy())
            ci = se_inf.conf_int(self.params.to_numpy(), alpha)
            cols[lo], cols[hi] = ci[:, 0], ci[:, 1]
        except OptionError:
            pass
        if "rs" in self.inferences:
            rs = self.inferences["rs"]
            ci = rs.conf_int(self.params.to_numpy(), alpha)
            cols[f"RS {lo}"], cols[f"RS {hi}"] = ci[:, 0], ci[:, 1]
            cols["RS P>|R|"] = rs.pvalues(self.params.to_numpy())
        return pd.DataFrame(cols, index=self._names)

    def __repr__(self) -> str:
        kind = "private" if self.private else "oracle"
        return (f"<DPRegressionResults {kind} {self.family_label} n={self.nobs} "
                f"engine={self.engine} privacy={self._privacy_line()!r}>")


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
