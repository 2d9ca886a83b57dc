"""Episodes played in Ray workers, recorded here into one dataset (issue 24).

The envs run in a :class:`pixelrl.envs.remote.RayVectorEnv`; this process chooses each episode's
seed, asks for the actions and writes every worker's episodes through
:class:`~pixelrl.envs.recording.wrapper.RecordVectorEpisodes`, so the dataset is the one an
in-process recording of the same seeds writes (crash-safe the same way). An env takes the next
seed as it finishes an episode; an episode a worker fault cut short is dropped by the recorder
and its seed played again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from pixelrl.envs.recording.format import EpisodeEntry


def seeded_env(env_id: str, kwargs: dict[str, Any]) -> gymnasium.Env:
    """One env that reports each episode's seed (what a recording worker builds)."""
    import pixelrl.envs  # noqa: F401  (registers the ids in the worker)
    from pixelrl.envs.recording.wrapper import SeedEachEpisode

    return SeedEachEpisode(gymnasium.make(env_id, **kwargs))


def record_in_ray(
    env_id: str,
    kwargs: dict[str, Any],
    seeds: Sequence[int] | Callable[[list[int | None]], Sequence[int]],
    root: str | Path,
    act: Callable[[Any], list[Any]],
    *,
    num_workers: int = 2,
    per_worker: int = 1,
    resume: bool = False,
    frame_format: str = "auto",
    progress: Callable[[int], None] | None = None,
    **ray_options: Any,
) -> list[EpisodeEntry]:
    """Record the episodes of ``seeds`` of ``env_id`` played by ``act`` in Ray workers into the
    dataset at ``root``; returns the episodes written.

    ``act(envs)``: one action per env of the ``RayVectorEnv`` (e.g. ``envs.call("expert_action")``).
    ``seeds``: a list, or a function of the seeds the dataset already holds (``resume``) giving
    the ones to record. ``progress(k)``: called with each finished episode's count.
    ``ray_options``: ``RayVectorEnv``'s (step_timeout, max_failures, address, ...).
    """
    from pixelrl.envs.recording.wrapper import RecordVectorEpisodes, info_at
    from pixelrl.envs.remote import RayVectorEnv

    envs = RayVectorEnv(
        functools.partial(seeded_env, env_id, kwargs), num_workers, per_worker, **ray_options
    )
    try:
        template = gymnasium.make(env_id, **kwargs)
        try:
            recorder = RecordVectorEpisodes(
                envs,
                root,
                template=template,
                record_autoresets=False,
                resume=resume,
                frame_format=frame_format,
            )
        finally:
            template.close()
    except BaseException:
        envs.close()
        raise
    if callable(seeds):
        seeds = seeds([e.seed for e in recorder.writer.entries])
    n, queue = envs.num_envs, list(seeds)
    playing: list[int | None] = [None] * n  # the seed each env is recording

    def start(rows) -> np.ndarray:
        mask, chosen = np.zeros(n, dtype=bool), [None] * n
        for i in rows:
            playing[i] = chosen[i] = queue.pop(0) if queue else None
            mask[i] = chosen[i] is not None
        if mask.any():
            recorder.reset(seed=chosen, options={"reset_mask": mask})
        return mask

    try:
        spare = ~start(range(n))  # more envs than seeds: the rest idle, unrecorded
        if spare.any():
            envs.reset(options={"reset_mask": spare})
        while any(s is not None for s in playing):
            _, _, terminated, truncated, infos = recorder.step(list(act(envs)))
            ended = [
                i for i in range(n) if playing[i] is not None and (terminated[i] or truncated[i])
            ]
            for i in ended:
                if info_at(infos, i).get("env_fault"):
                    queue.insert(0, playing[i])  # the recorder dropped it: play it again
                elif progress is not None:
                    progress(len(recorder.episodes))
            start(ended)
    finally:
        recorder.close()
    return recorder.episodes


def expert_actions(envs: Any) -> list[Any]:
    """Each env's scripted expert action (GUI envs with ``expert_action()``)."""
    return list(envs.call("expert_action"))


def random_actions(envs: Any) -> list[Any]:
    """A valid random action per env, drawn here from the env's action space (seed it with
    ``envs.single_action_space.seed(...)``)."""
    from pixelrl.envs.gui_action import sample_action

    return [sample_action(envs.single_action_space) for _ in range(envs.num_envs)]
