"""engine="auto": the rule is the engines study's table, and the study is its test."""

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg.fits import _engine_choice_table as table
from dpreg.fits.engine_choice import choose_engine, request_mu
from dpreg.privacy.request import PrivacyRequest
from dpreg.studies.engine_comparison import (
    HETEROSKEDASTICITY_ROBUST,
    NOT_POPULATION,
    choice_rows,
)

#: The recorded run the rule is read from: the linear cells at the default ranges="auto"
RECORDED = (Path(__file__).resolve().parents[1] / "validation" / "results"
            / "engines-ranges.csv")


def _request(budget):
    parts = dict(part.split("=") for part in budget.split(","))
    if "mu" in parts:
        return PrivacyRequest.from_options(mu=float(parts["mu"]))
    return PrivacyRequest.from_options(epsilon=float(parts["eps"]),
                                       delta=float(parts["delta"]))


def test_the_shipped_rule_is_the_recorded_study():
    """Recomputing the rule from the recorded run's table gives the shipped rule, cell by
    cell: the choice cannot drift from the study it cites."""
    recorded = pd.read_csv(RECORDED)
    rows = choice_rows(recorded)
    assert [(r["n"], r["p"], r["budget"], r["engine"], r["method"]) for r in rows] == \
        [(r["n"], r["p"], r["budget"], r["engine"], r["method"]) for r in table.RULES]


def test_every_chosen_interval_covered_under_both_error_laws_in_the_study():
    """The study is the test of the rule: in the recorded run, each chosen interval's
    unwarned fits covered the population within 3 MC s.e. for homoskedastic and
    heteroskedastic errors, and no chosen engine is one whose intervals are not for the
    population (AdaSSP, DP-GD)."""
    recorded = pd.read_csv(RECORDED)
    chosen = [rule for rule in table.RULES if rule["engine"]]
    assert len(chosen) >= len(table.RULES) // 2
    for rule in chosen:
        assert rule["engine"] not in NOT_POPULATION
        assert (rule["engine"], rule["method"]) in HETEROSKEDASTICITY_ROBUST
        rows = recorded[(recorded["n"] == rule["n"]) & (recorded["p"] == rule["p"])
                        & (recorded["budget"] == rule["budget"])
                        & (recorded["engine"] == rule["engine"])
                        & (recorded["method"] == rule["method"])
                        & (recorded["target"] == "population")]
        assert set(rows["errors"]) == {"normal", "hetero"}
        assert rows["passes"].all()
        bar = 0.95 - 3 * np.sqrt(0.05 * 0.95 / rows["reps"].min())
        assert (rows["coverage_unwarned"] >= bar - 1e-9).all()


@pytest.mark.parametrize("k", range(4))
def test_choose_engine_returns_each_cells_rule(k):
    """At a studied cell's own n, p and budget the choice is that cell's rule."""
    rules = table.RULES
    for rule in rules[k::4]:
        engine, method, reason = choose_engine(rule["n"], rule["p"], "linear",
                                               _request(rule["budget"]))
        assert f"n = {rule['n']}, p = {rule['p']}" in reason
        if rule["engine"]:  # "ssp:robust" is SSP with robust=True
            assert (engine, method) == (rule["engine"].partition(":")[0],
                                        rule["method"]), rule
        else:  # no interval covered there: the default engine, and the reason says so
            assert (engine, method) == ("dpsgd", None)
            assert "no interval for the population covered" in reason


def test_other_families_keep_the_default_engine():
    engine, method, reason = choose_engine(5000, 3, "logistic",
                                           PrivacyRequest.from_options(mu=1.0))
    assert (engine, method) == ("dpsgd", None) and "compares it with DP-GD" in reason


def test_request_mu_converts_every_unit():
    """(epsilon, delta) and rho map to the mu of the same Gaussian tradeoff."""
    from dpreg.privacy.gdp import mu_to_epsilon

    mu = request_mu(PrivacyRequest.from_options(epsilon=1.0, delta=1e-5))
    assert mu_to_epsilon(mu, 1e-5) == pytest.approx(1.0, rel=1e-6)
    assert request_mu(PrivacyRequest.from_options(mu=2.0)) == 2.0
    rho = request_mu(PrivacyRequest.from_options(rho=0.5))
    assert rho == pytest.approx(math.sqrt(2 * 0.5))


