"""policy.bc_data: the warm start's oracle samples kept in a file, read back as data and checked."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from pixelrl.gui_agent import miniwob_task
from pixelrl.gui_agent.pointer_bc import load_samples, save_samples
from pixelrl.train import config_for

pytest.importorskip("miniwob", reason="needs the web extra: pip install 'pixelrl[web]'")
needs_browser = pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)
TWO = "env.tasks=[click-tab,enter-password]"


@needs_browser
def test_samples_are_recorded_once_then_read_back(tmp_path, capsys):
    path = tmp_path / "data" / "oracle.npz"
    cfg = config_for("gui/miniwob", [TWO, f"policy.bc_data={path}", "train.progress=true"])
    recorded = miniwob_task.oracle_data(cfg, 6, seed=0)
    assert path.exists() and not path.with_name("oracle.npz.part").exists()
    read = miniwob_task.oracle_data(cfg, 6, seed=0)
    assert f"oracle samples: read from {path}" in capsys.readouterr().out
    assert read.keys() == recorded.keys()
    for key in recorded:
        np.testing.assert_array_equal(read[key], recorded[key], err_msg=key)
    # samples of another count, seed or task list are refused by name, not cloned silently
    with pytest.raises(ValueError, match=r"other settings \(count, seed\)"):
        miniwob_task.oracle_data(cfg, 8, seed=1)
    other = config_for("gui/miniwob", ["env.tasks=[click-tab]", f"policy.bc_data={path}"])
    with pytest.raises(ValueError, match=r"other settings \(tasks\)"):
        miniwob_task.oracle_data(other, 6, seed=0)


def test_a_hostile_samples_file_is_one_line_error(tmp_path):
    cfg = config_for("gui/miniwob", [TWO])
    spec = miniwob_task.pointer_spec(cfg)
    about = {"tasks": ["click-tab"], "count": 2, "seed": 0}
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ValueError, match="not a samples file"):
        load_samples(bad, spec, about)
    # a pickled object array is not read (np.load without pickles)
    evil = tmp_path / "evil.npz"
    np.savez(evil, about=np.array('{"count": 2, "seed": 0, "tasks": ["click-tab"]}'),
             action=np.array([object()], dtype=object))  # fmt: skip
    with pytest.raises(ValueError, match="not a samples file"):
        load_samples(evil, spec, about)
    # the right record, the wrong shapes
    w, h = spec.image_size
    short = tmp_path / "short.npz"
    save_samples(short, {"image": np.zeros((2, h, w, 3), np.uint8)}, about)
    with pytest.raises(ValueError, match="'instruction' should be"):
        load_samples(short, spec, about)
    with pytest.raises(ValueError, match="policy.bc_data must be a path ending in .npz"):
        miniwob_task.oracle_data(config_for("gui/miniwob", [TWO, "policy.bc_data=data"]), 2, 0)
