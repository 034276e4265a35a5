"""Fit options on their own (dpreg.fits.options and each engine's record in dpreg.fits, built by
dpreg.fits.registry.fit_options): defaults per engine, the budget split each engine gets,
the error each bad value raises (it must name the option), and options that do not
apply to an engine."""

import math

import numpy as np
import pytest

from dpreg.exceptions import OptionError
from dpreg.fits.dpsgd import PRECONDITIONED_SPLIT
from dpreg.fits.ldp_sgd import LDP_PLUGIN_SPLIT
from dpreg.fits.options import DEFAULT_BUDGET_SPLIT, checked_split
from dpreg.fits.registry import ENGINES, check_known, fit_options

ENGINE_COV_TYPES = {name: engine.cov_types for name, engine in ENGINES.items()}
FitOptions = fit_options


# -- defaults ------------------------------------------------------------------------
@pytest.mark.parametrize("engine, cov_type, lr_decay", [
    ("dpsgd", "plugin", 0.501), ("ldp_sgd", "rs", 0.51), ("dpgd", "batch_means", None),
    ("adassp", "plugin", None), ("ssp", "plugin", None),
])
def test_engine_defaults(engine, cov_type, lr_decay):
    opts = FitOptions(engine=engine)
    assert opts.cov_type == cov_type == ENGINE_COV_TYPES[engine][0]
    assert getattr(opts, "lr_decay", None) == lr_decay
    assert opts.condition == "private"
    assert getattr(opts, "sampling", "uniform") == "uniform"
    if engine == "dpgd":
        assert (opts.n_estimates, opts.burn_in, opts.aggregate, opts.runs) == (
            10, 20, "mean", 1)


@pytest.mark.parametrize("engine, option, value", [
    ("dpgd", "batch_size", 10), ("dpgd", "sampling", "poisson"), ("dpgd", "n_batches", 5),
    ("dpgd", "lr_decay", 0.6), ("ldp_sgd", "steps", 100), ("ldp_sgd", "batch_size", 10),
    ("ldp_sgd", "sampling", "poisson"), ("ldp_sgd", "n_estimates", 5),
    ("adassp", "steps", 100), ("adassp", "clip", 1.0), ("adassp", "runs", 2),
    ("adassp", "aggregate", "ema"), ("adassp", "budget_split", {"path": 1.0}),
    ("dpsgd", "n_estimates", 5), ("dpsgd", "n_batches", 4), ("dpsgd", "aggregate", "ema"),
    ("ssp", "steps", 100), ("ssp", "lr", 0.1), ("ssp", "sampling", "poisson"),
    ("adassp", "robust", True), ("adassp", "n_boot", 500), ("dpsgd", "n_boot", 500),
])
def test_an_option_an_engine_lacks_does_not_apply(engine, option, value):
    """The engine's record decides: one message names the option and the engine."""
    with pytest.raises(OptionError, match=f"{option} does not apply to engine='{engine}'"):
        FitOptions(engine=engine, **{option: value})


@pytest.mark.parametrize("engine, option, value", [
    ("dpgd", "sampling", "uniform"), ("dpgd", "batch_size", None), ("adassp", "runs", 1),
    ("adassp", "n_estimates", 10), ("dpsgd", "burn_in", 20), ("ldp_sgd", "steps", None),
])
def test_an_option_at_its_default_is_ignored_where_it_does_not_apply(engine, option, value):
    assert not hasattr(FitOptions(engine=engine, **{option: value}), option)


def test_every_engine_accepts_each_of_its_cov_types_and_no_other():
    all_types = {c for cs in ENGINE_COV_TYPES.values() for c in cs}
    for engine, allowed in ENGINE_COV_TYPES.items():
        for cov_type in all_types:
            if cov_type in allowed:
                runs = {"runs": 10} if cov_type == "runs" else {}  # = n_estimates
                if cov_type == "sandwich":  # needs the meat's release
                    runs = {"robust": True}
                if cov_type == "cluster":  # needs the cluster meat's release
                    runs = {"robust": True, "groups": "g", "max_group_size": 5}
                assert FitOptions(engine=engine, cov_type=cov_type, **runs).cov_type == cov_type
            else:
                with pytest.raises(OptionError, match=f"not available with engine '{engine}'"):
                    FitOptions(engine=engine, cov_type=cov_type)


# -- budget split --------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, split", [
    ({}, PRECONDITIONED_SPLIT),
    ({"condition": "bounds"}, DEFAULT_BUDGET_SPLIT),
    ({"engine": "dpgd"}, {"path": 0.95, "precondition": 0.05}),
    ({"engine": "dpgd", "condition": "none"}, {"path": 1.0}),
    ({"engine": "ldp_sgd"}, {"path": 1.0}),
    ({"engine": "ldp_sgd", "cov_type": "plugin"}, LDP_PLUGIN_SPLIT),
])
def test_default_split_per_engine(kwargs, split):
    assert FitOptions(**kwargs).split() == pytest.approx(split, rel=1e-15)


def test_default_splits_are_the_documented_shares():
    assert DEFAULT_BUDGET_SPLIT == {"path": 0.6, "hessian": 0.3, "score": 0.1}
    assert PRECONDITIONED_SPLIT == {"path": 0.6, "precondition": 0.05, "hessian": 0.25,
                                    "score": 0.1}
    assert math.fsum(PRECONDITIONED_SPLIT.values()) == pytest.approx(1.0, abs=1e-15)


