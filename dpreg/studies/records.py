"""Rows that replicate functions return: one per (method, coefficient[, level]).

A replicate function returns a list of plain dicts; these helpers build them from a
fitted :class:`~dpreg.results.DPRegressionResults` or from arrays, so that every study
records the same fields (see :class:`dpreg.studies.Study`).
"""

from __future__ import annotations

import numbers
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from dpreg._checks import number_in
from dpreg.exceptions import OptionError

__all__ = ["estimate_rows", "result_rows"]


def _vector(values, p: int, what: str) -> np.ndarray:
    arr = np.asarray(getattr(values, "to_numpy", lambda: values)(), dtype=float).ravel()
    if arr.shape == (1,) and p > 1:
        arr = np.full(p, arr[0])
    if arr.shape != (p,):
        raise OptionError(f"{what} must have {p} values (one per coefficient), got "
                          f"shape {arr.shape}")
    return arr


def estimate_rows(method: str, truth, estimate, *, names: Sequence[str] | None = None,
                  lower=None, upper=None, pvalue=None, alpha: float | None = None,
                  **keys: Any) -> list[dict]:
    """Rows for one method from arrays (one row per coefficient).

    Parameters
    ----------
    method : str
        Label of the estimator or interval construction.
    truth, estimate : array-like (p,)
        The value the method targets and its estimate.
    names : sequence of str, optional
        Coefficient names (default ``x1, ..., xp``, or the index of ``estimate`` if it is
        a pandas Series).
    lower, upper : array-like (p,), optional
        Interval bounds.
    pvalue : array-like (p,), optional
        Two-sided p-values of ``H0: theta_j = truth_j``.
    alpha : float, optional
        Nominal miscoverage of the interval (and level of the test).
    **keys
        Extra grouping keys, the same for every row (e.g. ``steps=10_000``).

    Returns
    -------
    list of dict

    Examples
    --------
    >>> rows = estimate_rows("OLS", [1.0, 2.0], [1.1, 1.8], lower=[0.9, 1.5],
    ...                      upper=[1.3, 2.1], alpha=0.05)
    >>> rows[1]["coef"], rows[1]["estimate"], rows[1]["upper"]
    ('x2', 1.8, 2.1)
    """
    if not isinstance(method, str) or not method:
        raise OptionError(f"method must be a non-empty string, got {method!r}")
    p = len(np.atleast_1d(np.asarray(getattr(estimate, "to_numpy", lambda: estimate)())))
    if names is None:
        names = [str(k) for k in estimate.index] if isinstance(estimate, pd.Series) else \
            [f"x{j}" for j in range(1, p + 1)]
    names = [str(k) for k in names]
    if len(names) != p:
        raise OptionError(f"names has {len(names)} entries for {p} coefficients")
    cols = {"truth": _vector(truth, p, "truth"), "estimate": _vector(estimate, p, "estimate")}
    for what, values in (("lower", lower), ("upper", upper), ("pvalue", pvalue)):
        cols[what] = np.full(p, np.nan) if values is None else _vector(values, p, what)
    if alpha is not None:
        number_in("alpha", alpha, 0, 1)
    rows = []
    for j, name in enumerate(names):
        row = {"method": method, "coef": name}
        row.update({k: float(v[j]) for k, v in cols.items()})
        row["alpha"] = np.nan if alpha is None else float(alpha)
        row.update(keys)
        rows.append(row)
    return rows


def result_rows(res, truth, *, methods: Sequence[str] | None = None,
                alpha: float | Sequence[float] = 0.05,
                labels: Mapping[str, str] | None = None, **keys: Any) -> list[dict]:
    """Rows for a fitted Results object: one per interval method and coefficient.

    Parameters
    ----------
    res : dpreg.DPRegressionResults
        A private fit or an oracle.
    truth : array-like (p,)
        The true coefficients (or the target the intervals are for).
    methods : sequence of str, optional
        Inference methods to record (default: all of ``res.inferences`` but DP-SGD's
        ``"plugin_rs"``, which only some fits have and whose intervals are its two
        methods'; name it to record it).
    alpha : float or sequence of float
        Nominal miscoverage(s); a sequence gives one set of rows per level.
    labels : dict, optional
        Row labels by method name (default the method name, e.g. ``"plugin"``).
    **keys
        Extra grouping keys for every row.

    Returns
    -------
    list of dict
        ``pvalue`` is the two-sided p-value of ``H0: theta_j = truth_j`` by the
        method's reference law, for the statistic its interval inverts (the null is
        true, so its rejection rate is the test's size).

    Examples
    --------
    >>> import dpreg
    >>> sim = dpreg.datasets.simulate_linear(300, random_state=0)
    >>> res = dpreg.oracle(sim.formula, sim.data)
    >>> rows = result_rows(res, sim.params)
    >>> sorted(rows[0])[:4]
    ['alpha', 'coef', 'estimate', 'lower']
    """
    methods = [m for m in res.inferences if m != "plugin_rs"] if methods is None \
        else list(methods)
    labels = dict(labels or {})
    params = res.params.to_numpy()
    names = list(res.params.index)
    truth = _vector(truth, len(names), "truth")
    levels = [alpha] if isinstance(alpha, numbers.Real) else list(alpha)
    rows = []
    for method in methods:
        if method not in res.inferences:
            raise OptionError(f"method {method!r} is not available for this fit; available: "
                              f"{sorted(res.inferences)}")
        inf = res.inferences[method]
        # the statistic of the interval: centred where the interval is (the iterate
        # methods centre at theta_bar, which can differ from the reported coef)
        center = getattr(inf, "center", None)
        center = params if center is None else np.asarray(center, dtype=float)
        pval = inf.law.two_sided_pvalue((center - truth) / inf.scale)
        for a in levels:
            ci = res.conf_int(float(a), method=method).to_numpy()
            rows += estimate_rows(labels.get(method, method), truth, params, names=names,
                                  lower=ci[:, 0], upper=ci[:, 1], pvalue=pval, alpha=float(a),
                                  **keys)
    return rows
