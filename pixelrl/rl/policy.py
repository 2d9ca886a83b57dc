"""The policy interface the RL core trains, and helpers for recurrent states.

A policy is a ``torch.nn.Module`` with three methods (docs/architecture.md, "PPO policy")::

    state = policy.initial_state(batch_size)                  # dict of tensors, batch first
    actions, logprobs, values, state = policy.act(obs, state)  # one step, B envs
    logprobs, values, entropy = policy.evaluate(obs, state, actions, masks)  # T steps, N envs

``obs`` is a dict of tensors (one per observation key). In ``act`` each has shape ``(B, ...)``;
in ``evaluate`` ``(T, N, ...)``, where ``state`` is the state before the first of the ``T`` steps
and ``masks[t, n] == 0`` marks that step ``t`` starts a new episode for env ``n`` (so a recurrent
policy resets its memory there). A state is a dict of tensors whose first dimension is the batch;
zeros mean "start of an episode", so :func:`mask_state` can reset finished envs for any policy.
A policy without memory returns ``{}``.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable

import torch

State = dict[str, torch.Tensor]
Observations = dict[str, torch.Tensor]


class PolicyStep(NamedTuple):
    """What ``act`` returns; unpacks as ``actions, logprobs, values, state``."""

    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    state: State


@runtime_checkable
class Policy(Protocol):
    def initial_state(self, batch_size: int) -> State: ...

    def act(self, obs: Observations, state: State, deterministic: bool = False) -> PolicyStep: ...

    def evaluate(
        self, obs: Observations, state: State, actions: torch.Tensor, masks: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...


def mask_state(state: State, masks: torch.Tensor) -> State:
    """Zero the state of envs whose ``masks`` entry is 0 (their episode just started)."""
    out = {}
    for key, value in state.items():
        m = masks.to(value.dtype).view(-1, *([1] * (value.dim() - 1)))
        out[key] = value * m
    return out


def index_state(state: State, index: torch.Tensor) -> State:
    """The states of the envs picked by ``index`` (a bool mask or integer indices)."""
    return {key: value[index] for key, value in state.items()}


def clone_state(state: State) -> State:
    return {key: value.clone() for key, value in state.items()}
