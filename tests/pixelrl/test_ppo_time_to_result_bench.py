"""bench/ppo_time_to_result.py runs end to end at toy size: both trainers leave checkpoints with
their training minutes, and every checkpoint is scored on held-out episodes (nothing asserted
about speed or success)."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

pytest.importorskip(
    "stable_baselines3", reason="the bench extra's stable-baselines3 is not installed"
)
pytest.importorskip("embreex", reason="needs the nav extra: pip install 'pixelrl[nav]'")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "ppo_time_to_result.py"


@pytest.mark.timeout(600)
def test_both_trainers_checkpoint_and_every_checkpoint_is_scored(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("ppo_time_to_result", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    tiny = ["--out", str(tmp_path), "--envs", "2", "--scenes", "1"]
    bench.main(["sb3", *tiny, "--minutes", "0.05", "--every-minutes", "0.02", "--envs-in-process"])
    bench.main(["pixelrl", *tiny, "--minutes", "0.05"])
    bench.main(["eval", *tiny, "--heldout", "2", "--episodes", "2"])
    rows = list(csv.DictReader((tmp_path / "time_to_result.csv").open()))
    assert {r["trainer"] for r in rows} == {"sb3", "pixelrl"}
    assert all(0.0 <= float(r["success"]) <= 1.0 and float(r["minutes"]) > 0 for r in rows)
    assert len([r for r in rows if r["trainer"] == "sb3"]) >= 2
    out = capsys.readouterr().out
    assert "| trainer | training minutes |" in out
    # a second eval scores nothing twice
    bench.main(["eval", *tiny, "--heldout", "2", "--episodes", "2"])
    assert len(list(csv.DictReader((tmp_path / "time_to_result.csv").open()))) == len(rows)
