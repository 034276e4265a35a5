"""The registry of interval methods against the engines, the summaries and the fits."""

import math

import numpy as np
import pytest

import dpreg
from dpreg.fits import registry
from dpreg.fits.registry import ENGINES
from dpreg.inference import methods
from dpreg.inference.base import Inference
from dpreg.inference.methods import (
    METHODS,
    Method,
    base_method,
    engine_methods,
    offered_methods,
    with_derived,
)
from dpreg.results.summary import METHOD_LABELS

#: What each engine offered before the registry (its options record's cov_types), the
#: first its default: the registry gives the same methods in the same order, with the
#: same default (a method added to the registry may join them).
OFFERED = {"dpsgd": ("plugin", "rs"), "ldp_sgd": ("rs", "plugin", "batch_means"),
           "dpgd": ("batch_means", "checkpoints", "runs"), "adassp": ("plugin",),
           "ssp": ("plugin", "pboot", "pboot_basic", "sandwich", "cluster"),
           "newton": ("plugin",)}


def test_engines_offer_what_they_did():
    assert set(ENGINES) == set(OFFERED)
    for name, engine in ENGINES.items():
        assert engine.cov_types[0] == OFFERED[name][0], name
        assert tuple(m for m in engine.cov_types if m in OFFERED[name]) == OFFERED[name]


def test_every_method_names_known_engines_and_a_label():
    for name, method in METHODS.items():
        assert method.name == name
        assert set(method.engines) <= set(ENGINES), name
        assert METHOD_LABELS[name] == method.label
        assert method.description and "\n" not in method.description
        if method.source is not None:  # a derived method: its engines build its source
            assert all(method.source in ENGINES[e].cov_types for e in method.engines), name
    assert set(offered_methods()) == {m for e in ENGINES.values() for m in e.cov_types}


def test_iv_offers_what_it_did_from_the_registry():
    # dp_iv2sls is no engine of the registry of engines; its methods are registry lines
    # (Method.estimators), in the order and with the default it had before
    from dpreg.fits.iv import COV_TYPES

    assert COV_TYPES == ("plugin", "pboot", "pboot_basic")
    assert {m.name for m in METHODS.values() if "iv2sls" in m.estimators} == set(COV_TYPES)


def test_a_default_the_engine_does_not_offer_is_refused():
    with pytest.raises(ValueError, match="does not offer"):
        engine_methods("adassp", "rs")


def test_standard_error_flags_agree_with_the_fits(small_frame, small_bounds):
    # the flag of every method a fit returns equals the record's (an independent source:
    # the construction in dpreg.inference that built it)
    levels = {"g": ["a", "b", "c"]}
    fits = [dpreg.dp_ols("y ~ x + C(g) + d", small_frame, mu=2.0, bounds=small_bounds,
                         levels=levels, engine=engine, random_state=1, **kw)
            for engine, kw in (("dpsgd", {}), ("ssp", {"robust": True}),
                               ("dpgd", {}), ("ldp_sgd", {}))]
    fits.append(dpreg.oracle("y ~ x + C(g) + d", small_frame, bounds=small_bounds,
                             levels=levels))
    seen = set()
    for res in fits:
        for name, inf in res.inferences.items():
            assert inf.is_standard_error == METHODS[name].standard_error, name
            seen.add(name)
    assert seen >= {"plugin", "rs", "sandwich", "pboot", "pboot_basic", "batch_means",
                    "oracle"}


def _doubled(record, cov):
    # a derived method for the tests: the source's variance doubled (the toy of
    # CONTRIBUTING, "Add an interval method")
    return Inference("twice", math.sqrt(2.0) * record.scale, record.law,
                     record.is_standard_error, "twice", cov=None if cov is None else 2 * cov)


def test_a_method_needs_both_source_and_builder():
    with pytest.raises(ValueError, match="source and builder"):
        Method("twice", "Twice", True, "twice", ("ssp",), source="plugin")


def test_with_derived_builds_from_the_source_and_its_covariance():
    twice = Method("twice", "Twice", True, "twice", ("ssp",), "plugin", _doubled)
    scale = np.array([1.0, 2.0])
    cov = np.array([[1.0, 0.5], [0.5, 4.0]])
    plugin = Inference("plugin", scale, object(), True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(METHODS, "twice", twice)
        assert base_method("twice") == "plugin" and base_method("rs") == "rs"
        # the fit's covariance is the source's when its diagonal gives the scale
        out = with_derived({"plugin": plugin}, cov)
        np.testing.assert_array_equal(out["twice"].scale, math.sqrt(2) * scale)
        np.testing.assert_array_equal(out["twice"].cov, 2 * cov)
        assert with_derived({"plugin": plugin}, 2 * cov)["twice"].cov is None
        assert set(with_derived({"rs": plugin}, cov)) == {"rs"}  # no source, no method
        # a record the fit built itself under the name is kept
        own = Inference("twice", scale, object(), True)
        assert with_derived({"plugin": plugin, "twice": own})["twice"] is own


@pytest.mark.filterwarnings("ignore::dpreg.exceptions.ConvergenceWarning")  # LDP at n = 400
@pytest.mark.parametrize("engine, kw", [("dpsgd", {}), ("ssp", {}), ("adassp", {}),
                                        ("ldp_sgd", {"cov_type": "plugin"})])
def test_a_derived_method_is_one_registry_line(engine, kw, small_frame, small_bounds,
                                               monkeypatch):
    # registered at run time: the engines' cov_types were read at import, so the test
    # sets them too (a registry line in the module does both)
    twice = Method("twice", "Twice", True, "twice", tuple(OFFERED), "plugin", _doubled)
    monkeypatch.setitem(METHODS, "twice", twice)
    options = ENGINES[engine].options
    monkeypatch.setattr(options, "cov_types", (*options.cov_types, "twice"))
    assert methods.METHODS is METHODS and registry.ENGINES[engine].cov_types[-1] == "twice"
    levels = {"g": ["a", "b", "c"]}
    fit = {"formula": "y ~ x + C(g) + d", "data": small_frame, "mu": 2.0,
           "bounds": small_bounds, "levels": levels, "engine": engine, "random_state": 1}
    plain = dpreg.dp_ols(**fit, **kw)
    chosen = dpreg.dp_ols(**fit, **dict(kw, cov_type="twice"))
    # the same fit (the derived method spends nothing), the interval of the toy
    np.testing.assert_array_equal(chosen.params, plain.params)
    assert "twice" in plain.inferences and chosen.cov_type == "twice"
    np.testing.assert_allclose(chosen.bse, math.sqrt(2) * plain.bse_by("plugin"),
                               rtol=1e-12)
    np.testing.assert_allclose(chosen.cov_params(), 2 * plain.cov_params(), rtol=1e-12)
    assert chosen.ledger.to_frame().equals(plain.ledger.to_frame())
    # tests of restrictions read its covariance
    assert float(np.ravel(chosen.t_test("x = 0").sd)[0]) == pytest.approx(
        math.sqrt(2) * float(np.ravel(plain.t_test("x = 0", method="plugin").sd)[0]),
        rel=1e-12)
