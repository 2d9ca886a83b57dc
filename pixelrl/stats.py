"""Statistics every report of the project uses: a proportion's confidence interval, and
McNemar's exact test of two agents on the same episodes."""

from __future__ import annotations

import math


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% for the default ``z``)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(only_b: int, only_a: int) -> float:
    """Two-sided exact McNemar p of two agents on the same episodes: of the episodes exactly
    one of them solves (``only_b`` by B, ``only_a`` by A), each is a fair coin under "no
    difference"."""
    n = only_b + only_a
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_b, only_a) + 1)) / 2**n
    return min(1.0, 2 * tail)
