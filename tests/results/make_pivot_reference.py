"""Make tests/results/pivot_reference.csv: P(|R| > x) for the random-scaling pivot.

R = W(1) / sqrt(Q), Q = int_0^1 (W(r) - r W(1))^2 dr, W(1) independent of Q. This
script does NOT use the Craig-formula integral of dpreg.inference.pivot. It uses the
exact distribution function of Q, which is the limit law of the Cramer-von Mises
statistic n omega^2, in the series of Anderson and Darling (1952, Ann. Math. Statist.
23, 193-212, eq. 4.35):

    F_Q(q) = 1/(pi sqrt q) sum_{j>=0} [Gamma(j+1/2) / (Gamma(1/2) j!)] sqrt(4j+1)
             exp(-(4j+1)^2/(16 q)) K_{1/4}((4j+1)^2/(16 q)),

and then, with Z ~ N(0,1) independent of Q,

    P(|R| > x) = P(Q < Z^2 / x^2) = 2 int_0^inf F_Q(z^2 / x^2) phi(z) dz,

integrated with mpmath.quad (tanh-sinh) on [0, x sqrt 12] split in 8 pieces; beyond,
F_Q = 1 to within 1 - F_Q(12) < 1e-26, which contributes erfc(x sqrt 6) exactly.

The series is checked first against (a) the tabulated asymptotic Cramer-von Mises
critical values 0.34730, 0.46136, 0.74346 (levels 0.90, 0.95, 0.99) and (b) the
Laplace transform E exp(-sQ) = (sqrt(2s)/sinh sqrt(2s))^{1/2} at s = 0.5, 2, 10.

The last four x values are the two-sided 80/90/95/99% critical values as computed by
dpreg.inference.pivot (rounded to 12 digits and hard-coded here); the test checks that
the independent P(|R| > x) there equals 0.2/0.1/0.05/0.01.

Run: /work/venv/bin/python tests/results/make_pivot_reference.py  (about 10 minutes
on 2 cores; mpmath 1.4.1, 30 significant digits).
"""

import multiprocessing
import os
import sys

import mpmath as mp

DPS = 30
X_GRID = ["0.1", "0.5", "1", "2", "3", "5", "7.5", "10", "15", "20", "30", "50"]
CRITICAL = ["3.87488128072", "5.32267990053", "6.74730210917", "10.0172670638"]
Q_CUT = 12
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pivot_reference.csv")


def cdf_q(q):
    """Anderson-Darling series for P(int_0^1 B(r)^2 dr <= q)."""
    mp.mp.dps = DPS
    q = mp.mpf(q)
    if q <= 0:
        return mp.mpf(0)
    total, coef, j = mp.mpf(0), mp.mpf(1), 0
    while True:
        z = mp.mpf(4 * j + 1) ** 2 / (16 * q)
        term = coef * mp.sqrt(4 * j + 1) * mp.exp(-z) * mp.besselk(mp.mpf(1) / 4, z)
        total += term
        if j > 2 and abs(term) < mp.mpf(10) ** (-DPS):
            return total / (mp.pi * mp.sqrt(q))
        coef *= (j + mp.mpf(1) / 2) / (j + 1)
        j += 1


def two_sided_tail(x):
    """P(|R| > x) = 2 int_0^inf F_Q(z^2/x^2) phi(z) dz."""
    mp.mp.dps = DPS
    x = mp.mpf(x)
    z_cut = x * mp.sqrt(Q_CUT)
    pieces = [z_cut * k / 8 for k in range(9)]
    body = 2 * mp.quad(lambda z: cdf_q(z * z / (x * x)) * mp.npdf(z), pieces)
    return body + mp.erfc(z_cut / mp.sqrt(2))


def laplace_check(s):
    mp.mp.dps = DPS
    s = mp.mpf(s)
    pts = [0, 0.05, 0.2, 0.5, 1, 2, 5, Q_CUT]
    lt = s * mp.quad(lambda q: mp.exp(-s * q) * cdf_q(q), pts) + mp.exp(-Q_CUT * s)
    exact = mp.sqrt(mp.sqrt(2 * s) / mp.sinh(mp.sqrt(2 * s)))
    return float(abs(lt - exact))


def main():
    mp.mp.dps = DPS
    for q, level in [("0.34730", 0.90), ("0.46136", 0.95), ("0.74346", 0.99)]:
        assert abs(cdf_q(q) - level) < 1e-5, (q, cdf_q(q))
    assert 1 - cdf_q(Q_CUT) < 1e-26
    with multiprocessing.Pool(2) as pool:
        errors = pool.map(laplace_check, ["0.5", "2", "10"])
        assert max(errors) < 1e-20, errors
        xs = X_GRID + CRITICAL
        tails = pool.map(two_sided_tail, xs)
    with open(OUT, "w") as fh:
        fh.write("# P(|R| > x), R = W(1)/sqrt(int_0^1 (W(r)-rW(1))^2 dr), made by\n")
        fh.write("# tests/results/make_pivot_reference.py: Anderson-Darling (1952) series for\n")
        fh.write("# the law of Q = int B^2, then 2 int F_Q(z^2/x^2) phi(z) dz by mpmath.quad\n")
        fh.write(f"# (mpmath {mp.__version__}, mp.dps = {DPS}, Python {sys.version.split()[0]}).\n")
        fh.write("# Laplace-transform check of the series: max error %.1e.\n" % max(errors))
        fh.write("# Last 4 rows: x = dpreg's two-sided 80/90/95/99% critical values.\n")
        fh.write("x,p_two_sided\n")
        for x, p in zip(xs, tails, strict=True):
            fh.write(f"{x},{mp.nstr(p, 25, min_fixed=1, max_fixed=0)}\n")
    print(open(OUT).read())


if __name__ == "__main__":
    main()
