"""Recorded runs that cannot go stale (dpreg.studies.defaults): the fingerprint of the
defaults, the check on a made-up repository, the stamp, the command line, and the check
on this repository's recorded runs (the one the docs build runs)."""

import dataclasses
import json
from pathlib import Path

import pytest

from dpreg.__main__ import main
from dpreg.studies import defaults as sd

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def current():
    return sd.defaults_fingerprint()


def test_the_fingerprint_holds_the_defaults_read_independently(current):
    # each default read here from its own module, not through the fingerprint's code
    from dpreg.fits.iv import IVOptions
    from dpreg.fits.registry import ENGINES
    from dpreg.fits.ssp import DEFAULT_SPLIT
    from dpreg.inference import diagnostics
    from dpreg.privacy import ranges

    assert current["privacy.ranges.DEFAULT_BINS"] == repr(ranges.DEFAULT_BINS)
    assert current["privacy.ranges.DEFAULT_RANGES_SHARE"] == repr(ranges.DEFAULT_RANGES_SHARE)
    assert current["inference.diagnostics.RATIO_LIMIT"] == repr(diagnostics.RATIO_LIMIT)
    assert current["inference.diagnostics.SSP_FLOOR_SENSITIVITY"] == repr(
        diagnostics.SSP_FLOOR_SENSITIVITY)
    assert current["fits.ssp.DEFAULT_SPLIT"] == repr(DEFAULT_SPLIT)
    for name, engine in ENGINES.items():  # every option with a default, every engine
        for f in dataclasses.fields(engine.options):
            if f.default is not dataclasses.MISSING:
                assert current[f"{name}.{f.name}"] == repr(f.default), (name, f.name)
        assert current[f"{name}.default_cov_type"] == repr(engine.options.cov_types[0])
        assert current[f"{name}.learns_ranges"] == repr(engine.learns_ranges)
    assert current["iv2sls.n_boot"] == repr(IVOptions.n_boot)
    assert current["dp_huber(c)"] == "1.345"
    assert list(current) == sorted(current)
    assert all(len(v) <= 120 for v in current.values())  # long values by their hash
    assert current["fits._engine_choice_table.RULES"].startswith("sha256:")


def _repo(tmp_path, run_defaults, manifest=None, results=("a.csv",)):
    runs = tmp_path / "docs/studies/results"
    runs.mkdir(parents=True)
    record = {"study": "s", "command": "python -m dpreg study s --out x"}
    if run_defaults is not None:
        record["defaults"] = run_defaults
    (runs / "s-run.json").write_text(json.dumps(record))
    folder = tmp_path / "validation/results"
    folder.mkdir(parents=True)
    for name in results:
        (folder / name).write_text("x\n1\n")
    if manifest is not None:
        (folder / "DEFAULTS.json").write_text(json.dumps(manifest))
    return tmp_path


def test_a_run_under_todays_defaults_is_current_and_a_changed_default_makes_it_stale(
        tmp_path, current):
    root = _repo(tmp_path, dict(current), results=())
    assert sd.stale_runs(root, current) == []
    now = dict(current, **{"privacy.ranges.DEFAULT_BINS": "32"})
    del now["dpsgd.lr_decay"]  # a default that is gone counts as changed
    now["dpsgd.new_option"] = "'on'"  # and so does one added after the run
    (stale,) = sd.stale_runs(root, now)
    assert stale.path == "docs/studies/results/s-run.json"
    assert stale.changed == {"dpsgd.lr_decay": (current["dpsgd.lr_decay"], None),
                             "dpsgd.new_option": (None, "'on'"),
                             "privacy.ranges.DEFAULT_BINS": ("64", "32")}
    text = stale.describe()
    assert "privacy.ranges.DEFAULT_BINS: 64 -> 32" in text and "(gone)" in text
    assert "dpsgd.new_option: (absent) -> 'on'" in text
    # unless NEUTRAL gives the reason its addition kept every earlier number
    recorded = {k: v for k, v in current.items() if k not in sd.NEUTRAL}
    assert sd.NEUTRAL and sd.stale_runs(_repo(tmp_path / "b", recorded, results=()),
                                        current) == []
    assert "rerun: python -m dpreg study s --out x" in text


