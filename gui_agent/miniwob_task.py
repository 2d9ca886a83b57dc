"""The ``gui/miniwob`` recipe's task module: one pixel pointer policy on several MiniWoB++ tasks.

The same policy, spec and PPO as ``gui/ppo`` (:mod:`pixelrl.gui_agent.ppo_task`); what differs:

- ``env.tasks`` lists the MiniWoB++ tasks (``click-button``, ``login-user``...); vector slot
  ``i`` runs ``pixelrl/MiniWoB-<tasks[i mod n]>-v0`` in its own headless Chromium, so a rollout
  mixes every task and the instruction says which one an episode is. Each slot draws training
  (even) or held-out (odd) episode seeds (:class:`~pixelrl.gui_agent.pointer_env.SplitSeeds`).
- what ``type`` writes is the episode's task fields (``policy.texts: ["{field:0}", ...]``, see
  :mod:`pixelrl.gui_agent.pointer_env`): names and passwords are drawn fresh every episode.
- the warm start clones the MiniWoB++ oracle (:mod:`pixelrl.envs.web.oracle`):
  ``policy.bc_samples`` expert steps split evenly over the tasks, on training seeds, each
  task's episodes written through the demonstration recorder to ``policy.bc_demos/<task>``
  (a dataset ``pixelrl view`` / ``pixelrl replay`` read) when that is set. A task the oracle
  cannot play is refused before any browser starts.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np

from pixelrl.config import ConfigError
from pixelrl.gui_agent import ppo_task
from pixelrl.gui_agent.pointer_env import PointerEnv, PointerSpec, SplitSeeds

USES_ENV_TASKS = True  # the trainer refuses env.tasks for recipes without this flag

# ppo_task's spec reads the env's vocabulary when ``texts`` is unset; here texts are task fields
pointer_spec = ppo_task.pointer_spec


def env_id(task: str) -> str:
    return f"pixelrl/MiniWoB-{task}-v0"


def tasks_of(cfg, need_oracle: bool = False) -> list[str]:
    """``env.tasks``, checked: each a registered MiniWoB++ task (and one the oracle plays, when
    ``need_oracle``); :class:`ConfigError` names the first that is not."""
    import pixelrl.envs  # noqa: F401  (registers the ids)
    from pixelrl.envs.registry import unknown_env_message
    from pixelrl.envs.web.oracle import SUPPORTED_TASKS

    tasks = [str(t) for t in (cfg.env.get("tasks") or [])]
    if not tasks:
        raise ConfigError("env.tasks: list the MiniWoB++ tasks to train on, e.g. [click-button]")
    for task in tasks:
        problem = unknown_env_message(env_id(task))
        if problem:
            raise ConfigError(f"env.tasks: {task!r}: {problem}")
        if need_oracle and task not in SUPPORTED_TASKS:
            raise ConfigError(
                f"env.tasks: the MiniWoB++ oracle cannot play {task!r}, so it has no "
                f"demonstrations to clone (it plays {', '.join(SUPPORTED_TASKS)}); "
                "drop it or set policy.bc_steps=0"
            )
    return tasks


def make_env(task: str, spec: PointerSpec, split: str = "train", **kwargs: Any) -> PointerEnv:
    """One wrapped MiniWoB++ env (what each vector slot holds)."""
    return ppo_task.make_env(env_id(task), spec, split, **kwargs)


def make_env_fns(cfg, num_envs: int, split: str) -> list[Callable[[], PointerEnv]]:
    """Picklable factories, slot ``i`` on task ``i mod len(env.tasks)``."""
    tasks = tasks_of(cfg, need_oracle=False)
    spec, kwargs = pointer_spec(cfg), ppo_task.env_kwargs(cfg, split)
    return [
        partial(make_env, tasks[i % len(tasks)], spec, split, **kwargs) for i in range(num_envs)
    ]


def make_envs(cfg, num_envs: int, seed: int, split: str) -> gym.vector.VectorEnv:
    return gym.vector.SyncVectorEnv(
        make_env_fns(cfg, num_envs, split), autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )


def make_policy(
    cfg, observation_space: gym.spaces.Dict, action_space: gym.Space, warm_start: bool = True
):
    """The pointer policy (:func:`pixelrl.gui_agent.ppo_task.make_policy`), its warm start
    cloning the oracle on every task of ``env.tasks``."""
    policy = ppo_task.make_policy(cfg, observation_space, action_space, warm_start=False)
    if warm_start and not cfg.train.get("resume"):
        ppo_task.load_init(cfg, policy)
        steps = int(cfg.policy.get("bc_steps", 0))
        if steps > 0:
            from pixelrl.gui_agent.pointer_bc import behaviour_clone
            from pixelrl.rl.budget import Budget

            stop = Budget.from_config(cfg.train).clock()  # the run's time limits bound cloning too
            data = oracle_samples(cfg, int(cfg.policy.get("bc_samples", 3000)), int(cfg.seed))
            behaviour_clone(
                policy, data, steps, seed=int(cfg.seed), progress=bool(cfg.train.progress),
                stop=stop, **ppo_task.bc_options(cfg),
            )  # fmt: skip
            ppo_task.zero_value_head(policy)
    return policy


def oracle_samples(cfg, count: int, seed: int) -> dict[str, np.ndarray]:
    """``count`` oracle steps on training seeds, split evenly over ``env.tasks`` (in the format
    of :func:`pixelrl.gui_agent.pointer_bc.expert_samples`), each task's episodes recorded to
    ``policy.bc_demos/<task>`` when that is set."""
    from pathlib import Path

    from pixelrl.gui_agent.pointer_bc import expert_samples

    tasks = tasks_of(cfg, need_oracle=True)
    spec, kwargs = pointer_spec(cfg), ppo_task.env_kwargs(cfg, "train")
    demos = cfg.policy.get("bc_demos")
    parts = []
    for i, task in enumerate(tasks):
        inner = gym.make(env_id(task), **kwargs)
        if demos:
            from pixelrl.envs.recording import RecordEpisodes

            inner = RecordEpisodes(inner, Path(str(demos)) / task, info_keys=["fields", "success"])
        env = PointerEnv(SplitSeeds(inner, "train"), spec)
        try:
            share = count // len(tasks) + (i < count % len(tasks))
            parts.append(
                expert_samples(
                    env,
                    share,
                    seed + 1000 * i,
                    bool(cfg.train.progress),
                    float(cfg.policy.get("bc_click_margin", 0.0)),
                )  # fmt: skip
            )
        finally:
            env.close()
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
