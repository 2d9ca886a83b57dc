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

    def validator(self):
        return Evaluation("accuracy", None)

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


class ScriptedValidation(ColourTask):
    """The toy task with a validation check that answers ``scores`` in turn and notes which
    weights each check saw (and which the run saved): a sum over the model's parameters."""

    def __init__(self, scores: list[float]) -> None:
        super().__init__(None)
        self.scores, self.seen, self.saved = list(scores), [], None

    @staticmethod
    def fingerprint(policy) -> float:
        return float(sum(p.double().sum() for p in policy.model.state_dict().values()))

    def validator(self):
        def check(policy):
            self.seen.append(self.fingerprint(policy))
            return {"accuracy": self.scores.pop(0), "n": 1}

        return Evaluation("accuracy", check)

    def save(self, policy, folder):
        self.saved = self.fingerprint(policy)
        super().save(policy, folder)


def test_sft_keeps_the_best_validated_weights_and_stops_on_patience(tmp_path):
    task = ScriptedValidation([0.2, 0.5, 0.4, 0.3, 0.9])  # checks at steps 2, 4, 6, 8 (10)
    cfg = config("toy/sft", tmp_path, sft={"steps": 10, "batch_size": 3, "lr": 3e-3},
                 eval={"interval": 2, "patience": 2})  # fmt: skip
    result = recipe.train(cfg, task)
    with open(tmp_path / "history.csv") as f:
        assert len(list(csv.DictReader(f))) == 8  # two checks without a better one: stop at 8
    with open(tmp_path / "val.csv") as f:
        assert [int(r["step"]) for r in csv.DictReader(f)] == [2, 4, 6, 8]
    assert result["kept_step"] == 4 and result["val_accuracy"] == 0.5
    assert task.saved == task.seen[1] != task.seen[-1]  # model/ holds step 4's weights


def test_multiturn_grpo_starts_from_the_kept_start_and_stops_early(tmp_path):
    sft = tmp_path / "sft"
    recipe.train(config("toy/sft", sft, sft={"steps": 30, "batch_size": 3, "lr": 3e-3}),
                 ColourTask(None))  # fmt: skip
    task = ScriptedValidation([0.6, 0.5, 0.4, 0.9])  # the start is best; patience 2 ends it
    grpo = {"steps": 6, "num_samples": 3, "max_new_tokens": 4, "lr": 1e-2}
    cfg = config("toy/multiturn", tmp_path / "mt", grpo=grpo, init=str(sft / "model"),
                 eval={"interval": 1, "patience": 2})  # fmt: skip
    result = recipe.train(cfg, task)
    assert result["kept_step"] == 0 and len(task.seen) == 3  # checks at 0, 1, 2
    assert task.saved == task.seen[0] != task.seen[2]


def test_checks_during_the_warm_up_do_not_count_towards_patience(tmp_path):
    """The same falling scores as above, with 2 warm-up steps of 6: the checks at steps 1-2
    keep nothing better but do not count, so patience 2 ends the run at step 4, not 2."""
    sft = tmp_path / "sft"
    recipe.train(config("toy/sft", sft, sft={"steps": 30, "batch_size": 3, "lr": 3e-3}),
                 ColourTask(None))  # fmt: skip
    task = ScriptedValidation([0.6, 0.5, 0.4, 0.3, 0.2, 0.9, 0.9])
    grpo = {"steps": 6, "num_samples": 3, "max_new_tokens": 4, "lr": 1e-2, "warmup_ratio": 1 / 3}
    cfg = config("toy/multiturn", tmp_path / "mt", grpo=grpo, init=str(sft / "model"),
                 eval={"interval": 1, "patience": 2})  # fmt: skip
    result = recipe.train(cfg, task)
    assert result["kept_step"] == 0 and len(task.seen) == 5  # checks at 0, 1, 2, 3, 4


def test_a_step_whose_answers_do_not_parse_is_undone(tmp_path):
    """An untrained model answers no colour: every step is below the format floor, so the
    weights go back to the validated start and nothing is learned from those answers."""
    task = ScriptedValidation([0.0] * 3)
    grpo = {"steps": 2, "num_samples": 3, "max_new_tokens": 4, "format_floor": 0.5}
    cfg = config("toy/multiturn", tmp_path, grpo=grpo, eval={"interval": 0})
    recipe.train(cfg, task)
    with open(tmp_path / "history.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["rolled_back"] for r in rows] == ["1", "1"]
    assert task.saved == task.seen[0]


@pytest.mark.parametrize(
    "schedule, warmup, expected",
    [
        ("constant", 0, [1.0, 1.0, 1.0, 1.0, 1.0]),
        ("linear", 0, [1.0, 0.8, 0.6, 0.4, 0.2]),  # as before this schedule took a warm-up
        ("cosine", 0, [1.0, 0.9045, 0.6545, 0.3455, 0.0955]),
        ("cosine", 2, [0.5, 1.0, 1.0, 0.75, 0.25]),
        ("linear", 1, [1.0, 1.0, 0.75, 0.5, 0.25]),
    ],
)
def test_learning_rate_schedules(schedule, warmup, expected):
    from pixelrl.rl.schedule import lr_at

    assert [lr_at(s, 1.0, schedule, 5, warmup) for s in range(5)] == pytest.approx(
        expected, abs=1e-4
    )


def test_a_schedule_or_warm_up_no_run_can_use_is_a_config_error(tmp_path):
    from pixelrl.config import ConfigError

    for section, msg in [({"sft": {"lr_schedule": "step"}}, "sft.lr_schedule: 'step'"),
                         ({"grpo": {"warmup_ratio": 1.5}}, "grpo.warmup_ratio must be in"),
                         ({"grpo": {"format_floor": 1.0}}, "format_floor must be in"),
                         ({"eval": {"patience": -1}}, "eval.patience must be >= 0")]:  # fmt: skip
        with pytest.raises(ConfigError, match=msg):
            recipe.train(config("toy/sft", tmp_path / "x", **section), ColourTask(None))
        assert not (tmp_path / "x").exists()
