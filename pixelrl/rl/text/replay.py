"""Replay of failed starts: with some chance a training start is drawn again from the starts whose
last group did not all succeed -- prioritized level replay's idea (Jiang et al. 2021): learn
where there is something left to learn. A checkpoint keeps the pool (``state_dict``), so a
resumed run replays the same starts."""

from __future__ import annotations

from collections.abc import Sequence

REPLAY_SIZE = 256  # failed starts remembered (the oldest go first)


class FailedStarts:
    """The starts not yet solved, oldest first; ``chance`` 0 draws fresh starts only."""

    def __init__(self, chance: float, size: int = REPLAY_SIZE) -> None:
        self.chance, self.size = chance, size
        self.failed: dict[int, None] = {}  # an ordered set

    def draw(self, rng, count: int) -> list[int]:
        """``count`` training starts: new ones, or with ``chance`` a failed one."""
        fresh = [int(s) for s in rng.integers(0, 2**31 - 1, count)]
        if not self.chance:
            return fresh  # (no more draws: the start stream of a run without replay is unchanged)
        pool = list(self.failed)
        return [
            int(pool[rng.integers(len(pool))]) if pool and rng.random() < self.chance else s
            for s in fresh
        ]

    def remember(self, starts: Sequence[int], solved: Sequence[bool]) -> None:
        """Keep the starts whose group did not all succeed (``solved`` False); forget solved ones."""
        if not self.chance:
            return
        for start, ok in zip(starts, solved):
            self.failed.pop(start, None)
            if not ok:
                self.failed[start] = None  # (re-inserted: now the newest)
        while len(self.failed) > self.size:
            self.failed.pop(next(iter(self.failed)))

    def state_dict(self) -> dict:
        return {"failed": list(self.failed)}

    def load_state_dict(self, state: dict) -> None:
        self.failed = dict.fromkeys(int(s) for s in state["failed"])
