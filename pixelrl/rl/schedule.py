"""Learning-rate schedules of the text-policy trainer (SFT and GRPO share them).

``lr_at(step, lr, schedule, steps, warmup)`` is the rate of 0-based ``step`` of ``steps``:
a linear warm-up from ``lr / warmup`` to ``lr`` over the first ``warmup`` steps (a recipe gives
it as a share of the run, ``warmup_ratio``: :func:`warmup_steps`), then
``constant``, ``linear`` decay to 0 at ``steps`` (TRL's default) or ``cosine`` decay to 0
(verl's and most RL-from-SFT recipes')."""

from __future__ import annotations

import math

SCHEDULES = ("constant", "linear", "cosine")


def check_schedule(schedule: str, warmup_ratio: float, key: str) -> None:
    """ValueError naming ``key`` for an unknown schedule or a warm-up share no run can use."""
    if schedule not in SCHEDULES:
        raise ValueError(f"{key}.lr_schedule: {schedule!r}; known: {', '.join(SCHEDULES)}")
    ok = isinstance(warmup_ratio, (int, float)) and not isinstance(warmup_ratio, bool)
    if not ok or not 0 <= warmup_ratio < 1:
        raise ValueError(f"{key}.warmup_ratio must be in [0, 1), got {warmup_ratio!r}")


def warmup_steps(warmup_ratio: float, steps: int) -> int:
    """The warm-up steps of a ``warmup_ratio`` share of ``steps`` (verl's lr_warmup_steps_ratio)."""
    return int(round(float(warmup_ratio) * steps))


def lr_at(step: int, lr: float, schedule: str, steps: int, warmup: int = 0) -> float:
    """The learning rate of 0-based ``step`` (see the module doc)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    if schedule == "constant":
        return lr
    done = (step - warmup) / max(1, steps - warmup)
    if schedule == "linear":
        return lr * max(0.0, 1.0 - done)
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, done)))