def test_a_run_without_defaults_or_a_result_without_a_stamp_is_stale(tmp_path, current):
    root = _repo(tmp_path, None)
    runs = sd.stale_runs(root, current)
    assert [r.path for r in runs] == ["docs/studies/results/s-run.json",
                                      "validation/results/a.csv"]
    assert all(r.changed == {} and "records no defaults" in r.reason for r in runs)
    with pytest.raises(sd.StaleRunError, match="2 recorded run"):
        sd.check_recorded_runs(root)


def test_stamping_a_validation_result_records_todays_defaults(tmp_path, current):
    root = _repo(tmp_path, dict(current), results=("a.csv", "b.txt"))
    manifest = sd.stamp_validation_results(root, ["validation/results/a.csv", "b.txt"],
                                           "python validation/a.py --reps 9")
    assert sd.stale_runs(root) == []
    (entry,) = {e["defaults"] for e in manifest["files"].values()}
    assert manifest["fingerprints"] == {entry: current}
    assert manifest["files"]["a.csv"]["command"] == "python validation/a.py --reps 9"
    written = json.loads((root / sd.MANIFEST).read_text())
    assert written == manifest
    now = dict(current, **{"inference.diagnostics.RATIO_LIMIT": "5.0"})
    stale = sd.stale_runs(root, now)
    assert [r.path for r in stale] == ["docs/studies/results/s-run.json",
                                      "validation/results/a.csv", "validation/results/b.txt"]
    assert stale[1].command == "python validation/a.py --reps 9"
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        sd.stamp_validation_results(root, ["nope.csv"], "x")


def test_the_command_line_checks_stamps_and_shows(tmp_path, current, capsys):
    root = _repo(tmp_path, dict(current))
    assert main(["defaults", "check", "--root", str(root)]) == 1
    assert "validation/results/a.csv: records no defaults" in capsys.readouterr().out
    assert main(["defaults", "stamp", "validation/results/a.csv", "--command",
                 "python validation/a.py", "--root", str(root)]) == 0
    assert main(["defaults", "check", "--root", str(root)]) == 0
    assert "0 stale recorded run(s)" in capsys.readouterr().out
    assert main(["defaults", "show"]) == 0
    assert "privacy.ranges.DEFAULT_BINS = 64" in capsys.readouterr().out


def test_a_study_run_records_its_defaults(tmp_path, current):
    out = tmp_path / "out"
    assert main(["study", "smoke", "--reps", "2", "--jobs", "1", "--out", str(out),
                 "--no-progress", "--no-cache"]) == 0
    record = json.loads((out / "smoke-run.json").read_text())
    assert record["defaults"] == current


def test_this_repositorys_recorded_runs_match_todays_defaults():
    """The check the docs build runs (docs/conf.py): it fails, naming each stale run,
    the defaults that changed and the command to rerun it, until the run is redone."""
    sd.check_recorded_runs(REPO)


def test_a_run_depends_only_on_the_defaults_it_names(tmp_path, current):
    root = _repo(tmp_path, dict(current), results=())
    record_path = root / "docs/studies/results/s-run.json"
    record = json.loads(record_path.read_text())
    record["depends"] = ["privacy.ranges."]
    record_path.write_text(json.dumps(record))
    # a default outside its prefixes changes: still current; one inside: stale
    assert sd.stale_runs(root, dict(current, **{"dpsgd.lr_decay": "0.9"})) == []
    (stale,) = sd.stale_runs(root, dict(current, **{"privacy.ranges.DEFAULT_BINS": "32"}))
    assert list(stale.changed) == ["privacy.ranges.DEFAULT_BINS"]
    # an empty list: the run reads no default at all (an accountant's table)
    record["depends"] = []
    record_path.write_text(json.dumps(record))
    assert sd.stale_runs(root, dict(current, **{"privacy.ranges.DEFAULT_BINS": "32"})) == []
    # and a new front end's defaults never stale an earlier run
    assert sd.stale_runs(_repo(tmp_path / "b", {k: v for k, v in current.items()
                                                if not k.startswith("dp_iv2sls(")},
                               results=()), current) == []


