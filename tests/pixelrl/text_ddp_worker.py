"""Text-policy runs for test_text_ddp.py: ``torchrun ... text_ddp_worker.py OUT MODE...``.

Trains the toy colour task of test_text_trainer.py through the real loops (``recipe.train``),
each run's folder under ``OUT/<name>``. Modes (several may follow one another in one launch):

- ``plain``: every policy runs each row's forward on its own (no prompt sharing), as fsdp
  does: the one-process reference for fsdp;
- ``updates SHARD NAME``: SFT (2 steps), one-step GRPO (2 steps) and multi-turn GRPO (2 steps),
  with ``distributed.shard=SHARD``; runs ``NAME/sft``, ``NAME/grpo``, ``NAME/multiturn``;
- ``resume SHARD``: SFT of 4 steps straight (``resume-SHARD/full``), then 2 steps with a
  checkpoint (``resume-SHARD/half``) and a resume of it to 4 (into ``half``); one-step GRPO
  the same way (``grpo-full``, ``grpo-half``);
- ``compose SHARD``: one-step GRPO with LoRA, gradient checkpointing and the KL term at once,
  and with fsdp bf16 compute (``compose-SHARD``);
- ``die HOW``: GRPO whose rank 1, at step 2, raises in its rewards (``raise``), exits without
  a word (``kill``) or never returns (``hang``; ``distributed.timeout_s`` is 8);
- ``pointer SHARD NAME``: SFT (2 steps) of a policy with a pointer head (issue 53), whose
  clicks are the head's; rank 1's head starts perturbed (only rank 0's broadcast makes the ranks'
  heads one); each rank writes its trained head to ``NAME/rank<r>/`` beside the run's folder;
- ``refuse``: the configs that cannot be split over 2 ranks; their errors go to
  ``OUT/refused<rank>.txt``.

Sampling is made the same whatever the number of ranks: ``VLMPolicy.generate`` is wrapped to
sample each prompt on its own from a generator seeded by (its picture, instruction, the call's
number within its GRPO step or multi-turn group, its repeat within the call). A one-process batch samples every prompt from
one stream, so a batch split over ranks would otherwise draw other answers; everything after
sampling (shares, advantages, loss scaling, gradient averaging, clipping, AdamW) is the code
under test, unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_text_trainer import COLOURS, ColourTask, config  # noqa: E402

from pixelrl.config import ConfigError  # noqa: E402
from pixelrl.rl.text import recipe  # noqa: E402
from pixelrl.vision.vlm import VLMPolicy  # noqa: E402

RANK = int(os.environ.get("RANK", "0"))


TAG = ["step"]  # what a sampling call belongs to: a GRPO step, or a multi-turn group
CALLS: dict[str, int] = {}  # sampling calls so far in this run, by tag


def seeded_generate():
    plain = VLMPolicy.generate

    def generate(self, screenshots, instructions, histories=None, num_samples=1, **kw):
        if not kw.get("do_sample", True):  # greedy (the held-out evaluation): nothing to seed
            return plain(self, screenshots, instructions, histories, num_samples, **kw)
        histories = histories or [()] * len(instructions)
        call = CALLS[TAG[0]] = CALLS.get(TAG[0], -1) + 1
        out, seen = [], {}
        for image, text, history in zip(screenshots, instructions, histories):
            key = hashlib.blake2b(np.ascontiguousarray(image).tobytes() + text.encode()
                                  + repr(history).encode(), digest_size=8).hexdigest()  # fmt: skip
            seen[key] = seen.get(key, -1) + 1
            digest = hashlib.blake2b(f"{key}/{TAG[0]}/{call}/{seen[key]}".encode(), digest_size=4)
            torch.manual_seed(int.from_bytes(digest.digest(), "little"))
            out += plain(self, [image], [text], [history], num_samples=num_samples, **kw)
        return out

    VLMPolicy.generate = generate


class GradedTask(ColourTask):
    """The colour task with a graded reward (how much of the answer is the colour's letters), so
    an untrained model's groups differ and GRPO has something to learn from, and multi-turn
    groups a step set by ``grpo.groups_per_step`` (what each rank plays its share of)."""

    GROUPS_PER_STEP = "grpo.groups_per_step"
    fail_at, how = None, "raise"

    def examples(self, run, policy):
        return super().examples(run, policy) * 2

    def rewards(self, item, texts):
        self.calls = getattr(self, "calls", 0) + 1
        if self.fail_at is not None and RANK == 1 and self.calls == self.fail_at:
            if self.how == "kill":  # gone without a word (the OOM killer, kill -9)
                os._exit(9)
            if self.how == "hang":
                time.sleep(120)
            raise RuntimeError("the reward server went away")
        return [len(set(t) & set(item)) / (1 + len(t)) for t in texts]

    def play(self, policy, step, rng, gcfg):
        from test_text_trainer import ColourGroup

        from pixelrl.rl.text.rollout import play_episodes

        n = int(self.cfg.grpo.groups_per_step)
        episodes, groups = [], []
        for k in range(n):
            TAG[0] = f"group{step * n + k}"  # the group's number: the same on any number of ranks
            colour = list(COLOURS)[(step * n + k) % len(COLOURS)]
            played = play_episodes(policy, ColourGroup([colour] * gcfg.num_samples), sample=True,
                                   temperature=gcfg.temperature)  # fmt: skip
            for ep in played:  # a graded return, as above
                for t in ep.turns:
                    t.reward = len(set(t.completion.text) & set(colour)) / (
                        1 + len(t.completion.text)
                    )
            episodes += played
            groups += [step * n + k] * len(played)
        TAG[0] = "step"
        return episodes, groups


class PointerTask(GradedTask):
    """Click into a box through the pointer head: SFT's targets hold the pointer token, and
    the head's cross-entropy against the box's cells joins the NLL."""

    BOX = (200, 150, 320, 240)

    def codec(self):
        from pixelrl.envs.gui_action.codec import GUIActionCodec

        return GUIActionCodec.for_model("tiny-smolvlm", "uitars", None)

    def evaluator(self):  # nothing to measure here: the heads' weights are the test
        from pixelrl.rl.text.adapter import Evaluation

        return Evaluation("accuracy", lambda policy: {"accuracy": 0.0, "n": 0})

    def examples(self, run, policy):
        from pixelrl.rl.text.rows import Example, Prompt
        from pixelrl.vision.pointer_head import POINTER_TOKEN

        rng = np.random.default_rng(0)
        target = f"click(start_box='{POINTER_TOKEN}')"
        return [Example(Prompt(rng.integers(0, 255, (240, 320, 3), np.uint8), word), target,
                        box=self.BOX) for word in ("left", "right", "up", "down")]  # fmt: skip


HEADS: list = []  # the pointer heads made in this run, the trained policy's first
OUT: list = []  # where the run's heads go


def perturbed_heads() -> None:
    """Rank 1's pointer head starts 0.5 off rank 0's (as a head built on another device or read
    from another file might); every head made is kept in HEADS."""
    plain = VLMPolicy._attach_pointer
    if getattr(plain, "perturbed", False):  # (already wrapped by an earlier mode)
        return

    def attach(self, head):
        plain(self, head)
        if RANK == 1:
            with torch.no_grad():
                for p in self.pointer.parameters():
                    p.add_(0.5)
        HEADS.append(self.pointer)
        if len(HEADS) == 1:  # the trained policy's, as it starts
            from pixelrl.vision.pointer_head import save_head

            (OUT[0] / f"rank{RANK}-start").mkdir(parents=True, exist_ok=True)
            save_head(self.pointer, OUT[0] / f"rank{RANK}-start")

    attach.perturbed = True
    VLMPolicy._attach_pointer = attach


GRPO = {"steps": 2, "num_samples": 3, "prompts_per_step": 2, "max_new_tokens": 4,
        "minibatch": 12, "lr": 1e-2, "groups_per_step": 2}  # fmt: skip


def train(name: str, out: Path, task=None, first_step: int = 0, **sections):
    """One run; its sampling calls numbered from ``first_step`` (a resumed run's)."""
    CALLS.clear()
    CALLS["step"] = first_step - 1
    cfg = config(name, out, **sections)
    task = task or GradedTask(cfg)
    task.cfg = cfg
    return recipe.train(cfg, task)


def main() -> None:
    out, modes = Path(sys.argv[1]), sys.argv[2:]
    seeded_generate()
    sft = {"steps": 2, "batch_size": 4, "lr": 3e-3}
    while modes:
        mode = modes.pop(0)
        if mode == "plain":  # every row its own forward, as fsdp runs them (the reference)
            VLMPolicy.__init__ = functools.partialmethod(VLMPolicy.__init__, share_prompts=False)
        elif mode == "updates":
            dist, where = {"shard": modes.pop(0)}, out / modes.pop(0)
            train("toy/sft", where / "sft", sft=sft, distributed=dist)
            train("toy/grpo", where / "grpo", grpo=GRPO, distributed=dist)
            train("toy/multiturn", where / "multiturn", grpo=GRPO, distributed=dist)
        elif mode == "resume":
            dist = {"shard": modes.pop(0)}
            where, four = out / f"resume-{dist['shard']}", {**sft, "steps": 4}
            train("toy/sft", where / "full", sft=four, distributed=dist)
            train("toy/sft", where / "half", sft={**sft, "steps": 2}, distributed=dist,
                  train={"checkpoint_interval": 2})  # fmt: skip
            train("toy/sft", where / "unused", sft=four, distributed=dist,
                  train={"resume": str(where / "half"), "output_dir": ""})  # fmt: skip
            four, two = {**GRPO, "steps": 4}, {**GRPO, "steps": 2}  # one-step GRPO the same way
            train("toy/grpo", where / "grpo-full", grpo=four, distributed=dist)
            train("toy/grpo", where / "grpo-half", grpo=two, distributed=dist,
                  train={"checkpoint_interval": 2})  # fmt: skip
            train("toy/grpo", where / "unused", grpo=four, distributed=dist, first_step=2,
                  train={"resume": str(where / "grpo-half"), "output_dir": ""})  # fmt: skip
        elif mode == "compose":  # LoRA, gradient checkpointing, KL; fsdp: bf16 compute
            shard = modes.pop(0)
            dist = {"shard": shard, "param_dtype": "bfloat16" if shard == "fsdp" else ""}
            train("toy/grpo", out / f"compose-{shard}", grpo={**GRPO, "kl_coef": 0.04},
                  distributed=dist, lora={"enabled": True, "r": 4, "alpha": 8},
                  gradient_checkpointing=True)  # fmt: skip
        elif mode == "die":  # die raise|kill|hang: rank 1 at its second reward
            task = GradedTask(None)
            task.fail_at, task.how = 2, modes.pop(0)
            train("toy/grpo", out / "die", task=task, grpo=GRPO, distributed={"timeout_s": 8})
        elif mode == "pointer":  # pointer SHARD NAME
            from pixelrl.vision.pointer_head import save_head

            dist, where = {"shard": modes.pop(0)}, out / modes.pop(0)
            perturbed_heads()
            HEADS.clear()
            OUT[:] = [where]
            train("toy/sft", where / "sft", task=PointerTask(None), sft=sft, distributed=dist,
                  pointer_head=True, vision_size={"image_size": 64, "patch_size": 4,
                                                  "scale_factor": 2})  # fmt: skip
            (where / f"rank{RANK}").mkdir(parents=True, exist_ok=True)
            save_head(HEADS[0], where / f"rank{RANK}")  # trained
        elif mode == "refuse":
            refused = []
            for name, sections in (
                ("toy/grpo", {"grpo": {**GRPO, "prompts_per_step": 3}}),
                ("toy/sft", {"sft": {**sft, "batch_size": 3}}),
            ):
                try:
                    train(name, out / "refused", **sections)
                except ConfigError as e:
                    refused.append(str(e))
            try:
                train("toy/multiturn", out / "refused", task=ColourTask(None), grpo=GRPO)
            except ConfigError as e:
                refused.append(str(e))
            (out / f"refused{RANK}.txt").write_text("\n".join(refused))


if __name__ == "__main__":
    main()
