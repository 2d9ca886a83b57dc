"""``prompt.frames`` (issue 53: the navigation VLM's last K frames as separate images) and
``prompt.gps_compass`` (where it stands from its start, in words) on the command line: a wrong value is one line ``pixelrl train: error: ...`` naming the key, exit
status 2, no traceback, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

SFT = ["train", "embodied/vlm-sft", "env.id=pixelrl/ObjectNav-v0", "train.output_dir=run"]

# (id, argv after the program, text the error line must hold)
CASES = [
    ("frames-zero", [*SFT, "prompt.frames=0"], "'prompt.frames' must be an integer >= 1, got 0"),
    ("frames-negative", [*SFT, "prompt.frames=-2"],
     "'prompt.frames' must be an integer >= 1, got -2"),
    ("frames-not-int", [*SFT, "prompt.frames=2.5"],
     "'prompt.frames' must be an integer >= 1, got 2.5"),
    ("frames-text", [*SFT, "prompt.frames=four"], "prompt.frames must be a number"),
    ("frames-with-memory-frames", [*SFT, "prompt.frames=4", "prompt.memory_frames=2"],
     "'prompt.memory_frames' stitches earlier frames into one picture"),
    ("gps-compass-not-bool", [*SFT, "prompt.gps_compass=maybe"], "prompt.gps_compass"),
    ("gps-compass-pointnav", [*SFT, "env.id=pixelrl/PointNav-v0", "prompt.gps_compass=true"],
     "'prompt.gps_compass' reads the gps and compass sensors of ObjectNav and InstructNav"),
]  # fmt: skip


def _run(case, cwd) -> dict:
    """One case as a user types it: ``python -m pixelrl ...`` in a folder of its own."""
    name, argv, _ = case
    folder = cwd / name
    folder.mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "pixelrl", *argv]
    p = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    return {"rc": p.returncode, "out": p.stdout, "err": p.stderr, "left": os.listdir(folder)}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    cwd = tmp_path_factory.mktemp("cwd")
    with ThreadPoolExecutor(3) as pool:
        runs = pool.map(lambda case: _run(case, cwd), CASES)
        return {case[0]: r for case, r in zip(CASES, runs)}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_wrong_prompt_frames_is_one_error_line_and_exit_2(case, results):
    name, _, expected = case
    r = results[name]
    assert "Traceback" not in r["out"] + r["err"] and r["rc"] == 2, r
    last = r["err"].strip().splitlines()[-1]
    assert last.startswith("pixelrl train: error: ") and expected in last, last
    assert r["left"] == [], f"the failed command wrote {r['left']}"
