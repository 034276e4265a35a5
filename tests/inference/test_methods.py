"""The registry of interval methods against the engines, the summaries and the fits."""

import pytest

import dpreg
from dpreg.fits.registry import ENGINES
from dpreg.inference.methods import METHODS, engine_methods, offered_methods
from dpreg.results.summary import METHOD_LABELS

#: What each engine offered before the registry (its options record's cov_types), the
#: first its default: the registry must give the same tuples.
OFFERED = {"dpsgd": ("plugin", "rs"), "ldp_sgd": ("rs", "plugin", "batch_means"),
           "dpgd": ("batch_means", "checkpoints", "runs"), "adassp": ("plugin",),
           "ssp": ("plugin", "pboot", "pboot_basic", "sandwich", "cluster")}


def test_engines_offer_what_they_did():
    assert {name: e.cov_types for name, e in ENGINES.items()} == OFFERED


def test_every_method_names_known_engines_and_a_label():
    for name, method in METHODS.items():
        assert method.name == name
        assert set(method.engines) <= set(ENGINES), name
        assert METHOD_LABELS[name] == method.label
        assert method.description and "\n" not in method.description
    assert set(offered_methods()) == {m for e in ENGINES.values() for m in e.cov_types}


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
