"""Plug-in intervals, with random scaling for the coefficients the eigenvalue floor set.

DP-SGD's eigenvalue-floor check (:mod:`dpreg.inference.diagnostics`) names the
coefficients whose plug-in standard errors the private Hessian's floor decides *and*
whose random-scaling intervals are over ``FLOOR_RS_RATIO`` times the plug-in's. For
those, random scaling, which needs no Hessian, is the better interval; for the others
the plug-in is, and random scaling is the weaker one in logistic paths at moderate
``n mu``. Measured (``validation/dpsgd_floor_check.py --budget-grid``; docs,
"Convergence, conditioning and diagnostics"): in fits where the floor check was the only
finding, at the learned ranges and ``n mu`` from 2,500 to 20,000, the named
coefficients' intervals covered 0.84-0.95 by the plug-in and 0.93-1.00 by random
scaling, the others' 0.97-1.00 and 0.90-0.95.

:func:`plugin_with_rs` builds that interval: per coefficient the plug-in's scale and
normal (or t) law, or random scaling's scale and pivot law. It has no standard error for
the named coefficients, so its record is not a standard-error method. A test of a
restriction, a prediction or a margin that puts weight on a named coefficient uses
random scaling (:attr:`MixedInference.joint`; a mixture of two laws has no law for a
combination, random scaling's joint law holds for every one), and any other the plug-in
(:attr:`MixedInference.plugin`), so a test of one coefficient agrees with its row of the
summary (:func:`dpreg.results.hypothesis.resolve_method`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpreg.inference.base import Inference

__all__ = ["PerCoefficientLaw", "MixedInference", "plugin_with_rs"]


class PerCoefficientLaw:
    """Each coefficient's own reference law; critical values and p-values are arrays,
    one per coefficient.

    Parameters
    ----------
    plugin_law : object
        The law of the coefficients where ``mask`` is false (the plug-in's: normal, or
        Student's t).
    rs_law : object
        The law where ``mask`` is true (the random-scaling pivot's).
    mask : array-like of bool (p,)
        Which coefficients follow ``rs_law``.
    """

    def __init__(self, plugin_law, rs_law, mask):
        self.plugin_law, self.rs_law = plugin_law, rs_law
        self.mask = np.asarray(mask, dtype=bool)
        self.name = f"{plugin_law.name} / {rs_law.name}"

    def critical_value(self, alpha):
        """Two-sided critical value of each coefficient's law.

        Parameters
        ----------
        alpha : float
            Level ``1 - alpha``.

        Returns
        -------
        ndarray (p,)
            One critical value per coefficient.
        """
        return np.where(self.mask, self.rs_law.critical_value(alpha),
                        self.plugin_law.critical_value(alpha))

    def two_sided_pvalue(self, stat):
        """Two-sided p-value of each coefficient's statistic under its own law.

        Parameters
        ----------
        stat : array-like (p,)
            The statistics, one per coefficient.

        Returns
        -------
        ndarray (p,)
            The p-values.
        """
        stat = np.asarray(stat, dtype=float)
        return np.where(self.mask, self.rs_law.two_sided_pvalue(stat),
                        self.plugin_law.two_sided_pvalue(stat))


@dataclass(frozen=True, eq=False)
class MixedInference(Inference):
    """The plug-in record with random scaling for the coefficients in ``columns``.

    Attributes
    ----------
    columns : tuple of str
        The coefficients whose interval is random scaling's.
    joint : Inference or None
        The random-scaling record: what tests, predictions and margins that put weight
        on a coefficient in ``columns`` use.
    plugin : Inference or None
        The plug-in record: what the others use, and the summary's ``std err``.
    """

    columns: tuple = ()
    joint: Inference | None = None
    plugin: Inference | None = None


def plugin_with_rs(plugin: Inference, rs: Inference, names, columns) -> MixedInference:
    """The plug-in interval, random scaling's for ``columns``.

    Parameters
    ----------
    plugin, rs : Inference
        The fit's plug-in and random-scaling records.
    names : sequence of str
        The coefficients, in order.
    columns : sequence of str
        Those whose interval is random scaling's (the floor check's names); none: the
        plug-in's intervals.

    Returns
    -------
    MixedInference
        Method ``"plugin_rs"``.
    """
    chosen = set(columns)
    mask = np.array([name in chosen for name in names], dtype=bool)
    scale = np.where(mask, rs.scale, plugin.scale)
    named = [name for name, m in zip(names, mask, strict=True) if m]
    # no note of its own: the fit's notes say when and why it is the default
    return MixedInference("plugin_rs", scale, PerCoefficientLaw(plugin.law, rs.law, mask),
                          False, "", columns=tuple(named), joint=rs, plugin=plugin)