def test_a_zero_share_drops_its_mechanism():
    split = FitOptions(budget_split={"path": 1.0, "hessian": 0, "score": 0.0}).split()
    assert split == {"path": 1.0}


@pytest.mark.parametrize("split, words", [
    ({"path": 0.5, "hessian": 0.5}, "both 'hessian' and 'score'"),
    ({"path": 0.5, "score": 0.5}, "both 'hessian' and 'score'"),
    ({"hessian": 0.5, "score": 0.5}, "path"),
    ({"path": 0.9, "noise": 0.1}, r"unknown key\(s\) \['noise'\]"),
    ({"path": 0.5, "hessian": 0.1, "score": 0.1}, "sum to 1"),
    ({}, "non-empty dict"),
    ([("path", 1.0)], "non-empty dict"),
])
def test_bad_splits_are_refused(split, words):
    with pytest.raises(OptionError, match=words):
        FitOptions(condition="bounds", budget_split=split).split()


def test_precondition_share_only_with_the_private_preconditioner():
    split = {"path": 0.6, "precondition": 0.05, "hessian": 0.25, "score": 0.1}
    assert FitOptions(budget_split=split).split() == pytest.approx(split)
    with pytest.raises(OptionError, match="unknown key.*precondition"):
        FitOptions(condition="bounds", budget_split=split).split()


def test_checked_split_keeps_the_shares():
    out = checked_split({"path": 0.75, "hessian": 0.125, "score": 0.125},
                        ("path", "hessian", "score"), DEFAULT_BUDGET_SPLIT)
    assert out == {"path": 0.75, "hessian": 0.125, "score": 0.125}


# -- validation ----------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, name", [
    ({"engine": "adam"}, "engine"),
    ({"aggregate": "median", "engine": "dpgd"}, "aggregate"),
    ({"sampling": "bernoulli"}, "sampling"),
    ({"condition": "whiten"}, "condition"),
    ({"batch_size": 0}, "batch_size"), ({"batch_size": 2.0}, "batch_size"),
    ({"steps": 1}, "steps"), ({"steps": 10.5}, "steps"), ({"steps": True}, "steps"),
    ({"clip": 0.0}, "clip"), ({"clip": math.inf}, "clip"), ({"clip": "1"}, "clip"),
    ({"lr": -0.1}, "lr"), ({"lr": math.nan}, "lr"), ({"x_bound": 0}, "x_bound"),
    ({"lr_decay": 0.5}, "lr_decay"), ({"lr_decay": 1.0}, "lr_decay"),
    ({"engine": "dpgd", "lr_decay": 0.6}, "lr_decay does not apply"),
    ({"engine": ["dpsgd"]}, "engine"),
    ({"n_batches": 1, "engine": "ldp_sgd"}, "n_batches"),
    ({"n_estimates": 1, "engine": "dpgd"}, "n_estimates"),
    ({"burn_in": -1, "engine": "dpgd"}, "burn_in"),
    ({"burn_in": 2.5, "engine": "dpgd"}, "burn_in"),
    ({"ema_beta": 1.0, "engine": "dpgd"}, "ema_beta"),
    ({"ema_beta": 0, "engine": "dpgd"}, "ema_beta"),
    ({"upa_k": 0, "engine": "dpgd"}, "upa_k"), ({"runs": 0, "engine": "dpgd"}, "runs"),
    ({"progress": 1}, "progress"), ({"strict": "yes"}, "strict"),
    ({"diagnostics": None}, "diagnostics"),
    ({"random_state": -1}, "random_state"), ({"random_state": "seed"}, "random_state"),
    ({"random_state": 1.5}, "random_state"),
])
def test_bad_values_name_the_option(kwargs, name):
    with pytest.raises(OptionError, match=name):
        FitOptions(**kwargs)


@pytest.mark.parametrize("kwargs", [
    {"batch_size": np.int64(5), "steps": 2}, {"clip": np.float64(0.5), "lr": 1e-9},
    {"lr_decay": 0.999}, {"random_state": 0},
    {"random_state": np.random.default_rng(1)}, {"random_state": np.random.SeedSequence(2)},
    {"progress": np.bool_(True)},
    {"engine": "dpgd", "cov_type": "runs", "ema_beta": 0.5, "aggregate": "upa", "upa_k": 3,
     "runs": 4, "n_estimates": 4, "burn_in": 0},
])
def test_good_values_pass_unchanged(kwargs):
    opts = FitOptions(**kwargs)
    for key, value in kwargs.items():
        assert getattr(opts, key) is value


def test_options_are_frozen():
    with pytest.raises(AttributeError):
        FitOptions().steps = 10


def test_unknown_option_names_the_closest_one():
    with pytest.raises(OptionError, match="unknown option 'bach_size'; did you mean "
                                          "'batch_size'"):
        check_known({"bach_size": 3})
    with pytest.raises(OptionError, match="unknown option 'zzz'$"):
        check_known({"zzz": 1})
    check_known({"mu": 1, "bounds": {}, "levels": {}, "c": 1.0})  # fit and model options
    check_known({"chunksize": 10}, extra=("chunksize",))
