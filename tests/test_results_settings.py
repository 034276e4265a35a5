"""Settings records: read by name, shown by label, in order; every fit builds them."""

import pickle

import pytest

from dpreg.results import Setting, Settings


def test_settings_render_their_rows_and_read_by_name():
    s = Settings.from_values({"engine": "dpgd", "noise_std": 0.5, "clip": 2.0},
                             {"noise_std": "noise_std (lambda)"})
    assert s.rows() == [("engine", "dpgd"), ("noise_std (lambda)", 0.5), ("clip", 2.0)]
    assert list(s) == ["engine", "noise_std (lambda)", "clip"]
    assert s["noise_std (lambda)"] == s.value("noise_std") == 0.5
    assert dict(s) == {"engine": "dpgd", "noise_std (lambda)": 0.5, "clip": 2.0}
    with pytest.raises(KeyError, match="no setting named 'noise_std \\(lambda\\)'"):
        s.value("noise_std (lambda)")
    assert pickle.loads(pickle.dumps(s)) == s


def test_names_and_labels_are_unique():
    with pytest.raises(ValueError, match="unique"):
        Settings([Setting("a", "x", 1), Setting("b", "x", 2)])
