"""The PPO / DD-PPO trainer behind ``pixelrl train RECIPE [key=value ...]``: its config schema
(:data:`DEFAULTS`, :func:`config_for`) and :class:`Trainer`.

One step loop (:meth:`Trainer._steps`), the same on one CPU and under ``torchrun`` on many GPUs,
runs both phases: the imitation warm start (``imitation.updates``, the recipe's teacher drives)
and PPO::

    envs, policy  <- the recipe's task module (pixelrl.recipes), envs where envs.backend says
                     (pixelrl.rl.vector_envs)
    for each update of imitation, then of PPO:
        stop if the time budget is used up        # pixelrl.rl.budget
        rollout = collector.collect()             # T steps x N envs (DD-PPO: stragglers stop early)
        ppo.compute_advantages(storage, ...)      # GAE (imitation: the critic's returns)
        imitation.update(storage) | ppo.update(storage)  # the phase's own; gradients averaged
                                                  # over ranks; PPO's lr decays linearly
        policy.update_normalization(...)          # input statistics, identical on every rank
        log (history row, progress bar, TensorBoard); PPO: evaluate on held-out scenes, checkpoint

A run folder (``train.output_dir``) gets ``config.yaml``, ``tb/`` (TensorBoard), ``checkpoints/``
(``update_N.pt`` and ``latest.pt``; ``update_0.pt`` is the warm start before any update, to
evaluate beside a later one), ``history.csv``, ``eval.csv`` and ``learning_curve.png``
(the last three and ``config.yaml`` written by :class:`pixelrl.run_folder.Run`).
Resume with ``train.resume=RUN_DIR_OR_CHECKPOINT``: the policy, optimizer, normalisers, counters,
LR schedule position and random generators continue from the checkpoint (the envs start fresh
episodes).
"""

from __future__ import annotations

import copy
import math
import re
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

import pixelrl.envs  # noqa: F401  (registers the ids check_config looks up)
from pixelrl.checkpoint import load_checkpoint, resolve_checkpoint, save_checkpoint
from pixelrl.config import Config, ConfigError, check_ranges, load_config
from pixelrl.env_family import names_family
from pixelrl.envs.nav.measures import HEADLINE, SCORES
from pixelrl.envs.registry import unknown_env_message
from pixelrl.recipes import RECIPES, config_file, get_recipe
from pixelrl.rl.allocator import keep_freed_memory
from pixelrl.rl.async_collect import AsyncCollector, CollectOptions
from pixelrl.rl.budget import Budget
from pixelrl.rl.collect import RolloutCollector, run_episodes
from pixelrl.rl.distributed import (
    RolloutTracker,
    all_gather_objects,
    all_reduce_sum,
    broadcast_parameters,
    init_distributed,
)
from pixelrl.rl.imitation import Imitation, ImitationConfig, TeacherForcing
from pixelrl.rl.normalize import RewardNormalizer
from pixelrl.rl.ppo import PPO, PPOConfig
from pixelrl.rl.storage import RolloutStorage
from pixelrl.rl.vector_envs import (
    TrainEnvsSpec,
    join_one_ray_cluster,
    local_env_workers,
    make_vector_envs,
)
from pixelrl.run_folder import Run
from pixelrl.threads import check_config_threads
from pixelrl.threads import choose as choose_threads
from pixelrl.threads import use as use_threads

# Every key a recipe may set. ``{}`` sections are open: the task module reads them.
DEFAULTS: dict[str, Any] = {
    "recipe": "",
    "seed": 1,
    "device": "cpu",
    # Torch threads, set per phase. `torch_threads`: the learner's (PPO / imitation updates,
    # evaluation); 0: the thread policy (pixelrl.threads: the cores less what keeps
    # them busy; the run's config.yaml records the count). `collect.torch_threads`: the
    # policy's forward while collecting (one small batch a step: threads cost more than they
    # give); 0 = torch_threads.
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
    "envs.num_workers", "envs.num_cpus", "collect.torch_threads",
    "train.time_limit_minutes", "train.cpu_limit_minutes", "train.checkpoint_interval", "train.eval_interval",
    "train.eval_episodes", "imitation.updates", "ppo.critic_warmup_updates",
)  # fmt: skip


