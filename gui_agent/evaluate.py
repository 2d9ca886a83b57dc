"""Evaluation of GUI agents: task success per family (95% CI) and ScreenSpot-style grounding.

- :func:`evaluate_success` plays ``episodes`` held-out episodes (the held-out
  seeds of the env's task family, odd for GUI ones: :mod:`pixelrl.envs.families`) of a desktop env and reports, per task family, the
  success rate with its Wilson 95% interval. A VLM agent plays ``batch_size`` episodes together
  (:func:`play_episodes`: one batched ``generate`` per step, the same results for greedy answers).
- :func:`evaluate_grounding` asks the agent for one action on each item of a grounding set
  (:mod:`pixelrl.gui_agent.grounding`) and reports the share of predicted points inside the target box
  (:func:`pixelrl.vision.rewards.point_in_box`; an action without a point counts as a miss), per family.

Both return rows (dicts) that :func:`format_table` prints.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from pixelrl.envs.families import seeds_of
from pixelrl.stats import wilson_interval

# Episodes a VLM agent plays together by default (evaluate_success, pixelrl eval --batch).
DEFAULT_BATCH = 8


def _rows(counts: dict[str, list[float]], what: str) -> list[dict[str, Any]]:
    rows = []
    total: list[float] = []
    for family in sorted(counts):
        values = counts[family]
        total.extend(values)
        lo, hi = wilson_interval(int(sum(values)), len(values))
        rows.append({"family": family, "n": len(values), what: float(np.mean(values)),
                     "ci_low": lo, "ci_high": hi})  # fmt: skip
    if len(counts) > 1:
        lo, hi = wilson_interval(int(sum(total)), len(total))
        rows.append({"family": "all", "n": len(total), what: float(np.mean(total)),
                     "ci_low": lo, "ci_high": hi})  # fmt: skip
    return rows


def run_episode(env, agent, seed: int, on_step=None) -> dict[str, Any]:
    """Play one episode of a GUI env (raw ``screenshot`` + ``instruction`` observations) with
    ``agent``; an action the env refuses is replaced by ``wait`` (the step is spent).
    ``on_step(obs, action, reward, info, next_obs)`` sees every step (for GIFs)."""
    from pixelrl.envs.gui_action import Action, ActionError

    agent.reset()
    obs, info = env.reset(seed=seed)
    if hasattr(agent, "on_reset"):  # what an agent reads of the episode besides pixels
        agent.on_reset(env, info)
    family = info.get("family", "")
    total, steps = 0.0, 0
    while True:
        action = agent.act(obs["screenshot"], obs["instruction"])
        try:
            next_obs, reward, terminated, truncated, info = env.step(action)
        except ActionError:
            action = Action.wait()
            next_obs, reward, terminated, truncated, info = env.step(action)
        if on_step is not None:
            on_step(obs, action, reward, info, next_obs)
        obs = next_obs
        total += reward
        steps += 1
        if terminated or truncated:
            break
    return {"family": family, "success": bool(info.get("success", False)), "return": total,
            "length": steps}  # fmt: skip


def evaluate_success(
    agent,
    env_id: str,
    episodes: int = 100,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
    seeds: Sequence[int] | None = None,
    batch_size: int = DEFAULT_BATCH,
) -> list[dict[str, Any]]:
    """Success rate per family over ``episodes`` held-out episodes (module doc); ``seeds``
    names the episodes' seeds instead (one episode each; ``episodes`` and ``seed`` unused).
    ``batch_size``: episodes a VLM agent plays together (:func:`play_episodes`)."""
    if seeds is None:  # the family's held-out split (GUI: odd seeds)
        seeds = seeds_of(env_id).seeds("eval", episodes, np.random.default_rng(seed))
    results = play_episodes(agent, env_id, seeds, env_kwargs, progress, batch_size)
    return success_rows(results, env_id)


def success_rows(results: Sequence[dict[str, Any]], env_id: str) -> list[dict[str, Any]]:
    """:func:`evaluate_success`'s rows from :func:`play_episodes`' results: per family the
    success rate, its Wilson interval and the mean return."""
    counts: dict[str, list[float]] = defaultdict(list)
    returns: dict[str, list[float]] = defaultdict(list)
    for result in results:
        counts[result["family"] or env_id].append(float(result["success"]))
        returns[result["family"] or env_id].append(result["return"])
    rows = _rows(counts, "success")
    for row in rows:  # the mean return too: shaped rewards show partial progress
        values = [v for f, vs in returns.items() if row["family"] in (f, "all") for v in vs]
        row["return"] = float(np.mean(values))
    return rows


def play_episodes(
    agent,
    env_id: str,
    seeds: Sequence[int],
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
    batch_size: int = DEFAULT_BATCH,
) -> list[dict[str, Any]]:
    """One episode per seed (:func:`run_episode`'s result each, in the seeds' order).

    An agent that acts for several episodes at once (a :class:`~pixelrl.gui_agent.agents.VLMAgent`:
    ``act_episodes``) plays up to ``batch_size`` of them together, each in its own env, with
    one batched ``generate`` per step over the episodes still running; a finished episode's
    env starts the next seed. Greedy answers give the same results as ``batch_size=1`` (one
    episode at a time, as any other agent plays)."""
    import gymnasium as gym
    from tqdm import tqdm

    import pixelrl.envs  # noqa: F401

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    seeds = [int(s) for s in seeds]
    size = min(batch_size, len(seeds)) if callable(getattr(agent, "act_episodes", None)) else 1
    envs = []
    try:
        for _ in range(max(size, 1)):
            envs.append(gym.make(env_id, **(env_kwargs or {})))
        with tqdm(total=len(seeds), desc=f"eval {env_id}", disable=not progress, unit="ep") as bar:
            if size <= 1:
                results = []
                for episode_seed in seeds:
                    results.append(run_episode(envs[0], agent, episode_seed))
                    bar.update(1)
                return results
            return _play_batched(agent, envs, seeds, bar)
    finally:
        for env in envs:
            env.close()


def _play_batched(agent, envs: list, seeds: list[int], bar) -> list[dict[str, Any]]:
    """:func:`play_episodes` with ``len(envs)`` episodes at a time (its doc)."""
    from pixelrl.envs.gui_action import Action, ActionError

    results: list[dict[str, Any] | None] = [None] * len(seeds)
    upcoming = iter(enumerate(seeds))
    running: dict[int, dict[str, Any]] = {}  # env slot -> the episode playing there

    def start(i: int) -> None:
        for k, episode_seed in upcoming:
            obs, info = envs[i].reset(seed=episode_seed)
            running[i] = {"k": k, "obs": obs, "history": [], "family": info.get("family", ""),
                          "return": 0.0, "length": 0}  # fmt: skip
            return

    for i in range(len(envs)):
        start(i)
    while running:
        slots = sorted(running)
        episodes = [running[i] for i in slots]
        actions = agent.act_episodes([e["obs"]["screenshot"] for e in episodes],
                                     [e["obs"]["instruction"] for e in episodes],
                                     [e["history"] for e in episodes])  # fmt: skip
        for i, episode, action in zip(slots, episodes, actions):
            try:  # an action the env refuses is replaced by wait (the step is spent)
                obs, reward, terminated, truncated, info = envs[i].step(action)
            except ActionError:
                obs, reward, terminated, truncated, info = envs[i].step(Action.wait())
            episode["obs"] = obs
            episode["return"] += reward
            episode["length"] += 1
            if terminated or truncated:
                results[episode["k"]] = {
                    "family": episode["family"], "success": bool(info.get("success", False)),
                    "return": episode["return"], "length": episode["length"],
                }  # fmt: skip
                del running[i]
                bar.update(1)
                start(i)
    return results  # type: ignore[return-value]


def evaluate_grounding(
    agent, items: Sequence, batch_size: int = 16, progress: bool = True
) -> list[dict[str, Any]]:
    """ScreenSpot accuracy per family on grounding ``items`` (module doc)."""
    from tqdm import tqdm

    from pixelrl.vision.rewards import point_in_box

    counts: dict[str, list[float]] = defaultdict(list)
    for start in tqdm(
        range(0, len(items), batch_size), desc="grounding", disable=not progress, unit="batch"
    ):
        batch = items[start : start + batch_size]
        if hasattr(agent, "reset"):
            agent.reset()
        kwargs = {"histories": [[] for _ in batch]} if hasattr(agent, "vlm") else {}
        actions = agent.act_batch([i.screenshot for i in batch], [i.instruction for i in batch],
                                  **kwargs)  # fmt: skip
        hits = point_in_box([a.point for a in actions], [i.bbox for i in batch])
        for item, hit in zip(batch, hits):
            counts[item.family].append(float(hit))
    return _rows(counts, "accuracy")


def format_table(rows: Sequence[dict[str, Any]], measure: str, title: str = "") -> str:
    """Rows as a fixed-width table: family, n, the measure and its 95% interval."""
    lines = [title] if title else []
    lines.append(f"{'family':<22}{'n':>6}{measure:>12}{'95% CI':>18}")
    for r in rows:
        ci = f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        lines.append(f"{r['family']:<22}{r['n']:>6}{r[measure]:>12.3f}{ci:>18}")
    return "\n".join(lines)
