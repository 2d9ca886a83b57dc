"""The one text-policy trainer takes a domain it has never seen: a toy task adapter (name the
colour of the picture) trains with SFT, one-step GRPO and multi-turn GRPO through the same loops
(pixelrl.rl.text) with no change to them."""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")

from pixelrl.config import Config  # noqa: E402
from pixelrl.rl.text import recipe  # noqa: E402
from pixelrl.rl.text.adapter import Evaluation  # noqa: E402
from pixelrl.rl.text.config import text_defaults  # noqa: E402
from pixelrl.rl.text.rollout import TurnResult  # noqa: E402
from pixelrl.rl.text.rows import Example, Prompt  # noqa: E402
from pixelrl.stats import wilson_interval  # noqa: E402

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 220)}


def picture(name: str) -> np.ndarray:
    return np.full((32, 32, 3), COLOURS[name], np.uint8)


class ColourCodec:
    answer_hint = "Answer with red, green or blue."
    noop = "none"

    def parse(self, text, screen_size=None):
        word = str(text).strip()
        return (word, None) if word in COLOURS else (None, f"not a colour: {word!r}")

    def render(self, action, screen_size=None):
        return str(action)

    def corpus(self, seed=0):
        return [f"{a} {b}" for a in COLOURS for b in COLOURS] * 10


class ColourGroup:
    """Two-turn episodes: name the colour twice; each right answer scores 1."""

    screen, max_new_tokens = None, 4

    def __init__(self, colours: list[str]) -> None:
        self.colours, self.n, self.turn = colours, len(colours), [0] * len(colours)

    def prompts(self, active):
        return [Prompt(picture(self.colours[i]), "Name the colour.") for i in active]

    def step(self, completions):
        out = {}
        for i, c in completions.items():
            self.turn[i] += 1
            right = c.action == self.colours[i]
            out[i] = TurnResult(float(right), self.turn[i] == 2, right, {"right": float(right)})
        return out


class ColourTask:
    RECIPES = {"toy/sft": "sft", "toy/grpo": "grpo", "toy/multiturn": "multiturn"}

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    def codec(self):
        return ColourCodec()

    def corpus(self):
        return None

    def evaluator(self):
        def accuracy(policy):
            names = list(COLOURS) * 2
            answers = policy.generate([picture(n) for n in names], ["Name the colour."] * len(names),
                                      do_sample=False, max_new_tokens=4)  # fmt: skip
            right = [a[0].action == n for a, n in zip(answers, names)]
            low, high = wilson_interval(sum(right), len(right))
            return {
                "accuracy": float(np.mean(right)),
                "ci_low": low,
                "ci_high": high,
                "n": len(right),
            }

        return Evaluation("accuracy", accuracy)

    def examples(self, run, policy):
        return [Example(Prompt(picture(n), "Name the colour."), n) for n in COLOURS]

    def save(self, policy, folder):
        policy.save(folder)

    def prompts(self):
        return list(COLOURS)

    def prompt(self, item):
        return Prompt(picture(item), "Name the colour.")

    def rewards(self, item, texts):
        return [float(t.strip() == item) for t in texts]

    def play(self, policy, step, rng, gcfg):
        from pixelrl.rl.text.rollout import play_episodes

        colour = list(COLOURS)[step % len(COLOURS)]
        group = ColourGroup([colour] * gcfg.num_samples)
        return play_episodes(policy, group, sample=True, temperature=gcfg.temperature), [
            0
        ] * gcfg.num_samples

    def step_row(self, episodes):
        return {"reward": float(np.mean([e.ret for e in episodes])),
                "success": float(np.mean([e.success for e in episodes]))}  # fmt: skip

    def close(self):
        pass


def config(name: str, out, **sections) -> Config:
    base = text_defaults({"model": "tiny-smolvlm", "eval": {"interval": 0}})
    base.update(recipe=name, torch_threads=1)
    base["train"] = {"output_dir": str(out), "progress": False}
    for key, value in sections.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) else value
    return Config(base)


def test_a_toy_task_trains_with_sft_then_both_grpo_loops(tmp_path):
    sft = recipe.train(config("toy/sft", tmp_path / "sft", sft={"steps": 30, "batch_size": 3,
                                                                 "lr": 3e-3}), ColourTask(None))  # fmt: skip
    with open(tmp_path / "sft" / "history.csv") as f:
        losses = [float(r["loss"]) for r in csv.DictReader(f)]
    assert len(losses) == 30 and losses[-1] < 0.2 * losses[0]
    assert [r["step"] for r in sft["eval"]] == [0, 30]
    assert sft["eval"][-1]["accuracy"] == 1.0  # it learned to name the colours
    model = str(tmp_path / "sft" / "model")
    grpo = {"steps": 2, "num_samples": 3, "prompts_per_step": 2, "max_new_tokens": 4}
    one = recipe.train(
        config("toy/grpo", tmp_path / "grpo", grpo=grpo, init=model), ColourTask(None)
    )
    many = recipe.train(
        config("toy/multiturn", tmp_path / "mt", grpo=grpo, init=model), ColourTask(None)
    )
    for result, folder in ((one, "grpo"), (many, "mt")):
        with open(tmp_path / folder / "history.csv") as f:
            rows = list(csv.DictReader(f))
        assert [int(r["step"]) for r in rows] == [1, 2] and all("reward" in r for r in rows)
        assert result["eval"][-1]["accuracy"] >= 0.5
        assert (tmp_path / folder / "model" / "config.json").is_file()
    with pytest.raises(Exception, match="not one of this module's"):
        recipe.train(config("toy/ppo", tmp_path / "x"), ColourTask(None))
