"""The public reference design: rows the declared bounds and levels allow, drawn without
the data.

A one-pass path mixes in a direction at a rate set by the covariates' second-moment
matrix in the engine's coordinates (:mod:`dpreg.design.conditioning`); its smallest eigenvalue
is private. What the public inputs do fix is its structure: an interaction's column
spreads like the product of its main effects' (a ninth of the box where each main
effect fills its own uniformly), and the treatment dummies of a categorical column
overlap the intercept (with four equally common levels the smallest eigenvalue of the
intercept-and-dummies block is 0.052). :func:`reference_rows` draws rows with every
numerical factor uniform on its declared bounds and every categorical factor uniform
over its declared levels, all independent: the most favourable data the declarations
allow short of filling the boxes' corners. Where even these rows leave a direction too
flat for one pass, the fit can say so from public numbers alone
(:func:`dpreg.fits.ldp_sgd.reference_spread`). Real data are less favourable:
correlated covariates and means far from the boxes' centres flatten directions
further, and no public number shows by how much.

Everything here reads only the design's public metadata (names, declared bounds,
levels, the patsy coding) and a fixed seed: it is post-processing of public inputs.
"""

from __future__ import annotations

import numpy as np

from dpreg.design.formula import column_combos

__all__ = ["reference_rows", "REFERENCE_DRAWS"]

#: Rows drawn: the smallest eigenvalue of their second-moment matrix is within about 1%
#: of the reference law's (the column moments are averages of bounded variables).
REFERENCE_DRAWS = 20_000


def _uniform(bounds, size: int, rng: np.random.Generator) -> np.ndarray:
    lo, hi = float(bounds[0]), float(bounds[1])
    return rng.uniform(lo, hi, size) if hi > lo else np.full(size, lo)


def reference_rows(design, draws: int = REFERENCE_DRAWS, seed: int = 0
                   ) -> np.ndarray | None:
    """Rows of the design's columns under the public reference law (module notes).

    Parameters
    ----------
    design : dpreg.design.Design
        Only its public metadata is read: column names, declared column bounds, the
        numerical factors of each column and (for formulas) patsy's coding.
    draws : int
        Number of rows.
    seed : int
        Seed of the draws (public: the rows depend on no data).

    Returns
    -------
    ndarray (draws, p) or None
        ``None`` where a column has no declared bounds or a numerical factor's bounds
        cannot be read from a main-effect column (then there is no reference law).
    """
    bounds, factors = design.column_bounds, design.column_factors
    p = design.k_exog
    if len(bounds) != p or len(factors) != p or any(b is None for b in bounds):
        return None
    rng = np.random.default_rng(seed)
    # a numerical factor's declared bounds are those of its main-effect column
    main = {f[0]: bounds[j] for j, f in enumerate(factors) if f is not None and len(f) == 1}
    info = design.design_info
    if info is None:  # arrays: every column is its own variable (or the intercept)
        return np.column_stack([np.ones(draws) if f == () else
                                _uniform(bounds[j], draws, rng)
                                for j, f in enumerate(factors)])
    values: dict = {}  # factor -> its draws (numerical) or drawn level indices

    def factor_columns(factor, sub) -> list:
        if factor not in values:
            if factor in sub.contrast_matrices or info.factor_infos[factor].type == "categorical":
                levels = len(info.factor_infos[factor].categories)
                values[factor] = rng.integers(0, levels, draws)
            elif factor.name() in main and info.factor_infos[factor].num_columns == 1:
                values[factor] = _uniform(main[factor.name()], draws, rng)
            else:
                return [None]  # no declared bounds to draw from
        if factor in sub.contrast_matrices:
            matrix = np.asarray(sub.contrast_matrices[factor].matrix, dtype=float)
            return [matrix[values[factor], k] for k in range(matrix.shape[1])]
        return [values[factor]]

    columns = []
    for _, combos in column_combos(info, factor_columns):
        for combo in combos:
            if any(v is None for v in combo):
                return None
            columns.append(np.prod(np.vstack([np.ones(draws), *combo]), axis=0))
    if len(columns) != p:
        return None
    return np.column_stack(columns)
