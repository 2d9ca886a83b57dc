"""Evaluation of GUI agents: task success per family (95% CI) and ScreenSpot-style grounding.

- :func:`evaluate_success` plays ``episodes`` held-out episodes (odd seeds, see
  :class:`pixelrl.gui_agent.pointer_env.SplitSeeds`) of a desktop env and reports, per task family, the
  success rate with its Wilson 95% interval.
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

from pixelrl.stats import wilson_interval


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
) -> list[dict[str, Any]]:
    """Success rate per family over ``episodes`` held-out episodes (module doc); ``seeds``
    names the episodes' seeds instead (one episode each; ``episodes`` and ``seed`` unused)."""
    import gymnasium as gym
    from tqdm import tqdm

    import pixelrl.envs  # noqa: F401

    env = gym.make(env_id, **(env_kwargs or {}))
    counts: dict[str, list[float]] = defaultdict(list)
    returns: dict[str, list[float]] = defaultdict(list)
    rng = np.random.default_rng(seed)
    if seeds is None:  # odd: held out from training
        seeds = [2 * int(rng.integers(0, 2**30)) + 1 for _ in range(episodes)]
    try:
        for episode_seed in tqdm(seeds, desc=f"eval {env_id}", disable=not progress, unit="ep"):
            result = run_episode(env, agent, int(episode_seed))
            counts[result["family"] or env_id].append(float(result["success"]))
            returns[result["family"] or env_id].append(result["return"])
    finally:
        env.close()
    rows = _rows(counts, "success")
    for row in rows:  # the mean return too: shaped rewards show partial progress
        values = [v for f, vs in returns.items() if row["family"] in (f, "all") for v in vs]
        row["return"] = float(np.mean(values))
    return rows


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
