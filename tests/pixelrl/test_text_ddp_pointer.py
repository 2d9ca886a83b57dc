"""The pointer head under torchrun (issue 53 follow-up): the head sits outside the model, so
neither DDP's broadcast of the model nor FSDP2's sharding reaches it. 2 CPU ranks (gloo) run
SFT through the head (text_ddp_worker.py ``pointer``) with rank 1's head started 0.5 off:
after 2 steps both ranks hold the same head, the one a single process trains from the same
global batch, and the run folder's saved head is it (with fsdp: beside the gathered model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from test_text_ddp import WEIGHT_ATOL, WORKER, _env, _same_training, _torchrun  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("text_ddp_pointer")
    one = subprocess.Popen([sys.executable, str(WORKER), str(out), "plain", "pointer", "ddp",
                            "one"], env=_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)  # fmt: skip
    two = _torchrun(out, "pointer", "ddp", "ddp", "pointer", "fsdp", "fsdp")
    log = one.communicate(timeout=420)[0]
    assert one.returncode == 0, log[-3000:]
    assert two.returncode == 0, two.stdout[-3000:] + two.stderr[-3000:]
    return out


def _head(folder: Path) -> dict:
    from safetensors.torch import load_file

    from pixelrl.vision.pointer_head import HEAD_FILE

    return load_file(str(folder / HEAD_FILE))


def _close(a: dict, b: dict, atol: float = 0.0) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=atol, msg=name)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("shard", ["ddp", "fsdp"])
def test_both_ranks_train_one_head_as_one_process_does(runs, shard):
    where, one = runs / shard, runs / "one"
    start = _head(where / "rank1-start")
    assert not torch.equal(start["query.weight"], _head(where / "rank0-start")["query.weight"])
    _close(_head(where / "rank0"), _head(where / "rank1"))  # rank 0's start, averaged steps
    _close(_head(where / "rank0"), _head(one / "rank0"), WEIGHT_ATOL)
    _close(_head(where / "sft" / "model"), _head(where / "rank0"))  # the saved one is it
    _same_training(one / "sft", where / "sft")  # the model too, and the global loss
    moved = _head(one / "rank0")["query.weight"] - _head(one / "rank0-start")["query.weight"]
    assert moved.abs().max() > 3 * WEIGHT_ATOL  # (it learned: more than the tolerance)
