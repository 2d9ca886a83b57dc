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
  play is refused before any browser starts. ``policy.bc_data`` keeps the samples in an .npz,
  read back by a later run of the same tasks, count, seed and spec (:func:`oracle_data`).
- ``policy.dagger_episodes`` > 0 adds a DAgger round after cloning (:func:`corrected_data`):
  the cloned policy plays that many training episodes of each task whose oracle replans, the
  oracle labels every page it reaches, and cloning goes on for ``policy.dagger_steps`` steps
  over both sets of samples.
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
    bc_workers(cfg, 1)  # wrong values are errors now, not after the policy is built
    bc_data(cfg)
    episodes, steps, lr = dagger_options(cfg)
    policy = ppo_task.make_policy(cfg, observation_space, action_space, warm_start=False)
    if warm_start and not cfg.train.get("resume"):
        ppo_task.load_init(cfg, policy)
        cloning = int(cfg.policy.get("bc_steps", 0)) > 0
        if cloning or episodes:
            from pixelrl.rl.budget import Budget

            stop = Budget.from_config(cfg.train).clock()  # the run's time limits bound cloning too
            data = oracle_data(cfg, int(cfg.policy.get("bc_samples", 3000)), int(cfg.seed))
        if cloning:
            ppo_task.clone_expert(cfg, policy, data, stop)
        if episodes:  # DAgger: the pages the cloned policy reaches, labelled by the oracle
            corrected = corrected_data(cfg, policy, episodes, int(cfg.seed))
            data = {k: np.concatenate([data[k], corrected[k]]) for k in data}
            ppo_task.clone_expert(cfg, policy, data, stop, steps=steps, lr=lr)
    return policy


