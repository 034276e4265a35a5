"""Bootstrap records: percentile and basic intervals from replicates, p-values by
inverting the interval, and tests of restrictions by contrast replicates."""

import numpy as np
import pytest

from dpreg.exceptions import OptionError
from dpreg.inference.bootstrap import bootstrap_inference


def test_bootstrap_record_intervals_and_inverted_pvalues():
    reps = np.column_stack([np.arange(-9.0, 90.0), np.arange(-9.0, 90.0) / 10 + 5])
    center = np.array([40.0, 9.0])
    pct = bootstrap_inference("pboot", reps, center, "percentile")
    basic = bootstrap_inference("pboot_basic", reps, center, "basic")
    q = np.quantile(reps, [0.05, 0.95], axis=0)
    np.testing.assert_allclose(pct.conf_int(center, 0.1), q.T)
    np.testing.assert_allclose(basic.conf_int(center, 0.1), (2 * center - q[::-1]).T)
    # 10 replicates <= 0, 90 >= 0 (one is 0): p = 2 (1 + 10) / 100; second: none <= 0
    np.testing.assert_allclose(pct.pvalues(center), [0.22, 0.02])
    # basic: v = 0 -> 2 c - 0 = (80, 18): #reps >= 80 is 10, >= 18 is 0
    np.testing.assert_allclose(basic.pvalues(center), [0.22, 0.02])
    np.testing.assert_allclose(pct.scale, reps.std(axis=0, ddof=1))
    # the p-value is where the interval's end crosses 0, within 2 / (B + 1) above it
    # (the 1 + count convention): at alpha = p the interval excludes 0, at p - 0.05 not
    for alpha, inside in ((0.22, False), (0.17, True)):
        lo, hi = pct.conf_int(center, alpha)[0]
        assert (lo <= 0 <= hi) == inside


def test_contrast_replicates_and_bad_input():
    rng = np.random.default_rng(0)
    reps = rng.normal(size=(500, 3))
    center = np.zeros(3)
    boot = bootstrap_inference("pboot", reps, center, "percentile")
    R = np.array([[1.0, -1.0, 0.0]])
    diff = boot.contrast(R, center)
    np.testing.assert_allclose(diff.replicates[:, 0], reps[:, 0] - reps[:, 1])
    np.testing.assert_allclose(diff.conf_int(R @ center, 0.1)[0],
                               np.quantile(reps[:, 0] - reps[:, 1], [0.05, 0.95]))
    np.testing.assert_allclose(boot.cov, np.cov(reps, rowvar=False))
    with pytest.raises(OptionError, match="kind"):
        bootstrap_inference("pboot", reps, center, "studentized")
    with pytest.raises(OptionError, match="at least 2"):
        bootstrap_inference("pboot", reps[:1], center, "percentile")