def check_config(cfg: Config) -> None:
    """:class:`ConfigError` for a value no run can use: a count or rate out of range, an env id
    that is not registered (with the nearest ones)."""

    check_ranges(cfg, POSITIVE, NON_NEGATIVE)
    try:
        check_config_threads(cfg.torch_threads)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if cfg.envs.backend not in ("sync", "ray"):
        raise ConfigError(f"envs.backend must be sync or ray, got {cfg.envs.backend!r}")
    if not isinstance(cfg.train["async"], bool):
        raise ConfigError(f"train.async must be true or false, got {cfg.train['async']!r}")
    if int(cfg.ppo.num_minibatches) > int(cfg.env.num_envs):  # storage.minibatches' rule
        raise ConfigError(
            f"ppo.num_minibatches ({cfg.ppo.num_minibatches}) cannot exceed env.num_envs "
            f"({cfg.env.num_envs}): minibatches split the envs (each replays its whole rollout)"
        )
    # Only ids shaped like gymnasium's (``ns/Name-v0``) are looked up: a task module may build
    # its envs itself from any name (the tests' toy recipe uses ``toy``).
    gym_shaped = bool(cfg.env.id) and re.search(r"/|-v\d+$", str(cfg.env.id)) is not None
    problem = unknown_env_message(cfg.env.id) if gym_shaped else None
    if problem:
        raise ConfigError(f"env.id: {problem}")


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


@dataclass
class Learned:
    """What one update of a phase (imitation or PPO) gives the step loop to book."""

    rollout: Any  # pixelrl.rl.collect.Rollout: frames, episodes, steps
    collect_s: float  # seconds waiting for it (async: only what the learner waited)
    ids: dict[str, int]  # the history row's first columns: which update
    columns: dict[str, float]  # its last ones: the phase's own (lr, losses, measures)


