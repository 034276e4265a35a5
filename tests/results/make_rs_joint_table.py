"""Make dpreg/inference/_rs_joint_table.py: quantiles of the multivariate random-scaling pivot.

The law tabulated is that of

    F_q = W(1)' ( int_0^1 B(r) B(r)' dr )^{-1} W(1) / q,    B(r) = W(r) - r W(1),

with W a q-dimensional standard Brownian motion: the limit of the random-scaling Wald
statistic of averaged SGD for q linear restrictions (Lee, Liao, Seo and Shin 2022,
AAAI 36(7), 7381-7389, s.4), the F* statistic of Kiefer, Vogelsang and Bunzel (2000,
Econometrica 68(3), 695-714). It is not chi-square / q.

Method (no time discretization). W(1) is independent of the bridge B, and the
Karhunen-Loeve expansion B(r) = sum_k sqrt(2) sin(k pi r) Z_k / (k pi), Z_k iid
N(0, I_q), gives int B B' = sum_k Z_k Z_k' / (k pi)^2 exactly (the sines are
orthonormal in L2[0, 1] after the factor sqrt 2). The series is summed to K = 100 terms
and its remainder replaced by its mean c_K I_q, c_K = sum_{k > K} (k pi)^-2 (each entry
of the remainder has standard deviation below 1e-4, against E int B^2 = 1/6). One set
of draws (REPS replicates, seed SEED) serves every q: the q-dimensional statistic uses
the first q coordinates, so each column has the exact law of F_q marginally (columns
are dependent, which does not matter for a table of marginal quantiles).

Monte Carlo precision: the quantile at upper-tail probability a has relative standard
error about sqrt(a (1 - a) / REPS) / (a * |d log x / d log a|^-1), under 0.5% for
a >= 0.01 and about 2% at a = 1e-4 with REPS = 10^6. The test
tests/inference/test_rs_joint.py checks q = 1 against the exact law of the scalar pivot
squared (dpreg.inference.pivot, an independent quadrature), and q = 2, 3 against a
direct discretization of Brownian paths.

Run: python tests/results/make_rs_joint_table.py   (about a minute; numpy's PCG64)
"""

import sys
from pathlib import Path

import numpy as np

SEED = 20261124
REPS = 1_000_000
CHUNK = 20_000
K = 100
Q_MAX = 12
# upper-tail probabilities a: P(F_q > x_a) = a
TAILS = np.unique(np.round(np.concatenate([
    np.geomspace(1e-4, 1e-2, 41), np.linspace(0.0125, 0.2, 16),
    np.linspace(0.22, 0.98, 39), [0.99, 0.995, 0.999]]), 10))

OUT = Path(__file__).resolve().parents[2] / "dpreg" / "inference" / "_rs_joint_table.py"


def simulate():
    rng = np.random.default_rng(SEED)
    k = np.arange(1, K + 1)
    weights = 1.0 / (k * np.pi) ** 2
    tail = 1.0 / 6.0 - weights.sum()  # sum_{k > K} (k pi)^-2, since sum_k (k pi)^-2 = 1/6
    stats = np.empty((REPS, Q_MAX))
    for start in range(0, REPS, CHUNK):
        r = min(CHUNK, REPS - start)
        z = rng.standard_normal((r, K, Q_MAX))
        w1 = rng.standard_normal((r, Q_MAX))
        m = np.matmul((z * weights[None, :, None]).transpose(0, 2, 1), z)
        m += tail * np.eye(Q_MAX)
        for q in range(1, Q_MAX + 1):
            x = np.linalg.solve(m[:, :q, :q], w1[:, :q, None])[..., 0]
            stats[start:start + r, q - 1] = np.einsum("ij,ij->i", w1[:, :q], x) / q
    return stats


def main():
    stats = simulate()
    quant = np.quantile(stats, 1.0 - TAILS, axis=0, method="linear")  # (len(TAILS), Q_MAX)
    lines = [
        '"""Quantiles of the multivariate random-scaling pivot F_q (generated file).',
        "",
        "Made by tests/results/make_rs_joint_table.py (read its docstring for the method):",
        f"Karhunen-Loeve series with K = {K} terms plus the remainder's mean, REPS = {REPS}",
        f"replicates, numpy default_rng({SEED}), numpy {np.__version__}, Python "
        f"{sys.version.split()[0]}.",
        "TAILS[i] is an upper-tail probability a; QUANTILES[i][q - 1] is x with",
        "P(F_q > x) = a. Do not edit by hand.",
        '"""',
        "",
        f"Q_MAX = {Q_MAX}",
        f"REPS = {REPS}",
        "TAILS = (",
    ]
    lines += [f"    {a!r}," for a in TAILS.tolist()]
    lines += [")", "QUANTILES = ("]
    for row in quant:
        vals = [f"{v:.6g}" for v in row]
        lines.append("    (" + ", ".join(vals[:6]) + ",")
        lines.append("     " + ", ".join(vals[6:]) + "),")
    lines += [")", ""]
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")
    for a in (0.1, 0.05, 0.01):
        i = int(np.argmin(np.abs(TAILS - a)))
        print(a, np.round(quant[i], 3))


if __name__ == "__main__":
    main()
