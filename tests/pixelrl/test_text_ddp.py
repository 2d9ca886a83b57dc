"""The text-policy trainer under torchrun (issue 40): 2 CPU ranks (gloo) learn what 1 process
learns from the same global batch, with DDP and with FSDP2; a checkpointed run resumes where it
stopped; a split that cannot be made, a rank that dies and a resume on another world size are
clear errors.

How the comparison is made honest: the runs are the real loops (``recipe.train``) on the toy
colour task of test_text_trainer.py (text_ddp_worker.py). SFT draws its batch from one seeded
generator on every rank, so 1 and 2 ranks see the same examples. GRPO *samples*: one process
draws every prompt's answers from one random stream, so a batch split over ranks would draw
other answers; the worker therefore samples each prompt on its own from a generator seeded by
the prompt and its step (or multi-turn group), the same for any number of ranks. Everything
after sampling -- each rank's share, group advantages, the loss rescaled to the global token
mean, the averaged (DDP) or reduce-scattered (FSDP) gradients, clipping, AdamW -- is the code
under test. ``grpo.minibatch`` covers each step's rows, so one step is one optimizer step on the
whole batch (with several minibatches a step, each takes minibatch/W rows from every rank: the
same sizes, another grouping of rows than one process's). The comparison holds the saved
weights after 2 steps to 1e-5 and the global gradient norm of each step (which a mis-scaled
loss would change; AdamW's first step would not show it).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

HERE = Path(__file__).parent
REPO = HERE.parent.parent
WORKER = HERE / "text_ddp_worker.py"
RUNS = ("sft", "grpo", "multiturn")


def _env() -> dict[str, str]:
    path = os.pathsep.join([str(HERE), str(REPO)])
    return dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")


def _torchrun(out: Path, *modes: str, ranks: int = 2) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc-per-node", str(ranks), str(WORKER), str(out), *modes]  # fmt: skip
    return subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=420)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """One process (plain and, as fsdp runs rows, without prompt sharing) beside one 2-rank
    launch: ddp and fsdp updates, ddp and fsdp resumes, the refused splits, LoRA and gradient
    checkpointing with each."""
    out = tmp_path_factory.mktemp("text_ddp")
    one = subprocess.Popen([sys.executable, str(WORKER), str(out), "updates", "ddp", "one",
                            "plain", "updates", "ddp", "one-plain"], env=_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    two = _torchrun(out, "updates", "ddp", "ddp", "updates", "fsdp", "fsdp", "resume", "ddp",
                    "resume", "fsdp", "refuse", "compose", "ddp", "compose", "fsdp")  # fmt: skip
    log = one.communicate(timeout=420)[0]
    assert one.returncode == 0, log[-3000:]
    assert two.returncode == 0, two.stdout[-3000:] + two.stderr[-3000:]
    return out


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model" / "model.safetensors"))


def _history(folder: Path) -> list[dict]:
    with open(folder / "history.csv") as f:
        return list(csv.DictReader(f))


# Weights may differ by a small share of one step (lr 0.01): AdamW divides each gradient by its
# own magnitude, so a component near zero, summed in another order across ranks, can move by a
# visible fraction of lr (up to 1.8e-4 on an AMD EPYC, 1e-5 elsewhere). Training on other rows
# moves weights by ~lr; a mis-scaled loss shows in the gradient norm, held to 1e-5 below.
WEIGHT_ATOL = 1e-3


def _same_training(a: Path, b: Path) -> None:
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys()
    for name in wa:
        torch.testing.assert_close(wa[name], wb[name], rtol=0, atol=WEIGHT_ATOL, msg=name)
    ha, hb = _history(a), _history(b)
    assert [r["step"] for r in ha] == [r["step"] for r in hb] == ["1", "2"]
    key = "grad_norm" if "grad_norm" in ha[0] else "loss"  # SFT's loss: the global token mean
    for ra, rb in zip(ha, hb):
        assert float(ra[key]) == pytest.approx(float(rb[key]), rel=1e-5), (a.name, key)


@pytest.mark.timeout(600)
def test_two_ddp_ranks_update_as_one_process_does(runs):
    for run in RUNS:
        _same_training(runs / "one" / run, runs / "ddp" / run)
    # and they trained: the weights moved from where they started
    assert _history(runs / "ddp" / "grpo")[0]["grad_norm"] != "0.0"
    config = (runs / "ddp" / "sft" / "config.yaml").read_text()
    assert "batch_size: 4" in config  # rank 0 wrote the global batch, not its share


@pytest.mark.timeout(600)
def test_two_fsdp_ranks_update_as_one_process_does(runs):
    """FSDP runs every row's forward on its own (ranks must run the same forwards), so its
    reference is one process without prompt sharing: the same numbers up to rounding, which
    AdamW's first step magnifies where a gradient is near 0 (~1e-4 with sharing)."""
    for run in RUNS:
        _same_training(runs / "one-plain" / run, runs / "fsdp" / run)


