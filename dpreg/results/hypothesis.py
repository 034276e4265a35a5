"""Tests of linear restrictions on a fit: ``t_test``, ``wald_test``, ``f_test``.

The restriction ``H0: R theta = q`` is given in statsmodels' spellings (``"x1 = 0"``,
``"x1 = x2, x3 = 1"``, a matrix ``R`` or a pair ``(R, q)``) and the result has the
attributes of statsmodels' ``ContrastResults``. Only released quantities enter: the
private estimate and the inference record of the chosen method, so a test costs no
privacy (post-processing).

Which inference each method uses:

* ``"plugin"`` (and ``"oracle"``, AdaSSP's plug-in): the covariance matrix
  ``cov_params()`` with the method's law. Normal law: ``t_test`` is a z test,
  ``wald_test`` a chi-square test, ``f_test`` an F test with ``df_resid`` denominator
  degrees of freedom (statsmodels' conventions for models without ``use_t``). Student
  law (the OLS oracle): t and F tests with its degrees of freedom.
* ``"rs"``: random scaling. ``t_test`` uses the exact law of the scalar pivot (as the
  coefficients' RS p-values do). ``wald_test`` and ``f_test`` of up to
  :data:`RS_JOINT_MAX` restrictions use the multivariate random-scaling pivot ``W(1)'
  (int B B')^{-1} W(1) / q`` (:mod:`dpreg.inference.rs_joint`), whose law is not
  ``chi2_q / q``; of more, the Bonferroni combination of the exact scalar tests
  (``max |t_j|``, ``p = min(1, q min_j p_j)``). At finite T the multivariate pivot
  over-rejects more the more restrictions it tests, while the scalar tests hold their
  size (``validation/joint_test_size.py``).
* DP-SGD's ``"plugin"`` joint tests (reference law from re-released covariances) of more
  than :data:`PLUGIN_JOINT_MAX` restrictions also need the Bonferroni combination of the
  scalar plug-in tests to reject: the p-value is the larger of the two (valid when either
  is). Other covariance-based joint tests (SSP's and AdaSSP's plug-in, the oracle) are
  chi-square or F tests.
* ``"plugin_rs"`` (DP-SGD's default when its eigenvalue-floor check names
  coefficients: the plug-in's intervals, random scaling's for those): a restriction that
  puts weight on a named coefficient is tested by random scaling, any other by the
  plug-in, as above (:func:`resolve_method`; :mod:`dpreg.inference.mixed`).
* ``"batch_means"``, ``"checkpoints"``, ``"runs"`` of DP-GD: the ``m`` estimates of the
  construction; ``t_test`` is the paper's t test with ``m - 1`` degrees of freedom and
  the joint tests are Hotelling's ``T^2`` as an ``F(q, m - q)`` statistic.
* ``"pboot"``, ``"pboot_basic"`` of SSP: the bootstrap replicates. ``t_test`` gives each
  restriction the bootstrap interval of ``R theta`` (percentile or basic, from the
  replicates ``R theta*_b``) and the p-value that inverts it
  (:mod:`dpreg.inference.bootstrap`); ``wald_test`` and ``f_test``, and predictions and
  marginal effects, use the covariance of the replicates with the normal law.
* Methods whose record carries its own covariance (SSP's ``"plugin"`` and
  ``"sandwich"``) use it, whatever the fit's ``cov_type``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from dpreg._checks import number_in
from dpreg.exceptions import OptionError
from dpreg.inference.base import StudentLaw
from dpreg.inference.bootstrap import BootstrapInference
from dpreg.inference.iterates import IterateInference
from dpreg.inference.mixed import MixedInference, PerCoefficientLaw
from dpreg.inference.pivot import rs_pivot
from dpreg.inference.rs_joint import P_FLOOR, RSInference, contrast_scale_matrix, rs_joint_law

__all__ = ["ContrastResults", "restriction_test", "contrast_scales", "joint_source",
           "RS_JOINT_MAX", "PLUGIN_JOINT_MAX"]

#: Joint random-scaling tests use the multivariate pivot's law up to this many
#: restrictions, the Bonferroni combination of the exact scalar tests beyond. Size at
#: 0.05 of true restrictions (``validation/joint_test_size.py``: 12 slopes, n = 1,000 at
#: mu = 0.5 and 5, n = 5,000 at mu = 2, and n = 1,000, mu = 5 at 20 n and n^2 steps, 200
#: fits per cell): the multivariate pivot 0.03-0.125 at q = 2 (0.125 at 20 n steps,
#: unwarned), 0.05-0.135 at 4 and 0.32-0.67 at 12; the scalar tests 0.03-0.065 and the
#: Bonferroni combination 0.005-0.065 at every q. So every joint test is the Bonferroni
#: combination (the pivot of one restriction is the scalar test).
RS_JOINT_MAX = 1
#: Plug-in joint tests (reference law from re-released covariances) of more restrictions
#: than this report the larger of their p-value and the Bonferroni combination's: the
#: reference law held its size up to 6 restrictions (0.005-0.09) and rejected 0.10 of
#: true nulls at 8 restrictions at n^2 steps and 0.105-0.165 at 12 (the released
#: covariance's small eigenvalues, with the default learned ranges' tight boxes).
PLUGIN_JOINT_MAX = 6


class ContrastResults:
    """Result of a test of linear restrictions, with statsmodels' attribute names.

    Attributes
    ----------
    statistic : float or ndarray
        ``tvalue`` (one per restriction) for a t test, ``fvalue`` for an F test, the
        chi-square statistic for a chi-square Wald test, ``F = W / q`` for a
        random-scaling joint test.
    pvalue : float or ndarray
    effect : ndarray or None
        ``R theta`` (t tests; the statistic is ``(effect - q) / sd``, the interval is
        about ``effect``, as in statsmodels).
    sd : ndarray or None
        Scale of ``effect``: its standard error, except for random scaling, where it is
        the random-scaling scale (not a standard error; see ``is_standard_error``).
    df_num, df_denom : float or None
    distribution : str
        ``"norm"``, ``"t"``, ``"F"``, ``"chi2"``, ``"rs"`` (scalar random-scaling
        pivot), ``"rs_F"`` (multivariate random-scaling pivot), ``"bonferroni"`` (the
        largest of the scalar tests' statistics, ``p = min(1, q min_j p_j)``) or
        ``"boot"`` (bootstrap replicates: the interval of each restriction and its
        p-value by inversion; a joint test's reference law from re-releases).
    method : str
        The inference method behind the test (``"plugin"``, ``"rs"``, ...).
    """

    def __init__(self, *, distribution: str, statistic, pvalue, method: str, effect=None,
                 sd=None, df_num=None, df_denom=None, critical=None, interval=None,
                 note: str = ""):
        self.distribution = distribution
        self.statistic = statistic
        self.pvalue = pvalue
        self.method = method
        self.effect = effect
        self.sd = sd
        self.df_num = df_num
        self.df_denom = df_denom
        self.note = note
        self.is_standard_error = distribution not in ("rs", "rs_F", "bonferroni")
        #: True when ``pvalue`` is only an upper bound: the random-scaling table's floor
        #: (:data:`dpreg.inference.rs_joint.P_FLOOR`), or ``1 / (B + 1)`` when no
        #: re-released replicate reached the statistic (``"boot"`` joint tests).
        self.pvalue_is_bound = bool(distribution == "rs_F" and np.all(
            np.asarray(pvalue) <= P_FLOOR * (1 + 1e-9)))
        self._critical = critical
        self._interval = interval  # alpha -> (k, 2) intervals (bootstrap), else None
        if effect is not None:
            self.tvalue = statistic
            self.c_names = [f"c{i}" for i in range(len(effect))]
        else:
            self.c_names = None
            if distribution in ("F", "rs_F"):
                self.fvalue = statistic
            elif distribution == "bonferroni":
                self.fvalue = float("nan")  # no F statistic: max |t| and its p-value

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """Intervals ``effect -/+ c sd`` at level ``1 - alpha`` (t tests only; a bootstrap
        method's intervals come from its replicates).

        Parameters
        ----------
        alpha : float
            In (0, 1).

        Returns
        -------
        ndarray
            ``(k, 2)``: lower and upper end for each restriction.
        """
        if self.effect is None:
            raise OptionError("confidence intervals exist for t tests only (t_test)")
        number_in("alpha", alpha, 0, 1)
        if self._interval is not None:
            return self._interval(alpha)
        half = self._critical(alpha) * self.sd
        return np.column_stack([self.effect - half, self.effect + half])

    def summary_frame(self, xname=None, alpha: float = 0.05) -> pd.DataFrame:
        """The t test's table as a DataFrame (statsmodels' columns).

        Parameters
        ----------
        xname : list of str, optional
            Row labels (default ``c0, c1, ...``).
        alpha : float
            Intervals at level ``1 - alpha``.

        Returns
        -------
        pandas.DataFrame
            ``coef``, ``std err``, the statistic, its p-value and the interval.
        """
        if self.effect is None:
            raise OptionError("summary_frame exists for t tests only (t_test)")
        stat = {"t": "t", "norm": "z", "boot": "z"}.get(self.distribution, "R")
        ci = self.conf_int(alpha)
        return pd.DataFrame({"coef": self.effect, "std err": self.sd, stat: self.statistic,
                             f"P>|{stat}|": self.pvalue, "Conf. Int. Low": ci[:, 0],
                             "Conf. Int. Upp.": ci[:, 1]},
                            index=list(xname) if xname is not None else self.c_names)

    def summary(self, xname=None, alpha: float = 0.05, title: str | None = None):
        """A table for t tests (statsmodels ``Summary``); a one-line string otherwise.

        Parameters
        ----------
        xname : list of str, optional
            Row labels of a t test's table (default ``c0, c1, ...``).
        alpha : float
            Intervals at level ``1 - alpha``.
        title : str, optional
            Title of a t test's table (default "Test for Constraints").

        Returns
        -------
        statsmodels.iolib.summary2.Summary or str
            The table of a t test; a line with the statistic and p-value of a joint
            test.
        """
        if self.effect is not None:
            from statsmodels.iolib.summary2 import Summary

            frame = self.summary_frame(xname, alpha)
            if not self.is_standard_error:
                frame = frame.rename(columns={"std err": "RS scale"})
            smry = Summary()
            smry.add_title("Test for Constraints" if title is None else title)
            smry.add_df(frame, float_format="%.4f")
            smry.add_text(f"Inference: {self.method}. {self.note}".strip())
            return smry
        if self.distribution in ("F", "rs_F"):
            p = f"<={P_FLOOR:g}" if self.pvalue_is_bound else f"={self.pvalue}"
            text = (f"<F test ({self.method}): F={self.statistic!r}, p{p}, "
                    f"df_denom={_g(self.df_denom)}, df_num={_g(self.df_num)}>")
            return text + (f"\nNote: {self.note}" if self.distribution == "rs_F"
                           and self.note else "")
        if self.distribution == "bonferroni":
            return (f"<Bonferroni test ({self.method}): max|t|={self.statistic!r}, "
                    f"p={self.pvalue:.4g}, df_num={_g(self.df_num)}>\nNote: {self.note}")
        if self.distribution == "boot":
            p = f"<={self.pvalue:.4g}" if self.pvalue_is_bound else f"={self.pvalue:.4g}"
            return (f"<{getattr(self, 'test_name', 'Wald test')} (re-released covariance, "
                    f"{self.method}): "
                    f"statistic={self.statistic!r}, p{p}, df_num={_g(self.df_num)}>"
                    f"\nNote: {self.note}")
        return (f"<Wald test (chi2, {self.method}): statistic={self.statistic}, "
                f"p-value={self.pvalue}, df_denom={_g(self.df_denom)}>")

    def __str__(self) -> str:
        smry = self.summary()
        return smry if isinstance(smry, str) else smry.as_text()

    def __repr__(self) -> str:
        return f"{type(self)}\n{self}"


def _g(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def joint_source(results, method: str | None):
    """What the joint distribution of ``method``'s estimate is built from.

    Parameters
    ----------
    results : DPRegressionResults
        The fit.
    method : str or None
        A key of ``results.inferences`` (``None``: the fit's ``cov_type``).

    Returns
    -------
    kind : {"rs", "iterates", "boot", "cov"}
        Random scaling (its joint law), iterate estimates (their sample covariance),
        bootstrap replicates, or a covariance matrix.
    inference : dpreg.inference.Inference
        The method's record.
    center : ndarray
        The estimate the method centres on.
    cov : ndarray or None
        The covariance of ``center`` (``None`` for random scaling).
    """
    inf = results.inference(method)
    if isinstance(inf, MixedInference):  # unresolved (resolve_method): random scaling's
        inf = inf.joint
    params = results.params.to_numpy()
    if isinstance(inf, RSInference):
        return "rs", inf, params, None
    if isinstance(inf, IterateInference) and inf.estimates is not None:
        est = np.asarray(inf.estimates)
        cov = np.atleast_2d(np.cov(est, rowvar=False)) / est.shape[0]
        return "iterates", inf, inf.center, cov
    if isinstance(inf, BootstrapInference) and inf.replicates is not None:
        return "boot", inf, params, inf.cov
    if inf.cov is not None:
        return "cov", inf, params, inf.cov
    cov = results.cov_matrix
    if inf.is_standard_error and cov is not None and np.allclose(
            np.sqrt(np.diag(cov)), inf.scale, rtol=1e-9, atol=0.0):
        return "cov", inf, params, cov
    raise OptionError(f"method {inf.method!r} gives per-coefficient scales but no covariance "
                      "matrix, which tests of restrictions need; available methods: "
                      f"{sorted(results.inferences)}")


def resolve_method(results, method: str | None, J) -> str | None:
    """The method that tests or predicts ``J theta`` under ``method``.

    ``method`` itself, except for ``"plugin_rs"`` (:mod:`dpreg.inference.mixed`): there
    a combination that puts weight on a coefficient whose interval is random scaling's
    is random scaling's (``"rs"``), and one that puts none is the plug-in's, so that a
    test of one coefficient agrees with its row of the summary.
    """
    inf = results.inference(method)
    if not isinstance(inf, MixedInference):
        return method
    J = np.atleast_2d(np.asarray(J, dtype=float))
    touches = bool(np.any(J[:, inf.law.mask] != 0))
    return inf.joint.method if touches else inf.plugin.method


def contrast_scales(results, J: np.ndarray, method: str | None):
    """Scale and law of each row of ``J theta`` separately, by ``method``.

    Returns ``(scales, law, method name, is_standard_error)``: for random scaling the
    corrected random-scaling scale of each contrast and the scalar pivot's law; for
    iterate constructions the t law with ``m - 1`` degrees of freedom; otherwise the
    delta-method standard errors ``sqrt(diag(J C J'))`` and the method's law; for
    ``"plugin_rs"`` each row by its own method (:func:`resolve_method`), with a
    :class:`~dpreg.inference.mixed.PerCoefficientLaw` where the rows differ.
    """
    J = np.atleast_2d(np.asarray(J, dtype=float))
    mixed = results.inference(method)
    if isinstance(mixed, MixedInference):
        # each row by its own method (resolve_method), so that a margin or contrast of
        # an unnamed coefficient agrees with the summary's row
        rows = np.any(J[:, mixed.law.mask] != 0, axis=1)
        if rows.all() or not rows.any():
            return contrast_scales(results, J, resolve_method(results, method, J))
        s_rs, law_rs, _, _ = contrast_scales(results, J[rows], mixed.joint.method)
        s_pl, law_pl, _, _ = contrast_scales(results, J[~rows], mixed.plugin.method)
        scales = np.empty(J.shape[0])
        scales[rows], scales[~rows] = s_rs, s_pl
        return scales, PerCoefficientLaw(law_pl, law_rs, rows), mixed.method, False
    src, inf, _, cov = joint_source(results, method)
    if src == "rs":
        scales = np.array([np.sqrt(contrast_scale_matrix(inf, row[None, :])[0, 0])
                           for row in J])
        return scales, rs_pivot, inf.method, False
    law = StudentLaw(np.asarray(inf.estimates).shape[0] - 1) if src == "iterates" else inf.law
    return np.sqrt(np.einsum("ij,jk,ik->i", J, cov, J)), law, inf.method, True


def _bonferroni(results, R: np.ndarray, effect: np.ndarray, method: str | None
                ) -> tuple[float, float]:
    """``(max_j |t_j|, min(1, q min_j p_j))``: the Bonferroni combination of the scalar
    tests of the ``q`` rows of ``R`` (each with its method's own law), valid at level
    ``alpha`` whenever each scalar test is at ``alpha / q``."""
    sd, law, _, _ = contrast_scales(results, R, method)
    t = effect / sd
    p = np.asarray(law.two_sided_pvalue(t), dtype=float)
    return float(np.max(np.abs(t))), float(min(1.0, len(t) * np.min(p)))


def _replicate_reference(wald, effect, C, R, replicates, n_r, method, *, f_scale):
    """A joint test whose reference law carries the noise of a private covariance.

    The statistic is the usual ``d' C~^{-1} d`` (``d = R theta - q``). Its law under
    ``H0`` is simulated: ``d*_b ~ N(0, C~)`` and ``d*_b' (R C*_b R')^{-1} d*_b`` for each
    re-released covariance ``C*_b`` (:func:`dpreg.inference.plugin.covariance_replicates`);
    the p-value is the share of replicates at least as large (with the usual ``+1``).
    The chi-square ignores the noise in ``C~``, whose small eigenvalues come out too
    small and inflate the statistic: on 12 restrictions (n = 1,000, mu = 5) it rejected a
    true null in 0.23 of fits at 0.05 (``validation/joint_test_size.py``). Draws use a
    fixed seed, so a result gives the same p-value every time (post-processing).
    """
    rng = np.random.default_rng(0)
    B = replicates.shape[0]
    draws = rng.multivariate_normal(np.zeros(n_r), C, size=B, method="eigh")
    ref = np.array([d @ np.linalg.solve(R @ Cb @ R.T, d)
                    for d, Cb in zip(draws, replicates, strict=True)])
    exceed = int(np.sum(ref >= wald))
    pvalue = float((1 + exceed) / (B + 1))
    statistic = wald / n_r if f_scale else wald
    out = ContrastResults(distribution="boot", statistic=statistic, pvalue=pvalue,
                          method=method, df_num=n_r,
                          note=f"reference law from {B} re-releases of the private "
                               "covariance (parametric bootstrap of the released "
                               "matrices), not the chi-square" + (
                                   f"; no replicate reached the statistic, so the p-value "
                                   f"is at most 1/{B + 1}" if exceed == 0 else ""))
    out.pvalue_is_bound = exceed == 0
    out.test_name = "F test" if f_scale else "Wald test"
    if f_scale:
        out.fvalue = statistic  # statsmodels' name of an F test's statistic
    return out


def restriction_test(results, r_matrix, kind: str, *, method: str | None = None,
                      use_f: bool | None = None) -> ContrastResults:
    """``t``, ``wald`` or ``F`` test of ``H0: R theta = q`` on ``results``.

    Parameters
    ----------
    results : DPRegressionResults
    r_matrix : str, list of str, dict, array-like or tuple
        The restriction in statsmodels' spellings (see
        :func:`dpreg.design.formula.linear_constraint`).
    kind : {"t", "wald", "f"}
    method : str, optional
        Inference method (default: the fit's ``cov_type``); see the module docstring.
    use_f : bool, optional
        ``wald_test`` only: F instead of chi-square for the covariance-based methods
        (default: F when the method's law is Student's t, as statsmodels' ``use_t``).
    """
    from dpreg.design.formula import linear_constraint

    R, q = linear_constraint(results.params.index, r_matrix)
    method = resolve_method(results, method, R)
    src, inf, center, cov = joint_source(results, method)
    effect = R @ center - q  # the departure from H0 (statsmodels' ``effect`` is R theta)
    n_r = R.shape[0]
    if np.linalg.matrix_rank(R) < n_r:
        raise OptionError(f"the {n_r} restrictions in r_matrix are not linearly independent")
    note = inf.note if src == "rs" else ""
    if kind == "t" and src == "boot":
        boot = inf.contrast(R, center)
        return ContrastResults(distribution="boot", statistic=effect / boot.scale,
                               pvalue=boot.pvalues_at(R @ center, q), method=inf.method,
                               effect=R @ center, sd=boot.scale,
                               interval=lambda alpha: boot.conf_int(R @ center, alpha),
                               note=f"bootstrap ({inf.kind}) interval and p-value of each "
                                    "restriction from the replicates")
    if kind == "t":
        sd, law, name, _ = contrast_scales(results, R, method)
        t = effect / sd
        dist = ("rs" if src == "rs" else "t" if isinstance(law, StudentLaw) else "norm")
        return ContrastResults(distribution=dist, statistic=t,
                               pvalue=law.two_sided_pvalue(t), method=name, effect=R @ center,
                               sd=sd, df_denom=law.df if dist == "t" else None,
                               critical=law.critical_value,
                               note="random-scaling pivot (exact law)" if src == "rs" else "")
    if src == "rs" and n_r > RS_JOINT_MAX:
        stat, pvalue = _bonferroni(results, R, effect, method)
        return ContrastResults(
            distribution="bonferroni", statistic=stat, pvalue=pvalue, method=inf.method,
            df_num=n_r, note=f"Bonferroni combination of the {n_r} exact scalar "
                             "random-scaling tests (the multivariate pivot over-rejects "
                             "joint restrictions at finite T; see "
                             "dpreg.results.hypothesis)")
    if src == "rs":
        G = contrast_scale_matrix(inf, R)
        F = float(effect @ np.linalg.solve(G, effect) / n_r)
        if n_r > 1:
            note = ("joint random-scaling test: the multivariate pivot's law (up to "
                    f"{RS_JOINT_MAX} restrictions; see dpreg.results.hypothesis)")
        return ContrastResults(distribution="rs_F", statistic=F,
                               pvalue=float(rs_joint_law.sf(F, n_r)), method=inf.method,
                               df_num=n_r, note=note)
    C = R @ cov @ R.T
    if src == "iterates":
        m = np.asarray(inf.estimates).shape[0]
        law = StudentLaw(m - 1)
        df_f = m - n_r
        if kind != "t" and df_f < 1:
            raise OptionError(f"a joint test of {n_r} restrictions needs more than {n_r} "
                              f"estimates; method {inf.method!r} has m = {m}")
    else:
        law = inf.law
        df_f = law.df if isinstance(law, StudentLaw) else float(results.df_resid)
    wald = float(effect @ np.linalg.solve(C, effect))
    if src == "iterates":
        F = (m - n_r) / (n_r * (m - 1)) * wald
        return ContrastResults(distribution="F", statistic=F,
                               pvalue=float(stats.f.sf(F, n_r, df_f)), method=inf.method,
                               df_num=n_r, df_denom=df_f,
                               note="Hotelling T^2 of the m estimates")
    if kind == "wald":
        use_f = isinstance(law, StudentLaw) if use_f is None else bool(use_f)
    replicates = inf.cov_replicates
    if src == "cov" and replicates is not None:
        out = _replicate_reference(wald, effect, C, R, replicates, n_r, inf.method,
                                   f_scale=kind == "f" or bool(use_f))
        if n_r > PLUGIN_JOINT_MAX:
            _, bonferroni = _bonferroni(results, R, effect, method)
            if bonferroni > out.pvalue:
                out.pvalue, out.pvalue_is_bound = bonferroni, False
                out.note = out.note.split("; no replicate reached")[0]
            out.note += (f"; with more than {PLUGIN_JOINT_MAX} restrictions the p-value is "
                         "the larger of this and the Bonferroni combination of the scalar "
                         f"tests ({bonferroni:.4g}): the reference law alone over-rejects "
                         "there")
        return out
    if kind == "f" or use_f:
        F = wald / n_r
        return ContrastResults(distribution="F", statistic=F,
                               pvalue=float(stats.f.sf(F, n_r, df_f)), method=inf.method,
                               df_num=n_r, df_denom=df_f)
    return ContrastResults(distribution="chi2", statistic=wald,
                           pvalue=float(stats.chi2.sf(wald, n_r)), method=inf.method,
                           df_denom=n_r)
