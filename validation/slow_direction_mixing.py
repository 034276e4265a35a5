"""How far DP-SGD's path mixes along its slowest direction, in the textbook designs
(issue 26: in the codebook boxes a few fits of the fertility equation pass every check
and miss the non-private estimate by several half-lengths).

The path ``theta_t+1 = theta_t - eta_t P (g_t + noise)``, ``eta_t = lr t^-alpha``,
contracts its error along an eigen-direction of ``P H`` (``P`` the preconditioner, ``H``
the Hessian of the mean loss) by about ``exp(-lambda sum_t eta_t)``. This script computes
``m = lambda_min(P H) sum_t eta_t`` for the slowest direction, with the Hessian of the
rows the engine saw (a study quantity, not a release: it reads the rows), and the share
of the fit's error against the non-private estimate (in the Hessian's norm) that lies
along that direction. The averaged iterate keeps about ``2 / m^2`` of its start's error
along a direction (for ``alpha`` near 1/2), so ``m`` of a few or less leaves the start in
the estimate; random scaling and the plug-in do not see it (the path barely moves along
that direction, and the floor hides its curvature from the private Hessian).

Cells: the textbook study's linear and logistic designs by DP-SGD, in the codebook boxes
(``declared``) and at the privately learned ranges (``auto``), n = 500, 2,000 and
10,000, mu = 1, 5 and 10. Reported per cell: the median and smallest ``m``, the share of
fits warned, the coverage of the true coefficients by the default intervals of all fits
and of the unwarned ones, and the median share of the error along the slowest
direction; then, pooled, the unwarned fits' coverage by ``m``.

    python validation/slow_direction_mixing.py --reps 20     # the recorded run (5 min)
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

OUT = pathlib.Path(__file__).parent / "results" / "slow_direction_mixing.txt"
CELLS = [(d, r, n, mu) for d in ("wage", "fertility", "participation", "approval")
         for r in ("declared", "auto") for n in (500, 2000, 10000) for mu in (1.0, 5.0, 10.0)]
M_BANDS = (0, 1, 3, 10, 30, np.inf)


def replicate(design: str, ranges: str, n: int, mu: float, seed: int) -> dict:
    """One fit as the textbook study makes it, with the engine's rows and schedule kept."""
    from scipy import special

    import dpreg.fits.dpsgd as dpsgd_fit
    from dpreg.studies.textbook import DESIGNS, fit_design

    captured: dict = {}
    run = dpsgd_fit.run_dpsgd

    def run_kept(Z, y, **kwargs):
        out = run(Z, y, **kwargs)
        captured.update(Z=np.array(Z), y=np.array(y, dtype=float),
                        settings=kwargs["settings"], out=out)
        return out

    dpsgd_fit.run_dpsgd = run_kept
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_design(design, n, np.random.default_rng([seed, n, 77]), mu=mu,
                             engine="dpsgd", ranges=ranges, random_state=seed)
    finally:
        dpsgd_fit.run_dpsgd = run
    Z, y, settings, out = (captured[k] for k in ("Z", "y", "settings", "out"))
    logistic = DESIGNS[design][0] == "logistic"
    if logistic:  # the non-private MLE on the engine's rows, and its Hessian
        import statsmodels.api as sm

        target = sm.Logit(y, Z).fit(disp=0, method="newton", maxiter=200).params
        prob = special.expit(Z @ target)
        H = (Z * (prob * (1 - prob))[:, None]).T @ Z / len(Z)
    else:
        target = np.linalg.lstsq(Z, y, rcond=None)[0]
        H = Z.T @ Z / len(Z)
    P = np.eye(Z.shape[1]) if settings.precond is None else settings.precond
    L = np.linalg.cholesky((P + P.T) / 2)  # P H is similar to L' H L
    lam, U = np.linalg.eigh(L.T @ H @ L)
    steps = np.arange(1, settings.steps + 1, dtype=float)
    travel = settings.lr * np.sum(steps ** (-settings.lr_decay))
    err = np.asarray(out.params) - target
    slow = L @ U[:, 0]  # the slowest direction (engine coordinates)
    share = (slow @ H @ err) ** 2 / (slow @ H @ slow) / (err @ H @ err)
    ci = np.asarray(fit.res.conf_int())
    truth = np.array([fit.truth[k] for k in fit.res.params.index])
    return dict(design=design, ranges=ranges, n=n, mu=mu, seed=seed,
                mixing=float(lam[0] * travel), slow_share=float(share),
                warned=bool(fit.messages),
                coverage=float(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1]))))


def summarize(raw: pd.DataFrame) -> list[str]:
    """The two tables of the module docstring, as text lines."""
    keys = ["design", "ranges", "n", "mu"]

    def unwarned_coverage(g):
        return g.loc[~g["warned"], "coverage"].mean() if (~g["warned"]).any() else np.nan

    cells = raw.groupby(keys, sort=False).apply(lambda g: pd.Series({
        "m_median": g["mixing"].median(), "m_min": g["mixing"].min(),
        "warned": g["warned"].mean(), "coverage": g["coverage"].mean(),
        "coverage_unwarned": unwarned_coverage(g),
        "slow_share": g["slow_share"].median()}), include_groups=False)
    bands = raw.groupby(pd.cut(raw["mixing"], M_BANDS, right=False), observed=True).apply(
        lambda g: pd.Series({"fits": len(g), "warned": g["warned"].mean(),
                             "unwarned": int((~g["warned"]).sum()),
                             "coverage_unwarned": unwarned_coverage(g),
                             "slow_share": g["slow_share"].median()}),
        include_groups=False)
    return ["Per cell: m = lambda_min(P H) sum_t eta_t of the slowest direction (median and "
            "smallest), the share of fits warned, the coverage of the default intervals "
            "(all fits; unwarned fits) and the median share of the error along the slowest "
            "direction:", cells.round(3).to_string(), "",
            "Pooled by m: fits, share warned, unwarned fits and their coverage:",
            bands.round(3).to_string()]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    start = time.time()
    rows = Parallel(n_jobs=args.jobs)(delayed(replicate)(*cell, s)
                                      for cell in CELLS for s in range(args.reps))
    lines = summarize(pd.DataFrame(rows)) + [
        f"({(time.time() - start) / 60:.1f} min: python validation/slow_direction_mixing.py "
        f"--reps {args.reps})"]
    text = "\n".join(lines)
    print(text)
    pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