def test_auto_fit_runs_the_chosen_engine_and_says_why():
    from dpreg.fits.registry import ENGINES
    from dpreg.studies.robustness import natural_units_design

    data, formula, bounds, _ = natural_units_design(2000, 3, np.random.default_rng(5),
                                                    family="linear", errors="hetero")
    engine, method, _ = choose_engine(2000, 3, "linear", PrivacyRequest.from_options(mu=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_ols(formula, data, bounds=bounds, mu=1.0, engine="auto",
                           random_state=5)
    assert res.engine == ENGINES[engine].label
    assert res.cov_type == method
    assert "engine='auto'" in res.summary().as_text()


def test_auto_without_outcome_bounds_falls_back_to_dpsgd():
    """Where the rule picks SSP but the outcome has no declared bounds (SSP cannot run),
    engine='auto' fits the default engine and says why, instead of SSP's error."""
    engine, _, _ = choose_engine(2000, 3, "linear", PrivacyRequest.from_options(mu=5.0))
    assert engine == "ssp"  # the rule's choice in this cell
    fallback, method, reason = choose_engine(2000, 3, "linear",
                                             PrivacyRequest.from_options(mu=5.0),
                                             statistics_possible=False)
    assert fallback == "dpsgd" and method is None and "bounds on the outcome" in reason
    sim = dpreg.datasets.simulate_linear(2000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_ols(sim.formula, sim.data, mu=5.0, engine="auto", random_state=1)
    assert res.engine == "DP-SGD"
    assert "bounds on the outcome" in res.summary().as_text()


# ----------------------------------------------------------- the linear family's default
def _natural_fit(**options):
    from dpreg.studies.robustness import natural_units_design

    data, formula, bounds, _ = natural_units_design(2000, 3, np.random.default_rng(5),
                                                    family="linear", errors="normal")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpreg.dp_ols(formula, data, bounds=bounds, random_state=5, **options)


def test_the_linear_default_is_the_rules_choice():
    """No engine= given: the linear family runs engine='auto''s engine and interval, the
    same numbers as engine='auto', and the summary says it was the default's choice."""
    from dpreg.fits.registry import ENGINES

    engine, method, _ = choose_engine(2000, 3, "linear", PrivacyRequest.from_options(mu=5.0))
    assert engine == "ssp"  # this cell's rule: the test below would not tell otherwise
    default = _natural_fit(mu=5.0)
    auto = _natural_fit(mu=5.0, engine="auto")
    assert default.engine == ENGINES[engine].label and default.cov_type == method
    np.testing.assert_array_equal(default.params, auto.params)
    np.testing.assert_array_equal(default.conf_int(), auto.conf_int())
    assert "default engine (engine='auto')" in default.summary().as_text()


@pytest.mark.parametrize("option, value", [("steps", 20_000), ("cov_type", "rs"),
                                           ("batch_size", 50)])
def test_the_default_keeps_dpsgd_for_its_own_options(option, value):
    """An option only DP-SGD takes keeps meaning what it says: the default falls back to
    DP-SGD (named in the summary) instead of refusing the option."""
    res = _natural_fit(mu=5.0, **{option: value})
    assert res.engine == "DP-SGD"
    assert f"since {option}= does not apply to ssp" in res.summary().as_text()


def test_the_default_takes_ssp_for_groups():
    """With groups= (clusters as the privacy unit) the linear default is SSP's
    cluster-robust sandwich even where the rule (a study of independent rows) would pick
    DP-SGD, which takes groups= too; the other families keep DP-SGD, with clusters."""
    rng = np.random.default_rng(3)
    n = 2000
    data = pd.DataFrame(dict(x=rng.uniform(-1, 1, n), school=rng.integers(0, 100, n)))
    data["y"] = 0.5 * data["x"] + rng.normal(0, 1, n)
    engine, _, _ = choose_engine(n, 2, "linear", PrivacyRequest.from_options(mu=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_ols("y ~ x", data, bounds=dict(x=(-1, 1), y=(-5, 5)), mu=1.0,
                           groups="school", max_group_size=60, random_state=1)
    assert res.engine == "SSP"
    assert res.cov_type == "cluster"
    assert engine == "dpsgd"  # the rule's choice here, which the clusters override
    assert "default engine: ssp with clusters as the privacy unit" in res.summary().as_text()
    data["b"] = (data["y"] > 0).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logit = dpreg.dp_logit("b ~ x", data, bounds=dict(x=(-1, 1), b=(0, 1)), mu=1.0,
                               groups="school", max_group_size=60, random_state=1)
    assert logit.engine == "DP-SGD"
    assert logit.ledger.events[0].adjacency == "replace-one cluster (at most 60 rows)"


def test_other_families_and_unbounded_outcomes_default_to_dpsgd():
    from dpreg.studies.robustness import natural_units_design

    data, formula, bounds, _ = natural_units_design(2000, 3, np.random.default_rng(5),
                                                    family="huber", errors="normal")
    sim = dpreg.datasets.simulate_linear(2000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        huber = dpreg.dp_huber(formula, data, bounds=bounds, mu=5.0, random_state=1)
        unbounded = dpreg.dp_ols(sim.formula, sim.data, mu=5.0, random_state=1)
    assert huber.engine == "DP-SGD" and "default engine" not in huber.summary().as_text()
    assert unbounded.engine == "DP-SGD"
    assert "bounds on the outcome" in unbounded.summary().as_text()


def test_a_dask_frame_defaults_to_ssp():
    dd = pytest.importorskip("dask.dataframe")
    sim = dpreg.datasets.simulate_linear(2000, random_state=0)
    bounds = {c: (-6.0, 6.0) for c in sim.data.columns}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_ols(sim.formula, dd.from_pandas(sim.data, npartitions=2),
                           bounds=bounds, mu=5.0, random_state=1)
    assert res.engine == "SSP"


def test_no_rows_is_refused_by_the_fits_own_check():
    engine, _, reason = choose_engine(0, 3, "linear", PrivacyRequest.from_options(mu=1.0))
    assert engine == "dpsgd" and "no rows" in reason


def test_a_chosen_sandwich_brings_its_meat(monkeypatch):
    """Where the rule picks SSP's sandwich, the default fit releases the meat it needs
    (robust=True, a ledger row), unless the user said robust=False."""
    from dpreg.fits import engine_choice

    monkeypatch.setattr(engine_choice, "choose_engine",
                        lambda *a, **k: ("ssp", "sandwich", "engine='auto': test"))
    res = _natural_fit(mu=5.0)
    assert res.engine == "SSP" and res.cov_type == "sandwich"
    assert any("meat" in event.name for event in res.ledger.events)
    plain = _natural_fit(mu=5.0, robust=False, cov_type="plugin")
    assert plain.engine == "SSP" and plain.cov_type == "plugin"
    assert not any("meat" in event.name for event in plain.ledger.events)


def test_noisy_newton_is_the_default_only_inside_its_studied_region():
    from dpreg.fits.engine_choice import (
        NEWTON_MAX_P,
        NEWTON_MIN_N_MU,
        NEWTON_WIDE_MAX_P,
        NEWTON_WIDE_MIN_N_MU,
        default_engine,
    )

    mu = PrivacyRequest.from_options(mu=5.0)
    n_in = math.ceil(NEWTON_MIN_N_MU / 5.0)
    for family in ("logistic", "huber", "expectile"):
        engine, _, reason = default_engine(n_in, NEWTON_MAX_P, family, mu, {})
        assert engine == "newton" and f"n mu = {n_in * 5:,}" in reason, family
        assert f"for {family} regression" in reason
        assert choose_engine(n_in, 6, family, mu)[0] == "newton"  # engine="auto" too
    # wider models from a larger n mu, up to the widest measured
    n_wide = math.ceil(NEWTON_WIDE_MIN_N_MU / 5.0)
    for p in (NEWTON_MAX_P + 1, NEWTON_WIDE_MAX_P):
        engine, _, reason = default_engine(n_wide, p, "logistic", mu, {})
        assert engine == "newton" and f">= {NEWTON_WIDE_MIN_N_MU:,} and p = {p} <= " \
            f"{NEWTON_WIDE_MAX_P}" in reason
        assert default_engine(n_wide - 1, p, "huber", mu, {})[0] == "dpsgd"
    assert default_engine(10 * n_wide, NEWTON_WIDE_MAX_P + 1, "logistic", mu, {})[0] \
        == "dpsgd"
    # below the rule's n mu, above its p, in declared boxes, or with an option noisy
    # Newton does not take: DP-SGD
    for args, options in [((n_in - 1, 6), {}), ((n_in, NEWTON_MAX_P + 1), {}),
                          ((n_in, 6), {"ranges": "declared"}), ((n_in, 6), {"steps": 1000}),
                          ((n_in, 6), {"cov_type": "rs"}), ((n_in, 6), {"groups": "g"})]:
        assert default_engine(*args, "logistic", mu, options)[0] == "dpsgd", (args, options)
    # the linear family never (its sufficient statistics are SSP's)
    assert default_engine(10 * n_in, 3, "linear", mu, {})[0] != "newton"
    # an (epsilon, delta) request counts by its Gaussian-DP mu
    eps = PrivacyRequest.from_options(epsilon=30.0, delta=1e-5)
    n_eps = math.ceil(NEWTON_MIN_N_MU / request_mu(eps))
    assert default_engine(n_eps, 6, "logistic", eps, {})[0] == "newton"
    assert default_engine(n_eps - 2, 6, "logistic", eps, {})[0] == "dpsgd"


def test_a_default_logit_at_large_n_mu_runs_noisy_newton_and_says_why():
    from dpreg.fits.engine_choice import NEWTON_MIN_N_MU

    rng = np.random.default_rng(3)
    n = math.ceil(NEWTON_MIN_N_MU / 10)
    x = rng.uniform(-2, 2, n)
    data = pd.DataFrame({"x": x, "y": (rng.random(n) < 1 / (1 + np.exp(-x))).astype(float)})
    bounds = {"x": (-2, 2), "y": (0, 1)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_logit("y ~ x", data, bounds=bounds, mu=10, random_state=1)
        small = dpreg.dp_logit("y ~ x", data.iloc[:1000], bounds=bounds, mu=10,
                               random_state=1)
        declared = dpreg.dp_logit("y ~ x", data, bounds=bounds, mu=10, ranges="declared",
                                  random_state=1)
    assert res.engine == "Noisy Newton"
    assert "default engine: newton (noisy Newton)" in res.summary().as_text()
    assert res.ledger.events[0].name == "ranges (noisy histograms)"  # learned ranges
    assert small.engine == "DP-SGD" and declared.engine == "DP-SGD"


def test_noisy_newton_is_not_the_default_where_no_range_can_be_learned():
    # a logit without declared bounds learns no range: the Newton rule needs learned
    # ranges (in unlearned boxes its Hessian is floored), so the default stays DP-SGD
    from dpreg.fits.engine_choice import NEWTON_MIN_N_MU
    from dpreg.frontend.model import DPRegression

    rng = np.random.default_rng(4)
    n = math.ceil(NEWTON_MIN_N_MU / 10)
    x = rng.uniform(-2, 2, n)
    data = pd.DataFrame({"x": x, "y": (rng.random(n) < 1 / (1 + np.exp(-x))).astype(float)})
    unbounded = DPRegression.from_formula("y ~ x", data, family="logistic")
    bounded = DPRegression.from_formula("y ~ x", data, family="logistic",
                                        bounds={"x": (-2, 2), "y": (0, 1)})
    assert unbounded._resolve_default({"mu": 10})[0]["engine"] == "dpsgd"
    assert bounded._resolve_default({"mu": 10})[0]["engine"] == "newton"
    assert unbounded._resolve_auto({"mu": 10, "engine": "auto"})[0]["engine"] == "dpsgd"


def test_a_rare_event_logit_keeps_dpsgd_by_its_released_rate():
    # n mu meets the Newton rule; the outcome's rate, counted with the ranges'
    # histograms, decides: about 3% ones (n mu r(1-r) under NEWTON_MIN_RATE_N_MU) stays
    # on DP-SGD, about 50% runs noisy Newton; an explicit engine="newton" releases no rate
    from dpreg.fits.engine_choice import NEWTON_MIN_N_MU, NEWTON_MIN_RATE_N_MU
    from dpreg.privacy.ranges import histogram_sensitivity

    rng = np.random.default_rng(5)
    n, mu = math.ceil(NEWTON_MIN_N_MU / 5), 5.0
    x = rng.uniform(0, 4, n)

    def fit(intercept, **kw):
        y = (rng.random(n) < 1 / (1 + np.exp(-(intercept + 0.5 * x)))).astype(float)
        data = pd.DataFrame({"x": x, "y": y})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dpreg.dp_logit("y ~ x", data, bounds={"x": (0, 4)}, mu=mu,
                                 random_state=2, **kw)
        return res, y.mean()

    rare, rate = fit(-4.5)
    assert n * mu * rate * (1 - rate) < NEWTON_MIN_RATE_N_MU
    assert rare.engine == "DP-SGD"
    text = rare.summary().as_text()
    assert "dpsgd for logistic regression" in " ".join(text.split())
    ranges_event = rare.ledger.events[0]
    assert ranges_event.name == "ranges (noisy histograms)"
    # two columns counted (x and the outcome), and the whole fit still meets mu
    assert ranges_event.sensitivity == pytest.approx(histogram_sensitivity(2, "replace-one"))
    assert math.sqrt(sum(e.mu() ** 2 for e in rare.ledger.events)) == pytest.approx(mu)
    assert "y [" not in rare.settings.value("ranges")  # the outcome is not clipped
    common, rate = fit(-1.0)
    assert n * mu * rate * (1 - rate) >= NEWTON_MIN_RATE_N_MU
    assert common.engine == "Noisy Newton"
    assert "n mu r (1 - r) =" in " ".join(common.summary().as_text().split())
    chosen, _ = fit(-4.5, engine="newton")
    assert chosen.engine == "Noisy Newton"
    assert chosen.ledger.events[0].sensitivity == pytest.approx(
        histogram_sensitivity(1, "replace-one"))


def test_the_rate_rule_is_n_mu_r_one_minus_r_against_its_threshold():
    from dpreg.fits.engine_choice import NEWTON_MIN_RATE_N_MU, newton_rate_reason

    line = "default engine: newton (noisy Newton) for logistic regression."
    n, mu = 10_000, 5.0
    # r (1 - r) just above and just below threshold / (n mu)
    target = NEWTON_MIN_RATE_N_MU / (n * mu)
    r_at = (1 - math.sqrt(1 - 4 * target)) / 2
    keep, reason = newton_rate_reason(n, mu, r_at * 1.01, line)
    assert keep and reason.startswith("default engine: newton")
    keep, reason = newton_rate_reason(n, mu, r_at * 0.99, line)
    assert not keep and reason.startswith("default engine: dpsgd")
    # symmetric in r and 1 - r: rare zeros are as rare as rare ones
    assert not newton_rate_reason(n, mu, 1 - r_at * 0.99, line)[0]
    keep, reason = newton_rate_reason(n, mu, 0.3, "engine='auto': newton for it.")
    assert keep and reason.startswith("engine='auto': newton")
    assert newton_rate_reason(n, mu, 0.01, "engine='auto': newton.")[1].startswith(
        "engine='auto': dpsgd")


@pytest.mark.parametrize("request_kw", [{"epsilon": 40.0, "delta": 1e-6}, {"rho": 12.5}])
def test_a_rare_event_logit_falls_back_under_every_unit_and_meets_the_request(request_kw):
    # the fallback engine is calibrated to what the histograms (outcome counted) leave
    from dpreg.fits.engine_choice import NEWTON_MIN_N_MU, request_mu
    from dpreg.privacy.request import PrivacyRequest

    rng = np.random.default_rng(6)
    n = math.ceil(NEWTON_MIN_N_MU / 5)
    assert n * request_mu(PrivacyRequest.from_options(**request_kw)) >= NEWTON_MIN_N_MU
    x = rng.uniform(0, 4, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(-4.5 + 0.5 * x)))).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_logit("y ~ x", pd.DataFrame({"x": x, "y": y}), bounds={"x": (0, 4)},
                             random_state=2, **request_kw)
    assert res.engine == "DP-SGD"
    assert res.ledger.events[0].name == "ranges (noisy histograms)"
    if "rho" in request_kw:  # the rigorous zCDP total of every release, the ranges' too
        assert res.ledger.rho_rigorous <= request_kw["rho"] * (1 + 1e-9)
    else:  # the rigorous PLD epsilon at the request's delta
        assert res.ledger.epsilon_rigorous[0] <= request_kw["epsilon"] * (1 + 1e-6)


def test_a_rare_logit_with_declared_outcome_bounds_is_not_clipped_to_a_range():
    # the outcome's bounds (0, 1) declared: its histogram is counted (and gives the rate)
    # but no range is learned for it (a range [0, 0.5] would make it non-binary)
    rng = np.random.default_rng(7)
    n = 5000
    x = rng.uniform(0, 4, n)
    y = np.zeros(n)
    y[rng.choice(n, 25, replace=False)] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpreg.dp_logit("y ~ x", pd.DataFrame({"x": x, "y": y}),
                             bounds={"x": (0, 4), "y": (0, 1)}, mu=5, random_state=1)
    assert res.engine == "DP-SGD"  # 25 ones: n mu r (1 - r) is about 125
    assert "y [" not in res.settings.value("ranges")
    assert np.all(np.isfinite(res.params))
