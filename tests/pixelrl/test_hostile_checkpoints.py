"""Checkpoints and resume folders are read as data: a crafted file never runs code.

Each attack writes a file that, loaded the old way (``torch.load(weights_only=False)``, DCP's
``pickle.load``), would create a marker file; the test checks the load is refused with a clear
error and the marker is never made.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")

from pixelrl.checkpoint import CheckpointError, load_checkpoint, save_checkpoint  # noqa: E402
from pixelrl.config import ConfigError  # noqa: E402

OLD = Path(__file__).resolve().parents[1] / "data" / "old_layout" / "pointnav_checkpoint.pt"


class Touch:
    """Unpickled, it runs ``touch PATH`` (what a crafted file does)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def crafted_checkpoint(path: Path, marker: Path, version: int = 2) -> Path:
    payload = {"format": "pixelrl-checkpoint", "version": version, "recipe": "gui/ppo",
               "config": {}, "policy": {}, "hook": Touch(marker)}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, path)
    return path


@pytest.mark.parametrize("version", [1, 2])
def test_a_crafted_checkpoint_is_refused_and_runs_nothing(tmp_path, version):
    marker = tmp_path / "ran"
    evil = crafted_checkpoint(tmp_path / "run" / "checkpoints" / "latest.pt", marker, version)
    with pytest.raises(CheckpointError, match=r"refused: .*posix\.system"):
        load_checkpoint(evil)
    with pytest.raises(CheckpointError, match="refused"):
        load_checkpoint(tmp_path / "run")  # a run folder resolves to the same file
    assert not marker.exists()


def test_the_cli_refuses_a_crafted_checkpoint_in_one_line(tmp_path):
    marker = tmp_path / "ran"
    evil = crafted_checkpoint(tmp_path / "run" / "checkpoints" / "latest.pt", marker)
    episodes = tmp_path / "episodes.json.gz"
    from pixelrl.envs.nav.sim import generate_dataset

    generate_dataset(episodes, 2, seed=1, num_scenes=1, scene_seed=3)
    for argv in (
        ["eval", "--env", "pixelrl/Desktop-ClickButton-v0", "--policy", str(tmp_path / "run")],
        ["bench", "nav", "--dataset", str(episodes), "--agent", "checkpoint", str(evil),
         "--out", str(tmp_path / "bench")],
        ["record", "--env", "pixelrl/Desktop-ClickButton-v0", "--agent", "checkpoint",
         str(evil), "--episodes", "1", "--out", str(tmp_path / "demos")],
    ):  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "pixelrl", *argv], capture_output=True,
                              text=True, cwd=tmp_path, timeout=300)  # fmt: skip
        assert done.returncode == 2, (argv, done.stderr[-2000:])
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "refused" in lines[0] and "Traceback" not in done.stderr, argv
        assert not marker.exists(), argv


def test_checkpoints_round_trip_as_data(tmp_path):
    """A version-1 file (spaces and numpy generators pickled) still loads; written again it is
    version 2, which loads with nothing but tensors and plain containers."""
    import numpy as np

    old = load_checkpoint(OLD)
    assert old["version"] == 1
    rest = {k: v for k, v in old.items() if k not in ("format", "version")}
    save_checkpoint(rest, tmp_path / "update_1.pt")
    new = torch.load(tmp_path / "update_1.pt", weights_only=True)  # no allow-list needed
    assert new["version"] == 2
    again = load_checkpoint(tmp_path)
    assert again["observation_space"] == old["observation_space"]
    assert again["action_space"] == old["action_space"]
    np.random.set_state(again["rng"]["numpy"])
    a = np.random.rand(3)
    np.random.set_state(old["rng"]["numpy"])
    assert (a == np.random.rand(3)).all()
    assert all(torch.equal(again["policy"][k], v) for k, v in old["policy"].items())


def test_data_that_is_not_numbers_is_refused(tmp_path):
    # a tagged array of objects: from_plain builds numbers only
    payload = {"format": "pixelrl-checkpoint", "version": 2, "config": {}, "policy": {},
               "x": {"__numpy_array__": [1], "dtype": "|O", "shape": [1]}}  # fmt: skip
    torch.save(payload, tmp_path / "obj.pt")
    with pytest.raises(CheckpointError, match="not a readable checkpoint.*dtype object"):
        load_checkpoint(tmp_path / "obj.pt")


# -- text recipes: train.resume folders (torch.distributed.checkpoint) ---------------------


