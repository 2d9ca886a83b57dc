"""The pointer head's config key in the command line's error contract (issue 53): a wrong value
is one line ``pixelrl train: error: ...``, exit status 2, no traceback, nothing written (as
tests/pixelrl/test_cli_errors.py's cases; each a subprocess, as a user types it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CASES = [
    ("train-pointer-head-text", ["pointer_head=maybe"],
     "pointer_head must be true or false, got 'maybe'"),
    ("train-pointer-head-llava", ["pointer_head=true", "model=tiny-llava"],
     "pointer_head: tiny-llava's image tokens have no known place on the screen"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_wrong_pointer_head_is_one_error_line(case, tmp_path):
    _, overrides, expected = case
    argv = [sys.executable, "-m", "pixelrl", "train", "gui/sft", *overrides, "train.output_dir=run"]
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    p = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stdout + p.stderr and p.returncode == 2, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("pixelrl train: error: ") and expected in last, last
    assert os.listdir(tmp_path) == [], "the failed command wrote files"
