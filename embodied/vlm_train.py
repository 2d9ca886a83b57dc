"""Training recipes for the navigation vision-language agent: ``embodied/vlm-sft`` and
``embodied/vlm-grpo`` (``pixelrl train embodied/vlm-sft [key=value ...]``, ``--model NAME``).

The agent is :mod:`pixelrl.embodied.vlm_agent`: a :class:`~pixelrl.vision.vlm.VLMPolicy` with the
navigation codec; it sees the egocentric frame and the goal in words and answers with actions
such as ``turn_left(2)`` or ``move_forward(3)``.

- ``embodied/vlm-sft``: behaviour cloning of the shortest-path follower. Its episodes are
  recorded through the demonstration recorder (:class:`~pixelrl.envs.recording.RecordEpisodes`,
  PNG frames) into ``<output_dir>/demos`` -- or read from ``data.dataset``, any recording of a
  navigation env -- and loaded back with :class:`~pixelrl.envs.recording.EpisodeDataset`: one
  data path for demonstrations, whoever recorded them. Every step is an example; its target is
  the run of the follower's next action from there (``move_forward(3)``, at most
  ``agent.max_repeat``), so the model learns multi-step answers.
- ``embodied/vlm-grpo``: multi-turn GRPO. Each step plays ``grpo.num_samples`` episodes from each
  of ``grpo.starts_per_step`` training starts (same seed: same scene, start and goal), sampling
  the answers; every turn's reward is verifiable: geodesic progress over its low-level steps,
  the slack, Success and SPL at the end, a format penalty for an unparsable answer
  (``grpo.rewards``); or, with ``grpo.reward: time_decayed``, VLN-R1's time-decayed agreement
  of the answer's steps with the follower's (plus Success). Advantages are episode-level plus
  GiGPO step-level from anchor states (the same frame and goal text in one group).

Evaluation (``eval.episodes`` held-out episodes: ``env.eval_kwargs``' scenes, greedy answers)
reports Success with its 95% interval, SPL and the share of parsed answers. Validation
(``eval.val_episodes`` episodes in ``env.val_kwargs``' scenes: training-side apartments that
neither training nor the held-out test uses, checked at config time) chooses the kept model by
``eval.val_measure`` (Success or SPL): ``model/`` is the best-validated checkpoint, and GRPO
stops after ``eval.patience`` checks past its warm-up without a better one. With
``grpo.replay_failed`` a share of GRPO's starts are training starts whose last group did not all
succeed (prioritized level replay, Jiang et al. 2021: learn where there is something to
learn). The run folder holds ``model/`` (:func:`~pixelrl.embodied.vlm_agent.save_agent`:
weights, processor and the agent's json, what ``pixelrl bench nav --agent vlm RUN/model``
loads), ``history.csv``, ``eval.csv`` and ``learning_curve.png``.

The recipes are a task adapter (:class:`NavTask`) of the one text-policy trainer
(:mod:`pixelrl.rl.text`): this module says what a navigation prompt, demonstration, turn reward
(measures composed by ``grpo.rewards``), episode and held-out evaluation are; the loops are the
trainer's.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.config import Config, ConfigError, check_ranges, load_config
from pixelrl.embodied.rewards import DEFAULT_WEIGHTS
from pixelrl.embodied.vlm_agent import ACTION_FORMATS
from pixelrl.embodied.vlm_demos import record_demonstrations, sft_examples
from pixelrl.embodied.vlm_episodes import evaluate, play
from pixelrl.embodied.vlm_spec import (
    agent_spec,
    check_init_agent,
    check_model,
    check_prompt_sensors,
    check_validation_scenes,
    codec_for,
    goal_corpus,
    make_env,
    task_of,
)
from pixelrl.envs import task_family
from pixelrl.envs.nav.measures import SCORES
from pixelrl.rl.text import recipe as text
from pixelrl.rl.text.config import check_text_config, check_tool_template, text_defaults
from pixelrl.rl.text.demos import dataset_roots
from pixelrl.rl.text.replay import FailedStarts
from pixelrl.rl.text.rows import Episode, Example

DEFAULTS: dict[str, Any] = text_defaults({
    "model": "tiny-smolvlm",
    # tiny-<family>: BPE over the codec's and goals' words; with action_format toolcall the
    # tags and tool names whole (a call 19 tokens, not 29: the split names were recombined into
    # tools that do not exist; docs/results/trl_vs_ours.md)
    "tokenizer": {"vocab_size": 800, "tool_tokens": True},
    "env": {
        "id": "pixelrl/PointNav-v0",
        "kwargs": {},  # pixelrl.envs.nav options (NavConfig), checked key by key
        "eval_kwargs": {},  # on top of kwargs for held-out episodes (another scene_seed)
        # on top of kwargs for validation episodes: training-side scenes not trained on (never
        # the held-out ones; checked), used when eval.val_episodes > 0
        "val_kwargs": {},
    },
    "agent": {"max_repeat": 4, "max_steps": 8, "max_new_tokens": 16},
    # how answers are written: text (move_forward(3), turn_left(2)) or toolcall (the JSON tool
    # calls of TRL's navigation environment, pixelrl.embodied.trl_env, its tools' schemas in the
    # system turn: a model that continues in TRL's GRPOTrainer; tiny: tiny-qwen2_5_vl, qwen2_vl)
    "action_format": "text",
    # frames: the last K RGB frames as K separate images (a memory of where it has been)
    # gps_compass: ObjectNav / InstructNav, where the agent stands from its start, in words
    "prompt": {"depth": False, "memory_frames": 0, "history_steps": 8, "distance_floor": False,
               "frames": 1, "gps_compass": False},
    "data": {"dataset": "", "episodes": 200},
    # inflection_weight: how much more often a step where the follower's action changes (every
    # stop, every turn onto a new heading) is drawn than the rest (VLN-CE's inflection weighting)
    "sft": {"steps": 500, "batch_size": 16, "inflection_weight": 1.0},
    "grpo": {
        "num_samples": 4,  # G: episodes per start
        "starts_per_step": 2,
        "reward": "measures",  # or "time_decayed" (VLN-R1)
        "rewards": DEFAULT_WEIGHTS,  # the turn reward's terms (pixelrl.embodied.rewards)
        "decay": 0.8,  # time_decayed: weight of the answer's i-th step is decay**i
        # the chance that a start is drawn again from the training starts whose last group did
        # not all succeed (prioritized level replay's idea: the starts left to learn from)
        "replay_failed": 0.0,
    },
    # val_episodes: validation episodes (env.val_kwargs' scenes) that choose the kept model;
    # val_measure: what "better" means there (spl is finer than success on few episodes)
    "eval": {"interval": 10, "episodes": 40, "val_episodes": 0, "val_measure": "success"},
})  # fmt: skip
REWARD_KINDS = ("measures", "time_decayed")
VAL_MEASURES = SCORES


# -- set-up -------------------------------------------------------------------------------------
POSITIVE = (
    "sft.steps", "sft.batch_size", "sft.lr", "grpo.num_samples", "grpo.starts_per_step",
    "grpo.steps", "grpo.lr", "grpo.minibatch", "agent.max_repeat", "agent.max_steps",
    "agent.max_new_tokens",
)  # fmt: skip
NON_NEGATIVE = ("sft.inflection_weight", "data.episodes", "eval.episodes", "eval.interval", "prompt.memory_frames",
                "prompt.history_steps", "eval.val_episodes", "grpo.rewards.early_stop")  # fmt: skip


def config_for(recipe_config: str | Path, overrides=()) -> Config:
    """The recipe's config with ``overrides``; values no run can use are a :class:`ConfigError`
    here, before any work."""
    cfg = load_config(recipe_config, list(overrides), DEFAULTS)
    check_ranges(cfg, POSITIVE, NON_NEGATIVE)
    check_text_config(cfg)
    task_of(cfg)
    if cfg.action_format not in ACTION_FORMATS:
        raise ConfigError(
            f"action_format: {cfg.action_format!r}; known: {', '.join(ACTION_FORMATS)}"
        )
    check_tool_template(cfg)
    if not isinstance(cfg.prompt.distance_floor, bool):
        raise ConfigError(
            f"prompt.distance_floor must be true or false, got {cfg.prompt.distance_floor!r}"
        )
    try:  # the prompt's and agent's values (types, ranges, prompt.frames with memory_frames)
        agent_spec(cfg).validate()
    except ValueError as e:
        raise ConfigError(f"agent / prompt: {e}") from None
    if int(cfg.eval.val_episodes):
        check_validation_scenes(cfg)
    check_prompt_sensors(cfg)
    if cfg.eval.val_measure not in VAL_MEASURES:
        raise ConfigError(
            f"eval.val_measure: {cfg.eval.val_measure!r}; known: {', '.join(VAL_MEASURES)}"
        )
    replay = cfg.grpo.replay_failed
    if isinstance(replay, bool) or not isinstance(replay, int | float) or not 0 <= replay <= 1:
        raise ConfigError(f"grpo.replay_failed must be a number in [0, 1], got {replay!r}")
    return cfg


# The navigation family's seed split: held-out scenes already differ (eval_kwargs), the seeds
# differ too; validation starts are on val_kwargs' scenes.
NAV_SEEDS = task_family("navigation").seeds
EVAL_SEED_BASE, VAL_SEED_BASE = NAV_SEEDS.seed("eval", 0), NAV_SEEDS.seed("val", 0)


# -- the task adapter -----------------------------------------------------------------------------
class NavTask:
    """The navigation domain for :mod:`pixelrl.rl.text`: PointNav, ObjectNav, InstructNav."""

    RECIPES = {"embodied/vlm-sft": "sft", "embodied/vlm-grpo": "multiturn"}
    GROUPS_PER_STEP = "grpo.starts_per_step"  # multi-turn groups a step plays (split over ranks)

    def __init__(self, cfg: Config) -> None:
        if self.RECIPES.get(cfg.recipe) == "multiturn":  # the rewards of GRPO's episodes
            if cfg.grpo.reward not in REWARD_KINDS:
                raise ConfigError(
                    f"grpo.reward: {cfg.grpo.reward!r}; known: {', '.join(REWARD_KINDS)}"
                )
            unknown = set(cfg.grpo.rewards) - set(DEFAULTS["grpo"]["rewards"])
            if unknown:
                raise ConfigError(f"grpo.rewards: unknown terms {sorted(unknown)}")
        self.cfg, self.spec = cfg, agent_spec(cfg)
        check_model(cfg)
        if self.RECIPES.get(cfg.recipe) == "multiturn":
            check_init_agent(cfg, self.spec)
        self.train_envs: list = []  # multi-turn GRPO: G x starts_per_step envs, kept for the run
        self.replay = FailedStarts(float(cfg.grpo.replay_failed))  # grpo.replay_failed's starts

    def codec(self):
        env = make_env(self.cfg, "train")
        try:
            return codec_for(self.spec, env)
        finally:
            env.close()

    def corpus(self) -> list[str]:
        """The codec's words, goal sentences and history lines, so that each is one token."""
        codec = self.codec()
        return (
            codec.corpus() * 20
            + goal_corpus(self.spec.task, int(self.cfg.seed),
                          gps_compass=self.spec.prompt.gps_compass)
            + [f"Previous actions: {codec.render([a] * 3)}" for a in range(1, 4)] * 20
        )  # fmt: skip

    def evaluator(self):
        """Greedy episodes from ``eval.episodes`` held-out starts (``eval_kwargs``' scenes)."""
        return self._greedy("eval", "success", int(self.cfg.eval.episodes))

    def validator(self):
        """Greedy episodes from ``eval.val_episodes`` starts in ``env.val_kwargs``' scenes:
        training-side apartments the run does not train on (never the held-out ones)."""
        measure, count = str(self.cfg.eval.val_measure), int(self.cfg.eval.val_episodes)
        return self._greedy("val", measure, count)

    def _greedy(self, split: str, measure: str, count: int):
        from pixelrl.rl.text.adapter import Evaluation

        seeds = NAV_SEEDS.seeds(split, count)
        if not seeds:
            return Evaluation(measure, None)
        envs = [make_env(self.cfg, split) for _ in range(max(1, min(8, len(seeds))))]
        return Evaluation(measure, lambda policy: evaluate(policy, self.spec, envs, seeds))

    def examples(self, run, policy) -> list[Example]:
        if not self.cfg.data.dataset and int(self.cfg.data.episodes) < 1:
            raise ConfigError("data.episodes must be >= 1 (or give data.dataset)")
        roots = dataset_roots(self.cfg, run, lambda demos: [record_demonstrations(self.cfg, demos)])
        weight = float(self.cfg.sft.inflection_weight)
        return sft_examples(roots, self.spec, policy.codec, weight)

    def save(self, policy, folder: Path) -> None:
        from pixelrl.embodied.vlm_agent import save_agent

        save_agent(policy, self.spec, folder)

    def play(self, policy, step: int, rng, gcfg) -> tuple[list[Episode], list[int]]:
        """``grpo.num_samples`` sampled episodes from each of ``grpo.starts_per_step`` starts."""
        G, P = gcfg.num_samples, int(self.cfg.grpo.starts_per_step)
        if not self.train_envs:
            self.train_envs = [make_env(self.cfg, "train") for _ in range(G * P)]
        starts = self.replay.draw(rng, P)
        seeds = [s for s in starts for _ in range(G)]
        rewards = {k: float(v) for k, v in self.cfg.grpo.rewards.to_dict().items()}
        episodes = play(policy, self.spec, self.train_envs, seeds, sample=True,
                        temperature=gcfg.temperature, rewards=rewards,
                        reward_kind=str(self.cfg.grpo.reward), decay=float(self.cfg.grpo.decay))  # fmt: skip
        groups = [episodes[i * G : (i + 1) * G] for i in range(len(starts))]
        self.replay.remember(starts, [all(ep.measures["success"] for ep in g) for g in groups])
        return episodes, seeds

    def state_dict(self) -> dict:
        """The replay pool, oldest first: a checkpoint keeps it, so a resumed run replays the
        same starts."""
        return self.replay.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.replay.load_state_dict(state)

    def step_row(self, episodes: list[Episode]) -> dict[str, float]:
        turns = [t for ep in episodes for t in ep.turns]
        return {
            "reward": float(np.mean([ep.ret for ep in episodes])),
            **{m: float(np.mean([ep.measures[m] for ep in episodes])) for m in SCORES},
            "format": float(np.mean([t.completion.parsed for t in turns])), "turns": len(turns),
        }  # fmt: skip

    def close(self) -> None:
        for env in self.train_envs:
            env.close()
        self.train_envs = []


def load_policy(cfg: Config, codec):
    """The VLMPolicy the config names, speaking ``codec``, with the task's tokenizer corpus."""
    from pixelrl.rl.text.policy import load_text_policy

    return load_text_policy(cfg, codec, NavTask(cfg).corpus)


def train(cfg: Config) -> dict[str, Any]:
    return text.train(cfg, NavTask(cfg))


# ``pixelrl train embodied/vlm-...``: config, ``--model``, the run, a summary table.
run_recipe = functools.partial(text.run_recipe, NavTask, config_for)
