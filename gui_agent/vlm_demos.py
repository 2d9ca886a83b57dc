"""The GUI recipes' demonstrations recorded on the spot (:mod:`pixelrl.gui_agent.train_vlm`'s
``gui/sft`` without ``data.dataset``): the scripted expert's episodes of each task from its
training seeds, in this process or on Ray workers, one dataset a task.
"""

from __future__ import annotations

from pathlib import Path

from pixelrl.config import Config
from pixelrl.gui_agent.vlm_tasks import env_kwargs, task_envs, task_seeds
from pixelrl.rl.text.demos import record_expert, record_expert_on_ray


def record_expert_episodes(cfg: Config, root: Path) -> Path:
    """Record ``data.episodes`` expert episodes of ``env.families`` (training seeds) into ``root``."""
    import gymnasium as gym

    from pixelrl.envs.families import expert_of
    from pixelrl.envs.recording import RecordEpisodes

    tasks = task_envs(cfg)
    per_family = -(-int(cfg.data.episodes) // len(tasks))
    for fi, (family, eid) in enumerate(tasks):
        # training seeds, from 20,000·fi up, that env.max_fields allows
        seeds = task_seeds(cfg, eid, "train", per_family, start=20_000 * fi)
        if cfg.envs.backend == "ray":
            record_expert_on_ray(cfg, eid, env_kwargs(cfg), seeds, root / family)
            continue
        env = RecordEpisodes(gym.make(eid, **env_kwargs(cfg)), root / family)
        record_expert(env, seeds, lambda env: expert_of(env).act, f"expert {family}",
                      cfg.train.progress)  # fmt: skip
    return root


def record_tasks(cfg: Config, demos: Path) -> list[Path]:
    """The expert's episodes recorded into ``demos``, one dataset a task."""
    record_expert_episodes(cfg, demos)
    return [demos / name for name, _ in task_envs(cfg)]
