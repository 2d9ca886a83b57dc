"""A checkpointed run with a pointer head (issue 53 follow-up): the head sits outside the model
and the optimizer holds its parameters too, so a checkpoint keeps both (the module of
:func:`pixelrl.rl.text.parallel.checkpointed`). 2 SFT steps, a stop, 2 more: the head, the
model and the losses are those of 4 steps straight (AdamW's moments of the head came back)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from test_text_ddp import _history, _weights  # noqa: E402
from test_text_ddp_pointer import _close, _head  # noqa: E402
from text_ddp_worker import PointerTask, train  # noqa: E402

TINY = {"pointer_head": True, "vision_size": {"image_size": 64, "patch_size": 4, "scale_factor": 2}}


def test_a_pointer_run_resumes_with_its_head_and_its_optimizer_state(tmp_path):
    sft = {"batch_size": 4, "lr": 3e-3}
    run = dict(task=PointerTask(None), **TINY)
    train("toy/sft", tmp_path / "full", sft={**sft, "steps": 4}, **run)
    train("toy/sft", tmp_path / "half", sft={**sft, "steps": 2}, train={"checkpoint_interval": 2},
          **run)  # fmt: skip
    run["task"] = PointerTask(None)
    train("toy/sft", tmp_path / "unused", sft={**sft, "steps": 4},
          train={"resume": str(tmp_path / "half"), "output_dir": ""}, **run)  # fmt: skip
    full, half = tmp_path / "full", tmp_path / "half"
    assert [r["step"] for r in _history(half)] == ["1", "2", "3", "4"]
    for a, b in zip(_history(full), _history(half)):
        assert float(a["loss"]) == pytest.approx(float(b["loss"]), rel=1e-5)
    _close(_head(full / "model"), _head(half / "model"), 1e-6)
    wa, wb = _weights(full), _weights(half)
    for name in wa:
        torch.testing.assert_close(wa[name], wb[name], rtol=0, atol=1e-6, msg=name)
