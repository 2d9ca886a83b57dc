"""The command line's error contract (tests/pixelrl/test_cli_errors.py) for mark actions'
config key and eval option, ``prompt.mark_actions`` and ``--mark-actions`` (issue 53): one error
line, exit status 2, nothing written. Each case is its own process, as a user types it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

TRAIN = ["train", "gui/sft", "train.output_dir=run"]
CASES = [
    ("train-vlm-mark-actions-text", [*TRAIN, "prompt.mark_actions=maybe"],
     "prompt.mark_actions must be true or false"),
    ("train-vlm-mark-actions-no-parse", [*TRAIN, "prompt.mark_actions=true"],
     "prompt.mark_actions needs prompt.screen_parse=true"),
    ("eval-mark-actions-no-parse", ["eval", "--policy", "tiny-qwen2_vl", "--grounding", "2",
                                    "--mark-actions"], "--mark-actions needs --screen-parse"),
    ("train-vlm-mark-actions-nav", ["train", "embodied/vlm-sft", "prompt.mark_actions=true",
                                    "train.output_dir=run"], "unknown config key 'prompt.mark_actions'"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_mark_actions_mistake_is_one_error_line_and_exit_2(case, tmp_path):
    _, argv, expected = case
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}  # as a user's shell
    p = subprocess.run([sys.executable, "-m", "pixelrl", *argv], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "Traceback" not in p.stdout + p.stderr, p.stderr
    assert p.returncode == 2, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith(f"pixelrl {argv[0]}: error: ") and expected in last, last
    assert os.listdir(tmp_path) == [], "the failed command wrote files"
