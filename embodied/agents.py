"""Agents for the navigation benchmark, with habitat's ``Agent`` interface.

An agent has ``reset()`` (called before each episode) and ``act(observations) -> action``
where ``observations`` is one env's observation dict and the action an int (0 stop,
1 move_forward, 2 turn_left, 3 turn_right) or habitat's ``{"action": int}``. So a habitat-lab
user's agent plugs into :class:`pixelrl.embodied.benchmark.Benchmark` unchanged.

- :class:`PolicyAgent` -- a trained policy (from a checkpoint: :meth:`PolicyAgent.from_checkpoint`),
  keeping its recurrent state across the steps of an episode.
- :class:`ExpertAgent` -- the simulator's shortest-path follower (privileged: reads the env).
- :class:`RandomAgent`, :class:`ForwardOnlyAgent`, :class:`StopAgent` -- baselines.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT = 0, 1, 2, 3


@runtime_checkable
class Agent(Protocol):
    def reset(self) -> None: ...

    def act(self, observations: dict[str, Any]) -> int | dict[str, int]: ...


class RandomAgent:
    """Uniform over the four actions (habitat's RandomAgent samples the same way)."""

    def __init__(self, seed: int = 0, num_actions: int = 4):
        self.rng = np.random.default_rng(seed)
        self.num_actions = num_actions

    def reset(self) -> None:
        pass

    def act(self, observations: dict[str, Any]) -> int:
        return int(self.rng.integers(self.num_actions))


class ForwardOnlyAgent:
    """Always ``move_forward``: never calls stop, so it never succeeds (habitat's baseline)."""

    def reset(self) -> None:
        pass

    def act(self, observations: dict[str, Any]) -> int:
        return MOVE_FORWARD


class StopAgent:
    """Calls ``stop`` at the start: Success 0 unless an episode starts at its goal."""

    def reset(self) -> None:
        pass

    def act(self, observations: dict[str, Any]) -> int:
        return STOP


class ExpertAgent:
    """The shortest-path follower of ``pixelrl.envs.nav`` on the env's current episode.

    ``env`` is the benchmark's env (``Benchmark.env``); the follower reads the agent's true
    pose and the episode's geodesic field from it, as habitat's ``ShortestPathFollowerAgent``.
    ``goal_radius`` defaults to a little inside the success distance.
    """

    def __init__(self, env: Any, goal_radius: float | None = None):
        self.env = env.unwrapped
        self.goal_radius = goal_radius
        self._follower = None
        self._episode = None

    def reset(self) -> None:
        self._follower, self._episode = None, None

    def act(self, observations: dict[str, Any]) -> int:
        state = self.env.state
        if self._follower is None or self._episode is not state.episode:
            self._follower = follower_for(self.env.cfg, state, self.goal_radius)
            self._episode = state.episode
        return int(self._follower.get_next_action(state.position, state.yaw))


def follower_for(cfg: Any, state: Any, goal_radius: float | None = None):
    """A shortest-path follower for the episode of ``state`` (a ``NavEpisodeState``);
    ``goal_radius`` defaults to a little inside the success distance."""
    from pixelrl.envs.nav.follower import ShortestPathFollower

    radius = goal_radius if goal_radius is not None else 0.75 * cfg.success_radius
    return ShortestPathFollower(
        state.field, radius, cfg.turn_degrees, cfg.forward_step, cfg.allow_sliding
    )


class FollowerTeacher:
    """The shortest-path follower of every agent of a ``NavVectorEnv``: called with no
    arguments, the actions for the agents' current states (the teacher of
    ``pixelrl.rl.imitation``)."""

    def __init__(self, envs: Any, goal_radius: float | None = None):
        self.envs = envs.unwrapped if hasattr(envs, "unwrapped") else envs
        self.goal_radius = goal_radius
        self._followers: list[Any] = [None] * self.envs.num_envs
        self._episodes: list[Any] = [None] * self.envs.num_envs

    def __call__(self) -> np.ndarray:
        actions = np.zeros(self.envs.num_envs, np.int64)
        for i, state in enumerate(self.envs.states):
            if self._episodes[i] is not state.episode:
                self._followers[i] = follower_for(self.envs.cfg, state, self.goal_radius)
                self._episodes[i] = state.episode
            actions[i] = self._followers[i].get_next_action(state.position, state.yaw)
        return actions


class PolicyAgent:
    """A ``pixelrl.rl.policy.Policy`` acting in one env, one observation at a time."""

    def __init__(
        self, policy: Any, deterministic: bool = False, device: str = "cpu", seed: int = 0
    ):
        import torch

        self.policy, self.deterministic, self.device = policy, deterministic, torch.device(device)
        self.policy.eval()
        self.generator_seed = seed
        torch.manual_seed(seed)
        self.state = None

    @classmethod
    def from_checkpoint(
        cls, path: str, observation_space, action_space, **kwargs: Any
    ) -> PolicyAgent:
        """Rebuild the checkpoint's policy through its recipe and load the weights."""
        from pixelrl.checkpoint import load_checkpoint
        from pixelrl.config import Config
        from pixelrl.recipes import get_recipe

        ckpt = load_checkpoint(path)
        cfg = Config(ckpt["config"])
        policy = (
            get_recipe(cfg.recipe).load_task().make_policy(cfg, observation_space, action_space)
        )
        policy.load_state_dict(ckpt["policy"])
        return cls(policy, **kwargs)

    def reset(self) -> None:
        self.state = self.policy.initial_state(1)

    def act(self, observations: dict[str, Any]) -> int:
        import torch

        if self.state is None:
            self.reset()
        obs = {
            k: torch.as_tensor(np.asarray(observations[k])[None], device=self.device)
            for k in observations
            if isinstance(observations[k], np.ndarray | np.generic | int | float)
        }
        with torch.no_grad():
            actions, _, _, self.state = self.policy.act(
                obs, self.state, deterministic=self.deterministic
            )
        return int(actions[0])
