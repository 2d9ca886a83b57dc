"""The rows text-policy training passes around: typed, so what a prompt holds is written down.

A :class:`Prompt` is what the policy sees for one answer: an image (a screenshot, a navigation
frame or several stitched), the task in words, and earlier actions as text. SFT learns
:class:`Example`\\ s (a prompt and the answer a demonstrator would write); GRPO learns from
:class:`Turn`\\ s (a prompt, the sampled answer and its reward) of :class:`Episode`\\ s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Prompt:
    image: np.ndarray  # H×W×3 uint8
    instruction: str
    history: tuple[str, ...] = ()  # earlier actions, as the policy's codec writes them


@dataclass(frozen=True)
class Example:
    """An SFT row: ``target`` is the answer's text; ``weight`` its share when batches are drawn
    (None: drawn uniformly, without weights)."""

    prompt: Prompt
    target: str
    weight: float | None = None
    # a policy with a pointer head: the [x0, y0, x1, y1) screen box the target's pointer token
    # points into (its cells are the head's SFT target); None: the target holds no pointer
    box: tuple[int, int, int, int] | None = None


@dataclass
class Turn:
    """One sampled answer and its reward; ``key`` names its observation (GiGPO's anchor)."""

    prompt: Prompt
    completion: Any  # pixelrl.vision.vlm.Completion
    reward: float
    key: str = ""


@dataclass
class Episode:
    """A played episode: its turns, whether it succeeded, and the task's end measures."""

    turns: list[Turn] = field(default_factory=list)
    success: bool = False
    measures: dict[str, float] = field(default_factory=dict)

    @property
    def ret(self) -> float:
        return float(sum(t.reward for t in self.turns))


def prompt_columns(prompts: list[Prompt]) -> tuple[list, list[str], list[tuple[str, ...]]]:
    """The images, instructions and histories of ``prompts`` (what ``VLMPolicy`` takes)."""
    return (
        [p.image for p in prompts],
        [p.instruction for p in prompts],
        [p.history for p in prompts],
    )
