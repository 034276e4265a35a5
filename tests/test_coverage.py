"""Monte Carlo coverage of the 95% plug-in and random-scaling intervals.

Tolerances come from the Monte Carlo error: with R replications the per-replication
coverage (averaged over the coefficients) has standard error s/sqrt(R), s its observed
standard deviation; a cell passes when |coverage - 0.95| < 4 standard errors (plus
0.01 for the finite-n bias the validation run measures, see validation/). The fast cell
catches the batch-size normalization of random scaling: scaling by k = T/n instead of
E = T m / n covers about 50% at m = 10.
"""

import warnings

import numpy as np
import pytest

import dpreg


def coverage(n, m, sampling, mu, cov, reps, entropy):
    seeds = np.random.SeedSequence(entropy).generate_state(reps)
    hits = {"plugin": [], "rs": []}
    for s in seeds:
        sim = dpreg.datasets.simulate_linear(n, p=3, cov=cov, random_state=int(s))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dpreg.PrivacyLeakWarning)
            res = dpreg.dp_ols(sim.formula, sim.data, mu=mu, batch_size=m, sampling=sampling,
                               x_bound=4.0, clip=6.0, bounds={"y": (-10, 10)},
                               random_state=int(s) + 1)
        truth = sim.params.to_numpy()
        for method in hits:
            ci = res.conf_int(0.05, method=method).to_numpy()
            hits[method].append(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
    return {k: np.asarray(v) for k, v in hits.items()}


def check(hits):
    for method, h in hits.items():
        se = h.std(ddof=1) / np.sqrt(len(h))
        assert abs(h.mean() - 0.95) < 4 * se + 0.01, (method, h.mean(), se)


@pytest.mark.long
def test_coverage_batch_size_ten():
    check(coverage(300, 10, "uniform", 2.0, "identity", reps=300, entropy=1))


@pytest.mark.slow
@pytest.mark.parametrize("m, sampling, mu, cov", [
    (1, "uniform", 2.0, "identity"),
    (1, "poisson", 2.0, "toeplitz"),
    (50, "uniform", 0.5, "identity"),
    (10, "poisson", 2.0, "toeplitz"),
])
def test_coverage_cells(m, sampling, mu, cov):
    check(coverage(1000, m, sampling, mu, cov, reps=400, entropy=2))
