"""Gymnasium wrappers that record every episode an env plays into a dataset folder.

``RecordEpisodes(env, "demos/")`` records a single env; :class:`RecordVectorEpisodes` records
each sub-env of a vector env. Every episode must be replayable from its seed, so each reset gets
an explicit seed: the caller's, or one drawn from a generator seeded by the last seed the
caller gave (so ``reset(seed=0)`` then ``reset()``... stays reproducible) — see
:class:`SeedEachEpisode`. An episode is written when it terminates or is truncated; one that is
cut short (a new ``reset``, ``close``, a crash) is dropped, never half-written.
"""

from __future__ import annotations

import json
import os
from typing import Any

import gymnasium
import numpy as np

from pixelrl.envs.recording import codec
from pixelrl.envs.recording.env_options import recordable_kwargs
from pixelrl.envs.recording.format import DatasetError, DatasetInfo, EpisodeEntry
from pixelrl.envs.recording.writer import DatasetWriter, EpisodeRecorder

SEED_INFO_KEY = "episode_seed"
VECTOR_KWARGS = ("num_envs", "vectorization_mode", "vector_kwargs", "wrappers")
MAX_SEED = 2**31 - 1


class SeedSource:
    """Hands out one explicit seed per episode: the caller's, or the next one drawn from a
    generator that the caller's last seed re-seeds (fresh entropy until one is given)."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def __call__(self, seed: int | None) -> int:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            return int(seed)
        return int(self._rng.integers(0, MAX_SEED))


class SeedEachEpisode(gymnasium.Wrapper):
    """Resets the env with an explicit seed every time and reports it in ``info['episode_seed']``.

    Wrap the sub-envs of a vector env with this so that :class:`RecordVectorEpisodes` learns the
    seed of each episode the vector env's autoreset starts.
    """

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self._seeds = SeedSource()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        seed = self._seeds(seed)
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, {**info, SEED_INFO_KEY: seed}


def dataset_info_for(
    env: gymnasium.Env,
    observation_space=None,
    action_space=None,
    frame_format: str = "auto",
    fps: float | None = None,
    extra: dict | None = None,
) -> DatasetInfo:
    """The ``meta/info.json`` contents for recording ``env`` (its id and kwargs from ``env.spec``)."""
    observation_space = observation_space or env.observation_space
    action_space = action_space or env.action_space
    spec = env.spec
    env_id = spec.id if spec is not None else None
    # the options a recording may carry (the host's, such as a display, stay out: replay
    # takes those from its command line)
    kwargs = recordable_kwargs(env_id, dict(spec.kwargs)) if spec is not None else {}
    for k, v in kwargs.items():
        try:
            json.dumps(v)
        except (TypeError, ValueError):
            raise DatasetError(
                f"env kwarg {k!r}={v!r} is not JSON; replay needs every kwarg in meta/info.json"
            ) from None
    fps = fps or env.metadata.get("render_fps") or 10
    return DatasetInfo(
        env_id=env_id,
        env_kwargs=kwargs,
        fps=float(fps),
        features=codec.infer_features(observation_space, frame_format),
        action_format=codec.action_format(action_space),
        max_episode_steps=getattr(spec, "max_episode_steps", None),
        extra=dict(extra or {}),
    )


class RecordEpisodes(gymnasium.Wrapper):
    """Records each episode of ``env`` into the dataset at ``root`` (see pixelrl.envs.recording.format).

    Args:
        env: any pixelrl env (GUI or navigation); made with ``gymnasium.make`` so that its id and
            kwargs are known to replay.
        root: the dataset folder (created, or appended to with ``resume=True``).
        frame_format: ``auto`` (PNG for GUI screenshots, MP4 for camera frames), ``png`` or ``mp4``.
        info_keys: the ``info`` entries to keep in the ``info`` column (default: every JSON-able one).
        fps: frames per second written in meta/info.json and used for videos.
        fsync: also flush every file to disk (survives power loss, not only a killed process).
    """

    def __init__(
        self,
        env: gymnasium.Env,
        root: str | os.PathLike,
        *,
        frame_format: str = "auto",
        resume: bool = False,
        info_keys: list[str] | None = None,
        fps: float | None = None,
        fsync: bool = False,
        extra: dict | None = None,
    ) -> None:
        super().__init__(env)
        info = dataset_info_for(env, frame_format=frame_format, fps=fps, extra=extra)
        self.writer = DatasetWriter(root, info, resume=resume, fsync=fsync)
        self.info_keys = info_keys
        self._screen = (
            codec.gui_screen_size(env.action_space) if info.action_format == "pyautogui" else None
        )
        self._seeds = SeedSource()
        self._episode: EpisodeRecorder | None = None
        self.episodes: list[EpisodeEntry] = []  # recorded by this wrapper, in order

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if self._episode is not None:
            self._episode.discard()
        seed = self._seeds(seed)
        obs, info = self.env.reset(seed=seed, options=options)
        self._episode = self.writer.begin_episode(obs, seed, options, info)
        return obs, info

    def step(self, action):
        if self._episode is None:
            raise gymnasium.error.ResetNeeded(
                "call reset() before step(): nothing is being recorded"
            )
        stored = codec.encode_action(action, self.writer.info.action_format, self._screen)
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._episode.add_step(stored, reward, terminated, truncated, info, obs, self.info_keys)
        if terminated or truncated:
            self.episodes.append(self._episode.finish())
            self._episode = None
        return obs, reward, terminated, truncated, info

    def aim(self, box) -> None:
        """Record ``box`` as the target of the next action where the env's ``info`` has none
        (the expert's own aim: ``env.unwrapped.expert_target_bbox`` of the MiniWoB++ oracle)."""
        if self._episode is None:
            raise gymnasium.error.ResetNeeded(
                "call reset() before aim(): nothing is being recorded"
            )
        self._episode.aim(box)

    def close(self) -> None:
        if self._episode is not None:
            self._episode.discard()
            self._episode = None
        self.writer.close()
        super().close()


def item_at(batch: Any, i: int) -> Any:
    """Element ``i`` of a batched observation or action: a dict of arrays, an array, or a
    tuple (Gymnasium batches Text spaces as tuples of strings)."""
    if isinstance(batch, dict):
        return {k: item_at(v, i) for k, v in batch.items()}
    return batch[i]


def info_at(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Sub-env ``i``'s entries of a vector env's info dict (Gymnasium masks them with ``_key``)."""
    out = {}
    for k, v in infos.items():
        if k.startswith("_"):
            continue
        mask = infos.get(f"_{k}")
        if mask is not None and not bool(mask[i]):
            continue
        out[k] = info_at(v, i) if isinstance(v, dict) else v[i]
    return out


class RecordVectorEpisodes(gymnasium.vector.VectorWrapper):
    """Records every sub-env episode of a vector env into one dataset.

    The sub-envs must be wrapped in :class:`SeedEachEpisode` (so each autoreset's seed is known);
    :func:`make_recording_vector_env` builds such a vector env from an id. Supports Gymnasium's
    default ``NEXT_STEP`` autoreset, where the step after an episode's end only resets that env,
    and ``SAME_STEP`` (``pixelrl.envs.remote.RayVectorEnv``: every worker's episodes into this one
    dataset), where the episode's last observation and info come in ``final_obs`` /
    ``final_info``; an episode a worker fault ended (``env_fault``) never finished and is
    dropped. ``reset(options={"reset_mask": m})`` starts episodes on the masked envs only.
    ``record_autoresets=False``: an episode an autoreset starts is not recorded (the caller
    resets the env with a seed of its choosing); ``template``: an env like the sub-envs, for the
    dataset's env id and kwargs when the vector env has no spec.
    """

    def __init__(
        self,
        env: gymnasium.vector.VectorEnv,
        root: str | os.PathLike,
        *,
        frame_format: str = "auto",
        resume: bool = False,
        info_keys: list[str] | None = None,
        fps: float | None = None,
        fsync: bool = False,
        record_autoresets: bool = True,
        template: gymnasium.Env | None = None,
    ) -> None:
        super().__init__(env)
        mode = env.metadata.get("autoreset_mode")
        mode = getattr(mode, "name", str(mode)) if mode is not None else "NEXT_STEP"
        if mode not in ("NEXT_STEP", "SAME_STEP"):
            raise ValueError(
                f"RecordVectorEpisodes supports the NEXT_STEP and SAME_STEP autoreset modes, not {mode}"
            )
        self._same_step = mode == "SAME_STEP"
        self.record_autoresets = record_autoresets
        owns_template = template is None
        if template is None:
            spec = env.spec
            if spec is None:
                raise DatasetError(
                    "the vector env has no spec: make it with gymnasium.make_vec, or pass template"
                )
            # make_vec's spec carries the vector's own kwargs beside the sub-env's: leave them out
            kwargs = {k: v for k, v in spec.kwargs.items() if k not in VECTOR_KWARGS}
            template = gymnasium.make(spec.id, max_episode_steps=spec.max_episode_steps, **kwargs)
        try:
            info = dataset_info_for(
                template,
                env.single_observation_space,
                env.single_action_space,
                frame_format,
                fps,
            )
        finally:
            if owns_template:  # the caller's template is the caller's to close
                template.close()
        self.writer = DatasetWriter(root, info, resume=resume, fsync=fsync)
        self.info_keys = info_keys
        self._screen = (
            codec.gui_screen_size(env.single_action_space)
            if info.action_format == "pyautogui"
            else None
        )
        self._episodes: list[EpisodeRecorder | None] = [None] * env.num_envs
        self._autoreset = np.zeros(env.num_envs, dtype=bool)
        self.episodes: list[EpisodeEntry] = []

    def _begin(self, i: int, obs, infos) -> None:
        info = info_at(infos, i)
        if SEED_INFO_KEY not in info:
            raise DatasetError(
                "sub-env reset info lacks 'episode_seed': wrap each sub-env in SeedEachEpisode "
                "(make_recording_vector_env does)"
            )
        if self._episodes[i] is not None:
            self._episodes[i].discard()
        self._episodes[i] = self.writer.begin_episode(
            item_at(obs, i), info[SEED_INFO_KEY], None, info
        )

    def reset(self, *, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        mask = (options or {}).get("reset_mask")
        for i in range(self.num_envs):
            if mask is None or mask[i]:
                self._begin(i, obs, infos)
                self._autoreset[i] = False
        return obs, infos

    def step(self, actions):
        fmt = self.writer.info.action_format
        stored = [
            None
            if self._autoreset[i] or self._episodes[i] is None
            else codec.encode_action(item_at(actions, i), fmt, self._screen)
            for i in range(self.num_envs)
        ]
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        for i in range(self.num_envs):
            if self._autoreset[i]:  # this step only reset sub-env i: a new episode starts
                if self.record_autoresets:
                    self._begin(i, obs, infos)
                continue
            info, step_obs = info_at(infos, i), item_at(obs, i)
            ended = bool(terminated[i] or truncated[i])
            if self._same_step and ended:  # obs and info are already the next episode's
                step_obs, info = info["final_obs"], info["final_info"]
            episode = self._episodes[i]
            if episode is not None:
                if ended and info.get("env_fault"):  # it never really ended: not an episode
                    episode.discard()
                else:
                    episode.add_step(
                        stored[i],
                        rewards[i],
                        terminated[i],
                        truncated[i],
                        info,
                        step_obs,
                        self.info_keys,
                    )
                    if ended:
                        self.episodes.append(episode.finish())
                self._episodes[i] = None if ended else episode
            if ended and self._same_step and self.record_autoresets:
                self._begin(i, obs, infos)
        if not self._same_step:
            self._autoreset = np.logical_or(terminated, truncated)
        return obs, rewards, terminated, truncated, infos

    def close(self, **kwargs) -> None:
        for episode in self._episodes:
            if episode is not None:
                episode.discard()
        self._episodes = [None] * self.num_envs
        self.writer.close()
        super().close(**kwargs)


def make_recording_vector_env(
    env_id: str,
    num_envs: int,
    root: str | os.PathLike,
    vectorization_mode: str = "sync",
    env_kwargs: dict | None = None,
    **record_kwargs,
) -> RecordVectorEpisodes:
    """A vector env of ``num_envs`` copies of ``env_id`` recording into ``root``."""
    vec = gymnasium.make_vec(
        env_id,
        num_envs=num_envs,
        vectorization_mode=vectorization_mode,
        wrappers=[SeedEachEpisode],
        **(env_kwargs or {}),
    )
    return RecordVectorEpisodes(vec, root, **record_kwargs)
