"""Navigation envs (PointNav, ObjectNav, InstructNav) as a TRL environment (:mod:`pixelrl.trl_env`).

The tools are habitat's actions, with a repeat count as the navigation VLM agent writes them
(``move_forward(3)``); a tool answers with the new RGB frame and the goal in words
(:func:`pixelrl.embodied.vlm_agent.goal_text`: "The goal is 3.2 m away, 40 degrees to your
left."). Each tool call is one *turn* and is scored as our multi-turn trainer scores a turn
(:func:`pixelrl.embodied.rewards.measure_reward`: geodesic progress, slack, and Success and
SPL at the end, weighted by the navigation recipe's ``grpo.rewards``); ``get_reward`` is their
sum. A malformed tool call never reaches the env (TRL answers it with an error), so the trainer's
format penalty has no counterpart here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pixelrl.embodied.rewards import measure_reward, unused_steps
from pixelrl.embodied.vlm_agent import TASKS, goal_text
from pixelrl.embodied.vlm_train import DEFAULTS
from pixelrl.envs.gui_action import ActionError
from pixelrl.envs.nav.tasks import STOP
from pixelrl.envs.nav.toolcall import MAX_REPEAT, tool_actions
from pixelrl.trl_env import NAV_PROMPT, ToolEnvironment, ToolError

__all__ = ["MAX_REPEAT", "NavEnvironment"]


class NavEnvironment(ToolEnvironment):
    """A navigation env as TRL tools. ``rewards`` overrides the weights of
    ``embodied/vlm-grpo``'s ``grpo.rewards`` (progress, slack, success, spl)."""

    PROMPT = NAV_PROMPT

    def __init__(self, env_id: str, rewards: dict[str, float] | None = None, **env_kwargs: Any):
        if env_id not in TASKS:
            raise ToolError(f"no navigation task for {env_id!r}; known: {', '.join(TASKS)}")
        weights = dict(DEFAULTS["grpo"]["rewards"])
        unknown = set(rewards or {}) - set(weights)
        if unknown:
            raise ToolError(f"rewards: unknown keys {sorted(unknown)}; known: {sorted(weights)}")
        super().__init__(env_id, **env_kwargs)
        self.task, self.rewards = TASKS[env_id], {**weights, **(rewards or {})}

    def _describe(self) -> str:
        return goal_text(self._obs, self.task)

    def _image(self) -> np.ndarray:
        return self._obs["rgb"]

    def _reward(self, reward: float, info: dict[str, Any], done: bool) -> float:
        return 0.0  # a call is scored as a whole, as a turn (_turn)

    def _turn(self, tool: str, **arguments: Any) -> list:
        """Play the tool call: its actions are the navigation tool-call dialect's
        (:func:`pixelrl.envs.nav.toolcall.tool_actions`), so a model that learnt that dialect
        in our SFT means the same here."""
        try:
            actions = tool_actions(tool, arguments)
        except ActionError as e:
            raise ToolError(str(e)) from None
        before, steps = self._info["distance_to_goal"], self._info["num_steps"]
        answer = self._play(actions)
        unused = unused_steps(self.env, self._info, actions[-1] == STOP) if self._over else 0
        self._return += measure_reward(self.rewards, before, self._info,
                                       self._info["num_steps"] - steps, True, self._over, unused)  # fmt: skip
        return answer

    def move_forward(self, steps: int = 1) -> list:
        """Walk straight ahead.

        Args:
            steps: How many steps to take (1 to 10; 0.25 m each by default).

        Returns:
            The new camera frame and the goal in words.
        """
        return self._turn("move_forward", steps=steps)

    def turn_left(self, times: int = 1) -> list:
        """Turn left on the spot.

        Args:
            times: How many turns to make (1 to 10; 10 degrees each for PointNav, 30 for ObjectNav).

        Returns:
            The new camera frame and the goal in words.
        """
        return self._turn("turn_left", times=times)

    def turn_right(self, times: int = 1) -> list:
        """Turn right on the spot.

        Args:
            times: How many turns to make (1 to 10; 10 degrees each for PointNav, 30 for ObjectNav).

        Returns:
            The new camera frame and the goal in words.
        """
        return self._turn("turn_right", times=times)

    def stop(self) -> list:
        """Stop here: say the goal is reached; the episode ends.

        Returns:
            The last camera frame and the outcome.
        """
        return self._turn("stop")
