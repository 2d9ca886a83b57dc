"""bench/vlm_nav_paired.py names each agent's row so that no two agents share one: two seeds'
``grpo/model`` folders used to land in a single row called ``grpo``, the later one silently
replacing the earlier in the table and in every comparison."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "vlm_nav_paired", REPO / "bench" / "vlm_nav_paired.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_agents_from_folders_with_the_same_name_get_rows_of_their_own():
    labels = _bench().labels
    agents = ["runs/o/seed3/grpo/model", "runs/o/seed1/grpo/model", "checkpoint=runs/r/seed1",
              "checkpoint=runs/r/seed2", "random"]  # fmt: skip
    names = labels(agents)
    assert len(set(names)) == len(agents), names
    assert names[:2] == ["seed3/grpo", "seed1/grpo"] and names[-1] == "random"
    assert labels(["runs/a/sft/model", "runs/a/grpo/model", "checkpoint=runs/resnet"]) == [
        "sft", "grpo", "checkpoint=resnet"]  # fmt: skip


def test_the_same_agent_twice_is_a_one_line_error():
    cmd = [sys.executable, str(REPO / "bench" / "vlm_nav_paired.py"), "runs/x/sft/model",
           "runs/x/sft/model"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "named twice" in out.stderr, out.stderr
