"""The pointer policy's memory options and the cloning's stop weights (issue 54) in the command line's error contract
(``tests/pixelrl/test_cli_errors.py``): a wrong value is one line, exit status 2, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

TRAIN = ["train", "gui/ppo", "train.output_dir=run"]
MINIWOB = ["train", "gui/miniwob", "train.output_dir=run"]
CASES = [
    ("train-memory-misspelled", [*TRAIN, "policy.memory=lstmm"],
     "memory must be one of none, actions, got 'lstmm'"),
    ("train-memory-actions-zero", [*TRAIN, "policy.memory=actions", "policy.memory_actions=0"],
     "memory_actions must be an integer >= 1, got 0"),
    ("train-weigh-stops-not-a-flag", [*TRAIN, "policy.bc_weigh_stops=maybe"],
     "policy.bc_weigh_stops must be true or false, got 'maybe'"),
    ("train-memory-dropout-above-one", [*TRAIN, "policy.bc_memory_dropout=1.5"],
     "policy.bc_memory_dropout must be a number in [0, 1], got 1.5"),
    ("train-bc-workers-negative", [*MINIWOB, "policy.bc_workers=-1"],
     "policy.bc_workers must be an integer >= 0, got -1"),
    ("train-bc-threads-not-a-count", [*TRAIN, "policy.bc_threads=two"],
     "policy.bc_threads must be a number (like its default 0), got 'two'"),
    ("train-bc-threads-negative", [*TRAIN, "policy.bc_threads=-1"],
     "policy.bc_threads must be a thread count >= 1, or 0 for the thread policy, got -1"),
    ("train-dagger-episodes-negative", [*MINIWOB, "policy.dagger_episodes=-3"],
     "policy.dagger_episodes must be an integer >= 0, got -3"),
    ("train-dagger-steps-not-a-count", [*MINIWOB, "policy.dagger_steps=many"],
     "policy.dagger_steps must be a number (like its default 1000), got 'many'"),
    ("train-dagger-lr-zero", [*MINIWOB, "policy.dagger_lr=0"],
     "policy.dagger_lr must be a number > 0, got 0"),
    ("train-dagger-in-gui-ppo", [*TRAIN, "policy.dagger_episodes=3"],
     "policy.dagger_episodes is gui/miniwob's (its oracle's samples, its DAgger round); "
     "gui/ppo has none"),
    ("train-bc-data-not-npz", [*MINIWOB, "policy.bc_data=samples.pkl"],
     "policy.bc_data must be a path ending in .npz, got 'samples.pkl'"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_wrong_memory_option_is_one_error_line_and_exit_2(case, tmp_path):
    _, argv, expected = case  # one subprocess a case, as a user types it
    p = subprocess.run([sys.executable, "-m", "pixelrl", *argv], cwd=tmp_path, env=dict(os.environ),
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    text = p.stdout + p.stderr
    assert "Traceback" not in text, text
    assert p.returncode == 2, text
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("pixelrl train: error: ") and expected in last, last
    assert os.listdir(tmp_path) == [], f"the failed command wrote {os.listdir(tmp_path)}"
