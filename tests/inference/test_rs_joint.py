"""The multivariate random-scaling law and the RS matrix correction.

The table (dpreg/inference/_rs_joint_table.py) is checked against independent
computations: for q = 1 against the exact law of the scalar pivot squared (quadrature
in dpreg.inference.pivot, itself checked against the Anderson-Darling series), for
q = 2, 3 against Brownian paths discretized on a grid, and for q = 1 against the
critical value 6.811 (97.5% of t*) of Kiefer, Vogelsang and Bunzel (2000, Table 2
as quoted in a public replication; a finite-T simulation, so only within 2%).
"""

import numpy as np
import pytest

from dpreg.exceptions import OptionError
from dpreg.inference._rs_joint_table import QUANTILES, REPS, TAILS
from dpreg.inference.pivot import rs_pivot
from dpreg.inference.rs_joint import RSInference, contrast_scale_matrix, rs_joint_law

T = np.asarray(TAILS)
Q = np.asarray(QUANTILES)


def test_q1_column_is_the_scalar_pivot_squared():
    # P(F_1 > x) = P(|R| > sqrt x) exactly; the table's q = 1 quantiles must give the
    # tabulated tail probabilities up to Monte Carlo error (binomial sd, 4.5 sd bound).
    exact = rs_pivot.two_sided_pvalue(np.sqrt(Q[:, 0]))
    z = (exact - T) / np.sqrt(T * (1 - T) / REPS)
    assert np.max(np.abs(z)) < 4.5
    # and the law's q = 1 branch is exact
    np.testing.assert_allclose(rs_joint_law.isf(0.05, 1), rs_pivot.critical_value(0.05) ** 2,
                               rtol=1e-12)
    assert rs_joint_law.sf(rs_pivot.critical_value(0.05) ** 2, 1) == pytest.approx(0.05,
                                                                                   rel=1e-9)


def test_q1_matches_published_kvb_within_their_simulation_error():
    # KVB (2000) tabulate t* by simulation at finite T: 97.5% quantile 6.811, whose square
    # 46.39 is the 5% critical value of F_1. The exact value is 6.747^2 = 45.52; the
    # table's must lie within 2% of KVB's and within 1% of the exact one.
    crit = float(Q[np.argmin(np.abs(T - 0.05)), 0])
    assert abs(crit / 6.811 ** 2 - 1) < 0.02
    assert abs(crit / rs_pivot.critical_value(0.05) ** 2 - 1) < 0.01


def _direct_paths(q, reps, steps, rng):
    """F_q from Brownian paths on a grid of `steps` increments (no series)."""
    out = np.empty(reps)
    for i in range(0, reps, 2000):
        r = min(2000, reps - i)
        inc = rng.standard_normal((r, steps, q)) / np.sqrt(steps)
        W = np.cumsum(inc, axis=1)
        grid = np.arange(1, steps + 1) / steps
        B = W - grid[None, :, None] * W[:, -1:, :]
        M = np.einsum("rtq,rtp->rqp", B, B) / steps
        w1 = W[:, -1, :]
        out[i:i + r] = np.einsum("rq,rq->r", w1, np.linalg.solve(M, w1[..., None])[..., 0]) / q
    return out


@pytest.mark.parametrize("q", [2, 3])
def test_table_matches_direct_brownian_simulation(q):
    rng = np.random.default_rng(20261124 + q)
    reps = 20000
    stats = _direct_paths(q, reps, 400, rng)
    for a in (0.1, 0.05):
        emp = np.mean(stats > rs_joint_law.isf(a, q))
        # binomial sd at 20000 reps plus the grid's O(1/steps) bias
        assert abs(emp - a) < 4 * np.sqrt(a * (1 - a) / reps) + 0.004, (q, a, emp)


def test_law_is_not_chi_square_and_sf_inverts_isf():
    from scipy import stats

    for q in (2, 5, 12):
        x = rs_joint_law.isf(0.05, q)
        assert x > 5 * stats.chi2.isf(0.05, q) / q  # far heavier than chi2_q / q
        assert rs_joint_law.sf(x, q) == pytest.approx(0.05, rel=1e-6)
    assert rs_joint_law.sf(0.0, 3) == 1.0
    assert rs_joint_law.sf(1e9, 3) == pytest.approx(T.min())


@pytest.mark.parametrize("q", [0, 13, 2.5])
def test_untabulated_q_is_refused(q):
    with pytest.raises(OptionError, match="restrictions"):
        rs_joint_law.sf(1.0, q)


def test_contrast_correction_reduces_to_the_scalar_correction():
    # For R = e_j the corrected matrix is rho_j E Q_jj, rho_j = target_jj / path_jj, the
    # correction random_scaling.rs_inference applies to the coefficient's scale.
    rng = np.random.default_rng(1)
    A = rng.normal(size=(3, 3))
    Qm, target, path = A @ A.T + np.eye(3), np.diag([1.0, 2.0, 3.0]) + 0.1, np.eye(3) + 0.2
    inf = RSInference("rs", np.sqrt(np.diag(Qm)), rs_pivot, False, matrix=Qm, target=target,
                      path_cov=path)
    for j in range(3):
        e = np.eye(3)[[j]]
        got = contrast_scale_matrix(inf, e)[0, 0]
        assert got == pytest.approx(Qm[j, j] * target[j, j] / path[j, j], rel=1e-12)
    R = np.array([[1.0, -1.0, 0.0]])
    rho = (R @ target @ R.T) / (R @ path @ R.T)
    assert contrast_scale_matrix(inf, R)[0, 0] == pytest.approx((rho * (R @ Qm @ R.T)).item())
    uncorrected = RSInference("rs", np.ones(3), rs_pivot, False, matrix=Qm)
    np.testing.assert_allclose(contrast_scale_matrix(uncorrected, np.eye(3)), Qm)


def test_corrected_statistic_does_not_depend_on_how_h0_is_written():
    rng = np.random.default_rng(2)

    def spd():
        A = rng.normal(size=(4, 4))
        return A @ A.T + 0.5 * np.eye(4)

    inf = RSInference("rs", np.ones(4), rs_pivot, False, matrix=spd(), target=spd(),
                      path_cov=spd())
    d_theta = rng.normal(size=4)
    R = rng.normal(size=(2, 4))
    A = np.array([[2.0, 1.0], [-1.0, 3.0]])  # the same hypothesis, rows combined

    def stat(Rm):
        d = Rm @ d_theta
        return d @ np.linalg.solve(contrast_scale_matrix(inf, Rm), d)

    assert stat(A @ R) == pytest.approx(stat(R), rel=1e-10)
    assert stat(R[::-1]) == pytest.approx(stat(R), rel=1e-10)
    # and the corrected matrix maps the path variance onto the target: K Sp K' = St
    K_G = contrast_scale_matrix(RSInference("rs", np.ones(4), rs_pivot, False,
                                            matrix=inf.path_cov, target=inf.target,
                                            path_cov=inf.path_cov), R)
    np.testing.assert_allclose(K_G, R @ inf.target @ R.T, rtol=1e-10)
