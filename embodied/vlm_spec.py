"""A navigation VLM run's set-up (:mod:`pixelrl.embodied.vlm_train`'s recipes): each split's env
options and scenes, the checks that keep them apart, the agent spec, its codec and the goal
sentences of a tiny model's tokenizer.

Splits: ``train`` (``env.kwargs``), ``eval`` (held-out: ``env.eval_kwargs`` on top) and ``val``
(``env.val_kwargs`` on top: training-side scenes the run does not train on).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pixelrl.config import Config, ConfigError
from pixelrl.embodied.vlm_agent import TASKS, AgentSpec, NavPrompt, goal_text, where_text


def check_prompt_sensors(cfg: Config) -> None:
    """:class:`ConfigError` when the prompt draws a frame that no split's env renders
    (``prompt.depth: true`` without ``depth`` in the sensors: a KeyError at the first turn)."""
    from pixelrl.envs.nav.config import NavConfig

    if cfg.prompt.depth is not True:
        return  # not a bool: the agent spec names the key (AgentSpec.validate)
    for split in ("train", "eval", "val"):
        sensors = env_kwargs(cfg, split).get("sensors", NavConfig.sensors)
        if "depth" not in sensors:
            where = "env.kwargs" if split == "train" else f"env.{split}_kwargs"
            raise ConfigError(
                f"prompt.depth: true draws the depth frame, but {where} renders sensors "
                f"{list(sensors)}; add it: env.kwargs.sensors=[rgb,depth]"
            )


def scene_set(cfg: Config, split: str) -> set:
    """The scenes ``split``'s episodes are drawn from: mesh paths, or procedural apartment
    seeds (``scene_seed`` .. ``scene_seed + num_scenes - 1``)."""
    from pixelrl.envs.nav.config import NavConfig

    kwargs = env_kwargs(cfg, split)
    if kwargs.get("scenes"):
        return {str(s) for s in kwargs["scenes"]}
    seed = int(kwargs.get("scene_seed", NavConfig.scene_seed))
    return set(range(seed, seed + int(kwargs.get("num_scenes", NavConfig.num_scenes))))


def check_validation_scenes(cfg: Config) -> None:
    """:class:`ConfigError` unless the validation scenes (``env.val_kwargs``) share none with
    the held-out test scenes (``env.eval_kwargs``) nor with the training ones: a kept model
    chosen on test scenes would make the held-out figure a selected one."""
    val = scene_set(cfg, "val")
    for split, what in (
        ("eval", "held-out test (env.eval_kwargs)"),
        ("train", "training (env.kwargs)"),
    ):
        shared = val & scene_set(cfg, split)
        if shared:
            raise ConfigError(
                f"env.val_kwargs: validation scenes overlap the {what} scenes "
                f"({len(shared)} shared, e.g. {sorted(shared, key=str)[0]}); give val_kwargs "
                "another scene_seed or scenes"
            )


def env_kwargs(cfg: Config, split: str) -> dict[str, Any]:
    """The env options of ``split`` (checked against NavConfig; eval adds ``eval_kwargs``, val
    ``val_kwargs``)."""
    from pixelrl.embodied.task import env_kwargs as nav_kwargs

    return nav_kwargs(cfg, split)


def task_of(cfg: Config) -> str:
    if cfg.env.id not in TASKS:
        raise ConfigError(f"env.id: {cfg.env.id!r} is not a navigation task ({', '.join(TASKS)})")
    return TASKS[cfg.env.id]


def make_env(cfg: Config, split: str):
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401  (registers the ids)

    return gym.make(cfg.env.id, **env_kwargs(cfg, split))


def agent_spec(cfg: Config) -> AgentSpec:
    try:
        prompt = NavPrompt(**cfg.prompt.to_dict())
        return AgentSpec(
            task=task_of(cfg), prompt=prompt, env_kwargs=env_kwargs(cfg, "train"),
            action_format=str(cfg.action_format),
            **{k: int(v) for k, v in cfg.agent.to_dict().items()},
        )  # fmt: skip
    except TypeError as e:
        raise ConfigError(f"agent / prompt: {e}") from None


def codec_for(spec: AgentSpec, env) -> Any:
    nav = env.unwrapped.cfg
    return spec.codec(nav.forward_step, nav.turn_degrees)


def goal_corpus(task: str, seed: int = 0, n: int = 400, gps_compass: bool = False) -> list[str]:
    """Goal sentences for a tiny tokenizer (so ``degrees`` and category names are one token);
    with ``gps_compass`` the sentences saying where the agent stands too (:func:`where_text`)."""
    from pixelrl.envs.nav.scene import OBJECTNAV_CATEGORIES

    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(n):
        obs = {
            "pointgoal_with_gps_compass": [rng.uniform(0, 10), rng.uniform(-np.pi, np.pi)],
            "objectgoal": [rng.integers(len(OBJECTNAV_CATEGORIES))],
        }
        texts += [goal_text(obs, "pointnav"), goal_text(obs, "objectnav")]
    if gps_compass:  # drawn after the goals: the corpus without it is the same as before
        for _ in range(n):
            obs = {"gps": rng.uniform(-6, 6, 2), "compass": [rng.uniform(-np.pi, np.pi)]}
            texts.append(where_text(obs))
    return texts


def check_model(cfg: Config) -> None:
    """:class:`ConfigError` for a ``model`` / ``init`` that cannot load, before any work."""
    from pixelrl.vision.vlm import model_source_problem

    key = "init" if cfg.init else "model"
    problem = model_source_problem(str(cfg.init or cfg.model))
    if problem:
        raise ConfigError(f"{key}: {problem}")


# What a saved agent's answers and prompts mean: GRPO from an ``init`` that learned other values
# would train a model on prompts or an action language it never saw, and nothing would say so
# (the answers of a tool-call model do not parse as text: every turn pays the format penalty).
INIT_AGENT_KEYS = ("task", "action_format", "max_repeat", "max_steps", "max_new_tokens")


def check_init_agent(cfg: Config, spec: AgentSpec) -> None:
    """:class:`ConfigError` naming each prompt / agent key where this run differs from what
    ``init``'s agent was trained with (its ``pixelrl_nav_agent.json``); an ``init`` without that
    file (a bare model folder or a hub name) is not checked."""
    from pathlib import Path

    from pixelrl.embodied.vlm_agent import AGENT_FILE, AgentFileError, read_spec

    if not cfg.init or not (Path(str(cfg.init)) / AGENT_FILE).is_file():
        return
    try:
        trained = read_spec(str(cfg.init))
    except AgentFileError as e:
        raise ConfigError(f"init: {e}") from None
    where = {"task": "env.id", "action_format": "action_format"}
    differs = [
        f"{where.get(key, 'agent.' + key)}: {getattr(trained, key)!r} there, "
        f"{getattr(spec, key)!r} here"
        for key in INIT_AGENT_KEYS
        if getattr(trained, key) != getattr(spec, key)
    ] + [
        f"prompt.{key}: {getattr(trained.prompt, key)!r} there, {getattr(spec.prompt, key)!r} here"
        for key in NavPrompt.__dataclass_fields__
        if getattr(trained.prompt, key) != getattr(spec.prompt, key)
    ]
    if differs:
        raise ConfigError(
            f"init {cfg.init} was trained with other settings ({'; '.join(differs)}): "
            f"set them as its {AGENT_FILE} says"
        )
