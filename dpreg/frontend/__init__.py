"""Front ends: formulas and data in, results out.

- :mod:`dpreg.frontend.model`: :class:`~dpreg.DPRegression`, the model (design and
  objective) whose ``fit()`` dispatches through the registry of engines;
- :mod:`dpreg.frontend.api`: the formula functions :func:`~dpreg.dp_ols`,
  :func:`~dpreg.dp_huber`, :func:`~dpreg.dp_expectile`, :func:`~dpreg.dp_logit`,
  :func:`~dpreg.dp_iv2sls` and the non-private :func:`~dpreg.oracle`;
- :mod:`dpreg.frontend.stream`: :class:`~dpreg.LDPStream`, chunks of rows through one
  LDP-SGD analysis.

Everything here is exported by :mod:`dpreg` itself; import it from there.
"""
