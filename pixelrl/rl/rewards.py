"""Rewards as named terms with weights, as TRL's ``reward_funcs`` + ``reward_weights``.

A :class:`RewardTerm` is a name, a function and a weight; a :class:`Reward` is a tuple of terms and
its value the weighted sum of theirs, added in the terms' order from 0 (so a composition written
``a + b + 0.5 * c`` gives the same floats as its terms ``a``, ``b`` and ``c`` weighted 1, 1 and
0.5). :func:`weighted_sum` returns each term's value beside the total, for logs. Both domains
compose their rewards this way: GUI grounding (click-in-box, Gaussian point, format:
``gui_agent.grounding_rewards``) and navigation turns (progress, slack, format,
Success, SPL: ``embodied.rewards``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RewardTerm:
    """One term of a reward: its value is ``fn(*inputs)`` (a number or a numpy array of one
    per sample), counted ``weight`` times."""

    name: str
    fn: Callable[..., Any]
    weight: float = 1.0


def weighted_sum(terms: Sequence[RewardTerm], *inputs: Any) -> tuple[Any, dict[str, Any]]:
    """The reward ``sum(weight * fn(*inputs))`` over ``terms`` in order, and each term's value
    (before its weight) by name."""
    values = {term.name: term.fn(*inputs) for term in terms}
    total: Any = 0.0
    for term in terms:
        total = total + term.weight * values[term.name]
    return total, values


@dataclass(frozen=True)
class Reward:
    """Named, weighted terms used as one reward function: ``reward(*inputs)`` is the total."""

    terms: tuple[RewardTerm, ...]

    def __call__(self, *inputs: Any) -> Any:
        return weighted_sum(self.terms, *inputs)[0]
