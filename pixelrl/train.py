"""The PPO / DD-PPO trainer behind ``pixelrl train RECIPE [key=value ...]``.

One loop, the same on one CPU and under ``torchrun`` on many GPUs::

    envs, policy  <- the recipe's task module (pixelrl.recipes)
    for update in range(total_updates):
        lr decays linearly
        rollout = collector.collect()          # T steps x N envs (DD-PPO: stragglers stop early)
        ppo.compute_advantages(storage, ...)   # GAE
        ppo.update(storage)                    # gradients averaged over ranks
        policy.update_normalization(...)       # input statistics, identical on every rank
        log (progress bar, TensorBoard), evaluate on held-out scenes, checkpoint

A run folder (``train.output_dir``) gets ``config.yaml``, ``tb/`` (TensorBoard), ``checkpoints/``
(``update_N.pt`` and ``latest.pt``), ``history.csv``, ``eval.csv`` and ``learning_curve.png``.
Resume with ``train.resume=RUN_DIR_OR_CHECKPOINT``: the policy, optimizer, normalisers, counters,
LR schedule position and random generators continue from the checkpoint (the envs start fresh
episodes).
"""

from __future__ import annotations

import copy
import csv
import math
import os
import re
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelrl.config import Config, ConfigError, check_ranges, dump_config, load_config
from pixelrl.env_family import names_family
from pixelrl.envs.nav.measures import HEADLINE, SCORES
from pixelrl.rl.imitation import ImitationConfig
from pixelrl.rl.ppo import PPOConfig

# Every key a recipe may set. ``{}`` sections are open: the task module reads them.
DEFAULTS: dict[str, Any] = {
    "recipe": "",
    "seed": 1,
    "device": "cpu",
    # Torch threads, set per phase. `torch_threads`: the learner's (PPO / imitation updates,
    # evaluation); 0 keeps torch's default. `collect.torch_threads`: the policy's forward while
    # collecting (one small batch a step: threads cost more than they give); 0 = torch_threads.
    # With train.async the collector is its own process and gets collect.torch_threads (0: 1),
    # so on 2 cores the env worker holds one core and the learner the other.
    "torch_threads": 0,
    "env": {
        "id": "",
        "num_envs": 8,
        "kwargs": {},  # passed to the env (training scenes)
        "eval_kwargs": {},  # overrides of kwargs for evaluation (held-out scenes)
        # a multi-task recipe's task family and its tasks (gui/miniwob: miniwob, [click-button, ...])
        "family": "",
        "tasks": [],
    },
    # Where the envs run: in this process (sync) or in Ray actors (ray: pixelrl.envs.remote), one
    # actor per `per_worker` envs; `num_workers: 0` takes env.num_envs (train.eval_num_envs for
    # evaluation) rounded up to whole workers. PPO's rollout storage has a fixed width, so a worker
    # taken out after `max_failures` faults in a row stops the run with a clear error.
    "envs": {
        "backend": "sync",  # sync | ray
        "num_workers": 0,
        "per_worker": 1,
        "step_timeout": 60.0,  # seconds a step may take before its worker is replaced
        "max_failures": 3,
        "address": "",  # "" -> RAY_ADDRESS, else a local cluster; "auto" joins a running one
        "num_cpus": 0,  # the local cluster's CPUs (0: Ray counts them)
        "resources_per_worker": {},  # Ray actor options ({}: none held), e.g. {num_cpus: 1}
    },
    "policy": {},
    "ppo": PPOConfig().to_dict(),
    "imitation": ImitationConfig().to_dict(),  # behaviour-cloning warm start (updates: 0 = none)
    "collect": {"bootstrap_truncated": True, "torch_threads": 0},
    "train": {
        "total_frames": 1_000_000,
        # Collect the next rollout in an env worker process while the learner updates on this
        # one (pixelrl.rl.async_collect: double buffering, the acting policy one update behind,
        # PPO's ratio against the stored behaviour log-probs). false: one process, each rollout
        # then its update, bit-for-bit reproducible (tests, exact reruns). Ignored with
        # envs.backend=ray (the envs already run in actors) and with device other than cpu.
        "async": False,
        "time_limit_minutes": 0,  # > 0: also stop after this much training time (evals excluded)
        # > 0: also stop after this much CPU time of training (evals excluded): the budget to
        # compare runs by when other jobs share the machine (wall minutes then stretch)
        "cpu_limit_minutes": 0,
        "output_dir": "",  # "" -> runs/<recipe>-<date-time>
        "resume": None,  # a run folder or checkpoint file
        "checkpoint_interval": 25,  # updates
        "eval_interval": 25,  # updates; 0 disables periodic evaluation
        "eval_episodes": 20,
        "eval_num_envs": 4,
        "eval_deterministic": False,  # habitat-baselines samples actions in evaluation too
        "final_eval": True,
        "eval_at_start": False,  # also evaluate before the first update (a warm start's level)
        "window": 100,  # episodes averaged in the progress bar
        "progress": True,
        "tensorboard": True,
    },
    "distributed": {
        "backend": "gloo",  # gloo (CPU) or nccl (GPU) under torchrun
        "sync_fraction": 0.6,  # DD-PPO straggler preemption; 0 disables
        "min_fraction": 0.25,
    },
}

