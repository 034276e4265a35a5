"""Noise multiplier of DP-SGD with sampling without replacement at equal (epsilon, delta):
the RDP bound dpreg used before against the PLD of :mod:`dpreg.privacy.wor_pld`.

For each n, schedule (batch m, steps T) and budget epsilon (delta = 1e-5) the noise
multiplier s (noise std over the replace-one sensitivity) that spends exactly epsilon is
found by each accountant; the GDP-CLT's s is shown for reference. The schedules are
dpreg's default (``dpreg.engines.dpsgd.default_schedule``) and a batch 8 times larger
with T = (n/m)^2 steps (the same c = m sqrt(T)/n = 1). Writes
validation/results/pld_wor.txt.

    python validation/pld_wor.py
"""

from __future__ import annotations

import math
import pathlib
import time

from scipy.optimize import brentq

from dpreg.engines.dpsgd import default_schedule
from dpreg.privacy.accountants import rdp_epsilon, rigorous_epsilon
from dpreg.privacy.events import GaussianMechanismEvent
from dpreg.privacy.gdp import dpsgd_mu, mu_to_epsilon

DELTA = 1e-5
OUT = pathlib.Path(__file__).parent / "results" / "pld_wor.txt"


def event(s, n, m, steps):
    return GaussianMechanismEvent("DP-SGD path", 2.0 / m, 2.0 * s / m, "replace-one",
                                  "uniform", m, n, steps)


def solve(spend, eps):
    """s with spend(s) = eps (spend decreasing in s), to 1e-5 in log s."""
    f = lambda log_s: math.log(spend(math.exp(log_s))) - math.log(eps)  # noqa: E731
    return math.exp(brentq(f, math.log(0.2), math.log(200.0), xtol=1e-5))


def main():
    rows = []
    for n in (1_000, 10_000, 100_000):
        m0, t0 = default_schedule(n)
        m1 = 8 * m0
        for m, steps in ((m0, t0), (m1, int(round((n / m1) ** 2)))):
            for eps in (1.0, 3.0, 10.0):
                t = time.time()
                s_rdp = solve(lambda s, k=(n, m, steps): rdp_epsilon(
                    [event(s, *k)], DELTA)[0], eps)
                s_pld = solve(lambda s, k=(n, m, steps): rigorous_epsilon(
                    [event(s, *k)], DELTA)[0], eps)
                s_clt = solve(lambda s, k=(n, m, steps): mu_to_epsilon(
                    dpsgd_mu(*k, s, "uniform"), DELTA), eps)
                rows.append((n, m, steps, eps, s_rdp, s_pld, s_clt, time.time() - t))
                print(*rows[-1], flush=True)
    lines = [
        "Noise multiplier s at equal (epsilon, delta = 1e-5), DP-SGD with sampling without",
        "replacement, replace-one adjacency (s = noise std / replace-one sensitivity).",
        "RDP: dp_accounting's RDP bound (Wang-Balle-Kasiviswanathan), the headline before;",
        "PLD: dpreg.privacy.wor_pld (Dong-Roth-Su pair, connect-the-dots, upper bound);",
        "CLT: the GDP central limit theorem (an approximation, for reference).",
        "",
        f"{'n':>7} {'m':>5} {'T':>7} {'eps':>5} {'s RDP':>8} {'s PLD':>8} {'s CLT':>8} "
        f"{'PLD/RDP':>8}",
    ]
    for n, m, steps, eps, s_rdp, s_pld, s_clt, _ in rows:
        lines.append(f"{n:>7} {m:>5} {steps:>7} {eps:>5g} {s_rdp:>8.4f} {s_pld:>8.4f} "
                     f"{s_clt:>8.4f} {s_pld / s_rdp:>8.3f}")
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
