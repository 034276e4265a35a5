"""Sensitivity audit: the largest change of each released statistic between neighbouring
data sets, searched adversarially, against the sensitivity the ledger records.

A Gaussian mechanism is only as private as its sensitivity is true. The ledger's
sensitivity of each central matrix release (second moment ``G``, Hessian ``A``, score
covariance ``S``) and of the local plug-in sums of LDP-SGD comes from public bounds
(:meth:`dpreg.fits.common.Problem.weighted_row_bounds`); this audit measures the change
directly. For each option combination it builds the model on a data set ``D`` and on
neighbours ``D'`` that replace one row by a corner of the declared boxes (every
combination of lower and upper bounds of the numeric columns and the outcome, the
boxes' centre, and every declared level of each categorical column), computes each
statistic as the fit does, at several parameter values (the statistic's sensitivity
must hold at any released iterate), and reports the ratio of the largest Frobenius
change to the ledger's sensitivity. A ratio above 1 is a privacy bug.

The ledger's sensitivities are read from a real (short) fit with the same options, so
the audit checks what a user's ledger says, not a recomputation of it.
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dpreg.exceptions import OptionError
from dpreg.families import get_family
from dpreg.privacy.ranges import DEFAULT_BINS, RANGES_EVENT, column_edges, column_histogram
from dpreg.privacy.scale_box import ScaleBox

__all__ = ["audit_matrix_sensitivity", "corner_rows", "grid_cells", "ranges_cells",
           "rate_cells", "audit_cell", "GRID_SAMPLE"]

#: The ``mu`` of ``outcome_rate`` audits: on their 24 rows ``n mu`` meets the Newton rule
#: (:func:`dpreg.fits.engine_choice.newton_reason`) for every grid form.
_RULE_MU = 1e4

#: Ledger names of the central matrix releases, by engine, with the statistic each sums.
_RELEASES = {
    "dpsgd": {"second moment G (preconditioner)": "G", "Hessian A": "A",
              "score covariance S": "S", "DP-SGD path": "path"},
    "dpgd": {"second moment G (preconditioner)": "G", "DP-GD path": "path"},
    "ldp_sgd": {"Hessian A": "A", "score covariance S": "S", "LDP-SGD gradients": "path"},
    "ssp": {"SSP X'X": "gram", "SSP X'y": "xty", "SSP y'y": "yty",
            "SSP meat sum g g'": "meat"},
    "newton": {"Hessian A": "A", "score covariance S": "S", "Newton gradients": "grad",
               "Newton last gradient": "grad"},
}
#: Releases that are sums over the rows (under zero-out a removed row adds nothing to
#: them, so they are compared unscaled); the others are means over n.
_SUMS = {"DP-SGD path", "LDP-SGD gradients", "SSP X'X", "SSP X'y", "SSP y'y",
         "SSP meat sum g g'", RANGES_EVENT}


def corner_rows(data: pd.DataFrame, bounds: Mapping[str, Any],
                levels: Mapping[str, Any] | None = None,
                limit: int = 256) -> list[dict[str, Any]]:
    """Adversarial replacement rows: every corner of the declared boxes (and their
    centre), crossed with every declared level of each categorical column.

    Parameters
    ----------
    data : pandas.DataFrame
        The audited data set (its columns say which bounds and levels apply).
    bounds : dict
        Declared ``{column: (lower, upper)}``.
    levels : dict, optional
        Declared ``{column: [level, ...]}``.
    limit : int
        Most rows returned (corners first).

    Returns
    -------
    list of dict
        ``{column: value}`` replacement rows.
    """
    levels = dict(levels or {})
    numeric = [c for c in data.columns if c in bounds]
    choices = []
    for col in numeric:
        lo, hi = (float(v) for v in bounds[col])
        choices.append((lo, hi))
    cats = [c for c in data.columns if c in levels]
    rows = []
    for corner in itertools.product(*choices):
        for cat in itertools.product(*(list(levels[c]) for c in cats)):
            rows.append(dict(zip(numeric, corner, strict=True)) | dict(zip(cats, cat,
                                                                            strict=True)))
            if len(rows) >= limit:
                return rows
    # the boxes' centre (a 0/1 column keeps its lower bound: a binary outcome)
    centre = {c: float(bounds[c][0]) if data[c].isin((0, 1)).all()
              else sum(float(v) for v in bounds[c]) / 2 for c in numeric}
    rows.append(centre | {c: list(levels[c])[0] for c in cats})
    return rows


def _neighbour(data: pd.DataFrame, row: Mapping[str, Any], position: int,
               groups: str | None = None, size: int | None = None) -> pd.DataFrame:
    """``data`` with the row at ``position`` replaced by ``row``; with ``groups`` (the
    cluster column), every row of that row's cluster (replace-one cluster), and with
    ``size`` only the first ``size`` of them kept (a cluster's size is protected: the
    neighbour may be smaller)."""
    out = data.copy()
    where = [out.index[position]] if groups is None else \
        out.index[out[groups] == out[groups].iloc[position]]
    for col, value in row.items():
        out[col] = out[col].astype(object) if out[col].dtype == object else out[col]
        out.loc[where, col] = value
    if size is not None:
        out = out.drop(index=where[size:])
    return out


@dataclasses.dataclass(frozen=True)
class _Audited:
    """A model and the problem its engine fits: with clusters, the problem with its
    rows' cluster codes, on each cluster's first ``max_group_size`` rows."""

    model: Any
    problem: Any

    def range_columns(self):
        return self.model.range_columns()


def audit_matrix_sensitivity(formula: str, data: pd.DataFrame, *, bounds: Mapping[str, Any],
                             family: str = "linear", levels: Mapping[str, Any] | None = None,
                             weights: str | None = "default", engine: str = "dpsgd",
                             n_thetas: int = 3, rng=None, limit: int = 256,
                             ranges: bool = False, outcome_rate: bool = False,
                             **options) -> pd.DataFrame:
    """Audit the sensitivities of one option combination's releases: the matrices
    (``G``, ``A``, ``S``; SSP's ``X'X``, ``X'y``, ``y'y`` and meat) and the path's
    clipped gradients (one step's sum for DP-SGD, the mean for DP-GD, one row's
    message for LDP-SGD), each measured through the engine's own code.

    Parameters
    ----------
    formula : str
        Patsy formula.
    data : pandas.DataFrame
        The data set ``D`` (small: every neighbour refits the design).
    bounds : dict
        Declared bounds of every numeric column and the outcome (corners are drawn
        from them).
    family : str
        ``"linear"``, ``"huber"``, ``"expectile"`` or ``"logistic"``.
    levels : dict, optional
        Declared levels of categorical columns.
    weights : {"mallows", None, "default"}
        Row weights, as for :func:`dpreg.dp_huber`.
    engine : {"dpsgd", "dpgd", "ldp_sgd", "ssp", "newton"}
        The engine whose releases are audited (SSP with ``robust=True``: its four
        releases).
    n_thetas : int
        Parameter values at which ``A`` and ``S`` are evaluated (zeros, then draws of
        scale 1 in the engine's coordinates).
    rng : numpy.random.Generator, int or None
    limit : int
        Most replacement rows (:func:`corner_rows`).
    ranges : bool
        Audit the release of ``fit(ranges="private")`` instead: the noisy histograms of
        the bounded columns (the engine's own releases then use the learned ranges as
        declared bounds, which the rest of the grid covers).
    outcome_rate : bool
        With ``ranges`` and a binary outcome: the release of a default logit at large
        ``n mu`` (:func:`dpreg.fits.engine_choice.newton_rate_reason`), whose histograms
        count the outcome's zeros and ones too, for its rate.
    **options
        Fit options (``condition``, ``sampling``, ``clip``, ``x_bound``, ...).

    Returns
    -------
    pandas.DataFrame
        One row per release: ``release``, ``ledger_sensitivity``, ``max_change``,
        ``ratio`` (``max_change / ledger_sensitivity``; above 1 is a privacy bug).
    """
    from dpreg.fits.dpsgd import clustered
    from dpreg.fits.registry import fit_options
    from dpreg.frontend.model import DPRegression
    from dpreg.privacy.disclosure import sampling_adjacency

    if engine not in _RELEASES:
        raise OptionError(f"engine must be one of {tuple(_RELEASES)}, got {engine!r}")
    rng = np.random.default_rng(rng)
    groups = options.get("groups")
    cov_type = {"ldp_sgd": "plugin", "ssp": "cluster" if groups else "sandwich"}.get(engine)
    fit_kw = dict(options, engine=engine)
    if cov_type:
        fit_kw["cov_type"] = cov_type
    if engine == "ssp":
        fit_kw["robust"] = True
    opts = fit_options(**fit_kw, random_state=0)  # LDP: the same noise on D and D'

    outcome = formula.split("~")[0].strip()
    # the rate is counted where the outcome has no learned range (no declared bounds);
    # the replacement rows still take its values from ``bounds``
    model_bounds = {k: v for k, v in bounds.items() if not (outcome_rate and k == outcome)}

    def model_of(frame):
        model = DPRegression.from_formula(formula, frame, family=family,
                                          bounds=model_bounds, levels=levels,
                                          weights=weights)
        if groups is None:
            return _Audited(model, model.problem)
        codes = pd.factorize(frame[groups])[0].astype(np.int64)
        problem = dataclasses.replace(model.problem, groups=codes)
        if engine == "dpsgd":
            problem = clustered(problem, opts)[0]
        return _Audited(model, problem)

    base = model_of(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short fit: only its ledger is read
        short = dict(fit_kw)
        if engine in ("dpsgd", "dpgd"):
            short.setdefault("steps", 50)
        # the engine's own releases are audited in the declared boxes (the neighbours are
        # the boxes' corners); the ranges cells audit the histograms
        short["ranges"] = "private" if ranges else "declared"
        if outcome_rate:
            # the default engine, at an n mu where the Newton rule holds (the ledger's
            # sensitivities do not depend on mu): its histograms count the outcome too
            del short["engine"]
            res = base.model.fit(mu=_RULE_MU, random_state=0, **short)
        else:
            res = base.model.fit(mu=1.0, random_state=0, **short)
    names = {RANGES_EVENT: "ranges"} if ranges else _RELEASES[engine]
    ledger = {e.name: e.sensitivity for e in res.ledger.events if e.name in names}
    problem = base.problem
    cond = problem.coordinates(opts.condition)
    pub = None if engine == "ssp" else \
        problem.public_settings(opts, cond, full_batch=engine != "dpsgd")
    p = problem.design.k_exog
    thetas = [np.zeros(p)] + [rng.normal(size=p) for _ in range(max(0, n_thetas - 1))]
    if ranges:
        position = 0
        stats = _rate_histograms if outcome_rate else _range_histograms
    elif engine == "ldp_sgd":  # the LDP sums: replace the last row (same path up to it)
        position = len(data) - 1
        stats = _ldp_sums
    else:
        position = 0
        stats = {"ssp": _ssp_statistics, "dpgd": _dpgd_statistics,
                 "newton": _newton_statistics}.get(engine, _central_statistics)
    factor = 2.0 if sampling_adjacency(getattr(opts, "sampling", "uniform")) \
        == "replace-one" else 1.0
    # replace-one: D' replaces the row; zero-out (Poisson sampling, n public): D' holds
    # a null row in its place, so the change is one row's term over n, for the
    # original row and for every corner row
    n = len(data)
    removed = model_of(data.drop(index=data.index[position])) if factor == 1.0 else None
    worst = dict.fromkeys(ledger, 0.0)
    corners = [(row, None) for row in corner_rows(data, bounds, levels, limit)]
    if groups is not None:  # and the cluster replaced by one row: sizes are protected
        corners += [(row, 1) for row, _ in corners]
    for row, size in corners:
        other = model_of(_neighbour(data, row, position, groups, size))
        # adversarial parameters too: ones that fit the replaced row and the
        # replacement exactly (the Hessian weight of a robust loss is largest there)
        local = thetas + [_fitting(m.problem, cond, position) for m in (base, other)]
        pairs = [(base, other)] if removed is None else [(removed, base), (removed, other)]
        for m0, m1 in pairs:
            s0 = stats(m0, cond, pub, local, names, opts)
            s1 = stats(m1, cond, pub, local, names, opts)
            mean_scale = (n - 1) / n if m0 is removed else 1.0  # a null row adds nothing
            for key in ledger:
                scale0 = 1.0 if key in _SUMS else mean_scale
                for a, b in zip(s0[key], s1[key], strict=True):
                    worst[key] = max(worst[key], float(np.linalg.norm(scale0 * a - b)))
    return pd.DataFrame([{"release": key, "ledger_sensitivity": ledger[key],
                          "max_change": worst[key], "ratio": worst[key] / ledger[key],
                          "adjacency_factor": factor}
                         for key in ledger])


def _fitting(problem, cond, position: int) -> np.ndarray:
    """Engine-coordinate parameters with a zero residual at row ``position``."""
    z = cond.design(problem.design.exog)[position]
    y = float(problem.design.endog[position])
    if problem.objective.family.binary_outcome:
        y = 0.0  # the logistic Hessian weight p(1 - p) is largest at eta = 0
    return y * z / max(float(z @ z), np.finfo(float).tiny)


def _engine_rows(problem, cond) -> tuple[np.ndarray, np.ndarray]:
    """The design rows in the engine's coordinates and the outcome, contiguous float64
    (what the engines' kernels and sums take)."""
    return (np.ascontiguousarray(cond.design(problem.design.exog)),
            np.ascontiguousarray(problem.design.endog, dtype=float))


def _central_statistics(model, cond, pub, thetas, names, opts):
    """DP-SGD's matrices, and the sum of one step's clipped gradients over all rows
    (the engine's kernel with no noise, step 1 and a unit rate: ``theta_1 = theta_0 -
    sum_i g_i / n``)."""
    from dpreg.engines import SGDSettings, run_dpsgd

    problem = model.problem
    Z, y = _engine_rows(problem, cond)
    out = {}
    for name, which in names.items():
        if which == "path":  # every unit in the batch: rows, or clusters
            n = len(y)
            units = n if problem.groups is None else int(np.max(problem.groups)) + 1
            settings = SGDSettings(batch_size=units, sampling="uniform", steps=1,
                                   clip=pub.clip, lr=1.0, lr_decay=0.0, noise_scale=0.0,
                                   noise_multiplier=0.0, rows_per_unit=n / units)
            out[name] = [n * (t - run_dpsgd(Z, y, objective=problem.objective,
                                             settings=settings, theta0=t,
                                             rng=np.random.default_rng(0),
                                             clusters=problem.groups).last)
                         for t in thetas]
            continue
        grid = [None] if which == "G" else thetas
        out[name] = [problem.matrix_statistic(which, Z, pub, t) for t in grid]
    return out


def _range_histograms(model, cond, pub, thetas, names, opts):
    """The histograms ``fit(ranges="private")`` releases, by the release's own
    functions, concatenated over the columns."""
    columns = model.range_columns()
    return {RANGES_EVENT: [np.concatenate(
        [column_histogram(values, column_edges(box, DEFAULT_BINS))
         for values, box in columns.values()])]}


def _rate_histograms(model, cond, pub, thetas, names, opts):
    """The histograms of :func:`_range_histograms` and the outcome's on ``(0, 1)``
    (``outcome_rate``)."""
    design = model.model.design
    rate = column_histogram(np.asarray(design.endog, float), column_edges((0.0, 1.0),
                                                                          DEFAULT_BINS))
    return {RANGES_EVENT: [np.concatenate(
        [_range_histograms(model, cond, pub, thetas, names, opts)[RANGES_EVENT][0], rate])]}


def _dpgd_statistics(model, cond, pub, thetas, names, opts):
    """DP-GD's second moment, and its mean clipped gradient (the engine's kernel, one
    step with no noise and a unit rate: ``theta_1 = theta_0 - mean_i g_i``)."""
    from dpreg.engines.dpgd import GDSettings, run_dpgd

    problem = model.problem
    Z, y = _engine_rows(problem, cond)
    out = {}
    for name, which in names.items():
        if which == "path":
            settings = GDSettings(steps=1, clip=pub.clip, lr=1.0, noise_std=0.0)
            out[name] = [t - run_dpgd(Z, y, objective=problem.objective, settings=settings,
                                      theta0=t, rng=np.random.default_rng(0)).paths[0, 1]
                         for t in thetas]
        else:
            out[name] = [problem.matrix_statistic(which, Z, pub, None)]
    return out


def _newton_statistics(model, cond, pub, thetas, names, opts):
    """The noisy Newton engine's releases by its own function
    (:func:`dpreg.fits.newton.newton_statistic`) at each of ``thetas``: its mean
    gradients, its Hessians (and the majorizer the location families release as their
    first) and its score covariances."""
    from dpreg.fits.newton import newton_statistic

    problem = model.problem
    Z, y = _engine_rows(problem, cond)
    kinds = {"grad": ("g",), "A": ("A", "M"), "S": ("S",)}
    return {name: [newton_statistic(problem, Z, y, pub, kind, t)
                   for kind in kinds[which] for t in thetas]
            for name, which in names.items()}


def _ssp_statistics(model, cond, pub, thetas, names, opts):
    """SSP's sums of the clipped rows and its meat (at each of ``thetas``), by the
    engine's own functions and public plan."""
    from dpreg.engines.ssp import cluster_meat_sum, first_rows, meat_sum, ssp_sums
    from dpreg.fits.ssp import ssp_plan

    problem = model.problem
    settings, _ = ssp_plan(problem, opts, cond)
    Z, y = _engine_rows(problem, cond)
    if problem.groups is None:
        meats = [meat_sum(Z, y, settings, t)[0] for t in thetas]
    else:  # each cluster's first K rows, and the cluster meat
        keep = first_rows(problem.groups, settings.max_group_size)
        Z, y, codes = Z[keep], y[keep], np.asarray(problem.groups)[keep]
        meats = [cluster_meat_sum(Z, y, settings, t, codes, int(codes.max()) + 1)[0]
                 for t in thetas]
    sums = ssp_sums(Z, y, settings)
    return {"SSP X'X": [sums.gram], "SSP X'y": [sums.xty], "SSP y'y": [np.array(sums.yty)],
            "SSP meat sum g g'": meats}


def _ldp_sums(model, cond, pub, thetas, names, opts):
    """The LDP plug-in sums ``A`` and ``S`` divided by ``n`` after one pass with a fixed
    seed (the last row is the one replaced, so the path before it is shared), started
    at each of ``thetas`` with a vanishing step so that the replaced row meets the
    path there."""
    import dataclasses

    from dpreg.fits.ldp_sgd import LDPRun
    from dpreg.privacy.request import PrivacyRequest

    problem = model.problem
    out: dict[str, list] = {"Hessian A": [], "score covariance S": [],
                            "LDP-SGD gradients": []}
    X, y = problem.design.exog, problem.design.endog
    for theta in thetas:
        run_opts = dataclasses.replace(opts, start_params=cond.params(theta), lr=1e-12)
        run = LDPRun(problem, run_opts, PrivacyRequest.from_options(mu=1.0))
        run.update(X, y)
        snap = run.path.snapshot()
        out["Hessian A"].append(snap.a_sum / snap.nobs)
        out["score covariance S"].append(snap.s_sum / snap.nobs)
        # the last row's message (its clipped gradient plus noise that is the same on
        # D and D'): the last step over its step size lr (n + t0)^-alpha
        run_opts = dataclasses.replace(run_opts, lr=1e-6)
        run = LDPRun(problem, run_opts, PrivacyRequest.from_options(mu=1.0))
        run.update(X[:-1], y[:-1])
        before = run.path.snapshot().last
        run.update(X[-1:], y[-1:])
        st = run.settings
        step = st.lr * (len(y) + st.step_offset) ** (-st.lr_decay)
        out["LDP-SGD gradients"].append((before - run.path.snapshot().last) / step)
    return out


# ------------------------------------------------------------------ the option grid
_LEVELS = {"g": ["a", "b", "c"]}
#: Bounds forms: main effects, a transformed term (bounds derived), an interaction, a
#: square (its Legendre coordinate), a categorical column, and a transformed outcome;
#: natural units in codebook boxes.
GRID_FORMS = {
    "main": ("y ~ age + educ", {"y": (0.5, 20), "age": (16, 100), "educ": (0, 25)}),
    "transform": ("y ~ np.log(age) + educ", {"y": (0.5, 20), "age": (16, 100),
                                             "educ": (0, 25)}),
    "interaction": ("y ~ age * educ", {"y": (0.5, 20), "age": (16, 100), "educ": (0, 25)}),
    "square": ("y ~ age + I(age ** 2) + educ", {"y": (0.5, 20), "age": (16, 100),
                                                "educ": (0, 25)}),
    "categorical": ("y ~ age + C(g)", {"y": (0.5, 20), "age": (16, 100)}),
    "response": ("np.log(y) ~ age + educ", {"y": (0.5, 20), "age": (16, 100),
                                            "educ": (0, 25)}),
    # boxes known by their scale: the same boxes, the ranges' histograms on
    # powers-of-two grids (dpreg.ScaleBox)
    "scale": ("y ~ age + I(age ** 2) + educ", {"y": ScaleBox(0.5, 20, unit=0.25),
                                               "age": ScaleBox(16, 100), "educ": (0, 25)}),
    # a column without bounds beside bounded ones: with Mallows weights the bounded
    # columns are still conditioned (the map has no row-norm bound)
    "partial": ("y ~ age + I(age ** 2) + educ", {"y": (0.5, 20), "age": (16, 100)}),
}
#: ``"clusters"``: clusters as the privacy unit (``groups=``, ``max_group_size=``; DP-SGD
#: samples whole clusters uniformly), the neighbour replacing one whole cluster.
_GRID_ENGINES = (("dpsgd", "uniform"), ("dpsgd", "poisson"), ("dpgd", None), ("ldp_sgd", None),
                 ("ssp", None), ("dpsgd", "clusters"), ("ssp", "clusters"), ("newton", None))
#: Rows per cluster of the audit's clustered data sets (every cluster full: ``K``).
GRID_CLUSTER_SIZE = 3


def grid_cells() -> list[tuple]:
    """Every option combination with a matrix release: ``(engine, sampling, family,
    weights, condition, form)`` over the engines (DP-SGD under both samplings, DP-GD,
    LDP-SGD, SSP, DP-SGD and SSP with clusters as the privacy unit, and noisy Newton),
    the four families, Mallows weights or none, the three conditionings and the eight
    bounds forms of :data:`GRID_FORMS`. DP-GD releases a matrix only with its
    preconditioner; LDP-SGD's ``"private"`` is ``"bounds"``; a 0/1 outcome has no
    transform; SSP fits the linear family without weights, with every column bounded;
    noisy Newton the other three families.

    Returns
    -------
    list of tuple
        ``(engine, sampling, family, weights, condition, form)`` cells.
    """
    cells = []
    for (engine, sampling), family, weights, condition, form in itertools.product(
            _GRID_ENGINES, ("linear", "huber", "expectile", "logistic"), ("mallows", None),
            ("private", "bounds", "none"), GRID_FORMS):
        if (engine == "dpgd" and condition != "private") \
                or (engine == "ldp_sgd" and condition == "private") \
                or (engine == "ssp" and (not get_family(family).squared_loss
                                         or weights is not None or form == "partial")) \
                or (engine == "newton" and get_family(family).squared_loss) \
                or (get_family(family).binary_outcome and form == "response"):
            continue
        cells.append((engine, sampling, family, weights, condition, form))
    return cells


#: The sample CI runs: every engine and conditioning, both weightings, each form and
#: family at least once, and the combination that once understated its sensitivity
#: 1,000-fold (Mallows weights, ``condition="none"``, natural-unit boxes).
GRID_SAMPLE = [
    ("dpsgd", "uniform", "huber", "mallows", "none", "main"),
    ("dpsgd", "uniform", "huber", "mallows", "private", "interaction"),
    ("dpsgd", "poisson", "expectile", "mallows", "bounds", "categorical"),
    ("dpsgd", "uniform", "linear", None, "none", "response"),
    ("dpsgd", "uniform", "logistic", None, "private", "transform"),
    ("dpgd", None, "huber", "mallows", "private", "main"),
    ("ldp_sgd", None, "huber", "mallows", "none", "main"),
    ("ldp_sgd", None, "expectile", "mallows", "bounds", "interaction"),
    ("ldp_sgd", None, "logistic", None, "none", "categorical"),
    ("ssp", None, "linear", None, "none", "interaction"),
    ("ssp", None, "linear", None, "bounds", "response"),
    ("dpsgd", "uniform", "huber", "mallows", "private", "square"),
    ("ssp", None, "linear", None, "private", "scale"),
    ("ldp_sgd", None, "linear", None, "bounds", "scale"),
    ("dpsgd", "uniform", "huber", "mallows", "private", "partial"),
    ("ldp_sgd", None, "expectile", "mallows", "bounds", "partial"),
    ("ssp", None, "linear", None, "bounds", "square"),
    ("dpsgd", "clusters", "logistic", None, "private", "categorical"),
    ("dpsgd", "clusters", "huber", "mallows", "none", "main"),
    ("ssp", "clusters", "linear", None, "bounds", "interaction"),
    ("newton", None, "logistic", None, "none", "square"),
    ("newton", None, "logistic", None, "private", "partial"),
    ("newton", None, "huber", "mallows", "none", "interaction"),
    ("newton", None, "expectile", None, "bounds", "response"),
]


def ranges_cells() -> list[tuple]:
    """The cells whose ``fit(ranges="private")`` release is audited: every central
    engine and sampling (DP-SGD under both, DP-GD, SSP, noisy Newton) and every bounds
    form, for the linear family (the logistic for noisy Newton, which does not fit it;
    the histograms do not depend on the family, weights or conditioning: they count the
    raw bounded columns).

    Returns
    -------
    list of tuple
        Cells as :func:`grid_cells` gives them; pass ``ranges=True`` to
        :func:`audit_cell`.
    """
    return [(engine, sampling, "logistic" if engine == "newton" else "linear", None,
             "private", form)
            for engine, sampling in _GRID_ENGINES
            if engine != "ldp_sgd" and sampling != "clusters"  # groups= declares boxes
            for form in GRID_FORMS
            if not (engine == "ssp" and form == "partial")  # SSP bounds every column
            and not (engine == "newton" and form == "response")]  # a 0/1 outcome


def rate_cells() -> list[tuple]:
    """The cells whose release with the outcome's rate is audited (a default logit at
    large ``n mu``: noisy Newton's ranges cells; pass ``ranges=True,
    outcome_rate=True`` to :func:`audit_cell`).

    Returns
    -------
    list of tuple
    """
    return [cell for cell in ranges_cells() if cell[0] == "newton"]


def _grid_frame(seed: int, n: int = 24) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.uniform(20, 60, n)
    educ = rng.uniform(8, 20, n)
    g = rng.choice(_LEVELS["g"], n)
    y = 1 + 0.05 * age + 0.1 * educ + 0.3 * (g == "b") + rng.normal(0, 1, n)
    return pd.DataFrame({"y": np.clip(y, 0.5, 20), "age": age, "educ": educ, "g": g,
                         "b": (y > np.median(y)).astype(float)})


def audit_cell(engine: str, sampling: str | None, family: str, weights: str | None,
               condition: str, form: str, seed: int = 7,
               ranges: bool = False, outcome_rate: bool = False) -> pd.DataFrame:
    """:func:`audit_matrix_sensitivity` of one cell of :func:`grid_cells` on 24 rows in
    natural units, with the cell's columns added to the table.

    Parameters
    ----------
    engine : str
        The cell, as :func:`grid_cells` gives it.
    sampling : str or None
        ``None`` for engines without subsampling; ``"clusters"``: clusters of
        :data:`GRID_CLUSTER_SIZE` rows as the privacy unit.
    family : str
    weights : {"mallows", None}
    condition : str
    form : str
        A key of :data:`GRID_FORMS`.
    seed : int
        Seed of the simulated data set.
    ranges : bool
        Audit the release of ``fit(ranges="private")`` (:func:`ranges_cells`).
    outcome_rate : bool
        With ``ranges``: the release that counts the binary outcome too
        (:func:`rate_cells`).

    Returns
    -------
    pandas.DataFrame
        One row per release, as :func:`audit_matrix_sensitivity`, plus the cell.
    """
    formula, bounds = GRID_FORMS[form]
    data = _grid_frame(seed)
    if get_family(family).binary_outcome:
        formula = "b" + formula[formula.index(" ~"):]
        bounds = {k: v for k, v in bounds.items() if k != "y"} | {"b": (0.0, 1.0)}
        data = data.drop(columns="y")
    options = {"condition": condition}
    if sampling == "clusters":
        options |= {"groups": "school", "max_group_size": GRID_CLUSTER_SIZE}
        data = data.assign(school=np.arange(len(data)) // GRID_CLUSTER_SIZE)
    elif sampling is not None:
        options["sampling"] = sampling
    levels = _LEVELS if form == "categorical" else None
    if form != "categorical":
        data = data.drop(columns="g")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = audit_matrix_sensitivity(formula, data, bounds=bounds, family=family,
                                         levels=levels, weights=weights, engine=engine,
                                         rng=3, ranges=ranges, outcome_rate=outcome_rate,
                                         **options)
    cell = dict(engine=engine, sampling=sampling or "", family=family,
                weights=weights or "none", condition=condition, form=form)
    return table.assign(**cell)