# Settings a run needs > 0 / >= 0, checked when the config is built (before any env exists).
POSITIVE = (
    "env.num_envs", "envs.per_worker", "envs.step_timeout", "envs.max_failures",
    "train.total_frames", "train.eval_num_envs", "ppo.num_steps", "ppo.epochs",
    "ppo.num_minibatches", "ppo.lr", "imitation.epochs", "imitation.num_minibatches", "imitation.lr",
)  # fmt: skip
NON_NEGATIVE = (
    "envs.num_workers", "envs.num_cpus", "torch_threads", "collect.torch_threads",
    "train.time_limit_minutes", "train.cpu_limit_minutes", "train.checkpoint_interval", "train.eval_interval",
    "train.eval_episodes", "imitation.updates", "ppo.critic_warmup_updates",
)  # fmt: skip


def check_config(cfg: Config) -> None:
    """:class:`ConfigError` for a value no run can use: a count or rate out of range, an env id
    that is not registered (with the nearest ones)."""
    import pixelrl.envs  # noqa: F401  (registers the ids)
    from pixelrl.envs.registry import unknown_env_message

    check_ranges(cfg, POSITIVE, NON_NEGATIVE)
    if cfg.envs.backend not in ("sync", "ray"):
        raise ConfigError(f"envs.backend must be sync or ray, got {cfg.envs.backend!r}")
    if not isinstance(cfg.train["async"], bool):
        raise ConfigError(f"train.async must be true or false, got {cfg.train['async']!r}")
    # Only ids shaped like gymnasium's (``ns/Name-v0``) are looked up: a task module may build
    # its envs itself from any name (the tests' toy recipe uses ``toy``).
    gym_shaped = bool(cfg.env.id) and re.search(r"/|-v\d+$", str(cfg.env.id)) is not None
    problem = unknown_env_message(cfg.env.id) if gym_shaped else None
    if problem:
        raise ConfigError(f"env.id: {problem}")


