"""Private fits, one module per engine: plan, run the engine, inference, record.

:mod:`dpreg.fits.common` holds what they share (the problem, its public settings, the
ledger's calibration, random streams); :mod:`dpreg.fits.options` the options every engine
shares (:class:`~dpreg.fits.options.CommonOptions`, :class:`~dpreg.fits.options.PathOptions`);
:mod:`dpreg.fits.registry` is the one list of engines that
:meth:`dpreg.DPRegression.fit` dispatches through. :mod:`dpreg.fits.oracle` is the
non-private M-estimation of the same designs and objectives (the benchmark
:func:`dpreg.oracle`).
"""
