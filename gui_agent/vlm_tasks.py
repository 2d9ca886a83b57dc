"""The tasks a GUI text-policy recipe (:mod:`pixelrl.gui_agent.train_vlm`) plays and is judged on:
each task's env id and options (``env.family``'s ``env.tasks`` or the desktop's ``env.families``),
its seeds of each split (``env.max_fields`` allowing), its training screens, and task success on
held-out seeds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pixelrl.config import Config, ConfigError
from pixelrl.env_family import family_tasks, names_family
from pixelrl.envs import task_family
from pixelrl.rl.text.heldout import evaluating, success_row


def screen_size(cfg: Config) -> tuple[int, int]:
    return tuple(int(v) for v in cfg.env.screen_size)


def env_kwargs(cfg: Config) -> dict[str, Any]:
    if names_family(cfg):  # a family's tasks: their own options; the screen is the task's
        kwargs = cfg.env.kwargs.to_dict() if hasattr(cfg.env.kwargs, "to_dict") else {}
    else:
        kwargs = {"screen_size": screen_size(cfg), "reward": cfg.env.reward}
    if int(cfg.env.max_steps):
        kwargs["max_steps"] = int(cfg.env.max_steps)
    return kwargs


def task_envs(cfg: Config) -> list[tuple[str, str]]:
    """(name, env id) of each task the recipe plays: ``env.family``'s ``env.tasks`` (checked
    against the registry) or the desktop's ``env.families``."""
    if names_family(cfg):
        family, tasks = family_tasks(cfg)
        return [(task, family.env_id(task)) for task in tasks]
    desktop = task_family("desktop")
    return [(name, desktop.env_id(name)) for name in cfg.env.families]


def play_ids(cfg: Config) -> list[str]:
    """The env ids episodes are played on: each of ``env.tasks``, else ``env.id``."""
    return [eid for _, eid in task_envs(cfg)] if names_family(cfg) else [str(cfg.env.id)]


def task_seeds(
    cfg: Config, env_id: str, split: str, count: int, rng=None, start: int = 0
) -> list[int]:
    """``count`` seeds of ``split`` of ``env_id``'s family (GUI: even train, odd eval): random
    ones from ``rng`` (counting up from ``start``, a seed of the family's training split, without
    it), keeping only layouts that ``env.max_fields`` allows — an easier fill-form (fewer
    fields) with the same train/eval split of seeds."""
    import gymnasium as gym

    from pixelrl.envs.families import seeds_of

    split_seeds = seeds_of(env_id)
    limit = int(cfg.env.max_fields)
    probe = gym.make(env_id, **env_kwargs(cfg)) if limit else None
    seeds: list[int] = []
    k = 0
    while len(seeds) < count:
        if probe is not None and k >= 200 * count and not seeds:  # no layout is that small
            probe.close()
            raise ConfigError(
                f"env.max_fields={limit}: no {env_id} layout in {k} seeds has so few fields"
            )
        seed = split_seeds.draw(split, rng) if rng is not None else split_seeds.seed(split, k)
        seed += start
        k += 1
        if probe is not None:
            fields = probe.reset(seed=seed)[1]["task"].get("fields", {})
            if len(fields) > limit:
                continue
        seeds.append(seed)
    if probe is not None:
        probe.close()
    return seeds


def training_screens(cfg: Config, per_family: int):
    """``(family, obs, info)`` of the first screen of ``per_family`` training seeds of each of
    ``env.families`` — the seeds :func:`record_expert_episodes` starts from, continued."""
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401

    for fi, (family, eid) in enumerate(task_envs(cfg)):
        env = gym.make(eid, **env_kwargs(cfg))
        for seed in task_seeds(cfg, eid, "train", per_family, start=20_000 * fi):
            obs, info = env.reset(seed=seed)
            yield family, obs, info
        env.close()


def success_eval(policy, cfg: Config) -> dict[str, float]:
    from pixelrl.gui_agent.agents import VLMAgent
    from pixelrl.gui_agent.evaluate import evaluate_success

    out, successes, returns = {}, [], []
    with evaluating(policy):
        agent = VLMAgent(policy, int(cfg.grpo.max_new_tokens))
        for name, eid in task_envs(cfg) if names_family(cfg) else [("", str(cfg.env.id))]:
            seeds = None
            if int(cfg.env.max_fields):
                rng = np.random.default_rng(int(cfg.seed))
                seeds = task_seeds(cfg, eid, "eval", int(cfg.eval.episodes), rng)
            overall = evaluate_success(
                agent, eid, int(cfg.eval.episodes), int(cfg.seed), env_kwargs(cfg),
                progress=False, seeds=seeds,
            )[-1]  # fmt: skip
            if name:  # several tasks: each one's rate, then all episodes pooled
                out[name] = overall["success"]
            successes += [overall["success"]] * int(overall["n"])
            returns += [overall["return"]] * int(overall["n"])
    return {**success_row(successes), "return": float(np.mean(returns)), "n": len(successes),
            **out}  # fmt: skip
