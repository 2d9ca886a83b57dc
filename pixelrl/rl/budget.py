"""A run's time budget: ``train.time_limit_minutes`` (wall) and ``train.cpu_limit_minutes`` (CPU).

One budget bounds the whole training run: a recipe's warm start inside ``make_policy`` (the GUI
recipes' behaviour cloning), the imitation updates and PPO; evaluations are excluded. The trainer
adds up what each phase used and asks :meth:`Budget.reason` between updates; a warm start that
runs before the trainer's loop asks :meth:`Budget.clock` for a callable it checks between steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Budget:
    wall_s: float = 0.0  # <= 0: no wall limit
    cpu_s: float = 0.0  # <= 0: no CPU limit

    @classmethod
    def from_config(cls, train: Mapping[str, Any]) -> Budget:
        """From a config's ``train`` section (its limits in minutes)."""
        return cls(
            60 * float(train.get("time_limit_minutes") or 0),
            60 * float(train.get("cpu_limit_minutes") or 0),
        )

    @property
    def limited(self) -> bool:
        return self.wall_s > 0 or self.cpu_s > 0

    def reason(self, wall_used: float, cpu_used: float) -> str:
        """Which limit ``wall_used`` / ``cpu_used`` seconds reached ("" for none): the words a
        run's summary ends with."""
        if self.wall_s > 0 and wall_used >= self.wall_s:
            return f"train.time_limit_minutes={self.wall_s / 60:g} reached"
        if self.cpu_s > 0 and cpu_used >= self.cpu_s:
            return f"train.cpu_limit_minutes={self.cpu_s / 60:g} reached"
        return ""

    def clock(self) -> Callable[[], str]:
        """A callable giving :meth:`reason` for the time (this process's CPU) since this call."""
        wall0, cpu0 = time.perf_counter(), time.process_time()
        return lambda: self.reason(time.perf_counter() - wall0, time.process_time() - cpu0)
