"""Generalised advantage estimation (Schulman et al., 2016).

For step ``t`` of env ``n``::

    delta_t = r_t + gamma * V(s_{t+1}) * m_{t+1} - V(s_t)
    A_t     = delta_t + gamma * lambda * m_{t+1} * A_{t+1}
    R_t     = A_t + V(s_t)                                  (the value target)

where ``m_{t+1} = 0`` when the episode ended at step ``t`` (``s_{t+1}`` then belongs to the next
episode and contributes nothing). ``values[T]`` is the bootstrap value of the state after the
last step. Episodes cut by a time limit are bootstrapped by the collector, which adds
``gamma * V(final observation)`` to the last reward (see :mod:`pixelrl.rl.collect`).
"""

from __future__ import annotations

import torch


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_masks: torch.Tensor,
    gamma: float = 0.99,
    lam: float = 0.95,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns, both ``(T, N)``.

    Args:
        rewards: ``(T, N)`` reward of each step.
        values: ``(T + 1, N)`` value of each state; ``values[T]`` bootstraps the last step.
        next_masks: ``(T, N)``; ``next_masks[t] = 0`` where the episode ended at step ``t``.
    """
    steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in reversed(range(steps)):
        delta = rewards[t] + gamma * values[t + 1] * next_masks[t] - values[t]
        last = delta + gamma * lam * next_masks[t] * last
        advantages[t] = last
    return advantages, advantages + values[:steps]