@pytest.fixture(scope="module")
def text_run(tmp_path_factory):
    """A one-process toy SFT run of 2 steps with a checkpoint after each."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_text_trainer import ColourTask, config

    from pixelrl.rl.text import recipe

    out = tmp_path_factory.mktemp("text") / "run"
    cfg = config("toy/sft", out, sft={"steps": 2, "batch_size": 3},
                 train={"checkpoint_interval": 1})  # fmt: skip
    recipe.train(cfg, ColourTask(cfg))
    return out


def resume(run: Path, out: Path) -> None:
    from test_text_trainer import ColourTask, config

    from pixelrl.rl.text import recipe

    cfg = config("toy/sft", out, sft={"steps": 3, "batch_size": 3},
                 train={"resume": str(run)})  # fmt: skip
    recipe.train(cfg, ColourTask(cfg))


def copy_run(run: Path, where: Path) -> Path:
    import shutil

    return Path(shutil.copytree(run, where))


def test_a_text_run_resumes_through_the_data_reader(text_run, tmp_path):
    resume(text_run, tmp_path / "resumed")
    steps = (tmp_path / "resumed" / "history.csv").read_text().splitlines()[1:]
    assert [row.split(",")[0] for row in steps] == ["1", "2", "3"]


def test_crafted_dcp_metadata_is_refused_and_runs_nothing(text_run, tmp_path):
    marker = tmp_path / "ran"
    run = copy_run(text_run, tmp_path / "crafted")
    (run / "checkpoints" / "step_2" / ".metadata").write_bytes(pickle.dumps(Touch(marker)))
    with pytest.raises(ConfigError, match=r"train.resume: .*posix.system is not checkpoint "):
        resume(run, tmp_path / "out")
    assert not marker.exists()


def test_crafted_rank_file_and_values_are_refused(text_run, tmp_path):
    marker = tmp_path / "ran"
    run = copy_run(text_run, tmp_path / "crafted")
    torch.save({"numpy": {}, "torch": Touch(marker)}, run / "checkpoints" / "step_2" / "rank0.pt")
    with pytest.raises(ConfigError, match=r"rank0.pt is not a readable checkpoint.*posix"):
        resume(run, tmp_path / "out")
    assert not marker.exists()


def test_a_crafted_value_inside_the_checkpoint_is_refused(text_run, tmp_path):
    """DCP stores non-tensor values (the optimizer's param_groups) as torch.save bytes, which it
    reads with weights_only=False: here they are read as data."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    marker = tmp_path / "ran"
    run = copy_run(text_run, tmp_path / "crafted")
    folder = run / "checkpoints" / "step_2"
    dcp_to_torch_save(folder, tmp_path / "full.pt")  # our own folder, read the old way
    state = torch.load(tmp_path / "full.pt", weights_only=False)
    state["optim"]["param_groups"][0]["lr"] = Touch(marker)
    for file in folder.glob("*.distcp"):
        file.unlink()
    dcp.save(state, checkpoint_id=str(folder))
    with pytest.raises(ConfigError, match=r"train.resume: .*not a readable checkpoint"):
        resume(run, tmp_path / "out")
    assert not marker.exists()


@pytest.mark.parametrize(
    "latest, error",
    [("../../../etc", "names '../../../etc', not step_N"), ("step_9", "meta.json is not readable")],
)
def test_a_latest_file_cannot_point_elsewhere(text_run, tmp_path, latest, error):
    run = copy_run(text_run, tmp_path / "crafted")
    (run / "checkpoints" / "latest").write_text(latest)
    with pytest.raises(ConfigError, match=error):
        resume(run, tmp_path / "out")


# -- model folders: their own code never runs ----------------------------------------------

EVIL_CONFIG = """
import pathlib
pathlib.Path({marker!r}).touch()
from transformers import PretrainedConfig
class EvilConfig(PretrainedConfig):
    model_type = "evil_vlm"
"""


def test_a_model_folder_with_its_own_code_is_refused_without_a_prompt(tmp_path):
    """A folder whose config names code of its own (``auto_map``) is refused at once: its code
    never runs, and transformers never asks on the terminal ("run the custom code? [y/N]")."""
    import json

    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.vision.vlm import load_vlm

    folder = load_vlm("tiny-qwen2_vl", GUIActionCodec(), seed=0).save(tmp_path / "model")
    marker = tmp_path / "ran"
    (folder / "evil.py").write_text(EVIL_CONFIG.format(marker=str(marker)))
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="evil_vlm", auto_map={"AutoConfig": "evil.EvilConfig",
                  "AutoModelForImageTextToText": "evil.EvilConfig"})  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    code = (
        "from pixelrl.envs.gui_action.codec import GUIActionCodec\n"
        "from pixelrl.vision.vlm import load_vlm\n"
        f"load_vlm({str(folder)!r}, GUIActionCodec())\n"
    )
    # stdin open and silent: a prompt would wait (transformers' own timeout is 15 s)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          stdin=subprocess.PIPE, timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode != 0
    assert "never runs a model's code" in done.stderr, done.stderr[-1500:]
    assert "[y/N]" not in done.stdout + done.stderr
    assert not marker.exists()


# -- env options a checkpoint carries: only those that shape an episode --------------------


def test_a_checkpoint_cannot_choose_a_display_or_a_path(tmp_path):
    """A checkpoint's config says which env options it trained with; like a recording's, they
    may shape the episode (screen size, sensors) but never name a display or a path."""
    x11 = "pixelrl/XDesktop-XcalcMultiply-v0"
    gui = save_checkpoint({"recipe": "gui/ppo", "policy": {}, "config": {"env": {"id": x11,
                           "kwargs": {"display": ":0", "allow_existing_display": True}}}},
                          tmp_path / "gui" / "update_1.pt")  # fmt: skip
    nav = save_checkpoint({"recipe": "embodied/pointnav", "policy": {}, "config": {"env": {
                           "id": "pixelrl/PointNav-v0", "kwargs": {"scene_dir": "/root"}}}},
                          tmp_path / "nav" / "update_1.pt")  # fmt: skip
    from pixelrl.envs.nav.sim import generate_dataset

    episodes = tmp_path / "episodes.json.gz"
    generate_dataset(episodes, 2, seed=1, num_scenes=1, scene_seed=3)
    bench = ["bench", "nav", "--dataset", str(episodes), "--out", str(tmp_path / "b"), "--agent"]
    for argv, said in (
        (["record", "--env", x11, "--agent", "checkpoint", str(gui), "--episodes", "1",
          "--out", str(tmp_path / "demos")], "'allow_existing_display', 'display' may come from "
         "the command line only, not from a checkpoint"),
        ([*bench, "checkpoint", str(nav)], "'scene_dir' may come from the command line only"),
        ([*bench, "checkpoint", str(gui)], f"not a navigation checkpoint (trained on {x11})"),
    ):  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "pixelrl", *argv], capture_output=True,
                              text=True, cwd=tmp_path, timeout=300)  # fmt: skip
        assert done.returncode == 2, (argv, done.stderr[-2000:])
        assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "demos").exists()
