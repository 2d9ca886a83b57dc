"""Where a PPO recipe's envs run: in this process, in Ray actors, or in the async env worker.

- :func:`make_vector_envs` -- the recipe's vector env for a split, where ``envs.backend`` says.
- :func:`ray_options` -- ``RayVectorEnv``'s settings from a config's ``envs`` section (the PPO
  trainer's and the text recipes' alike).
- :func:`join_one_ray_cluster` -- under ``torchrun``, every rank's env workers in one cluster.
- :func:`local_env_workers` -- how many env worker processes a run starts on this machine.
- :class:`TrainEnvsSpec` -- what the async env worker (:mod:`pixelrl.rl.async_collect`) builds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pixelrl.config import Config, ConfigError
from pixelrl.envs.remote import RayVectorEnv, ensure_ray  # ray itself loads when first used
from pixelrl.rl.allocator import keep_freed_memory


def make_vector_envs(task: Any, cfg: Config, num_envs: int, seed: int, split: str) -> Any:
    """The recipe's vector env for ``split``, where ``envs.backend`` says (see
    :data:`pixelrl.train.DEFAULTS`).

    ``ray`` needs the task module's ``make_env_fn(cfg, split)``: a picklable factory of one
    env, what each actor calls ``per_worker`` times; or ``make_env_fns(cfg, n, split)``: one
    factory per env (envs that differ, as gui/miniwob's tasks).
    """
    opts = cfg.envs
    if opts.backend == "sync":
        return task.make_envs(cfg, num_envs, seed, split)
    make_env_fn = getattr(task, "make_env_fn", None)
    make_env_fns = getattr(task, "make_env_fns", None)
    if make_env_fn is None and make_env_fns is None:
        raise ConfigError(
            f"envs.backend=ray: recipe {cfg.recipe!r} cannot run its envs in Ray actors "
            "(its task module defines no make_env_fn); use envs.backend=sync"
        )
    per_worker = int(opts.per_worker)
    workers = int(opts.num_workers) if split == "train" else 0
    workers = workers or -(-num_envs // per_worker)
    if make_env_fns is not None:
        env = make_env_fns(cfg, workers * per_worker, split)
    else:
        env = make_env_fn(cfg, split)
    return RayVectorEnv(
        env,
        workers,
        per_worker,
        min_envs=workers * per_worker,  # the rollout storage cannot shrink
        **ray_options(opts),
    )


def local_env_workers(cfg: Config, num_envs: int) -> int:
    """The Ray env actors a run with ``num_envs`` training envs starts on this machine (a local
    cluster: no ``envs.address``, no ``RAY_ADDRESS``), as :func:`make_vector_envs` counts them;
    0 for envs in this process or on a cluster elsewhere. The thread policy leaves them their
    cores (:mod:`pixelrl.threads`)."""
    opts = cfg.get("envs") or {}
    if opts.get("backend") != "ray" or opts.get("address") or os.environ.get("RAY_ADDRESS"):
        return 0
    return int(opts.get("num_workers") or 0) or -(-num_envs // int(opts.get("per_worker") or 1))


def ray_options(opts: Any) -> dict[str, Any]:
    """``RayVectorEnv``'s fault, placement and cluster settings from a config's ``envs``
    section (:data:`pixelrl.train.DEFAULTS`; the VLM recipes' has the same keys)."""
    resources = opts.resources_per_worker
    resources = resources.to_dict() if hasattr(resources, "to_dict") else dict(resources or {})
    return {
        "step_timeout": float(opts.step_timeout),
        "max_failures": int(opts.max_failures),
        "resources_per_worker": resources or None,
        "address": str(opts.address) or None,
        "num_cpus": int(opts.num_cpus) or None,
    }


def join_one_ray_cluster(cfg: Config) -> None:
    """DD-PPO with ``envs.backend=ray``: every rank's env workers in one Ray cluster. Given an
    address (``envs.address`` / ``RAY_ADDRESS``), each rank joins it; otherwise rank 0 starts a
    local cluster and tells the other ranks where it is (without this each rank would start a
    cluster of its own, each counting every CPU of the machine as its own)."""
    import torch.distributed as dist

    if str(cfg.envs.address) or os.environ.get("RAY_ADDRESS"):
        return  # each rank's RayVectorEnv joins it
    where = [None]
    if dist.get_rank() == 0:
        import ray

        ensure_ray(None, int(cfg.envs.num_cpus) or None)
        # a new local cluster may turn on Ray's token authentication (RAY_AUTH_MODE=token, the
        # token in ~/.ray/auth_token): the other ranks must connect in the same mode
        where = [(ray.get_runtime_context().gcs_address, os.environ.get("RAY_AUTH_MODE"))]
    dist.broadcast_object_list(where, src=0)
    if dist.get_rank() != 0:
        address, auth_mode = where[0]
        if auth_mode and "RAY_AUTH_MODE" not in os.environ:
            os.environ["RAY_AUTH_MODE"] = auth_mode
            from ray._raylet import Config  # Ray reads the mode once: read it again

            Config.initialize("")
        ensure_ray(address)


@dataclass
class TrainEnvsSpec:
    """The training envs, policy and teacher of a recipe, built where ``train.async`` puts them:
    in the env worker process (:mod:`pixelrl.rl.async_collect`; picklable for ``spawn``)."""

    recipe: Any  # pixelrl.recipes.Recipe (not its name: tests register recipes at run time)
    config: dict[str, Any]
    seed: int

    def _task(self) -> tuple[Any, Config]:
        return self.recipe.load_task(), Config(self.config)

    def make_envs(self) -> Any:
        keep_freed_memory()  # the worker is a fresh process: the learner's malloc setting
        task, cfg = self._task()
        return make_vector_envs(task, cfg, int(cfg.env.num_envs), self.seed, "train")

    def make_policy(self, observation_space: Any, action_space: Any) -> Any:
        """The worker's copy: the learner's weights replace it at once, so a recipe's warm start
        (the GUI recipes' behaviour cloning, and the demonstrations it records) is skipped."""
        import inspect

        task, cfg = self._task()
        kwargs = {}
        if "warm_start" in inspect.signature(task.make_policy).parameters:
            kwargs["warm_start"] = False
        return task.make_policy(cfg, observation_space, action_space, **kwargs)

    def make_teacher(self, envs: Any) -> Any:
        task, cfg = self._task()
        return task.make_teacher(cfg, envs)
