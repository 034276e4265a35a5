"""Make tests/results/privacy_reference.json: reference numbers for dpreg.privacy.

Run from the repository root with the project's environment:

    python tests/results/privacy_make_reference.py

Every number is computed here WITHOUT dpreg: mpmath at 50 digits for the closed forms
(Dong, Roth and Su 2022, Cor. 2.13; Bu et al. 2020 as written in Opacus,
``opacus/accountants/analysis/gdp.py``), and dp_accounting's own accountants, called
directly, for the rigorous numbers. The JSON records the library versions.
"""

from __future__ import annotations

import datetime
import json
import math
import pathlib
from importlib import metadata

import dp_accounting
import mpmath as mp
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

mp.mp.dps = 50
NR = dp_accounting.NeighboringRelation
OUT = pathlib.Path(__file__).with_name("privacy_reference.json")


def gdp_delta(mu, eps):
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def gdp_epsilon(mu, delta):
    """Root of gdp_delta(mu, eps) = delta by bisection at 50 digits (monotone)."""
    mu, delta = mp.mpf(mu), mp.mpf(delta)
    lo, hi = mp.mpf(0), mu * mu / 2 + 40 * mu + 1
    for _ in range(400):
        mid = (lo + hi) / 2
        if gdp_delta(mu, mid) > delta:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def mu_poisson(steps, s, q):
    s = mp.mpf(s)
    return mp.sqrt(mp.exp(s ** -2) - 1) * mp.sqrt(steps) * mp.mpf(q)


def main():
    ref = {"provenance": {
        "script": "tests/results/privacy_make_reference.py",
        "date": datetime.date.today().isoformat(),
        "dp-accounting": metadata.version("dp-accounting"),
        "mpmath": mp.__version__,
        "notes": "GDP numbers by mpmath at 50 digits; PLD/RDP by dp_accounting called "
                 "directly (PLDAccountant add/remove, RdpAccountant default orders)."}}

    # The example of the corrections page (docs/user_guide/corrections.rst, "GDP central
    # limit theorem"): sigma = 1, q = 0.01, T = 1e4, delta = 1e-5, Poisson.
    s, q, steps, delta = 1.0, 0.01, 10_000, 1e-5
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)), steps)
    pld = PLDAccountant(NR.ADD_OR_REMOVE_ONE, value_discretization_interval=1e-4)
    pld.compose(event)
    rdp = RdpAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    rdp.compose(event)
    mu = mu_poisson(steps, s, q)
    ref["math_md"] = {"noise_multiplier": s, "q": q, "steps": steps, "delta": delta,
                      "gdp_clt_mu": float(mu), "gdp_clt_epsilon": float(gdp_epsilon(mu, delta)),
                      "pld_epsilon": pld.get_epsilon(delta), "pld_interval": 1e-4,
                      "rdp_epsilon": rdp.get_epsilon(delta)}

    # STAR scale: n = 1399, m = 1, T = n^2 (dpsgd-inference paper's regime c = 1).
    n = 1399
    steps = n * n
    star = {"n": n, "batch_size": 1, "steps": steps, "delta": 1e-5, "poisson": {},
            "uniform_rdp": {}}
    for s in (1.0, 2.0, 10.0):
        # grid: a power of two below 1/20 of the per-step GDP scale q sqrt(e^{1/s^2} - 1)
        # (twice as fine as dpreg's default, which aims at 1e-3 relative accuracy)
        step = float(mp.mpf(1) / n * mp.sqrt(mp.exp(mp.mpf(s) ** -2) - 1))
        interval = 2.0 ** math.floor(math.log2(step / 20))
        acc = PLDAccountant(NR.ADD_OR_REMOVE_ONE, value_discretization_interval=interval)
        acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
            1 / n, dp_accounting.GaussianDpEvent(s)), steps))
        star["poisson"][str(s)] = {"pld_epsilon": acc.get_epsilon(1e-5),
                                   "pld_interval": interval}
        acc = RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
        acc.compose(dp_accounting.SelfComposedDpEvent(
            dp_accounting.SampledWithoutReplacementDpEvent(
                n, 1, dp_accounting.GaussianDpEvent(s)), steps))
        star["uniform_rdp"][str(s)] = acc.get_epsilon(1e-5)
    ref["star"] = star

    # mu -> epsilon grid (DRS 2022, Cor. 2.13) at 50 digits.
    grid = []
    for mu in (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0):
        for delta in (1e-3, 1e-5, 1e-10):
            eps = gdp_epsilon(mu, delta)
            grid.append({"mu": mu, "delta": delta, "epsilon": mp.nstr(eps, 25)})
    ref["mu_to_epsilon"] = grid
    OUT.write_text(json.dumps(ref, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
