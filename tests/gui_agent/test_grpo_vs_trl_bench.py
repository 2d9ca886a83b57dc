"""bench/grpo_vs_trl.py runs: a 2-step tiny version of our grounding GRPO and TRL's GRPOTrainer on
the same prompts, reward and settings (no speed is asserted)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="TRL is not installed (it comes with pixelrl's test extra)")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "grpo_vs_trl.py"


def _bench():
    spec = importlib.util.spec_from_file_location("grpo_vs_trl", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_steps_of_ours_and_trl_on_the_same_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    P, G = 2, 2
    result = _bench().main([
        "--small", "--steps", "2", "--block", "1", "--warmup", "0", "--sft-steps", "0",
        "--eval-items", "4", "--train-prompts", "8", "--prompts-per-step", str(P),
        "--samples", str(G), "--max-new-tokens", "6", "--threads", "1", "--out", str(tmp_path),
    ])  # fmt: skip
    for side in ("ours", "trl"):
        rows = result[side]
        assert len(rows) == 2, side
        for row in rows:
            assert row["completions"] == P * G, side
            assert 0 < row["gen_tokens"] <= P * G * 6, side
            assert row["step_s"] > 0 and 0 < row["sample_s"] < row["step_s"], side
            assert row["update_tokens"] > 0, side
    # both models are evaluated on the same held-out items
    assert result["ours_eval"]["n"] == result["trl_eval"]["n"] == result["start_eval"]["n"] == 4
    ratios = {name: ratio for name, _, _, ratio in result["table"] if ratio}
    assert set(ratios) >= {"sampling: completions/s", "seconds a step (sample + update)"}
    assert all(r.endswith("x") and float(r[:-1]) > 0 for r in ratios.values())
    saved = json.loads((tmp_path / "grpo_vs_trl.json").read_text())
    assert len(saved["trl"]) == 2 and len(saved["ours"]) == 2
    assert "ours/TRL" in capsys.readouterr().out
