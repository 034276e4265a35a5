"""A published-style IV estimate from the STAR data, private and non-private
(issue 29, item 4).

Angrist, Lang and Oreopoulos (2009) randomly offered academic support services (the SSP
and SFSP arms); the public-use file records who used them (``used_ssp``). The effect of
using the services on first-year GPA, instrumented by the random offers, with the
incentive arm, sex and the high-school GPA group as controls, on the analysis sample
(n = 1,399)::

    GPA_year1 ~ 1 + sfp + female + C(hsgroup) + [used_ssp ~ ssp + sfsp]

linearmodels' IV2SLS gives the non-private estimate; ``dpreg.dp_iv2sls`` the private one
at mu = 2, 5 and 10 (codebook bounds: GPA 0-4.3, the rest 0/1; 20 seeds each). Per
budget: the median private estimate and interval length of ``used_ssp``, the share of
(coefficient, seed) pairs whose private interval contains linearmodels' estimate, and the
share of fits that warn. Needs the STAR file (``../shared/datasets`` or
``DPREG_DATA_DIR``).

    python validation/star_iv.py
"""

from __future__ import annotations

import pathlib
import warnings

import numpy as np

import dpreg
from dpreg.datasets import load_star
from dpreg.exceptions import ConvergenceWarning

FORMULA = "GPA_year1 ~ 1 + sfp + female + C(hsgroup) + [used_ssp ~ ssp + sfsp]"
BOUNDS = {"GPA_year1": (0.0, 4.3), "sfp": (0, 1), "female": (0, 1), "used_ssp": (0, 1),
          "ssp": (0, 1), "sfsp": (0, 1)}
LEVELS = {"hsgroup": [1, 2, 3]}
OUT = pathlib.Path(__file__).parent / "results" / "star_iv.txt"
DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "datasets"


def main(seeds: int = 20) -> None:
    from linearmodels.iv import IV2SLS

    data = load_star(DATA if DATA.exists() else None)
    ref = IV2SLS.from_formula(FORMULA, data).fit(cov_type="unadjusted")
    lines = [f"linearmodels IV2SLS (non-private): used_ssp {ref.params['used_ssp']:.3f} "
             f"(s.e. {ref.std_errors['used_ssp']:.3f}, 95% length "
             f"{2 * 1.96 * ref.std_errors['used_ssp']:.3f}); n = {int(ref.nobs)}"]
    for mu in (2.0, 5.0, 10.0):
        est, length, inside, warned = [], [], [], 0
        for seed in range(seeds):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = dpreg.dp_iv2sls(FORMULA, data, mu=mu, bounds=BOUNDS, levels=LEVELS,
                                      random_state=seed)
            warned += any(issubclass(w.category, ConvergenceWarning) for w in caught)
            ci = res.conf_int()
            est.append(res.params["used_ssp"])
            length.append(ci.loc["used_ssp", 1] - ci.loc["used_ssp", 0])
            target = ref.params.reindex(ci.index).to_numpy()  # by name
            inside.extend((ci[0].to_numpy() <= target) & (target <= ci[1].to_numpy()))
        lines.append(f"mu = {mu:4g}: used_ssp median {np.median(est):.3f}, median 95% length "
                     f"{np.median(length):.3f}; intervals containing the non-private "
                     f"estimates {np.mean(inside):.2f}; warned {warned / seeds:.2f}")
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text + "\n")


if __name__ == "__main__":
    main()