class Trainer:
    """Owns the envs, policy, PPO, storage and the run folder; :meth:`run` trains."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.dist = init_distributed(cfg.distributed.backend)
        self.checkpoint = load_checkpoint(cfg.train.resume) if cfg.train.resume else None
        if self.checkpoint is not None and self.checkpoint.get("recipe") != cfg.recipe:
            raise ConfigError(
                f"train.resume: checkpoint is from recipe {self.checkpoint.get('recipe')!r}, "
                f"not {cfg.recipe!r}"
            )
        # threads per phase (DEFAULTS): the learner's, and the collection's in sync mode; the
        # env worker processes beside this one keep their cores (pixelrl.threads)
        self.async_collect = uses_async_collection(cfg)
        workers = int(self.async_collect) + local_env_workers(cfg, int(cfg.env.num_envs))
        self.threads = use_threads(choose_threads(cfg.torch_threads, workers))
        cfg.torch_threads = self.threads.count  # config.yaml: a rerun uses the same count
        self.learn_threads = self.threads.count
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
        if self.async_collect:
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
        # the history and evaluation rows, config.yaml and the tables (rank 0 writes)
        self.run_folder = Run(cfg, main=self.dist.is_main, folder=self.run_dir)
        if self.checkpoint is not None:
            self._restore(self.checkpoint)
        elif hasattr(self.policy, "update_normalization"):
            self.policy.update_normalization(self.collector.obs)  # first statistics from reset
        # the last episodes, averaged in the progress bar and train/ columns (fresh on resume)
        self.window: deque[dict[str, float]] = deque(maxlen=int(cfg.train.window))

        self.writer = None
        if self.dist.is_main:
            (self.run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
            if cfg.train.tensorboard:
                from torch.utils.tensorboard import SummaryWriter

                self.writer = SummaryWriter(
                    str(self.run_dir / "tb"), purge_step=self.update or None
                )

    @property
    def history(self) -> list[dict[str, float]]:
        """A row an update, the imitation's included (the run folder's ``history.csv``)."""
        return self.run_folder.history

    @property
    def eval_history(self) -> list[dict[str, float]]:
        """A row an evaluation on held-out scenes (``eval.csv``)."""
        return self.run_folder.evals

    # ------------------------------------------------------------------ setup helpers
    def _run_dir(self) -> Path:
        out = self.cfg.train.output_dir
        if out:
            return Path(out)
        if self.cfg.train.resume:  # continue in the folder the checkpoint came from
            ckpt = resolve_checkpoint(self.cfg.train.resume)
            return ckpt.parent.parent if ckpt.parent.name == "checkpoints" else ckpt.parent
        return Path(Run.default_folder(self.cfg))

    def _restore(self, ckpt: dict[str, Any]) -> None:
        self.policy.load_state_dict(ckpt["policy"])
        self.ppo.load_state_dict(ckpt["ppo"])
        if self.reward_normalizer is not None and ckpt.get("reward_normalizer"):
            self.reward_normalizer.load_state_dict(ckpt["reward_normalizer"])
        self.update, self.frames = int(ckpt["update"]), int(ckpt["frames"])
        self.run_folder.history = list(ckpt.get("history", []))
        self.run_folder.evals = list(ckpt.get("eval_history", []))
        rng = ckpt.get("rng", {})
        if "torch" in rng and self.dist.world_size == 1:
            torch.set_rng_state(rng["torch"])
        if "numpy" in rng and self.dist.world_size == 1:
            np.random.set_state(rng["numpy"])

    def save(self) -> Path | None:
        """Write ``checkpoints/update_N.pt`` (rank 0 only) and point ``latest.pt`` at it."""
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
        path = save_checkpoint(payload, self.run_dir / "checkpoints" / f"update_{self.update}.pt")
        self.run_folder.write_tables()  # the tables of what the checkpoint holds, on disk now
        return path

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, num_episodes: int | None = None) -> dict[str, float]:
        """Play ``train.eval_episodes`` episodes on the eval split (held-out scenes); with
        ``train.progress`` a bar counts them (main rank)."""
        cfg = self.cfg.train
        count = int(num_episodes or cfg.eval_episodes)
        envs = make_vector_envs(
            self.task, self.cfg, int(cfg.eval_num_envs), int(self.cfg.seed) + 10_000, "eval"
        )
        bar = tqdm(
            total=count,
            desc="eval",
            unit="ep",
            leave=False,
            dynamic_ncols=True,
            disable=not (cfg.progress and self.dist.is_main),
        )
        try:
            was_training = self.policy.training
            self.policy.eval()
            episodes = run_episodes(
                envs,
                self.policy,
                count,
                list(self.storage.obs),
                seed=int(self.cfg.seed) + 10_000,
                deterministic=bool(cfg.eval_deterministic),
                device=self.device,
                progress=lambda done: bar.update(done - bar.n),
            )
            self.policy.train(was_training)
        finally:
            bar.close()
            envs.close()
        return summarize(episodes)

    # ------------------------------------------------------------------ the loop
    def run(self) -> dict[str, Any]:
        """Train to ``train.total_frames``; returns the last training and evaluation summaries."""
        cfg = self.cfg.train
        bar = tqdm(
            total=(self.total_updates + self.imitation_cfg.updates) * self.frames_per_update,
            initial=self.frames,
            unit="frame",
            unit_scale=True,
            dynamic_ncols=True,
            disable=not (cfg.progress and self.dist.is_main),
        )
        start_update, start_frames = self.update, self.frames
        if self.dist.is_main and cfg.eval_at_start and not self.eval_history:
            self._evaluate_and_log()
        if self.dist.is_main and cfg.checkpoint_interval and self.update == 0 and not self.history:
            self.save()  # update_0.pt: the warm start before any update, to compare RL with
        # the training time so far (wall, CPU seconds), which the time budget bounds
        if self.history:  # resumed: the time the run trained before
            self.train_s = self.history[-1].get("train_minutes", 0.0) * 60
            self.cpu_s = self.history[-1].get("cpu_minutes", 0.0) * 60
        else:
            self.train_s, self.cpu_s = self.warm_start_s
        if self.imitation_cfg.updates > 0 and self.update == 0 and not self.history:
            self._imitate(bar)
            if self.dist.is_main and cfg.eval_interval:
                self._evaluate_and_log()  # the warm start alone, on held-out scenes
        ended = self._steps(
            self.total_updates - self.update, self._ppo_update, self._postfix, bar, periodic=True
        )
        bar.close()

        if self.dist.is_main:
            # imitation alone (a time limit it used up) is training too: keep what it learned
            if self.update > start_update or self.frames > start_frames or not self.eval_history:
                self.save()
            if cfg.final_eval and (
                not self.eval_history or self.eval_history[-1]["update"] != self.update
            ):
                self._evaluate_and_log()
            self.run_folder.write_tables()
            self.run_folder.plot_measures(self.frames)
            if self.writer is not None:
                self.writer.close()
        self.envs.close()
        return {
            "run_dir": str(self.run_dir),
            "train": self.history[-1] if self.history else {},
            "eval": self.eval_history[-1] if self.dist.is_main and self.eval_history else {},
            # what stopped training: its frames or a time limit
            "ended": ended or f"train.total_frames={int(cfg.total_frames):,} reached",
            "train_minutes": self.train_s / 60,
        }

    def header(self) -> str:
        """The run in one line: where it writes, on how many ranks, with how many threads."""
        ranks = self.dist.world_size
        where = f"{ranks} ranks (torchrun)" if ranks > 1 else "1 process"
        mode = "async env worker" if self.async_collect else "collect and learn in turn"
        return (
            f"{self.cfg.recipe}: {where}, device {self.device}, {self.envs.num_envs} envs a rank, "
            f"torch threads {self.threads} (collect {self.collect_threads}), {mode}; "
            f"run folder {self.run_dir}"
        )

    def _steps(
        self,
        count: int,
        learn: Callable[[int], Learned],
        postfix: Callable[[dict[str, float]], str],
        bar: Any,
        periodic: bool = False,
    ) -> str:
        """``count`` updates of one phase (imitation or PPO) with the bookkeeping they share:
        the time budget before each, ``learn(k)`` (collect a rollout, learn from it), the
        policy's input statistics, the frames, the history row with the clocks, the progress bar
        (``postfix`` of the row) and TensorBoard; with ``periodic`` (PPO) held-out evaluation
        and checkpoints at their intervals. Returns "" when all ran, else the limit reached."""

        cfg = self.cfg.train
        for k in range(count):
            if over := self._over_budget():
                return over
            tic, cpu_tic = time.perf_counter(), self._cpu_time()
            learned = learn(k)
            if hasattr(self.policy, "update_normalization"):
                T = self.storage.step
                self.policy.update_normalization(
                    {key: v[1 : T + 1] for key, v in self.storage.obs.items()}
                )
            frames = int(all_reduce_sum([learned.rollout.frames])[0])
            self.frames += frames
            seconds = time.perf_counter() - tic
            self.train_s += seconds
            self.cpu_s += self._cpu_time() - cpu_tic
            row = {
                **learned.ids,
                "frames": self.frames,
                # wall time in collection + updates (no evals), and the CPU time there (all
                # threads, the env worker's too)
                "train_minutes": self.train_s / 60,
                "cpu_minutes": self.cpu_s / 60,
                "fps": frames / seconds,
                "collect_fps": frames / max(learned.collect_s, 1e-9),  # async: the wait for it
                **learned.columns,
            }
            self.history.append(row)
            bar.update(frames)
            bar.set_postfix_str(postfix(row), refresh=False)
            self._log(row)
            if not periodic:
                continue
            if (
                self.dist.is_main
                and cfg.eval_interval
                and self.update % int(cfg.eval_interval) == 0
            ):
                self._evaluate_and_log()
            if cfg.checkpoint_interval and self.update % int(cfg.checkpoint_interval) == 0:
                self.save()
        return ""

    def _ppo_update(self, k: int) -> Learned:
        """One PPO update: a rollout of the policy (DD-PPO: stragglers stop early), GAE, the
        clipped loss; the episodes join the training window (every rank's). ``k`` counts this
        run's updates; the schedule and the rows count ``self.update`` (a resumed run's too)."""

        tic = time.perf_counter()
        lr = self.ppo.set_lr(self.update)
        self.tracker.begin(self.update)
        rollout = self._collect("policy", "policy")
        self.tracker.mark_done()
        collect_s = time.perf_counter() - tic

        self.ppo.compute_advantages(self.storage, rollout.next_value)
        losses = self.ppo.update(
            self.storage, critic_only=self.update < self.ppo_cfg.critic_warmup_updates
        )
        self.update += 1
        for episodes in all_gather_objects(rollout.episodes):
            self.window.extend(episodes)
        return Learned(
            rollout,
            collect_s,
            {"update": self.update},
            {
                "lr": lr,
                "steps": rollout.steps,
                **{f"train/{key}": v for key, v in summarize(list(self.window)).items()},
                **{f"loss/{key}": v for key, v in losses.items()},
                # worker faults so far (envs.backend=ray), counted since the start
                **{f"envs/{key}": v for key, v in getattr(self.envs, "stats", dict)().items()},
            },
        )

    def _over_budget(self) -> str:
        """Which of ``train.time_limit_minutes`` (wall) and ``train.cpu_limit_minutes`` the
        training time so far used up ("" for none: :class:`~pixelrl.rl.budget.Budget`). Any rank
        over its limit stops all (they agree on the update count)."""

        budget = Budget.from_config(self.cfg.train)
        if not budget.limited:
            return ""  # no limit (the same config on every rank): no collective per update
        reason = budget.reason(self.train_s, self.cpu_s)
        if all_reduce_sum([float(bool(reason))])[0] == 0:
            return ""
        return reason or "a time limit reached on another rank"

    def _imitate(self, bar: Any) -> None:
        """The imitation warm start (:mod:`pixelrl.rl.imitation`): the recipe's teacher drives the
        envs, the policy learns its actions, within the run's time budget."""

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
            self._steps(
                self.imitation_cfg.updates,
                lambda k: self._imitation_update(imitation, k),
                lambda row: (
                    f"imitation fps={row['fps']:.0f} p_teacher={row['imitation/p_teacher>0.5']:.2f}"
                ),
                bar,
            )
        finally:
            self.collector.policy = student

    def _imitation_update(self, imitation: Any, k: int) -> Learned:
        """The ``k``-th imitation update: a rollout the teacher drives, then the policy learns
        its actions (and the critic the returns)."""
        tic = time.perf_counter()
        last = k == self.imitation_cfg.updates - 1  # the async worker then prefetches PPO's
        rollout = self._collect("teacher", "policy" if last else "teacher")
        collect_s = time.perf_counter() - tic
        self.ppo.compute_advantages(self.storage, rollout.next_value)
        if self.ppo.value_normalizer is not None:  # the critic learns normalised values
            T = self.storage.step
            self.storage.returns[:T] = self.ppo.value_normalizer.normalize(self.storage.returns[:T])
        losses = imitation.update(self.storage)
        teacher = summarize(rollout.episodes)
        return Learned(
            rollout,
            collect_s,
            {"update": 0, "imitation_update": k + 1},
            {
                **{f"imitation/{key}": v for key, v in losses.items()},
                **{f"imitation/teacher_{m}": teacher[m] for m in SCORES if m in teacher},
            },
        )

    def _cpu_time(self) -> float:
        """CPU seconds of this process and, with ``train.async``, of its env worker so far."""
        return time.process_time() + getattr(self.collector, "worker_cpu_seconds", 0.0)

    def _collect(self, mode: str, next_mode: str) -> Any:
        """One rollout into ``self.storage``: ``mode`` is ``policy`` (PPO) or ``teacher``
        (imitation, the policy already wrapped in TeacherForcing); ``next_mode`` is what the
        async worker prefetches while the caller learns."""
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

    def _evaluate_and_log(self) -> None:
        """Evaluate on held-out scenes: a row of ``eval.csv`` and TensorBoard's ``eval/``."""
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


def train(cfg: Config) -> dict[str, Any]:
    """Build a :class:`Trainer` for ``cfg`` and run it."""
    return Trainer(copy.deepcopy(cfg)).run()
