"""Rollout storage: the tensors of one rollout of ``T`` steps from ``N`` vectorized envs.

Layout (``t`` is the step, ``n`` the env)::

    obs[key][t, n]     observation before step t (t = 0..T; obs[T] starts the next rollout)
    masks[t, n]        0 if obs[t] is the first observation of an episode, else 1
    valid[t, n]        1 for a real transition, 0 for a vector env's reset step (NEXT_STEP)
    actions[t, n]      action taken at step t,  logprobs[t, n] its log-probability
    values[t, n]       V(obs[t]) (t = 0..T; values[T] bootstraps the last step)
    rewards[t, n]      reward of step t
    state0             the policy's recurrent state before obs[0] (dict of (N, ...) tensors)

Only the first ``step`` rows are filled when a rollout ends early (DD-PPO straggler preemption);
every method reads ``[:step]``. Minibatches split the *envs*, never the time axis, so a recurrent
policy can replay each env's sequence from ``state0`` (habitat-baselines' recurrent generator).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch

from pixelrl.rl.gae import compute_gae
from pixelrl.rl.policy import State, clone_state


def torch_dtype(dtype: np.dtype) -> torch.dtype:
    """The torch dtype that stores values of numpy ``dtype`` without loss."""
    return torch.from_numpy(np.zeros(1, dtype=dtype)).dtype


def _space_layout(space: gym.Space, what: str) -> tuple[tuple[int, ...], torch.dtype]:
    if isinstance(space, gym.spaces.Discrete):
        return (), torch.long
    if isinstance(space, gym.spaces.MultiDiscrete | gym.spaces.MultiBinary):
        return tuple(space.shape), torch.long
    if isinstance(space, gym.spaces.Box):
        return tuple(space.shape), torch_dtype(space.dtype)
    raise TypeError(
        f"rollout storage cannot hold {what} of space {space}; "
        "use Box, Discrete, MultiDiscrete or MultiBinary spaces"
    )


@dataclass
class Minibatch:
    """A slice of the rollout over a subset of envs; time-major ``(T, n, ...)`` tensors."""

    obs: dict[str, torch.Tensor]
    state0: State
    actions: torch.Tensor
    masks: torch.Tensor
    old_logprobs: torch.Tensor
    old_values: torch.Tensor
    returns: torch.Tensor
    advantages: torch.Tensor
    valid: torch.Tensor  # 1 for real transitions, 0 for reset steps (no weight in the loss)


class RolloutStorage:
    """Fixed-size rollout buffers for ``num_envs`` envs and at most ``num_steps`` steps."""

    def __init__(
        self,
        num_steps: int,
        num_envs: int,
        observation_space: gym.spaces.Dict,
        action_space: gym.Space,
        initial_state: State,
        device: torch.device | str = "cpu",
        obs_keys: list[str] | None = None,
    ):
        """``obs_keys``: the observations to keep (default all); e.g. leave out a ``Text`` key."""
        if not isinstance(observation_space, gym.spaces.Dict):
            raise TypeError(
                f"rollout storage needs a Dict observation space, got {observation_space}"
            )
        self.num_steps, self.num_envs, self.device = num_steps, num_envs, torch.device(device)
        T, N = num_steps, num_envs
        self.obs: dict[str, torch.Tensor] = {}
        spaces = observation_space.spaces
        for key in list(spaces) if obs_keys is None else list(obs_keys):
            if key not in spaces:
                raise KeyError(
                    f"obs_keys names {key!r}, not in the observation space {sorted(spaces)}"
                )
            shape, dtype = _space_layout(
                spaces[key], f"observation {key!r} (leave it out with obs_keys)"
            )
            self.obs[key] = torch.zeros((T + 1, N, *shape), dtype=dtype, device=self.device)
        action_shape, action_dtype = _space_layout(action_space, "actions")
        self.actions = torch.zeros((T, N, *action_shape), dtype=action_dtype, device=self.device)
        self.masks = torch.zeros((T + 1, N), device=self.device)
        self.logprobs = torch.zeros((T, N), device=self.device)
        self.values = torch.zeros((T + 1, N), device=self.device)
        self.rewards = torch.zeros((T, N), device=self.device)
        self.valid = torch.ones((T, N), device=self.device)
        self.returns = torch.zeros((T, N), device=self.device)
        self.advantages = torch.zeros((T, N), device=self.device)
        self.state0 = {k: torch.zeros_like(v, device=self.device) for k, v in initial_state.items()}
        self.step = 0

    def start(self, obs: dict[str, torch.Tensor], masks: torch.Tensor, state: State) -> None:
        """Begin a rollout from the envs' current observations, masks and policy state."""
        for key, value in obs.items():
            self.obs[key][0].copy_(value)
        self.masks[0].copy_(masks)
        self.state0 = clone_state(state)
        self.step = 0

    def insert(
        self,
        next_obs: dict[str, torch.Tensor],
        next_masks: torch.Tensor,
        actions: torch.Tensor,
        logprobs: torch.Tensor,
        values: torch.Tensor,
        rewards: torch.Tensor,
        valid: torch.Tensor | None = None,
    ) -> None:
        """Record step ``self.step`` (taken from ``obs[step]``) and the observation after it.

        ``valid[n] = 0`` marks a step that is not a real transition (a vector env's reset step,
        see :mod:`pixelrl.rl.collect`): PPO gives it no weight.
        """
        t = self.step
        if t >= self.num_steps:
            raise IndexError(f"rollout storage is full ({self.num_steps} steps)")
        self.actions[t].copy_(actions)
        self.logprobs[t].copy_(logprobs)
        self.values[t].copy_(values)
        self.rewards[t].copy_(rewards)
        self.valid[t].copy_(valid if valid is not None else torch.ones_like(rewards))
        for key, value in next_obs.items():
            self.obs[key][t + 1].copy_(value)
        self.masks[t + 1].copy_(next_masks)
        self.step = t + 1

    def compute_returns(self, next_value: torch.Tensor, gamma: float, lam: float) -> None:
        """Fill ``advantages`` and ``returns`` with GAE, bootstrapping from ``next_value``."""
        T = self.step
        self.values[T].copy_(next_value)
        adv, ret = compute_gae(
            self.rewards[:T], self.values[: T + 1], self.masks[1 : T + 1], gamma, lam
        )
        self.advantages[:T], self.returns[:T] = adv, ret

    def minibatches(
        self, num_minibatches: int, generator: torch.Generator | None = None
    ) -> Iterator[Minibatch]:
        """``num_minibatches`` minibatches, each a random subset of envs over the whole rollout."""
        if num_minibatches > self.num_envs:
            raise ValueError(
                f"ppo.num_minibatches ({num_minibatches}) cannot exceed the number of envs "
                f"({self.num_envs}): minibatches split the envs"
            )
        T = self.step
        order = torch.randperm(self.num_envs, generator=generator)
        for envs in order.chunk(num_minibatches):
            envs = envs.to(self.device)
            yield Minibatch(
                obs={k: v[:T, envs] for k, v in self.obs.items()},
                state0={k: v[envs] for k, v in self.state0.items()},
                actions=self.actions[:T, envs],
                masks=self.masks[:T, envs],
                old_logprobs=self.logprobs[:T, envs],
                old_values=self.values[:T, envs],
                returns=self.returns[:T, envs],
                advantages=self.advantages[:T, envs],
                valid=self.valid[:T, envs],
            )
