"""Sensitivity audit over the option grid (dpreg.audit.sensitivity): for every central
matrix release, the path's clipped gradients, LDP-SGD's plug-in sums and SSP's sums, the
largest change between neighbouring data sets found adversarially (box corners, levels,
parameters fitting the replaced row) is at most the sensitivity the ledger records.

CI runs a fixed sample of the grid (``GRID_SAMPLE``); ``-m slow`` runs all of it
(``python validation/sensitivity_grid.py`` prints the matrix the privacy audit page shows).
"""

import itertools

import numpy as np
import pytest

from dpreg.audit import sensitivity as sens_audit
from dpreg.audit.sensitivity import GRID_SAMPLE, audit_cell, grid_cells
from dpreg.fits.common import Problem
from dpreg.inference import plugin


def _check(table):
    assert len(table) > 0
    # the ratio of the largest change found to the ledger's sensitivity: at most 1
    # (1e-9: float rounding of a sum of n terms against its bound)
    assert (table["ratio"] <= 1 + 1e-9).all(), table.to_string()


@pytest.mark.parametrize("cell", GRID_SAMPLE, ids=lambda c: "-".join(map(str, c)))
def test_sensitivity_sample_of_the_grid(cell):
    _check(audit_cell(*cell))


@pytest.mark.slow
@pytest.mark.parametrize("cell", grid_cells(), ids=lambda c: "-".join(map(str, c)))
def test_sensitivity_whole_grid(cell):
    _check(audit_cell(*cell))


def test_the_grid_covers_every_option_value():
    cells = grid_cells()
    # 588 before the scale boxes (form "scale"), 690 before a column without bounds
    # beside bounded ones (form "partial"; not for SSP, which bounds every column), 786
    # before noisy Newton (logistic, Huber, expectile, with Mallows weights or none: 2
    # times 3 conditionings times 7, 8 and 8 forms)
    assert len(cells) == len(set(cells)) == 924
    for k, values in enumerate([{"dpsgd", "dpgd", "ldp_sgd", "ssp", "newton"},
                                {"uniform", "poisson", "clusters", None},
                                {"linear", "huber", "expectile", "logistic"},
                                {"mallows", None}, {"private", "bounds", "none"},
                                set(sens_audit.GRID_FORMS)]):
        assert {c[k] for c in cells} == values
        assert {c[k] for c in GRID_SAMPLE} == values  # the CI sample too
    assert set(GRID_SAMPLE) <= set(cells)


def test_mallows_condition_none_is_charged_for_natural_units():
    # the review's case: natural-unit boxes, condition="none": the ledger's Hessian
    # sensitivity must follow the rows the release sums (about 1e3 times the default's)
    table = audit_cell("dpsgd", "uniform", "huber", "mallows", "none", "main")
    default = audit_cell("dpsgd", "uniform", "huber", "mallows", "private", "main")
    a = table.set_index("release").loc["Hessian A"]
    a0 = default.set_index("release").loc["Hessian A"]
    assert a["ledger_sensitivity"] > 100 * a0["ledger_sensitivity"]
    # and the audit finds changes of that order there (it searches adversarially)
    assert a["max_change"] > 10 * a0["ledger_sensitivity"]


def test_the_audit_catches_the_old_understatement(monkeypatch):
    # Put back the bug (Mallows rows assumed at w||z||^2 <= 2 in every coordinate system,
    # and nothing enforcing it): the audit must report a ratio far above 1.
    def old_bounds(self, cond, x_bound):
        if not self.objective.mallows:
            return float(x_bound), float(x_bound) ** 2
        return (min(np.sqrt(2.0), x_bound or np.inf), min(2.0, (x_bound or np.inf) ** 2))

    def old_clip_rows(X, bound, weights=None, row_sq=None):
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        if bound is None:
            return X
        return X * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]

    monkeypatch.setattr(Problem, "weighted_row_bounds", old_bounds)
    monkeypatch.setattr(plugin, "clip_rows", old_clip_rows)
    table = audit_cell("dpsgd", "uniform", "huber", "mallows", "none", "main")
    ratio = table.set_index("release").loc["Hessian A", "ratio"]
    assert ratio > 100, table.to_string()


def test_corner_rows_cover_the_boxes_and_levels():
    data = sens_audit._grid_frame(1).drop(columns="b")
    levels = {"g": ["a", "b", "c"]}
    rows = sens_audit.corner_rows(data, {"y": (0, 1), "age": (16, 100)}, levels)
    # 2 x 2 corners times 3 levels, plus the centre
    assert len(rows) == 13
    assert {(r["y"], r["age"], r["g"]) for r in rows[:-1]} == set(
        itertools.product((0.0, 1.0), (16.0, 100.0), levels["g"]))
    assert rows[-1]["age"] == 58.0