def dagger_options(cfg) -> tuple[int, int, float]:
    """``policy.dagger_episodes`` (0: no DAgger round), ``dagger_steps`` and ``dagger_lr``,
    checked (:func:`corrected_data`)."""
    policy = cfg.policy
    episodes, steps = policy.get("dagger_episodes", 0), policy.get("dagger_steps", 1000)
    lr = policy.get("dagger_lr", 1e-3)
    for name, value in (("dagger_episodes", episodes), ("dagger_steps", steps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"policy.{name} must be an integer >= 0, got {value!r}")
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0:
        raise ValueError(f"policy.dagger_lr must be a number > 0, got {lr!r}")
    return episodes, steps, float(lr)


def corrected_data(cfg, policy, episodes: int, seed: int) -> dict[str, np.ndarray]:
    """One DAgger round's samples (:func:`pixelrl.gui_agent.pointer_bc.corrected_samples`): the
    cloned ``policy`` plays ``episodes`` training episodes of each task of ``env.tasks`` whose
    oracle labels any page (it replans; the others' plans hold only on the oracle's own
    pages), greedily, as it is evaluated; each page it reaches gets the oracle's action. The
    tasks run in ``policy.bc_workers`` processes, as :func:`oracle_samples`'."""
    from pixelrl.envs.web.oracle import REPLANNED

    _, tasks = family_tasks(cfg, "policy.bc_steps=0")
    jobs = [(task, episodes, seed + 1000 * i + 500) for i, task in enumerate(tasks)
            if task in REPLANNED]  # fmt: skip
    if not jobs:
        raise ValueError(
            "policy.dagger_episodes: no task of env.tasks has an oracle that labels the pages a "
            f"policy reaches (those it replans: {', '.join(sorted(REPLANNED)[:4])}, ...)"
        )
    state = {k: v.detach().clone() for k, v in policy.state_dict().items()}
    parts = in_workers(cfg, _task_corrections, [(*job, state) for job in jobs], "DAgger tasks")
    parts = [p for p in parts if p is not None]
    if not parts:  # every episode ended before the oracle could label a page
        raise ValueError("policy.dagger_episodes: the oracle labelled no page the policy reached")
    if cfg.train.progress:
        print(f"DAgger: {sum(len(p['action']) for p in parts)} pages labelled on "
              f"{len(jobs)} tasks ({episodes} episodes a task)", flush=True)  # fmt: skip
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _task_corrections(cfg, task: str, episodes: int, seed: int, state: dict, progress: bool):
    """One task's share of :func:`corrected_data` (in a worker process when there are several)."""
    import torch

    from pixelrl.gui_agent.pointer_bc import corrected_samples

    env = _train_env(cfg, task, record=False)
    try:
        policy = ppo_task.make_policy(cfg, env.observation_space, env.action_space, False)
        policy.load_state_dict(state)
        policy.eval()

        def act(obs, history):
            with torch.no_grad():
                batch = {k: torch.as_tensor(obs[k][None]) for k in policy.spec.observation_keys}
                memory = policy.history_state(torch.as_tensor(history[None]))
                return policy.act(batch, memory, deterministic=True).actions[0].numpy()

        margin = float(cfg.policy.get("bc_click_margin", 0.0))
        return corrected_samples(env, act, episodes, seed, margin)
    finally:
        env.close()


def oracle_data(cfg, count: int, seed: int) -> dict[str, np.ndarray]:
    """:func:`oracle_samples`, kept in ``policy.bc_data`` (an .npz) when that is set: read from
    it when it exists and was recorded for the same tasks, count, seed and spec (anything else
    is a one-line error), else recorded and written there. Cloning again with other settings
    then skips the recording (most of the warm start's time: 64 tasks, ~50 CPU min)."""
    from pathlib import Path

    from pixelrl.gui_agent.pointer_bc import load_samples, save_samples

    path = bc_data(cfg)
    spec = pointer_spec(cfg)
    about = {"tasks": tasks_of(cfg, need_oracle=True), "count": count, "seed": seed,
             "spec": spec.to_dict(), "kwargs": ppo_task.env_kwargs(cfg, "train"),
             "click_margin": float(cfg.policy.get("bc_click_margin", 0.0))}  # fmt: skip
    if path and Path(path).exists():
        if cfg.train.progress:
            print(f"oracle samples: read from {path}", flush=True)
        return load_samples(path, spec, about)
    data = oracle_samples(cfg, count, seed)
    if path:
        save_samples(path, data, about)
    return data


def bc_data(cfg) -> str | None:
    """``policy.bc_data``, checked: ``None`` or a path ending in .npz (:func:`oracle_data`)."""
    path = cfg.policy.get("bc_data")
    if path is not None and (not isinstance(path, str) or not path.endswith(".npz")):
        raise ValueError(f"policy.bc_data must be a path ending in .npz, got {path!r}")
    return path


def oracle_samples(cfg, count: int, seed: int) -> dict[str, np.ndarray]:
    """``count`` oracle steps on training seeds, split evenly over ``env.tasks`` (in the format
    of :func:`pixelrl.gui_agent.pointer_bc.expert_samples`), each task's episodes recorded to
    ``policy.bc_demos/<task>`` when that is set.

    ``policy.bc_workers`` processes record tasks side by side (0, the default: one a core, at
    most 8 and one a task; each holds a browser, ~0.4 GB): a task's browser waits on its page
    most of the time, so one process keeps about one core busy. Task ``i``'s samples depend on ``seed + 1000 i`` alone, so the data is
    the same for any number of workers."""
    _, tasks = family_tasks(cfg, "policy.bc_steps=0")
    jobs = [
        (task, count // len(tasks) + (i < count % len(tasks)), seed + 1000 * i)
        for i, task in enumerate(tasks)
    ]
    parts = in_workers(cfg, _task_samples, jobs, "oracle tasks")
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def in_workers(cfg, fn: Callable, jobs: list[tuple], desc: str) -> list:
    """``fn(cfg, *job, progress)`` for each job, in ``policy.bc_workers`` processes (one
    browser each) or here when that is 1, results in the jobs' order."""
    from tqdm import tqdm

    progress = bool(cfg.train.progress)
    workers = bc_workers(cfg, len(jobs))
    if workers == 1:
        return [fn(cfg, *job, progress) for job in jobs]
    # one bar over the tasks: the workers' own bars would write over each other
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_one_thread)  # fmt: skip
    try:
        futures = [pool.submit(fn, cfg, *job, False) for job in jobs]
        return [f.result() for f in tqdm(futures, desc, disable=not progress)]
    finally:  # after an error the running tasks finish and close their browsers
        pool.shutdown(wait=True, cancel_futures=True)


def _one_thread() -> None:
    """A worker's torch threads: one (the workers share the cores; a policy acting in each)."""
    import torch

    torch.set_num_threads(1)


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
    from pixelrl.gui_agent.pointer_bc import expert_samples

    env = _train_env(cfg, task, record=True)
    try:
        margin = float(cfg.policy.get("bc_click_margin", 0.0))
        return expert_samples(env, count, seed, progress, margin)
    finally:
        env.close()


def _train_env(cfg, task: str, record: bool) -> PointerEnv:
    """``task``'s env on training seeds, its episodes recorded to ``policy.bc_demos/<task>``
    when ``record`` and that is set."""
    from pathlib import Path

    family = family_tasks(cfg, "policy.bc_steps=0")[0]
    inner = gym.make(family.env_id(task), **ppo_task.env_kwargs(cfg, "train"))
    demos = cfg.policy.get("bc_demos")
    if record and demos:
        from pixelrl.envs.recording import RecordEpisodes

        inner = RecordEpisodes(inner, Path(str(demos)) / task, info_keys=["fields", "success"])
    return PointerEnv(SplitSeeds(inner, "train"), pointer_spec(cfg))
