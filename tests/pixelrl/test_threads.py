"""The thread policy (issue 57): the rule, explicit counts, the environment's word, what it sets
in torch, and the count a PPO run records in its config.yaml."""

from __future__ import annotations

import pytest
import torch
import yaml

from pixelrl.threads import (
    Threads,
    applied,
    auto_count,
    check_config_threads,
    choose,
    idle_cores_now,
    usable_cores,
    use,
    while_workers_wait,
)


@pytest.mark.parametrize(
    "cores, load, ranks, workers, expected",
    [
        (2, 0.1, 1, 0, 2),  # idle 2-core machine: both
        (2, 1.0, 1, 0, 1),  # one other busy process: the free core
        (2, 2.3, 1, 0, 1),  # the loaded machine: 1 (15x faster than torch's default)
        (16, 0.0, 1, 0, 16),
        (16, 4.2, 1, 0, 12),  # 11.8 idle cores, rounded
        (16, 0.0, 4, 0, 4),  # torchrun, 4 ranks on this machine: a quarter each
        (16, 8.0, 4, 0, 2),  # half the machine busy: a quarter of the rest each
        (8, 0.0, 1, 3, 5),  # three env workers keep theirs
        (2, 0.0, 1, 2, 1),  # never below 1
    ],
)
def test_the_rule(cores, load, ranks, workers, expected):
    assert auto_count(cores, load, ranks, workers) == expected


def test_auto_is_within_the_cores_and_says_why(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    for requested in (None, 0, "auto"):
        threads = choose(requested)
        assert 1 <= threads.count <= usable_cores()
        assert threads.why.startswith(f"auto: {usable_cores()} cores, load ")
    assert "1 env workers" in choose(None, workers=1).why


def test_explicit_counts_and_the_users_environment(monkeypatch):
    cores = usable_cores()
    assert choose(1) == Threads(1, "set")
    assert choose(cores + 5) == Threads(cores, f"asked {cores + 5}, at most the {cores} cores "
                                               "of this process")  # fmt: skip
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert choose(None) == Threads(1, "OMP_NUM_THREADS=1")
    assert choose(cores) == Threads(cores, "set")  # an explicit count wins over the variable
    monkeypatch.setenv("OMP_NUM_THREADS", "junk")  # not a count: the rule
    assert choose(None).why.startswith("auto:")


def test_use_sets_torch_and_is_remembered():
    before = torch.get_num_threads()
    try:
        assert use(Threads(1, "set")) == Threads(1, "set")
        assert torch.get_num_threads() == 1
        use(Threads(1, "set"))  # inter-op threads can be set once: a second call is fine
        assert str(Threads(1, "auto: 2 cores, load 2.3")) == "1 (auto: 2 cores, load 2.3)"
    finally:
        torch.set_num_threads(before)


def test_idle_cores_are_measured_not_remembered():
    """/proc/stat over a short window: between none and every core of the machine."""
    import os

    idle = idle_cores_now(0.2)
    assert idle is not None and 0.0 <= idle <= (os.cpu_count() or 1) + 1e-6


def test_a_warm_start_takes_the_waiting_workers_cores_and_gives_them_back(monkeypatch):
    """The rule left a core to an env worker; while it waits, the rule runs again without it
    (at the idle cores of now), and after the phase (an error too) the first choice is back."""
    import pixelrl.threads as threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    monkeypatch.setattr(threads, "idle_cores_now", lambda seconds=0.5: 3.2)  # one core busy
    before = torch.get_num_threads()
    try:
        first = use(Threads(1, "auto: 4 cores, load 0.0, 3 env workers", workers=3))
        with while_workers_wait() as during:
            assert during == Threads(3, "auto: 4 cores, 3.2 idle now, 3 env workers waiting")
            assert torch.get_num_threads() == 3 and applied() == during
        assert applied() == first and torch.get_num_threads() == 1
        with pytest.raises(RuntimeError), while_workers_wait():
            raise RuntimeError("cloning failed")
        assert applied() == first and torch.get_num_threads() == 1
        with while_workers_wait(2) as during:  # a count asked for (policy.bc_threads=2)
            assert during == Threads(2, "set") and torch.get_num_threads() == 2
        assert applied() == first and torch.get_num_threads() == 1
        for kept in (Threads(1, "set"), Threads(2, "OMP_NUM_THREADS=2"), Threads(2, "auto: x")):
            use(kept)  # a count the user set, or a rule that left no core to workers: as is
            with while_workers_wait() as during:
                assert during == kept and torch.get_num_threads() == kept.count
    finally:
        torch.set_num_threads(before)


def test_the_rule_remembers_the_workers_it_left_cores_to(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert choose(None, workers=1).workers == 1
    assert choose(1, workers=1).workers == 0  # a set count: nothing to give back
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert choose(None, workers=1).workers == 0


@pytest.mark.parametrize("value", [-1, 1.5, "auto", True, None])
def test_a_bad_config_value_is_one_line(value):
    with pytest.raises(ValueError, match="torch_threads must be a thread count >= 1, or 0 for"):
        check_config_threads(value)
    for good in (0, 1, 64):
        check_config_threads(good)


def test_a_ppo_run_records_the_count_it_chose(tmp_path):
    """torch_threads=0: the header says the count and why, config.yaml keeps the count."""
    from toy_nav import register_toy_recipe

    from pixelrl.train import Trainer, config_for

    before = torch.get_num_threads()
    cfg = config_for(register_toy_recipe(), ["torch_threads=0", f"train.output_dir={tmp_path}"])
    try:
        trainer = Trainer(cfg)
        chosen = trainer.threads.count
        assert f"torch threads {chosen} (auto: {usable_cores()} cores, load" in trainer.header()
        assert torch.get_num_threads() == chosen
        saved = yaml.safe_load((tmp_path / "config.yaml").read_text())
        assert saved["torch_threads"] == chosen
        trainer.envs.close()
    finally:
        torch.set_num_threads(before)


def test_read_keeps_stdout_its_own_and_says_its_threads_in_the_json(tmp_path):
    """``pixelrl read --threads 1 --json``: the JSON alone on stdout, holding the count the
    reader's ONNX sessions were built with; nothing on stderr (it is an error's line)."""
    import json
    import subprocess
    import sys

    from PIL import Image, ImageDraw

    from pixelrl.envs.desktop.render import font

    pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
    image = Image.new("RGB", (200, 40), (255, 255, 255))
    ImageDraw.Draw(image).text((6, 10), "Submit", fill=0, font=font(14))
    image.save(tmp_path / "shot.png")
    p = subprocess.run([sys.executable, "-m", "pixelrl", "read", str(tmp_path / "shot.png"),
                        "--threads", "1", "--json"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "threads" not in p.stderr
    doc = json.loads(p.stdout)
    assert doc["threads"] == 1 and [w["text"] for w in doc["words"]] == ["Submit"]