@pytest.mark.parametrize("engine, releases", [
    ("dpsgd", {"DP-SGD path", "Hessian A", "score covariance S"}),
    ("dpgd", {"DP-GD path", "second moment G (preconditioner)"}),
    ("ldp_sgd", {"LDP-SGD gradients", "Hessian A", "score covariance S"}),
    ("ssp", {"SSP X'X", "SSP X'y", "SSP y'y", "SSP meat sum g g'"}),
])
def test_every_release_of_an_engine_is_audited(engine, releases):
    sampling = "uniform" if engine == "dpsgd" else None
    condition = "bounds" if engine in ("ldp_sgd", "ssp") else "private"
    table = audit_cell(engine, sampling, "linear", None, condition, "main")
    assert releases <= set(table["release"]), table.to_string()
    _check(table)


def test_every_release_of_noisy_newton_is_audited():
    table = audit_cell("newton", None, "logistic", None, "private", "main")
    assert set(table["release"]) == {"Newton gradients", "Newton last gradient",
                                     "Hessian A", "score covariance S"}
    _check(table)


def test_the_newton_audit_finds_a_ledger_that_undercharges(monkeypatch):
    # the largest change the audit finds is half the replace-one charge (one row's term
    # against its replacement's); a ledger charging a quarter of it must be caught
    from dpreg.engines.newton import NewtonSettings

    honest = audit_cell("newton", None, "logistic", None, "none", "main")
    real = NewtonSettings.sensitivities
    monkeypatch.setattr(NewtonSettings, "sensitivities",
                        lambda self: {k: v / 4 for k, v in real(self).items()})
    broken = audit_cell("newton", None, "logistic", None, "none", "main")
    for release in ("Newton gradients", "Newton last gradient"):
        assert honest.set_index("release").loc[release, "ratio"] <= 1 + 1e-9
        assert broken.set_index("release").loc[release, "ratio"] > 1.5


def test_the_path_audit_finds_a_kernel_that_clips_looser_than_the_ledger(monkeypatch):
    # the ledger charges clip per step under zero-out; a kernel bug that clipped at
    # three times the setting would change a step's sum by up to three times the
    # charge, and the audit, which runs the kernel, must report it
    import dataclasses

    import dpreg.engines

    honest = audit_cell("dpsgd", "poisson", "linear", None, "bounds", "main")
    real = dpreg.engines.run_dpsgd

    def loose_kernel(X, y, *, settings, **kw):
        return real(X, y, settings=dataclasses.replace(settings, clip=3 * settings.clip),
                    **kw)

    monkeypatch.setattr(dpreg.engines, "run_dpsgd", loose_kernel)
    broken = audit_cell("dpsgd", "poisson", "linear", None, "bounds", "main")
    assert honest.set_index("release").loc["DP-SGD path", "ratio"] <= 1 + 1e-9
    # (the corner rows' gradients reach 2.2 times the charge under the loose clip)
    assert broken.set_index("release").loc["DP-SGD path", "ratio"] > 1.5


RANGES_SAMPLE = [("dpsgd", "poisson", "linear", None, "private", "square"),
                 ("ssp", None, "linear", None, "private", "categorical"),
                 ("dpsgd", "uniform", "linear", None, "private", "scale")]


@pytest.mark.parametrize("cell", RANGES_SAMPLE, ids=lambda c: "-".join(map(str, c)))
def test_private_ranges_release_in_the_grid(cell):
    table = audit_cell(*cell, ranges=True)
    assert list(table["release"]) == ["ranges (noisy histograms)"]
    _check(table)
    # one count moves per column (zero-out) or two (replace-one): the bound is attained
    assert table["ratio"].iloc[0] == pytest.approx(1.0, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("cell", sens_audit.ranges_cells(), ids=lambda c: "-".join(map(str, c)))
def test_private_ranges_whole_grid(cell):
    _check(audit_cell(*cell, ranges=True))


@pytest.mark.parametrize("cell", sens_audit.rate_cells()[:2],
                         ids=lambda c: "-".join(map(str, c)))
def test_the_outcome_rate_release_is_in_the_grid(cell):
    # a default logit at large n mu counts its outcome's zeros and ones with the ranges'
    # histograms (the engine's choice; here the outcome has no declared bounds): the
    # charge covers the extra column, and the bound is attained
    table = audit_cell(*cell, ranges=True, outcome_rate=True)
    assert list(table["release"]) == ["ranges (noisy histograms)"]
    _check(table)
    assert table["ratio"].iloc[0] == pytest.approx(1.0, rel=1e-12)
    # the grid's cells declare the outcome's bounds, so there it is a range column: one
    # column either way, counted once
    plain = audit_cell(*cell, ranges=True)
    assert table["ledger_sensitivity"].iloc[0] == pytest.approx(
        plain["ledger_sensitivity"].iloc[0])


@pytest.mark.slow
@pytest.mark.parametrize("cell", sens_audit.rate_cells(), ids=lambda c: "-".join(map(str, c)))
def test_outcome_rate_whole_grid(cell):
    _check(audit_cell(*cell, ranges=True, outcome_rate=True))


def test_the_ranges_audit_finds_a_histogram_that_counts_a_row_twice(monkeypatch):
    # a release whose rows weigh 2 would change by twice the charge; the audit must see it
    real = sens_audit.column_histogram
    monkeypatch.setattr(sens_audit, "column_histogram", lambda v, e: 2 * real(v, e))
    table = audit_cell(*RANGES_SAMPLE[0], ranges=True)
    assert table["ratio"].iloc[0] > 1.5