def make_vector_envs(task: Any, cfg: Config, num_envs: int, seed: int, split: str) -> Any:
    """The recipe's vector env for ``split``, where ``envs.backend`` says (see DEFAULTS).

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
    from pixelrl.envs.remote import RayVectorEnv

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


def ray_options(opts: Any) -> dict[str, Any]:
    """``RayVectorEnv``'s fault, placement and cluster settings from a config's ``envs``
    section (DEFAULTS; the VLM recipes' has the same keys)."""
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

    from pixelrl.envs.remote import ensure_ray

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


def uses_async_collection(cfg: Config) -> bool:
    """``train.async``, unless the envs already run in Ray actors (``envs.backend=ray``) or the
    learner is on a GPU (the worker's storages are shared CPU memory)."""
    return bool(cfg.train["async"]) and cfg.envs.backend == "sync" and cfg.device == "cpu"


# Measures averaged over the episode window, matched loosely against episode info keys.
MEASURES = HEADLINE


def measure_key(name: str) -> str:
    """``"DistanceToGoal"``, ``"distance_to_goal"`` and ``"metrics/distance_to_goal"`` -> one key."""
    return name.rsplit("/", 1)[-1].replace("_", "").lower()


def summarize(episodes: Sequence[dict[str, float]]) -> dict[str, float]:
    """Means of return, length and the nav measures over ``episodes`` (absent ones left out)."""
    out: dict[str, float] = {}
    if not episodes:
        return out
    for name in ("return", "length", *MEASURES):
        values = [
            v for ep in episodes for k, v in ep.items() if measure_key(k) == measure_key(name)
        ]
        if values:
            out[name] = sum(values) / len(values)
    out["episodes"] = float(len(episodes))
    return out


def config_for(recipe_or_yaml: str, overrides: Sequence[str] = ()) -> Config:
    """The full config of a recipe name (or a YAML file naming one in ``recipe:``, a variant's
    included: :mod:`pixelrl.recipes`) plus overrides."""
    from pixelrl.recipes import RECIPES, config_file, get_recipe

    path = Path(recipe_or_yaml)
    if recipe_or_yaml in RECIPES and RECIPES[recipe_or_yaml].base:  # its YAML names its base
        path = RECIPES[recipe_or_yaml].config
    elif recipe_or_yaml not in RECIPES and path.suffix in (".yaml", ".yml"):
        path = config_file(path) or path  # a shipped file from any folder; else "not found"
    if path.suffix in (".yaml", ".yml"):
        cfg = load_config(path, overrides, DEFAULTS)
        get_recipe(cfg.recipe)  # the file must name a known recipe
        check_config(cfg)
        return cfg
    recipe = get_recipe(recipe_or_yaml)
    cfg = load_config(recipe.config, overrides, DEFAULTS)
    cfg.recipe = recipe.name
    check_config(cfg)
    return cfg


def keep_freed_memory() -> None:
    """Ask glibc's malloc to keep freed blocks of up to 32 MB for reuse (Linux only; no-op else).

    By default glibc hands big freed blocks back to the kernel, so every training step page-faults
    its activations back in. The threshold adapts, but by chance: of two identical GUI runs, one
    paid 4.7M minor faults, the other 71.6M (114 s of system time in a 15-minute budget). With a
    fixed threshold a behaviour-cloning step of the pointer policy took 0.2 faults instead of
    10,200 and 179 ms of CPU instead of 197 (issue 5)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # malloc.h
        libc.mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024)  # glibc's largest
        libc.mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024)
    except (OSError, AttributeError):  # not glibc (musl has no mallopt): nothing to tune
        return


class Trainer:
    """Owns the envs, policy, PPO, storage and the run folder; :meth:`run` trains."""

    def __init__(self, cfg: Config):
        import numpy as np
        import torch

        from pixelrl.checkpoint import load_checkpoint
        from pixelrl.recipes import get_recipe
        from pixelrl.rl.collect import RolloutCollector
        from pixelrl.rl.distributed import RolloutTracker, broadcast_parameters, init_distributed
        from pixelrl.rl.normalize import RewardNormalizer
        from pixelrl.rl.ppo import PPO
        from pixelrl.rl.storage import RolloutStorage

        self.cfg = cfg
        self.dist = init_distributed(cfg.distributed.backend)
        self.checkpoint = load_checkpoint(cfg.train.resume) if cfg.train.resume else None
        if self.checkpoint is not None and self.checkpoint.get("recipe") != cfg.recipe:
            raise ConfigError(
                f"train.resume: checkpoint is from recipe {self.checkpoint.get('recipe')!r}, "
                f"not {cfg.recipe!r}"
            )
        # threads per phase (DEFAULTS): the learner's, and the collection's in sync mode
        if cfg.torch_threads:
            torch.set_num_threads(int(cfg.torch_threads))
        self.learn_threads = torch.get_num_threads()
        self.collect_threads = int(cfg.collect.torch_threads) or self.learn_threads
        keep_freed_memory()
        rank_seed = int(cfg.seed) + 1000 * self.dist.rank
        torch.manual_seed(int(cfg.seed))  # same initial weights everywhere (then broadcast)
        np.random.seed(rank_seed)
        self.device = torch.device(cfg.device)

        recipe = get_recipe(cfg.recipe)
        if recipe.kind != "ppo":
            raise ConfigError(
                f"recipe {cfg.recipe!r} trains a text policy (SFT / GRPO), not with PPO: run it "
                f"with `pixelrl train {cfg.recipe}`"
            )
        self.task = recipe.load_task()
        if names_family(cfg) and not getattr(self.task, "PLAYS_FAMILY", False):
            raise ConfigError(
                f"env.tasks: recipe {cfg.recipe!r} trains on one env (env.id) and would ignore "
                "env.tasks and env.family; they are for multi-task recipes such as gui/miniwob"
            )
        self.async_collect = uses_async_collection(cfg)
        if self.async_collect:
            from pixelrl.rl.async_collect import AsyncCollector, CollectOptions

            self.collector = AsyncCollector(
                TrainEnvsSpec(recipe, cfg.to_dict(), rank_seed),
                CollectOptions(
                    seed=rank_seed,
                    gamma=float(cfg.ppo.gamma),
                    bootstrap_truncated=bool(cfg.collect.bootstrap_truncated),
                    reward_norm=bool(cfg.ppo.reward_norm),
                    threads=int(cfg.collect.torch_threads) or 1,
                ),
            )
            self.envs = self.collector.envs  # spaces, num_envs, stats(), close()
        else:
            if cfg.envs.backend == "ray" and self.dist.world_size > 1:
                join_one_ray_cluster(cfg)
            self.envs = make_vector_envs(self.task, cfg, int(cfg.env.num_envs), rank_seed, "train")
        self.run_dir = self._run_dir()
        if self.dist.is_main:  # before the warm start: a GUI recipe's cloning takes minutes
            print(self.header(), flush=True)
        tic, cpu_tic = time.perf_counter(), time.process_time()
        self.policy = self.task.make_policy(
            cfg, self.envs.single_observation_space, self.envs.single_action_space
        ).to(self.device)
        # a recipe's warm start in make_policy (GUI behaviour cloning) is training time too
        self.warm_start_s = (time.perf_counter() - tic, time.process_time() - cpu_tic)
        broadcast_parameters(self.policy)
        torch.manual_seed(rank_seed)  # but different action samples on each rank

        self.ppo_cfg = PPOConfig.from_dict(dict(cfg.ppo))
        num_envs = self.envs.num_envs
        self.frames_per_update = self.ppo_cfg.num_steps * num_envs * self.dist.world_size
        # train.total_frames counts every env frame, the imitation warm start's included
        self.imitation_cfg = ImitationConfig.from_dict(dict(cfg.imitation))
        self.total_updates = max(
            1,
            math.ceil(float(cfg.train.total_frames) / self.frames_per_update)
            - self.imitation_cfg.updates,
        )
        self.ppo = PPO(self.policy, self.ppo_cfg, self.total_updates)
        self.storage = RolloutStorage(
            self.ppo_cfg.num_steps,
            num_envs,
            self.envs.single_observation_space,
            self.envs.single_action_space,
            self.policy.initial_state(num_envs),
            self.device,
        )
        self.reward_normalizer = (
            RewardNormalizer(num_envs, self.ppo_cfg.gamma) if self.ppo_cfg.reward_norm else None
        )
        if self.async_collect:
            self.collector.start(self.policy, self.storage, self.reward_normalizer)
        else:
            self.collector = RolloutCollector(
                self.envs,
                self.policy,
                self.storage,
                seed=rank_seed,
                gamma=self.ppo_cfg.gamma,
                bootstrap_truncated=bool(cfg.collect.bootstrap_truncated),
                reward_transform=self.reward_normalizer,
            )
        self.tracker = RolloutTracker(cfg.distributed.sync_fraction, cfg.distributed.min_fraction)

        self.update, self.frames = 0, 0
        self.history: list[dict[str, float]] = []
        self.eval_history: list[dict[str, float]] = []
        if self.checkpoint is not None:
            self._restore(self.checkpoint)
        elif hasattr(self.policy, "update_normalization"):
            self.policy.update_normalization(self.collector.obs)  # first statistics from reset

        self.writer = None
        if self.dist.is_main:
            (self.run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
            dump_config(cfg, self.run_dir / "config.yaml")
            if cfg.train.tensorboard:
                from torch.utils.tensorboard import SummaryWriter

                self.writer = SummaryWriter(
                    str(self.run_dir / "tb"), purge_step=self.update or None
                )

    # ------------------------------------------------------------------ setup helpers
    def _run_dir(self) -> Path:
        out = self.cfg.train.output_dir
        if out:
            return Path(out)
        if self.cfg.train.resume:  # continue in the folder the checkpoint came from
            from pixelrl.checkpoint import resolve_checkpoint

            ckpt = resolve_checkpoint(self.cfg.train.resume)
            return ckpt.parent.parent if ckpt.parent.name == "checkpoints" else ckpt.parent
        stamp = time.strftime("%Y%m%d-%H%M%S")
        return Path("runs") / f"{self.cfg.recipe.replace('/', '-')}-{stamp}"

    def _restore(self, ckpt: dict[str, Any]) -> None:
        import numpy as np
        import torch

        self.policy.load_state_dict(ckpt["policy"])
        self.ppo.load_state_dict(ckpt["ppo"])
        if self.reward_normalizer is not None and ckpt.get("reward_normalizer"):
            self.reward_normalizer.load_state_dict(ckpt["reward_normalizer"])
        self.update, self.frames = int(ckpt["update"]), int(ckpt["frames"])
        self.history = list(ckpt.get("history", []))
        self.eval_history = list(ckpt.get("eval_history", []))
        rng = ckpt.get("rng", {})
        if "torch" in rng and self.dist.world_size == 1:
            torch.set_rng_state(rng["torch"])
        if "numpy" in rng and self.dist.world_size == 1:
            np.random.set_state(rng["numpy"])

    def save(self) -> Path | None:
        """Write ``checkpoints/update_N.pt`` (rank 0 only) and point ``latest.pt`` at it."""
        import numpy as np
        import torch

        from pixelrl.checkpoint import save_checkpoint

        if not self.dist.is_main:
            return None
        payload = {
            "recipe": self.cfg.recipe,
            "config": self.cfg.to_dict(),
            "policy": self.policy.state_dict(),
            "ppo": self.ppo.state_dict(),
            "reward_normalizer": self.reward_normalizer.state_dict()
            if self.reward_normalizer
            else None,
            "update": self.update,
            "frames": self.frames,
            "history": self.history,
            "eval_history": self.eval_history,
            "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state()},
            "observation_space": self.envs.single_observation_space,
            "action_space": self.envs.single_action_space,
        }
        return save_checkpoint(payload, self.run_dir / "checkpoints" / f"update_{self.update}.pt")

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, num_episodes: int | None = None) -> dict[str, float]:
        """Play ``train.eval_episodes`` episodes on the eval split (held-out scenes)."""
        from pixelrl.rl.collect import run_episodes

        cfg = self.cfg.train
        envs = make_vector_envs(
            self.task, self.cfg, int(cfg.eval_num_envs), int(self.cfg.seed) + 10_000, "eval"
        )
        try:
            was_training = self.policy.training
            self.policy.eval()
            episodes = run_episodes(
                envs,
                self.policy,
                int(num_episodes or cfg.eval_episodes),
                list(self.storage.obs),
                seed=int(self.cfg.seed) + 10_000,
                deterministic=bool(cfg.eval_deterministic),
                device=self.device,
            )
            self.policy.train(was_training)
        finally:
            envs.close()
        return summarize(episodes)

    # ------------------------------------------------------------------ the loop
    def run(self) -> dict[str, Any]:
        """Train to ``train.total_frames``; returns the last training and evaluation summaries."""
        from tqdm import tqdm

        from pixelrl.rl.distributed import all_gather_objects, all_reduce_sum

        cfg, ppo_cfg = self.cfg.train, self.ppo_cfg
        window: deque[dict[str, float]] = deque(maxlen=int(cfg.window))  # fresh on resume
        bar = tqdm(
            total=(self.total_updates + self.imitation_cfg.updates) * self.frames_per_update,
            initial=self.frames,
            unit="frame",
            unit_scale=True,
            dynamic_ncols=True,
            disable=not (cfg.progress and self.dist.is_main),
        )
        last_eval: dict[str, float] = {}
        start_update, start_frames = self.update, self.frames
        if self.dist.is_main and cfg.eval_at_start and not self.eval_history:
            last_eval = self._evaluate_and_log()
            if cfg.checkpoint_interval and self.update == 0:
                self.save()  # update_0.pt: the policy before any update (a warm start to compare with)
        if self.history:  # resumed: the time the run trained before
            train_s = self.history[-1].get("train_minutes", 0.0) * 60
            cpu_s = self.history[-1].get("cpu_minutes", 0.0) * 60
        else:
            train_s, cpu_s = self.warm_start_s
        if self.imitation_cfg.updates > 0 and self.update == 0 and not self.history:
            train_s, cpu_s = self._imitate(bar, train_s, cpu_s)
            if self.dist.is_main and cfg.eval_interval:
                last_eval = self._evaluate_and_log()  # the warm start alone, on held-out scenes
        ended = f"train.total_frames={int(cfg.total_frames):,} reached"
        while self.update < self.total_updates:
            if over := self._over_budget(train_s, cpu_s):
                ended = over
                break
            tic, cpu_tic = time.perf_counter(), self._cpu_time()
            lr = self.ppo.set_lr(self.update)
            self.tracker.begin(self.update)
            rollout = self._collect("policy", "policy")
            self.tracker.mark_done()
            collect_s = time.perf_counter() - tic

            self.ppo.compute_advantages(self.storage, rollout.next_value)
            losses = self.ppo.update(
                self.storage, critic_only=self.update < ppo_cfg.critic_warmup_updates
            )
            if hasattr(self.policy, "update_normalization"):
                T = self.storage.step
                self.policy.update_normalization(
                    {k: v[1 : T + 1] for k, v in self.storage.obs.items()}
                )
            self.update += 1

            frames = int(all_reduce_sum([rollout.frames])[0])
            self.frames += frames
            for episodes in all_gather_objects(rollout.episodes):
                window.extend(episodes)
            seconds = time.perf_counter() - tic
            train_s += seconds
            cpu_s += self._cpu_time() - cpu_tic
            row = {
                "update": self.update,
                "frames": self.frames,
                "train_minutes": train_s / 60,  # wall time in collection + updates (no evals)
                "cpu_minutes": cpu_s / 60,  # CPU time there (all threads, the env worker's too)
                "fps": frames / seconds,
                "collect_fps": frames / max(collect_s, 1e-9),  # async: the wait for the rollout
                "lr": lr,
                "steps": rollout.steps,
                **{f"train/{k}": v for k, v in summarize(list(window)).items()},
                **{f"loss/{k}": v for k, v in losses.items()},
                # worker faults so far (envs.backend=ray), counted since the start
                **{f"envs/{k}": v for k, v in getattr(self.envs, "stats", dict)().items()},
            }
            self.history.append(row)
            bar.update(frames)
            bar.set_postfix_str(self._postfix(row), refresh=False)
            self._log(row)

            if (
                self.dist.is_main
                and cfg.eval_interval
                and self.update % int(cfg.eval_interval) == 0
            ):
                last_eval = self._evaluate_and_log()
            if cfg.checkpoint_interval and self.update % int(cfg.checkpoint_interval) == 0:
                self.save()
        bar.close()

        if self.dist.is_main:
            # imitation alone (a time limit it used up) is training too: keep what it learned
            if self.update > start_update or self.frames > start_frames or not self.eval_history:
                self.save()
            if cfg.final_eval and (
                not self.eval_history or self.eval_history[-1]["update"] != self.update
            ):
                last_eval = self._evaluate_and_log()
            elif self.eval_history:
                last_eval = self.eval_history[-1]
            self._write_tables()
            self._plot()
            if self.writer is not None:
                self.writer.close()
        self.envs.close()
        train_row = self.history[-1] if self.history else {}
        return {
            "run_dir": str(self.run_dir),
            "train": train_row,
            "eval": last_eval,
            "ended": ended,  # what stopped training: its frames or a time limit
            "train_minutes": train_s / 60,
        }

    def header(self) -> str:
        """The run in one line: where it writes, on how many ranks, with how many threads."""
        ranks = self.dist.world_size
        where = f"{ranks} ranks (torchrun)" if ranks > 1 else "1 process"
        mode = "async env worker" if self.async_collect else "collect and learn in turn"
        return (
            f"{self.cfg.recipe}: {where}, device {self.device}, {self.envs.num_envs} envs a rank, "
            f"torch threads {self.learn_threads} (collect {self.collect_threads}), {mode}; "
            f"run folder {self.run_dir}"
        )

    def _over_budget(self, train_s: float, cpu_s: float) -> str:
        """Which of ``train.time_limit_minutes`` (wall) and ``train.cpu_limit_minutes`` is used
        up ("" for none: :class:`~pixelrl.rl.budget.Budget`). Any rank over its limit stops all
        (they agree on the update count)."""
        from pixelrl.rl.budget import Budget
        from pixelrl.rl.distributed import all_reduce_sum

        budget = Budget.from_config(self.cfg.train)
        if not budget.limited:
            return ""  # no limit (the same config on every rank): no collective per update
        reason = budget.reason(train_s, cpu_s)
        if all_reduce_sum([float(bool(reason))])[0] == 0:
            return ""
        return reason or "a time limit reached on another rank"

    def _imitate(self, bar, train_s: float, cpu_s: float) -> tuple[float, float]:
        """The imitation warm start (:mod:`pixelrl.rl.imitation`): the recipe's teacher drives the
        envs, the policy learns its actions. ``train_s`` / ``cpu_s``: the training time so far;
        returns it with the imitation's added."""
        from pixelrl.rl.distributed import all_reduce_sum
        from pixelrl.rl.imitation import Imitation, TeacherForcing

        make_teacher = getattr(self.task, "make_teacher", None)
        if make_teacher is None:
            raise ConfigError(
                f"imitation.updates > 0, but recipe {self.cfg.recipe!r} has no teacher "
                "(its task module defines no make_teacher)"
            )
        imitation = Imitation(self.policy, self.imitation_cfg)
        student = self.collector.policy
        if not self.async_collect:  # the worker builds its own teacher (AsyncCollector)
            self.collector.policy = TeacherForcing(self.policy, make_teacher(self.cfg, self.envs))
        try:
            for k in range(self.imitation_cfg.updates):
                if self._over_budget(train_s, cpu_s):  # the budget counts imitation too
                    break
                tic, cpu_tic = time.perf_counter(), self._cpu_time()
                last = k == self.imitation_cfg.updates - 1
                rollout = self._collect("teacher", "policy" if last else "teacher")
                collect_s = time.perf_counter() - tic
                self.ppo.compute_advantages(self.storage, rollout.next_value)
                if self.ppo.value_normalizer is not None:  # the critic learns normalised values
                    T = self.storage.step
                    self.storage.returns[:T] = self.ppo.value_normalizer.normalize(
                        self.storage.returns[:T]
                    )
                losses = imitation.update(self.storage)
                if hasattr(self.policy, "update_normalization"):
                    T = self.storage.step
                    self.policy.update_normalization(
                        {key: v[1 : T + 1] for key, v in self.storage.obs.items()}
                    )
                frames = int(all_reduce_sum([rollout.frames])[0])
                self.frames += frames
                seconds = time.perf_counter() - tic
                train_s += seconds
                cpu_s += self._cpu_time() - cpu_tic
                teacher = summarize(rollout.episodes)
                row = {
                    "update": 0,
                    "imitation_update": k + 1,
                    "frames": self.frames,
                    "train_minutes": train_s / 60,
                    "cpu_minutes": cpu_s / 60,
                    "fps": frames / seconds,
                    "collect_fps": frames / max(collect_s, 1e-9),  # async: the wait for it
                    **{f"imitation/{key}": v for key, v in losses.items()},
                    **{f"imitation/teacher_{m}": teacher[m] for m in SCORES if m in teacher},
                }
                self.history.append(row)
                bar.update(frames)
                bar.set_postfix_str(
                    f"imitation fps={row['fps']:.0f} p_teacher={losses['p_teacher>0.5']:.2f}",
                    refresh=False,
                )
                self._log(row)
        finally:
            self.collector.policy = student
        return train_s, cpu_s

    def _cpu_time(self) -> float:
        """CPU seconds of this process and, with ``train.async``, of its env worker so far."""
        return time.process_time() + getattr(self.collector, "worker_cpu_seconds", 0.0)

    def _collect(self, mode: str, next_mode: str) -> Any:
        """One rollout into ``self.storage``: ``mode`` is ``policy`` (PPO) or ``teacher``
        (imitation, the policy already wrapped in TeacherForcing); ``next_mode`` is what the
        async worker prefetches while the caller learns."""
        import torch

        if self.async_collect:
            rollout = self.collector.collect(mode, next_mode)
            self.storage = self.collector.storage  # the buffer just filled (double buffering)
            return rollout
        if self.collect_threads != self.learn_threads:
            torch.set_num_threads(self.collect_threads)
        try:
            if mode == "teacher":
                return self.collector.collect()
            return self.collector.collect(
                should_stop=lambda steps: self.tracker.should_stop(steps, self.ppo_cfg.num_steps)
            )
        finally:
            if self.collect_threads != self.learn_threads:
                torch.set_num_threads(self.learn_threads)

    def _evaluate_and_log(self) -> dict[str, float]:
        minutes = self.history[-1]["train_minutes"] if self.history else 0.0
        result = {
            "update": self.update,
            "frames": self.frames,
            "train_minutes": minutes,
            **self.evaluate(),
        }
        self.eval_history.append(result)
        if self.writer is not None:
            for key, value in result.items():
                if key not in ("update", "frames"):
                    self.writer.add_scalar(f"eval/{key}", value, self.frames)
        return result

    @staticmethod
    def _postfix(row: dict[str, float]) -> str:
        parts = [f"fps={row['fps']:.0f}"]
        if row.get("envs/faults"):
            parts.append(f"faults={row['envs/faults']:.0f}")
        for name in (*SCORES, "return"):
            if f"train/{name}" in row:
                parts.append(f"{name}={row[f'train/{name}']:.2f}")
        return " ".join(parts)

    def _log(self, row: dict[str, float]) -> None:
        if self.writer is None:
            return
        for key, value in row.items():
            if key not in ("update", "frames"):
                self.writer.add_scalar(key if "/" in key else f"perf/{key}", value, self.frames)

    def _write_tables(self) -> None:
        for name, rows in (("history.csv", self.history), ("eval.csv", self.eval_history)):
            if not rows:
                continue
            fields = list(dict.fromkeys(k for row in rows for k in row))
            with open(self.run_dir / name, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=fields)
                writer.writeheader()
                writer.writerows(rows)

    def _plot(self) -> Path | None:
        """``learning_curve.png``: training (episode window) and evaluation measures vs frames."""
        if not self.history:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = [n for n in (*SCORES, "return") if any(f"train/{n}" in r for r in self.history)]
        fig, axes = plt.subplots(
            1, max(1, len(names)), figsize=(5 * max(1, len(names)), 3.6), squeeze=False
        )
        for ax, name in zip(axes[0], names):
            rows = [r for r in self.history if f"train/{name}" in r]
            ax.plot(
                [r["frames"] for r in rows],
                [r[f"train/{name}"] for r in rows],
                label="train (window)",
            )
            evals = [r for r in self.eval_history if name in r]
            if evals:
                ax.plot(
                    [r["frames"] for r in evals],
                    [r[name] for r in evals],
                    "o-",
                    label="eval (held-out)",
                )
            ax.set_xlabel("frames")
            ax.set_title(name)
            ax.grid(alpha=0.3)
            ax.legend()
        fig.suptitle(f"{self.cfg.recipe}  ({self.frames:,} frames)")
        fig.tight_layout()
        path = self.run_dir / "learning_curve.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


def train(cfg: Config) -> dict[str, Any]:
    """Build a :class:`Trainer` for ``cfg`` and run it."""
    return Trainer(copy.deepcopy(cfg)).run()
