"""Several results side by side: :func:`summary_col`."""

from __future__ import annotations

from typing import Sequence

import pandas as pd
from statsmodels.iolib.summary2 import Summary

from dpreg.exceptions import OptionError
from dpreg.results import METHOD_LABELS, DPRegressionResults

__all__ = ["summary_col"]


def summary_col(results: Sequence[DPRegressionResults], *, variables: Sequence[str] | None = None,
                model_names: Sequence[str] | None = None, title: str | None = None,
                float_format: str = "%.3f") -> Summary:
    """Set several results side by side in the layout of Table 1 of the dpsgd-inference paper.

    For each variable there is one row per (result, inference method): the oracle's
    row, then each private result's plug-in and random-scaling rows, with columns
    Estimate, Standard Error (``x`` where the method gives none, as for random
    scaling) and p-value.

    Parameters
    ----------
    results : sequence of DPRegressionResults
    variables : sequence of str, optional
        Variables to show (default: all of the first result's).
    model_names : sequence of str, optional
        Prefix for each result's rows (useful with several private fits).
    title : str, optional
    float_format : str

    Returns
    -------
    statsmodels.iolib.summary2.Summary
        Render with ``as_text()``, ``as_latex()`` or ``as_html()``.
    """
    results = list(results)
    if not results:
        raise OptionError("summary_col needs at least one result")
    if model_names is not None and len(model_names) != len(results):
        raise OptionError(f"model_names has {len(model_names)} names for {len(results)} results")
    variables = list(variables) if variables is not None else list(results[0].params.index)
    rows, index = [], []
    for var in variables:
        for k, res in enumerate(results):
            if var not in res.params.index:
                raise OptionError(f"variable {var!r} is not in result {k}; it has "
                                  f"{list(res.params.index)}")
            prefix = f"{model_names[k]} " if model_names is not None else ""
            for method, inf in res.inferences.items():
                est = res.params[var]
                j = res.params.index.get_loc(var)
                se = inf.scale[j] if inf.is_standard_error else "x"
                pval = inf.pvalues(res.params.to_numpy())[j]
                rows.append([est, se, pval])
                index.append((var, prefix + METHOD_LABELS.get(method, method)))
    frame = pd.DataFrame(rows, columns=["Estimate", "Standard Error", "p-value"],
                         index=pd.MultiIndex.from_tuples(index, names=["Variable", "Method"]))
    frame = frame.map(lambda v: v if isinstance(v, str) else float_format % v)
    flat = frame.reset_index()
    flat.loc[flat["Variable"].duplicated(), "Variable"] = ""
    smry = Summary()
    if title:
        smry.add_title(title)
    smry.add_df(flat, index=False)
    privacy = {r.ledger.request.describe() for r in results if r.private and r.ledger}
    if privacy:
        smry.add_text("Private rows: " + "; ".join(sorted(privacy)) + ". Oracle rows are "
                      "NON-PRIVATE.")
    return smry
