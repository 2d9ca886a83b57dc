"""scripts/trl_grpo.py writes TRL's log and a reward curve beside the run (issue 55: the README
walk-through's figure comes from these files)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "trl_grpo.py"


def test_the_log_and_the_reward_curve_are_written(tmp_path):
    spec = importlib.util.spec_from_file_location("trl_grpo", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    logs = [{"reward": 0.5, "tools/call_frequency": 1.0, "step": 1},
            {"reward": 1.25, "tools/call_frequency": 2.0, "step": 2},
            {"train_runtime": 3.0, "step": 2}]  # fmt: skip
    script.write_log(logs, str(tmp_path / "run"))
    assert json.loads((tmp_path / "run" / "log_history.json").read_text()) == logs
    png = (tmp_path / "run" / "reward_curve.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 2000
