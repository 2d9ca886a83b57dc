"""A run with a pointer head keeps the head where it keeps the model (issue 53 follow-up): the
head sits outside the model, so checkpoints and the best-validated weights hold the module of
:func:`pixelrl.rl.text.parallel.checkpointed` (model and head). 2 SFT steps, a stop, 2 more:
the head, the model and the losses are those of 4 steps straight (AdamW's moments of the head
came back); a run whose validation is best at step 2 of 4 saves the head of step 2."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from test_text_ddp import _history, _weights  # noqa: E402
from test_text_ddp_pointer import _close, _head  # noqa: E402
from text_ddp_worker import PointerTask, train  # noqa: E402

from pixelrl.rl.text.adapter import Evaluation  # noqa: E402

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


class BestFirst(PointerTask):
    """A validation whose first check is the best (1.0, then 0.0)."""

    def validator(self):
        checks = iter([1.0, 0.0])
        return Evaluation("accuracy", lambda policy: {"accuracy": next(checks), "n": 1})


def test_the_best_validated_head_is_the_one_saved(tmp_path):
    sft = {"batch_size": 4, "lr": 3e-3}
    train("toy/sft", tmp_path / "two", task=PointerTask(None), sft={**sft, "steps": 2}, **TINY)
    train("toy/sft", tmp_path / "kept", task=BestFirst(None), sft={**sft, "steps": 4},
          eval={"interval": 2}, **TINY)  # fmt: skip
    _close(_head(tmp_path / "kept" / "model"), _head(tmp_path / "two" / "model"), 1e-6)