@pytest.mark.parametrize("shard", ["ddp", "fsdp"])
def test_lora_and_checkpointing_compose_with_both(runs, shard):
    """LoRA, gradient checkpointing and the KL reference at once (fsdp: with bf16 compute)."""
    rows = _history(runs / f"compose-{shard}")
    assert [r["step"] for r in rows] == ["1", "2"]
    assert all(float(r["grad_norm"]) > 0 and "kl" in r for r in rows)  # LoRA's adapters learned
    saved = _weights(runs / f"compose-{shard}")  # (fsdp: gathered from the shards) LoRA merged
    assert saved and not any("lora" in name for name in saved)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("shard", ["ddp", "fsdp"])
def test_a_resumed_run_goes_on_with_its_steps_and_optimizer_state(runs, shard):
    import json

    where = runs / f"resume-{shard}"
    meta = json.loads((where / "half" / "checkpoints" / "step_2" / "meta.json").read_text())
    assert (meta["step"], meta["world_size"], meta["shard"]) == (2, 2, shard)
    # 2 steps, a stop, 2 more: the history goes on from step 3, and the weights are those of 4
    # steps straight (AdamW's moments came back: without them steps 3 and 4 would differ)
    for run, key in (("", "loss"), ("grpo-", "grad_norm")):  # SFT, one-step GRPO
        full, half = _history(where / f"{run}full"), _history(where / f"{run}half")
        assert [r["step"] for r in half] == ["1", "2", "3", "4"]
        for a, b in zip(full, half):
            assert float(a[key]) == pytest.approx(float(b[key]), rel=1e-5), (run, key)
        wa, wb = _weights(where / f"{run}full"), _weights(where / f"{run}half")
        for name in wa:
            torch.testing.assert_close(wa[name], wb[name], rtol=0, atol=1e-6, msg=name)


def test_resuming_on_another_world_size_is_refused(runs, tmp_path):
    from test_text_trainer import config
    from text_ddp_worker import GradedTask

    from pixelrl.config import ConfigError
    from pixelrl.rl.text import recipe

    half = runs / "resume-ddp" / "half"
    cfg = config("toy/sft", "", sft={"steps": 4, "batch_size": 4},
                 train={"resume": str(half)})  # fmt: skip
    with pytest.raises(ConfigError, match=r"written by 2 rank\(s\).*this run has 1.*"
                       r"--nproc-per-node 2"):  # fmt: skip
        recipe.train(cfg, GradedTask(cfg))
    cfg = config("toy/sft", "", train={"resume": str(tmp_path)})
    with pytest.raises(ConfigError, match="holds no checkpoint"):
        recipe.train(cfg, GradedTask(cfg))


def test_splits_that_cannot_be_made_are_refused(runs):
    refused = (runs / "refused0.txt").read_text().splitlines()
    assert refused == [
        "grpo.prompts_per_step=3 does not split over 2 ranks: the config's batch is the global "
        "one, each rank takes 1/2; make it a multiple of 2",
        "sft.batch_size=3 does not split over 2 ranks: the config's batch is the global one, "
        "each rank takes 1/2; make it a multiple of 2",
        "toy/multiturn cannot run on 2 ranks: its task adapter does not say how many groups a "
        "step plays (GROUPS_PER_STEP), so the step cannot be split",
    ]


@pytest.mark.timeout(600)
def test_a_rank_that_fails_stops_the_others_naming_it(tmp_path):
    start = time.perf_counter()
    proc = _torchrun(tmp_path, "die", "raise")
    took = time.perf_counter() - start
    assert proc.returncode != 0
    log = proc.stdout + proc.stderr
    assert "RuntimeError: the reward server went away" in log  # rank 1's own error
    # rank 0, waiting in the step's all-reduce, says who stopped the run and why (rank 1 closes
    # its connections and waits 2 s for that; were rank 0 stopped first by torchrun's agent,
    # the agent's summary names rank 1 as the root cause)
    said = "RankFailed: rank 1 stopped: RuntimeError: the reward server went away; rank 0 " in log
    root = log[log.index("Root Cause") :]
    assert said or ("rank      : 1 (local_rank: 1)" in root and "SIGTERM" in log)
    assert took < 120  # no hang until distributed.timeout_s
    assert not (tmp_path / "die" / "model").exists()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("how", ["kill", "hang"])
def test_a_rank_killed_or_hung_stops_the_others(tmp_path, how):
    """Killed (no word to the store) or hung (no answer): the others stop, within
    distributed.timeout_s (8 s here), saying a collective failed and which rank never reached
    it; torchrun's summary names the rank that exited first."""
    start = time.perf_counter()
    proc = _torchrun(tmp_path, "die", how)
    took = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert took < 100, took
    said = "RankFailed: rank 0: a collective failed" in log
    if how == "kill":  # torchrun's root cause is rank 1; rank 0 may be stopped before it speaks
        root = log[log.index("Root Cause") :]
        assert "rank      : 1 (local_rank: 1)" in root and "exitcode  : 9" in root
    else:  # rank 0 times out in its all-reduce and says so
        assert said and "did not answer within distributed.timeout_s=8" in log
    assert not said or "rank 1 never reached it" in log  # the store's count names it
