"""Training recipes for vision-language GUI policies: ``gui/sft``, ``gui/grounding-grpo``,
``gui/multiturn-grpo`` (``pixelrl train gui/... [key=value ...]``, ``--model NAME_OR_PATH``).

Every recipe loads a :class:`pixelrl.vision.vlm.VLMPolicy` (``model``: ``tiny-<family>``, a model folder
or a transformers name; ``init``: a folder saved by an earlier run, e.g. SFT before GRPO),
optionally wraps it with LoRA (``lora.enabled``), trains, evaluates on held-out seeds and writes
to ``train.output_dir``: ``model/`` (``save_pretrained`` of model and processor), ``history.csv``,
``eval.csv`` and ``learning_curve.png``.

- ``gui/sft``: behaviour cloning from recorded episodes (the recording format, :mod:`pixelrl.envs.recording`;
  ``data.dataset``, or, when empty, expert episodes of ``env.families`` recorded on the spot into
  ``<output_dir>/demos``). Loss: mean negative log-likelihood of the action text's tokens (the
  end token included) given the screenshot, instruction and previous actions.
- ``gui/grounding-grpo``: one-step grounding. Prompts are (screenshot, instruction) pairs from
  training seeds (:func:`pixelrl.gui_agent.grounding.grounding_set` with ``split="train"``); ``G =
  grpo.num_samples`` completions each; reward ``grpo.reward`` (:data:`GROUNDING_REWARDS`);
  group-normalised advantages, the clipped token-level surrogate, optional k3 KL to the frozen
  start (``grpo.kl_coef``). Unparsable text scores 0 format reward and trains like any sample.
- ``gui/multiturn-grpo``: groups of ``G`` episodes played from the same seed (sampled actions;
  unparsable text is a ``wait``), the env's (shaped) rewards per step; advantages are episode-level
  plus GiGPO step-level from anchor states (:func:`pixelrl.rl.grpo.gigpo_advantages`).

Evaluation: grounding accuracy (ScreenSpot) on the held-out grounding set for the one-step
recipes, task success on held-out seeds for the multi-turn one (``eval.*``).

A task family's tasks (issue 26's second recipe: ``env.family: miniwob``, ``env.tasks`` its
MiniWoB++ tasks) instead of desktop families (``env.id`` and ``env.families`` are then unused,
``env.kwargs`` holds the family env's options). ``gui/sft`` clones the MiniWoB++ oracle's episodes of every task (or ``data.dataset``,
e.g. the ``gui/miniwob`` recipe's ``policy.bc_demos`` folder), ``gui/multiturn-grpo`` plays its
groups on the tasks in turn, and success is evaluated per task on held-out seeds
(``gui_agent/configs/miniwob_vlm_sft.yaml``, ``miniwob_vlm_grpo.yaml``).

The recipes are a task adapter (:class:`GUITask`) of the one text-policy trainer
(:mod:`pixelrl.rl.text`): this module says what a GUI prompt, demonstration, reward, episode and
held-out evaluation are; the loops are the trainer's.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.config import Config, ConfigError, load_config
from pixelrl.env_family import names_family
from pixelrl.gui_agent.agent_spec import save_gui_agent, tools_for
from pixelrl.gui_agent.grounding_rewards import GROUNDING_REWARDS
from pixelrl.gui_agent.vlm_demos import record_tasks
from pixelrl.gui_agent.vlm_episodes import group_envs, play_group, sft_examples
from pixelrl.gui_agent.vlm_grounding import (
    grounding_accuracy,
    grounding_examples,
    mark_points,
    pointing_clash,
)
from pixelrl.gui_agent.vlm_tasks import (
    play_ids,
    screen_size,
    success_eval,
    task_envs,
    task_seeds,
    training_screens,
)
from pixelrl.rl.text import recipe as text
from pixelrl.rl.text.config import check_text_config, check_tool_template, text_defaults
from pixelrl.rl.text.demos import dataset_roots
from pixelrl.rl.text.env_group import check_envs
from pixelrl.rl.text.rows import Example, Prompt

DEFAULTS: dict[str, Any] = text_defaults({
    "model": "tiny-qwen2_vl",
    # tiny-<family>: how many training screens per family of env.families whose instructions
    # and element names join the tokenizer's corpus (a label is then one token, not byte
    # pieces); 0 screens: the generic action corpus only
    "tokenizer": {"vocab_size": 600, "screens": 0},
    # how answers are written: uitars (click(start_box='(x,y)')), pyautogui, or toolcall (the
    # JSON tool calls of TRL's GUI environment, pixelrl.trl_env, its tools' schemas in the system
    # turn: a model that continues in TRL's GRPOTrainer; tiny models: tiny-qwen2_5_vl, qwen2_vl)
    "action_format": "uitars",
    # how action text's numbers map to pixels (pixelrl.envs.gui_action.coordinates: relative1000,
    # smart_resize:ui-tars-1.5, ...); "": the released model's own when known, else the defaults
    "coordinates": "",
    "env": {
        "id": "pixelrl/Desktop-ClickButton-v0",
        "families": ["click-button"],
        "screen_size": [320, 240],
        "max_steps": 0,  # 0: the env's default
        "reward": "shaped",
        "max_fields": 0,  # fill-form: only layouts with at most this many fields (0: any)
        # a task family (pixelrl.envs.families) and its tasks: the recipe runs on the family's
        # env of each task (miniwob: pixelrl/MiniWoB-<task>-v0) instead of env.id / env.families,
        # with env.kwargs as their options (screen_size and reward do not apply)
        "family": "",
        "tasks": [],
        "kwargs": {},
    },
    "data": {
        "dataset": "",  # gui/sft: recorded episodes; "" records data.episodes expert ones (0: none)
        "episodes": 200,
        "prompts": 400,  # gui/grounding-grpo: training prompts
        # gui/sft: + a click on every uniquely named element of this many training screens per
        # family (pixelrl.envs.grounding.grounding_samples)
        "grounding_screens": 0,
    },
    "grpo": {
        "prompts_per_step": 4,
        "max_new_tokens": 24,
        "reward": "click_gaussian",
        "sigma_scale": 0.5,  # the Gaussian's σ in box sizes (click_gaussian, gui_g2)
        "seeds_per_step": 2,
    },
    # episodes: held-out episodes a task (0: none; evaluate the saved model with pixelrl eval)
    "eval": {"interval": 10, "grounding_items": 100, "episodes": 20},
    # Set-of-Mark prompts: the screen reader's words, numbered, each with its centre in the
    # action text's coordinates, under the instruction (pixelrl.vision.reader.SetOfMarks; needs
    # the reader extra); at most screen_words of them. mark_actions: the answer may name a mark,
    # click(mark=7), and the harness clicks its centre (pixelrl.envs.gui_action.marks; SFT
    # grounding targets name the mark inside the target box when there is one)
    "prompt": {"screen_parse": False, "screen_words": 40, "mark_actions": False},
    # Where envs run. sync: in this process; ray: in Ray actors (pixelrl.envs.remote), per_worker
    # each. gui/multiturn-grpo: a group's envs (num_samples / per_worker workers), kept for the
    # run; an episode whose worker fails leaves its group. gui/sft: the expert's episodes are
    # recorded from num_workers workers (0: 2) into the one dataset; one a fault cut is redone
    "envs": {
        "backend": "sync",
        "num_workers": 0,
        "per_worker": 1,
        "step_timeout": 60.0,
        "max_failures": 3,
        "address": "",
        "num_cpus": 0,
        "resources_per_worker": {},
    },
})  # fmt: skip


# -- set-up -------------------------------------------------------------------------------------
def config_for(recipe_config: str | Path, overrides=()) -> Config:
    cfg = load_config(recipe_config, list(overrides), DEFAULTS)
    check_text_config(cfg)
    if int(cfg.eval.episodes) < 0:
        raise ConfigError(
            f"eval.episodes must be >= 0 (0: no held-out episodes), got {cfg.eval.episodes}"
        )
    if int(cfg.prompt.screen_words) < 1:
        raise ConfigError(f"prompt.screen_words must be >= 1, got {cfg.prompt.screen_words}")
    if cfg.prompt.mark_actions and not cfg.prompt.screen_parse:
        raise ConfigError(
            "prompt.mark_actions needs prompt.screen_parse=true: a mark is a number of the "
            "prompt's screen parse"
        )
    if cfg.prompt.mark_actions:
        from pixelrl.vision.pointer_head import HEAD_FILE

        source = str(cfg.init or cfg.model)
        saved = (Path(source) / HEAD_FILE).is_file()  # a model saved with its head loads it
        head = "pointer_head=true" if cfg.pointer_head else saved and f"{source}'s pointer head"
        if head:
            raise ConfigError(pointing_clash(head, "prompt.mark_actions=true"))
    if names_family(cfg):
        task_envs(cfg)  # an unknown family or task is a ConfigError before any run folder
    _check_codec(cfg)
    return cfg


def _check_codec(cfg: Config) -> None:
    """An unknown ``action_format``, or one the other keys contradict (``toolcall`` reads
    pixels and no marks), is a ConfigError before any run folder."""
    from pixelrl.envs.gui_action.codec import ACTION_FORMATS, GUIActionCodec

    if cfg.action_format not in ACTION_FORMATS:
        raise ConfigError(
            f"action_format: {cfg.action_format!r}; known: {', '.join(ACTION_FORMATS)}"
        )
    try:
        GUIActionCodec(cfg.action_format, cfg.coordinates or None, bool(cfg.prompt.mark_actions))
    except ValueError as e:
        raise ConfigError(f"{'coordinates' if cfg.coordinates else 'action_format'}: {e}") from None
    check_tool_template(cfg)


def gui_codec(cfg: Config, source: str):
    """The GUI action codec of ``action_format`` and ``coordinates`` (or the model's own); with
    ``toolcall``, the tools' schemas of TRL's GUI environment for the prompt's system turn."""
    from pixelrl.envs.gui_action.codec import GUIActionCodec

    try:
        return GUIActionCodec.for_model(
            source, cfg.action_format, cfg.coordinates or None, bool(cfg.prompt.mark_actions),
            tools_for(cfg.action_format),
        )  # fmt: skip
    except ValueError as e:
        key = "coordinates" if cfg.coordinates else "action_format"
        raise ConfigError(f"{key}: {e}") from None


def load_policy(cfg: Config):
    """The :class:`VLMPolicy` a config names, with the GUI codec (:class:`GUITask`'s)."""
    from pixelrl.rl.text.policy import load_text_policy

    task = GUITask(cfg)
    return load_text_policy(cfg, task.codec(), task.corpus)


def _held_out(cfg: Config):
    """The held-out grounding set for one-step recipes (None for the multi-turn one)."""
    one_step = GUITask.RECIPES.get(cfg.recipe) != "multiturn"
    if not one_step or not int(cfg.eval.grounding_items) or names_family(cfg):
        return None  # a family's tasks: task success; the grounding set is the desktop's
    from pixelrl.gui_agent.grounding import grounding_set

    return grounding_set(int(cfg.eval.grounding_items), tuple(cfg.env.families), screen_size(cfg))


# -- the task adapter ---------------------------------------------------------------------------
class GUITask:
    """The GUI domain for :mod:`pixelrl.rl.text`: desktop families or MiniWoB++ tasks."""

    RECIPES = {"gui/sft": "sft", "gui/grounding-grpo": "grpo", "gui/multiturn-grpo": "multiturn"}
    GROUPS_PER_STEP = "grpo.seeds_per_step"  # multi-turn groups a step plays (split over ranks)

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        loop = self.RECIPES.get(cfg.recipe)  # the text trainer's loop: sft, grpo or multiturn
        group = int(cfg.grpo.num_samples) if loop == "multiturn" else None
        check_envs(cfg, group)  # before any run folder or model
        if loop == "grpo" and cfg.grpo.reward not in GROUNDING_REWARDS:
            raise ConfigError(
                f"grpo.reward: {cfg.grpo.reward!r}; known: {', '.join(GROUNDING_REWARDS)}"
            )
        self.pools: dict[str, Any] = {}  # envs.backend=ray: each task's group, kept for the run

    def codec(self):
        return gui_codec(self.cfg, str(self.cfg.init or self.cfg.model))

    def corpus(self) -> list[str] | None:
        """With ``tokenizer.screens``: the codec's corpus and the words of training screens."""
        if not int(self.cfg.tokenizer.screens):
            return None
        from pixelrl.vision.vlm import tiny_corpus

        screens = training_screens(self.cfg, int(self.cfg.tokenizer.screens))
        texts = [t for _, obs, info in screens
                 for t in [obs["instruction"], *(e.get("name", "") for e in info["a11y"])]]  # fmt: skip
        if self.cfg.prompt.screen_parse:  # the parse's own words and marks, each one token
            texts += [" ".join(["Screen text:", *(f"[{i}]" for i in range(1, 41))])] * 20
        return tiny_corpus(self.codec(), int(self.cfg.seed)) + texts

    def evaluator(self):
        from pixelrl.rl.text.adapter import Evaluation

        items = _held_out(self.cfg)
        if items is None and int(self.cfg.eval.episodes) == 0:
            return Evaluation("success", None)  # evaluated afterwards (pixelrl eval), if at all
        if items is None:
            return Evaluation("success", lambda policy: success_eval(policy, self.cfg))
        tokens = int(self.cfg.grpo.max_new_tokens)
        return Evaluation("accuracy", lambda policy: grounding_accuracy(policy, items, tokens))

    def validator(self):
        """None yet: GUI runs keep their last model (no validation set)."""
        from pixelrl.rl.text.adapter import Evaluation

        return Evaluation("success", None)

    def examples(self, run, policy) -> list[Example]:
        roots = dataset_roots(self.cfg, run, functools.partial(record_tasks, self.cfg))
        examples = sft_examples(roots, policy) if roots else []
        if int(self.cfg.data.grounding_screens):
            screens = training_screens(self.cfg, int(self.cfg.data.grounding_screens))
            examples += grounding_examples(screens, policy, screen_size(self.cfg))
        if not examples:
            raise ConfigError(
                "gui/sft has nothing to learn from: data.episodes and data.grounding_screens are 0"
            )
        return examples

    def save(self, policy, folder: Path) -> None:
        # the weights and how the agent answers and what its prompt shows (pixelrl eval reads it)
        save_gui_agent(policy, folder, int(self.cfg.prompt.screen_words))

    # one-step GRPO: grounding prompts, click rewards
    def prompts(self) -> list:
        from pixelrl.gui_agent.grounding import grounding_set

        cfg = self.cfg
        return grounding_set(int(cfg.data.prompts), tuple(cfg.env.families), screen_size(cfg),
                             split="train")  # fmt: skip

    def prompt(self, item) -> Prompt:
        return Prompt(item.screenshot, item.instruction)

    def rewards(self, item, texts: list[str]):
        fn, sigma = GROUNDING_REWARDS[str(self.cfg.grpo.reward)], float(self.cfg.grpo.sigma_scale)
        screen = screen_size(self.cfg)
        if self.cfg.prompt.mark_actions:  # a mark action scores where it clicks
            texts = mark_points(self.codec(), self.cfg, item.screenshot, texts, screen)
        return fn(texts, [item.bbox] * len(texts), screen, sigma)

    # multi-turn GRPO: groups of episodes from training seeds, the tasks in turn
    def play(self, policy, step: int, rng, gcfg) -> tuple[list, list]:
        episodes, groups = [], []
        ids, per_step = play_ids(self.cfg), int(self.cfg.grpo.seeds_per_step)
        for k in range(per_step):
            eid = ids[(step * per_step + k) % len(ids)]
            seed = task_seeds(self.cfg, eid, "train", 1, rng)[0]
            envs = None
            if self.cfg.envs.backend == "ray":
                if eid not in self.pools:
                    self.pools[eid] = group_envs(self.cfg, eid, gcfg.num_samples)
                envs = self.pools[eid]
            played = play_group(policy, self.cfg, seed, gcfg.num_samples, gcfg, eid, envs)
            episodes += played
            groups += [(eid, seed)] * len(played)
        return episodes, groups

    def step_row(self, episodes: list) -> dict[str, float]:
        turns = [t for ep in episodes for t in ep.turns]
        row = {"reward": float(np.mean([ep.ret for ep in episodes])),
               "success": float(np.mean([ep.success for ep in episodes])),
               "format": float(np.mean([t.completion.parsed for t in turns])), "steps": len(turns)}  # fmt: skip
        if self.pools:  # worker faults so far, counted since the start
            row["env_faults"] = sum(e.faults for e in self.pools.values())
        return row

    def close(self) -> None:
        for envs in self.pools.values():
            envs.close()
        self.pools = {}


def train(cfg: Config) -> dict[str, Any]:
    """Run the recipe ``cfg.recipe`` names."""
    return text.train(cfg, GUITask(cfg))


run_sft = train  # gui/sft's config in, its run out (bench/grpo_vs_trl.py)

# ``pixelrl train gui/...``: config, ``--model``, the run, a summary table.
run_recipe = functools.partial(text.run_recipe, GUITask, config_for)
