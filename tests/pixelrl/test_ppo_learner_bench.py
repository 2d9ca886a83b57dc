"""bench/ppo_learner.py and bench/ppo_update_variants.py run end to end on a tiny rollout (no
speed is asserted)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib", reason="the bench extra's sb3-contrib is not installed")
pytest.importorskip("embreex", reason="needs the nav extra: pip install 'pixelrl[nav]'")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "ppo_learner.py"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backbone", ["resnet", "nature"])
def test_learner_bench_times_both_sides_on_the_same_network(backbone):
    spec = importlib.util.spec_from_file_location("ppo_learner", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    tiny = ["--envs", "2", "--steps", "8", "--scenes", "1", "--repeats", "1"]
    result = bench.main([*tiny, "--backbone", backbone])
    assert result["pixelrl"] > 0 and result["sb3-contrib"] > 0
    assert result["ratio"] == pytest.approx(result["pixelrl"] / result["sb3-contrib"])


@pytest.mark.timeout(300)
def test_update_variants_bench_times_every_variant():
    path = BENCH.parent / "ppo_update_variants.py"
    spec = importlib.util.spec_from_file_location("ppo_update_variants", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.main(["--envs", "2", "--steps", "8", "--repeats", "1"])
    assert set(result) == {"as it is", "fused Adam", "channels-last", "bf16 autocast"}
    assert result["as it is"] == 1.0 and all(v > 0 for v in result.values())
