"""Replay: re-run each recorded episode's actions in its env from its seed and measure fidelity.

For an episode of ``T`` steps, frame ``t`` (0 = the reset observation, ``t`` = after ``t`` steps)
of every image/array key is compared with what the env returns now: exactly for PNG and NPZ
frames, within :data:`VIDEO_PSNR_DB` for MP4 (a lossy codec). Row columns (the navigation goal,
the instruction) are compared exactly, as are each step's reward and terminated/truncated flags
and the final ``success``. :attr:`EpisodeFidelity.first_divergent_step` is the first ``t`` where
anything differs (the frame after step ``t``, or the reward/flags of step ``t - 1``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import gymnasium
import numpy as np

from pixelrl.envs.recording import codec
from pixelrl.envs.recording.dataset import EpisodeDataset
from pixelrl.envs.recording.env_options import check_env_id, replay_kwargs
from pixelrl.envs.recording.format import DatasetError

VIDEO_PSNR_DB = 30.0


@dataclass
class EpisodeFidelity:
    """How faithfully one episode replays."""

    episode_index: int
    steps: int
    frames_compared: int = 0
    frames_matched: int = 0
    first_divergent_step: int | None = None
    rewards_match: bool = True
    done_match: bool = True
    success_match: bool = True
    recorded_success: bool | None = None
    replayed_success: bool | None = None
    error: str | None = None

    @property
    def frame_match_rate(self) -> float:
        return self.frames_matched / self.frames_compared if self.frames_compared else 0.0

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and self.first_divergent_step is None
            and self.frames_matched == self.frames_compared
            and self.rewards_match
            and self.done_match
            and self.success_match
        )

    def _diverged(self, step: int) -> None:
        if self.first_divergent_step is None:
            self.first_divergent_step = step


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def make_env(dataset: EpisodeDataset, env_kwargs: dict | None = None) -> gymnasium.Env:
    """The env the dataset was recorded in: ``meta/info.json``'s id and the options a recording
    may choose (:mod:`pixelrl.envs.recording.env_options`), with ``env_kwargs`` (the command
    line's) over them. Anything else in the file is a :class:`DatasetError` before any env
    is made."""
    where = f"{dataset.root}/meta/info.json"
    info = dataset.info
    env_id = check_env_id(info.env_id, where)
    kwargs = replay_kwargs(env_id, info.env_kwargs, env_kwargs, where)
    if info.max_episode_steps is not None:
        kwargs.setdefault("max_episode_steps", info.max_episode_steps)
    try:
        return gymnasium.make(env_id, **kwargs)
    except (TypeError, ValueError) as e:  # options the env refuses: one line, not a traceback
        message = str(e).split(" was raised from the environment creator")[0]
        raise DatasetError(f"{where}: cannot make {env_id}: {message}") from None


def replay_episode(env: gymnasium.Env, dataset: EpisodeDataset, episode: int) -> EpisodeFidelity:
    """Replay one episode of ``dataset`` in ``env`` and compare everything recorded."""
    entry = dataset.episodes[episode]
    rows = dataset.steps(episode)
    info = dataset.info
    result = EpisodeFidelity(episode, entry.length, recorded_success=entry.success)
    frame_keys = [k for k, f in info.features.items() if f.storage in ("png", "mp4", "npz")]
    recorded = {k: dataset.frames(episode, k) for k in frame_keys}
    row_features = [f for f in info.features.values() if f.storage in ("column", "text")]

    def compare(obs, t: int) -> None:
        parts = codec.split_observation(obs, info.features)
        same = True
        for k in frame_keys:
            now = np.asarray(parts[k])
            then = recorded[k][t]
            if info.features[k].storage == "mp4":
                same &= now.shape == then.shape and _psnr(now, then) >= VIDEO_PSNR_DB
            else:
                same &= now.shape == then.shape and np.array_equal(now, then)
        if t < entry.length:
            row = rows.iloc[t]
            for f in row_features:
                if f.storage == "text":
                    same &= str(parts[f.key]) == row[f.column]
                else:
                    same &= np.array_equal(
                        np.asarray(parts[f.key], dtype=f.dtype),
                        np.asarray(row[f.column], dtype=f.dtype),
                    )
        result.frames_compared += 1
        result.frames_matched += int(same)
        if not same:
            result._diverged(t)

    try:
        obs, last_info = env.reset(seed=entry.seed, options=entry.options)
        compare(obs, 0)
        screen = dataset.screen_size
        for t in range(entry.length):
            row = rows.iloc[t]
            action = codec.decode_action(row["action"], info.action_format, screen)
            obs, reward, terminated, truncated, last_info = env.step(action)
            if not np.isclose(float(reward), float(row["reward"]), rtol=0, atol=1e-9):
                result.rewards_match = False
                result._diverged(t + 1)
            if bool(terminated) != bool(row["terminated"]) or bool(truncated) != bool(
                row["truncated"]
            ):
                result.done_match = False
                result._diverged(t + 1)
            compare(obs, t + 1)
            if (terminated or truncated) and t + 1 < entry.length:
                result.error = f"the env ended the episode after {t + 1} of {entry.length} steps"
                result.frames_compared += entry.length - (t + 1)  # the frames never reached
                break
    except Exception as e:  # an action the env now rejects is a divergence, not a crash
        result.error = f"{type(e).__name__}: {e}"
        result._diverged(result.frames_compared)
    result.replayed_success = codec.success(last_info) if result.error is None else None
    result.success_match = result.replayed_success == result.recorded_success
    return result


def replay_dataset(
    root: str | os.PathLike | EpisodeDataset,
    episodes: Iterable[int] | None = None,
    env_factory: Callable[[], gymnasium.Env] | None = None,
    progress: bool = False,
    env_kwargs: dict | None = None,
) -> list[EpisodeFidelity]:
    """Replay every (or the given) episode; one :class:`EpisodeFidelity` each. ``env_kwargs``:
    options of the caller's (the command line's) over the recording's (see :func:`make_env`)."""
    dataset = root if isinstance(root, EpisodeDataset) else EpisodeDataset(root)
    indices = list(dataset.episodes) if episodes is None else list(episodes)
    env = env_factory() if env_factory is not None else make_env(dataset, env_kwargs)
    results = []
    try:
        iterator = indices
        if progress:
            from tqdm import tqdm

            iterator = tqdm(indices, desc="replay", unit="episode")
        for i in iterator:
            results.append(replay_episode(env, dataset, i))
    finally:
        env.close()
    return results