def test_an_acknowledged_stale_run_is_listed_not_failed_and_the_list_only_shrinks(
        tmp_path, current):
    root = _repo(tmp_path, None, manifest={"fingerprints": {}, "files": {}},
                 results=("a.csv",))
    with pytest.raises(sd.StaleRunError, match="2 recorded run"):
        sd.check_recorded_runs(root)
    manifest = {"fingerprints": {}, "files": {}, "acknowledged": {
        "docs/studies/results/s-run.json": "rerun pending (three hours)",
        "validation/results/a.csv": "rerun pending"}}
    (root / sd.MANIFEST).write_text(json.dumps(manifest))
    sd.check_recorded_runs(root)  # both acknowledged: the check passes
    page = sd.recorded_runs_page(root)
    assert "2 run(s) are listed" in page and "``validation/results/a.csv``" in page
    assert "rerun pending (three hours)" in page and "Rerun: ``python -m dpreg study s" in page
    # stamping a rerun file removes its acknowledgement; a current run still listed fails
    sd.stamp_validation_results(root, ["a.csv"], "python validation/a.py")
    assert "validation/results/a.csv" not in json.loads(
        (root / sd.MANIFEST).read_text())["acknowledged"]
    record = {"study": "s", "command": "c", "defaults": current}
    (root / "docs/studies/results/s-run.json").write_text(json.dumps(record))
    with pytest.raises(sd.StaleRunError, match="remove them from 'acknowledged'"):
        sd.check_recorded_runs(root)


def test_a_default_neutral_except_for_named_runs_makes_only_those_stale(tmp_path, current):
    # NEUTRAL_EXCEPT: a default added later that changes the numbers of the runs it
    # names (and only theirs): those are stale for it, every other run is not
    name, (_, affected) = next(iter(sd.NEUTRAL_EXCEPT.items()))
    recorded = {k: v for k, v in current.items() if k != name}
    root = _repo(tmp_path, recorded, results=(affected[0], "unaffected.csv"))
    sd.stamp_validation_results(root, [f"validation/results/{affected[0]}",
                                       "validation/results/unaffected.csv"], "python x.py")
    # the stamp records today's defaults: take the name out of the recorded fingerprint
    manifest = json.loads((root / sd.MANIFEST).read_text())
    for fingerprint in manifest["fingerprints"].values():
        fingerprint.pop(name)
    (root / sd.MANIFEST).write_text(json.dumps(manifest))
    stale = sd.stale_runs(root, current)
    assert [r.path for r in stale] == [f"validation/results/{affected[0]}"]
    assert stale[0].changed == {name: (None, current[name])}


def test_a_new_value_of_a_default_neutral_except_for_named_runs_stales_only_those(
        tmp_path, current):
    # the runs NEUTRAL_EXCEPT names are the only ones that read the default, so a new
    # value of it (CURVATURE_CORRECTED_LIMIT 1 -> 1.5) stales them and no other run
    name, (_, affected) = next(iter(sd.NEUTRAL_EXCEPT.items()))
    root = _repo(tmp_path, dict(current), results=(affected[0], "unaffected.csv"))
    sd.stamp_validation_results(root, [f"validation/results/{affected[0]}",
                                       "validation/results/unaffected.csv"], "python x.py")
    now = dict(current, **{name: "0.25"})
    stale = sd.stale_runs(root, now)
    assert [r.path for r in stale] == [f"validation/results/{affected[0]}"]
    assert stale[0].changed == {name: (current[name], "0.25")}
    # any other default's new value still stales every run (the study run too)
    other = dict(current, **{"privacy.ranges.DEFAULT_BINS": "32"})
    assert len(sd.stale_runs(root, other)) == 3


def test_a_quoted_constant_never_makes_a_run_stale(tmp_path, current):
    # QUOTED: a measured number a message's text quotes; remeasuring it (a new value) or
    # adding it decides no number, so no run is stale for it, while any other constant's
    # new value still is
    names = [n for n in sd.QUOTED if n in current]
    assert len(names) == len(sd.QUOTED) >= 2
    root = _repo(tmp_path, dict(current), results=())
    for i, name in enumerate(names):
        assert sd.stale_runs(root, dict(current, **{name: "0.5"})) == []
        assert sd.stale_runs(_repo(tmp_path / f"b{i}", {k: v for k, v in current.items()
                                                        if k != name}, results=()),
                             current) == []
    (stale,) = sd.stale_runs(root, dict(current, **{"privacy.ranges.DEFAULT_BINS": "32"}))
    assert list(stale.changed) == ["privacy.ranges.DEFAULT_BINS"]
