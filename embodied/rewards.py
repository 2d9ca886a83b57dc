"""The navigation turn reward as named, weighted terms (:mod:`pixelrl.rl.rewards`).

A text policy's turn runs one or more low-level steps; :func:`nav_reward_terms` scores it from the
navigation measures (:mod:`pixelrl.envs.nav.measures`), weighted by the recipe's
``grpo.rewards``. The multi-turn trainer's episodes (:mod:`pixelrl.embodied.vlm_episodes`) and
the TRL environment (:mod:`pixelrl.embodied.trl_env`) both score turns with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pixelrl.envs.nav.measures import SPL, Success
from pixelrl.rl.rewards import Reward, RewardTerm

# The recipes' grpo.rewards. early_stop: a stop away from the goal also pays the slack of the steps
# it leaves unused (x this weight), so ending a failing episode early never saves reward
DEFAULT_WEIGHTS = {"progress": 1.0, "slack": -0.01, "success": 2.5, "spl": 1.0, "format": 0.1,
                   "early_stop": 0.0}  # fmt: skip


@dataclass(frozen=True)
class TurnOutcome:
    """What a navigation turn's reward terms read (:func:`nav_reward_terms`)."""

    before: float  # DistanceToGoal before the turn
    info: dict[str, Any]  # the env's info after it
    steps: int  # the low-level steps it ran
    parsed: bool  # whether the answer parsed
    done: bool  # whether the episode ended
    unused: int = 0  # the steps of the budget a stop short of the goal left (unused_steps)
    agreement: float = 0.0  # time_decayed: the answer's steps' agreement with the expert


def _progress(turn: TurnOutcome) -> float:
    """Metres of geodesic distance gained over the turn (0 where either end is unreachable)."""
    after = turn.info["distance_to_goal"]
    return turn.before - after if np.isfinite(turn.before) and np.isfinite(after) else 0.0


def _at_end(measure: str):
    """A measure's value when the episode ended, else 0."""
    return lambda turn: turn.info[measure] if turn.done else 0.0


def nav_reward_terms(weights: dict[str, float], kind: str = "measures") -> tuple[RewardTerm, ...]:
    """A turn's reward terms, weighted by ``weights`` (``grpo.rewards``): ``slack`` a low-level
    step, ``format`` off when the answer did not parse, ``progress`` a metre of geodesic distance
    gained, and at the episode's end ``early_stop`` x the slack of each step a stop short of the
    goal left unused (so stopping at once scores no better than walking to the step limit), then
    ``success`` and ``spl``. ``kind="time_decayed"`` (VLN-R1): the answer's agreement with the
    expert instead of slack, format, progress and SPL."""
    # weighed per unused step: early_stop x slack (the floats of early_stop * slack * unused)
    per_unused_step = weights.get("early_stop", 0.0) * weights["slack"]
    early_stop = RewardTerm(
        "early_stop", lambda t: max(0, t.unused) if t.done else 0, per_unused_step
    )
    success = RewardTerm(Success.name, _at_end(Success.name), weights["success"])
    if kind == "time_decayed":
        return (RewardTerm("agreement", lambda t: t.agreement), early_stop, success)
    return (
        RewardTerm("slack", lambda t: t.steps, weights["slack"]),
        RewardTerm("format", lambda t: -float(not t.parsed), weights["format"]),
        RewardTerm("progress", _progress, weights["progress"]),
        early_stop,
        success,
        RewardTerm(SPL.name, _at_end(SPL.name), weights["spl"]),
    )


def turn_reward(weights: dict[str, float], turn: TurnOutcome, kind: str = "measures") -> float:
    """A turn's reward: the sum of :func:`nav_reward_terms` weighted by ``weights``."""
    return float(Reward(nav_reward_terms(weights, kind))(turn))


def measure_reward(
    rewards: dict[str, float],
    before: float,
    info: dict[str, Any],
    steps: int,
    parsed: bool,
    done: bool,
    unused: int = 0,
) -> float:
    """:func:`turn_reward` of the ``measures`` kind from its inputs one by one (the TRL
    environment's form)."""
    return turn_reward(rewards, TurnOutcome(before, info, steps, parsed, done, unused))


def unused_steps(env, info: dict[str, Any], stopped: bool) -> int:
    """The steps of the episode's budget left when the agent ``stopped`` short of the goal (0 when
    it did not stop, or stopped at the goal)."""
    if not stopped or info["success"]:
        return 0
    limit = (env.spec and env.spec.max_episode_steps) or env.unwrapped.cfg.max_episode_steps
    return int(limit - info["num_steps"])
