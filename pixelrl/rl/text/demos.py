"""Demonstrations for SFT: an expert's episodes recorded through the demonstration recorder
(:class:`~pixelrl.envs.recording.RecordEpisodes`), in this process or in Ray workers, and read
back as :class:`~pixelrl.rl.text.rows.Example`\\ s -- one data path whoever recorded them.

dataset_roots(cfg, run, record)     # data.dataset's recordings, or record data.episodes now
load_examples(roots, to_examples)   # every recorded episode -> the domain's Examples

What a step of an episode teaches (the target text, the history, a weight) is the domain's
``to_examples(dataset, episode)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pixelrl.config import Config, ConfigError
from pixelrl.rl.text.rows import Example


def recorded_roots(root: Path) -> list[Path]:
    """The recordings at ``root``: the dataset itself, or each dataset folder inside it (one a
    task, as :func:`dataset_roots` records them)."""
    if not root.exists():
        raise ConfigError(f"data.dataset: no such folder {root}")
    subs = [p for p in sorted(root.iterdir()) if (p / "meta" / "info.json").is_file()]
    if not subs and not (root / "meta" / "info.json").is_file():
        raise ConfigError(f"data.dataset: {root} is not a recorded dataset (no meta/info.json)")
    return subs or [root]


def dataset_roots(cfg: Config, run, record: Callable[[Path], list[Path]]) -> list[Path]:
    """``data.dataset``'s recordings, or ``record(<run folder>/demos)``'s (``data.episodes`` of
    them; none when that is 0)."""
    if cfg.data.dataset:
        return recorded_roots(Path(cfg.data.dataset))
    if not int(cfg.data.episodes):
        return []
    return record(run.dir / "demos")


def record_expert(env, seeds: Iterable[int], expert: Callable[[Any], Callable[[], Any]],
                  desc: str, progress: bool) -> None:  # fmt: skip
    """One episode from each of ``seeds`` in ``env`` (a ``RecordEpisodes``), played by the
    expert: ``expert(env)``, called after each reset, gives the function of its next action.
    An expert that says what it aims at (``env.unwrapped.expert_target_bbox``, the MiniWoB++
    oracle's) has it recorded as the row's ``target_bbox`` where ``info`` gave none."""
    from tqdm import tqdm

    for seed in tqdm(seeds, desc=desc, disable=not progress):
        env.reset(seed=seed)
        next_action = expert(env)
        done = False
        while not done:
            action = next_action()
            aim = getattr(env.unwrapped, "expert_target_bbox", None)
            if aim is not None:
                env.aim(aim)
            _, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
    env.close()


def record_expert_on_ray(cfg: Config, env_id: str, kwargs: dict[str, Any], seeds: list[int],
                         root: Path) -> None:  # fmt: skip
    """The expert's (``expert_action()``) episodes of ``seeds`` played in ``envs.num_workers`` Ray
    workers (0: 2) and recorded here into the one dataset at ``root``
    (:mod:`pixelrl.envs.recording.remote`)."""
    from tqdm import tqdm

    from pixelrl.envs.recording.remote import expert_actions, record_in_ray
    from pixelrl.rl.vector_envs import ray_options

    opts = cfg.envs
    with tqdm(
        total=len(seeds), desc=f"expert {root.name} (ray)", disable=not cfg.train.progress
    ) as bar:
        record_in_ray(
            env_id,
            kwargs,
            seeds,
            root,
            expert_actions,
            num_workers=int(opts.num_workers) or 2,
            per_worker=int(opts.per_worker),
            progress=lambda k: bar.update(k - bar.n),
            **ray_options(opts),
        )


def load_examples(roots: Sequence[Path], to_examples: Callable[[Any, int], Iterable[Example]],
                  check: Callable[[Any, Path], None] | None = None) -> list[Example]:  # fmt: skip
    """Every episode of every recording at ``roots`` through ``to_examples(dataset, episode)``
    (``check(dataset, root)`` first: a recording the domain cannot learn from)."""
    from pixelrl.envs.recording import EpisodeDataset

    examples: list[Example] = []
    for root in roots:
        data = EpisodeDataset(root)
        if check is not None:
            check(data, root)
        for e in data.episodes:
            examples += to_examples(data, e)
    if not examples:
        raise ConfigError(f"no demonstration steps in {[str(r) for r in roots]}")
    return examples
