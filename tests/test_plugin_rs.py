"""DP-SGD's default where the eigenvalue-floor check names coefficients: the plug-in's
intervals, random scaling's for those (``"plugin_rs"``, dpreg.inference.mixed), one
default everywhere (issue 26, item 3), and the finding alone a note at the learned
ranges (``FLOOR_NOTE_MIN_N_MU``)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpreg
from dpreg.exceptions import ConvergenceWarning, OptionError
from dpreg.inference.base import NormalLaw
from dpreg.inference.diagnostics import FLOOR_NOTE_MIN_N_MU, ConvergenceReport, floor_as_note
from dpreg.inference.mixed import PerCoefficientLaw
from dpreg.inference.pivot import rs_pivot
from dpreg.studies.textbook import simulate_design


def _design(seed: int):
    # a logit of about 3.5% ones at n = 5,000 (codebook bounds): at mu = 2 (n mu =
    # 10,000) on learned ranges the private Hessian's floor decides kidslt6's plug-in
    # standard error in many fits
    data, formula, bounds, _, _ = simulate_design("rare_approval", 5000,
                                                  np.random.default_rng(seed))
    return data, formula, bounds


def _fit(seed: int, **options):
    data, formula, bounds = _design(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = dpreg.dp_logit(formula, data, bounds=bounds, mu=2.0, engine="dpsgd",
                             random_state=seed, **options)
    return res, data, [w for w in caught if issubclass(w.category, ConvergenceWarning)]


@pytest.fixture(scope="module")
def noted():
    return _fit(3)  # the floor check's finding is the fit's only one


@pytest.fixture(scope="module")
def warned():
    return _fit(20)  # the floor check and the curvature check both fire


def test_per_coefficient_law_takes_each_coefficients_own():
    law = PerCoefficientLaw(NormalLaw(), rs_pivot, np.array([False, True, False]))
    crit = law.critical_value(0.05)
    assert crit[0] == pytest.approx(1.959964, abs=1e-6) == crit[2]
    assert crit[1] == pytest.approx(float(rs_pivot.critical_value(0.05)))
    p = law.two_sided_pvalue(np.array([2.0, 2.0, -1.0]))
    assert p[0] == pytest.approx(NormalLaw().two_sided_pvalue(2.0))
    assert p[1] == pytest.approx(float(rs_pivot.two_sided_pvalue(2.0)))
    assert p[1] > 0.2 > p[0]  # the pivot's tails are far heavier


def test_floor_as_note_only_alone_and_from_the_threshold():
    alone = ConvergenceReport(floor_decided=("x",))
    assert floor_as_note(alone, FLOOR_NOTE_MIN_N_MU).floor_noted == ("x",)
    assert floor_as_note(alone, FLOOR_NOTE_MIN_N_MU).floor_decided == ()
    assert floor_as_note(alone, FLOOR_NOTE_MIN_N_MU).ok
    assert floor_as_note(alone, FLOOR_NOTE_MIN_N_MU - 1) is alone
    for other in (dict(unconverged=("y",)), dict(curvature_biased=("x",)),
                  dict(plugin_too_long=("y",)), dict(public=("too few rows",))):
        report = ConvergenceReport(floor_decided=("x",), **other)
        assert floor_as_note(report, 1e9) is report


def test_floor_alone_at_learned_ranges_is_a_note(noted):
    res, _, caught = noted
    assert res.convergence.floor_noted == ("kidslt6",)
    assert res.convergence.floor_decided == () and not caught
    assert res.cov_type == "plugin_rs"
    text = " ".join(res.summary().as_text().split())  # the notes are wrapped
    assert "a note, not a warning" in text and "WARNING" not in text
    assert "Inference: Plug-in, RS where floor-set" in text


def test_floor_alone_is_a_note_from_the_grids_lowest_n_mu():
    # the fertility equation at n = 1,000, mu = 1 (n mu = 1,000, the lowest the budget
    # grid measured, where the named random-scaling intervals covered 0.985 at the
    # learned ranges): the floor's finding alone is a note there; in the codebook's
    # declared boxes (0.82 there) the same data still warn
    data, formula, bounds, levels, _ = simulate_design("fertility", 1000,
                                                       np.random.default_rng(2))
    assert FLOOR_NOTE_MIN_N_MU <= 1000
    fits = {}
    for ranges in ("auto", "declared"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            fits[ranges] = dpreg.dp_ols(formula, data, bounds=bounds, levels=levels, mu=1.0,
                                        engine="dpsgd", ranges=ranges, random_state=2)
        fits[ranges] = (fits[ranges], [w for w in caught
                                       if issubclass(w.category, ConvergenceWarning)])
    res, caught = fits["auto"]
    assert res.convergence.floor_noted and res.convergence.floor_decided == ()
    assert not caught and res.cov_type == "plugin_rs"
    assert "n mu >= 1,000" in " ".join(res.summary().as_text().split())
    res, caught = fits["declared"]
    assert res.convergence.floor_decided and not res.convergence.floor_noted
    assert any("eigenvalue floor" in str(w.message) for w in caught)


@pytest.mark.parametrize("which", ["noted", "warned"])
def test_one_default_everywhere(which, request):
    res, data, _ = request.getfixturevalue(which)
    named = list(res.inference().columns)
    assert named and res.cov_type == "plugin_rs"
    others = [c for c in res.params.index if c not in named]
    ci, plug, rs = res.conf_int(), res.conf_int(method="plugin"), res.conf_int(method="rs")
    pd.testing.assert_frame_equal(ci.loc[named], rs.loc[named])
    pd.testing.assert_frame_equal(ci.loc[others], plug.loc[others])
    pd.testing.assert_series_equal(res.pvalues[named], res.pvalues_by("rs")[named],
                                   check_names=False)
    pd.testing.assert_series_equal(res.pvalues[others], res.pvalues_by("plugin")[others],
                                   check_names=False)
    frame = res.summary_frame()
    np.testing.assert_allclose(frame["P>|z|"], res.pvalues, rtol=1e-12)
    np.testing.assert_allclose(frame[["[0.025", "0.975]"]].to_numpy(), ci.to_numpy(),
                               rtol=1e-12)
    assert frame.loc[named, "std err"].isna().all()
    np.testing.assert_allclose(frame.loc[others, "std err"], res.bse_by("plugin")[others])
    with pytest.raises(OptionError, match="bse_by"):
        res.bse  # noqa: B018
    # a test of one coefficient agrees with its row, whichever law it has
    for name in (named[0], others[-1]):
        t = res.t_test(f"{name} = 0")
        assert float(np.squeeze(t.pvalue)) == pytest.approx(res.pvalues[name], rel=1e-9)
        np.testing.assert_allclose(np.squeeze(t.conf_int()), ci.loc[name], rtol=1e-9)
    # a joint test involving a named coefficient is random scaling's, else the plug-in's
    assert res.wald_test(f"{named[0]} = 0, {others[-1]} = 0").method == "rs"
    assert res.wald_test(f"{others[-1]} = 0, {others[-2]} = 0").method == "plugin"
    # margins: each coefficient's row by its own law (logit: every row involves every
    # coefficient, so all are random scaling's); a prediction where the named columns
    # are zero is the plug-in's
    row = pd.DataFrame({"age": [40.0], "educ": [12.0], "kidslt6": [0.0],
                        "nwifeinc": [0.0]})
    if set(named) <= {"kidslt6", "nwifeinc"}:
        pred = res.get_prediction(row).summary_frame()
        pd.testing.assert_frame_equal(pred, res.get_prediction(row, method="plugin")
                                      .summary_frame())
    full = pd.DataFrame({"age": [40.0], "educ": [12.0], "kidslt6": [1.0],
                         "nwifeinc": [20.0]})
    pd.testing.assert_frame_equal(res.get_prediction(full).summary_frame(),
                                  res.get_prediction(full, method="rs").summary_frame())


def test_the_check_with_another_finding_still_warns(warned):
    res, _, caught = warned
    report = res.convergence
    assert report.floor_decided and report.curvature_biased and not report.floor_noted
    floor = [str(w.message) for w in caught if "eigenvalue floor" in str(w.message)]
    assert floor and "default intervals of these coefficients are therefore random " \
                     "scaling's" in floor[0]


def test_cov_type_given_keeps_its_method(noted):
    res, _, _ = noted
    again, _, caught = _fit(3, cov_type="plugin")
    assert again.cov_type == "plugin" and not caught
    assert again.convergence.floor_noted == ("kidslt6",)  # the same fit, the same note
    pd.testing.assert_frame_equal(again.conf_int(), res.conf_int(method="plugin"))


def test_with_clusters_the_switched_default_stays_random_scaling_and_says_so():
    # clusters as the privacy unit: "plugin_rs" was not measured there, so a switched
    # default is random scaling for every coefficient and the warning says that
    report = ConvergenceReport(floor_decided=("b",), default_switched=True, default_rs=True)
    (message,) = report.messages("DP-SGD")
    assert "default inference is therefore random scaling" in message
    assert "the others keep the plug-in's" not in message
    (mixed,) = ConvergenceReport(floor_decided=("b",), default_switched=True).messages()
    assert "the others keep the plug-in's" in mixed


def test_contrasts_take_each_rows_own_method(noted):
    # rows of J that put weight on a named coefficient get random scaling's scale and
    # law, the others the plug-in's (what margins of a linear index use)
    from dpreg.results.hypothesis import contrast_scales

    res, _, _ = noted
    names = list(res.params.index)
    named, other = names.index("kidslt6"), names.index("educ")
    J = np.eye(len(names))[[named, other]]
    scales, law, method, is_se = contrast_scales(res, J, None)
    assert isinstance(law, PerCoefficientLaw) and method == "plugin_rs" and not is_se
    rs_scale, _, _, _ = contrast_scales(res, J[:1], "rs")
    assert scales[0] == pytest.approx(rs_scale[0], rel=1e-12)
    assert scales[1] == pytest.approx(res.bse_by("plugin")["educ"], rel=1e-12)
    np.testing.assert_allclose(law.critical_value(0.05) * scales,
                               (res.conf_int().iloc[[named, other], 1]
                                - res.params.iloc[[named, other]]).to_numpy(), rtol=1e-9)
