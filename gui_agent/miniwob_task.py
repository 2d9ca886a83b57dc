"""The ``gui/miniwob`` recipe's task module: one pixel pointer policy on several tasks of a GUI
task family (MiniWoB++'s in the shipped configs).

The same policy, spec and PPO as ``gui/ppo`` (:mod:`pixelrl.gui_agent.ppo_task`); what differs:

- ``env.family`` names the family and ``env.tasks`` its tasks (``miniwob``: ``click-button``,
  ``login-user``...); vector slot ``i`` runs the family's env of ``tasks[i mod n]``
  (``pixelrl/MiniWoB-<task>-v0``, each in its own headless Chromium), so a rollout mixes every
  task and the instruction says which one an episode is. Each slot draws training (even) or
  held-out (odd) episode seeds of the family's split
  (:class:`~pixelrl.gui_agent.pointer_env.SplitSeeds`).
- what ``type`` writes is the episode's task fields (``policy.texts: ["{field:0}", ...]``, see
  :mod:`pixelrl.gui_agent.pointer_env`): names and passwords are drawn fresh every episode.
- the warm start clones the family's expert (MiniWoB++'s oracle, :mod:`pixelrl.envs.web.oracle`):
  ``policy.bc_samples`` expert steps split evenly over the tasks, on training seeds, each
  task's episodes written through the demonstration recorder to ``policy.bc_demos/<task>``
  (a dataset ``pixelrl view`` / ``pixelrl replay`` read) when that is set, several tasks at
  once in ``policy.bc_workers`` processes (:func:`oracle_samples`). A task the expert cannot
  play is refused before any browser starts.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import gymnasium as gym
import numpy as np

from pixelrl.env_family import family_tasks
from pixelrl.gui_agent import ppo_task
from pixelrl.gui_agent.pointer_env import PointerEnv, SplitSeeds

PLAYS_FAMILY = True  # the trainer refuses env.family / env.tasks for recipes without this flag
DEFAULT_WORKERS = 8  # policy.bc_workers=0: browsers recording demonstrations at once, at most

# ppo_task's spec reads the env's vocabulary when ``texts`` is unset; here texts are task fields
pointer_spec = ppo_task.pointer_spec


def tasks_of(cfg, need_oracle: bool = False) -> list[str]:
    """``env.tasks``, checked against ``env.family`` (and the family's expert, when
    ``need_oracle``): :func:`pixelrl.env_family.family_tasks`."""
    return family_tasks(cfg, "policy.bc_steps=0" if need_oracle else "")[1]


def make_env_fns(cfg, num_envs: int, split: str) -> list[Callable[[], PointerEnv]]:
    """Picklable factories, slot ``i`` on task ``i mod len(env.tasks)``."""
    family, tasks = family_tasks(cfg)
    ids = [family.env_id(task) for task in tasks]
    spec, kwargs = pointer_spec(cfg), ppo_task.env_kwargs(cfg, split)
    return [
        partial(ppo_task.make_env, ids[i % len(ids)], spec, split, **kwargs)
        for i in range(num_envs)
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
    bc_workers(cfg, 1)  # a wrong value is an error now, not after the policy is built
    policy = ppo_task.make_policy(cfg, observation_space, action_space, warm_start=False)
    if warm_start and not cfg.train.get("resume"):
        ppo_task.load_init(cfg, policy)
        if int(cfg.policy.get("bc_steps", 0)) > 0:
            from pixelrl.rl.budget import Budget

            stop = Budget.from_config(cfg.train).clock()  # the run's time limits bound cloning too
            data = oracle_samples(cfg, int(cfg.policy.get("bc_samples", 3000)), int(cfg.seed))
            ppo_task.clone_expert(cfg, policy, data, stop)
    return policy


def oracle_samples(cfg, count: int, seed: int) -> dict[str, np.ndarray]:
    """``count`` oracle steps on training seeds, split evenly over ``env.tasks`` (in the format
    of :func:`pixelrl.gui_agent.pointer_bc.expert_samples`), each task's episodes recorded to
    ``policy.bc_demos/<task>`` when that is set.

    ``policy.bc_workers`` processes record tasks side by side (0, the default: one a core, at
    most 8 and one a task; each holds a browser, ~0.4 GB): a task's browser waits on its page
    most of the time, so one process keeps about one core busy. Task ``i``'s samples depend on ``seed + 1000 i`` alone, so the data is
    the same for any number of workers."""
    from tqdm import tqdm

    _, tasks = family_tasks(cfg, "policy.bc_steps=0")
    progress = bool(cfg.train.progress)
    jobs = [
        (task, count // len(tasks) + (i < count % len(tasks)), seed + 1000 * i)
        for i, task in enumerate(tasks)
    ]
    workers = bc_workers(cfg, len(tasks))
    if workers == 1:
        parts = [_task_samples(cfg, *job, progress) for job in jobs]
    else:  # one bar over the tasks: the workers' own bars would write over each other
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        try:
            futures = [pool.submit(_task_samples, cfg, *job, False) for job in jobs]
            parts = [f.result() for f in tqdm(futures, "oracle tasks", disable=not progress)]
        finally:  # after an error the running tasks finish and close their browsers
            pool.shutdown(wait=True, cancel_futures=True)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def bc_workers(cfg, tasks: int) -> int:
    """``policy.bc_workers`` checked; 0 is one a core up to :data:`DEFAULT_WORKERS`, and never
    more than ``tasks``."""
    import os

    value = cfg.policy.get("bc_workers", 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"policy.bc_workers must be an integer >= 0, got {value!r}")
    return max(1, min(value or min(os.cpu_count() or 1, DEFAULT_WORKERS), tasks))


def _task_samples(cfg, task: str, count: int, seed: int, progress: bool) -> dict[str, np.ndarray]:
    """One task's share of :func:`oracle_samples` (run in a worker process when there are several)."""
    from pathlib import Path

    from pixelrl.gui_agent.pointer_bc import expert_samples

    family = family_tasks(cfg, "policy.bc_steps=0")[0]
    inner = gym.make(family.env_id(task), **ppo_task.env_kwargs(cfg, "train"))
    demos = cfg.policy.get("bc_demos")
    if demos:
        from pixelrl.envs.recording import RecordEpisodes

        inner = RecordEpisodes(inner, Path(str(demos)) / task, info_keys=["fields", "success"])
    env = PointerEnv(SplitSeeds(inner, "train"), pointer_spec(cfg))
    try:
        margin = float(cfg.policy.get("bc_click_margin", 0.0))
        return expert_samples(env, count, seed, progress, margin)
    finally:
        env.close()
