"""Study and Cell: grids, seeds that depend on a cell's values only, cache keys, checks."""

import importlib

import numpy as np
import pytest

from dpreg.exceptions import OptionError
from dpreg.studies import Study
from dpreg.studies.spec import canonical_json


def toy_replicate(seed, *, n, mu=1.0, scale=1.0):
    """Returns one row: a standard normal draw (for checking seeds)."""
    z = np.random.default_rng(seed).standard_normal()
    return [{"method": "m", "coef": "x1", "truth": 0.0, "estimate": scale * z}]


def make(grid, **kw):
    return Study(name=kw.pop("name", "toy"), replicate=toy_replicate, grid=grid, **kw)


def test_cells_are_the_product_in_grid_order():
    study = make({"n": [10, 20], "mu": [1.0, 2.0]})
    assert [c.label for c in study.cells()] == ["n=10, mu=1.0", "n=10, mu=2.0",
                                                "n=20, mu=1.0", "n=20, mu=2.0"]
    assert study.cells()[1].kwargs == {"n": 10, "mu": 2.0}


def test_union_of_grids_drops_duplicates_and_where_filters():
    study = make([{"n": [10, 20], "mu": [1.0]}, {"n": [20, 30], "mu": [1.0]}])
    assert [c.params["n"] for c in study.cells()] == [10, 20, 30]
    assert [c.params["n"] for c in study.cells(where={"n": [20, 30]})] == [20, 30]
    assert [c.params["n"] for c in study.cells(where=lambda p: p["n"] > 15)] == [20, 30]
    with pytest.raises(OptionError, match="no cell"):
        study.cells(where={"n": 99})


def test_seeds_depend_on_cell_values_not_position_or_other_cells():
    a = make({"n": [10, 20]})
    b = make({"n": [30, 20, 40]})  # cell n=20 at another position, other neighbours
    ca = a.cells(where={"n": 20})[0]
    cb = b.cells(where={"n": 20})[0]
    for rep in (0, 1, 7):
        assert np.array_equal(ca.seed_sequence(rep).generate_state(4),
                              cb.seed_sequence(rep).generate_state(4))
    # replications and cells get different streams
    states = {tuple(c.seed_sequence(r).generate_state(2)) for c in b.cells() for r in range(5)}
    assert len(states) == 15


def test_seed_is_a_node_of_the_spawn_tree():
    cell = make({"n": [10]}, seed=5).cells()[0]
    ss = cell.seed_sequence(3)
    parent = np.random.SeedSequence(5, spawn_key=ss.spawn_key[:-1])
    assert np.array_equal(parent.spawn(4)[3].generate_state(4), ss.generate_state(4))


def test_study_seed_name_and_constants_change_the_streams():
    base = make({"n": [10]}, seed=1).cells()[0].seed_sequence(0).generate_state(2)
    for other in (make({"n": [10]}, seed=2), make({"n": [10]}, seed=1, name="other"),
                  make({"n": [10]}, seed=1, constants={"scale": 2.0})):
        assert not np.array_equal(other.cells()[0].seed_sequence(0).generate_state(2), base)


def test_cache_key_tracks_revision_and_replicate_but_not_reps():
    k = make({"n": [10]}).cells()[0].key
    assert make({"n": [10]}, reps=999).cells()[0].key == k
    assert make({"n": [10]}, revision="2").cells()[0].key != k
    assert make({"n": [10]}, constants={"scale": 2.0}).cells()[0].key != k
    assert len(k) == 64 and k == make({"n": [10]}).cells()[0].key


def test_numpy_scalars_are_plain_values():
    study = make({"n": list(np.array([10, 20]))}, constants={"mu": np.float64(0.5)})
    assert study.cells()[0].kwargs == {"n": 10, "mu": 0.5}
    assert canonical_json(study.cells()[0].kwargs) == '{"mu":0.5,"n":10}'


def test_replicate_id_names_an_importable_function():
    # workers receive the function by reference and the cache key holds this name
    study = make({"n": [1]})
    module, _, qualname = study.replicate_id.partition(":")
    assert getattr(importlib.import_module(module), qualname) is toy_replicate


@pytest.mark.parametrize("kwargs, match", [
    ({"replicate": lambda seed: []}, "top level"),
    ({"grid": {"n": []}}, "non-empty list"),
    ({"grid": {"n": "abc"}}, "non-empty list"),
    ({"grid": {"coef": [1]}}, "factor names"),
    ({"grid": {"n": [object()]}}, "must be a str"),
    ({"grid": {"n": [float("nan")]}}, "finite"),
    ({"constants": {"n": 3}}, "both a factor and a constant"),
    ({"reps": 0}, "reps"),
    ({"seed": -1}, "seed"),
    ({"name": "a/b"}, "name"),
])
def test_invalid_studies_raise(kwargs, match):
    base = dict(name="toy", replicate=toy_replicate, grid={"n": [1]})
    base.update(kwargs)
    with pytest.raises(OptionError, match=match):
        Study(**base)


def test_bad_rep_raises():
    with pytest.raises(OptionError, match="rep"):
        make({"n": [1]}).cells()[0].seed_sequence(-1)