def fidelity_table(results: list[EpisodeFidelity]) -> str:
    """A plain-text table: one line per episode and a total."""
    header = f"{'episode':>7} {'steps':>5} {'frames':>11} {'match':>7} {'first div':>9} {'reward':>6} {'done':>5} {'success':>9}  error"
    lines = [header, "-" * len(header)]

    def yn(b: bool) -> str:
        return "ok" if b else "DIFF"

    for r in results:
        first = "-" if r.first_divergent_step is None else str(r.first_divergent_step)
        lines.append(
            f"{r.episode_index:>7} {r.steps:>5} {r.frames_matched:>5}/{r.frames_compared:<5} "
            f"{100 * r.frame_match_rate:>6.1f}% {first:>9} {yn(r.rewards_match):>6} "
            f"{yn(r.done_match):>5} {yn(r.success_match):>9}  {r.error or ''}"
        )
    good = sum(r.ok for r in results)
    frames = sum(r.frames_compared for r in results)
    matched = sum(r.frames_matched for r in results)
    rate = 100 * matched / frames if frames else 0.0
    lines.append("-" * len(header))
    lines.append(
        f"{good}/{len(results)} episodes replay exactly; frames {matched}/{frames} ({rate:.1f}%)"
    )
    return "\n".join(lines)
