"""Held-out success: the policy in eval mode for the evaluation, and the success rate with its
95% Wilson interval (:func:`pixelrl.stats.wilson_interval`) that every domain's eval row opens
with (the rest of the row is the domain's: return, SPL, per-task rates...)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from pixelrl.stats import wilson_interval


@contextmanager
def evaluating(policy) -> Iterator[None]:
    """``policy`` in eval mode inside, back to the mode it had (training or not) after."""
    was_training = policy.model.training
    policy.model.eval()
    try:
        yield
    finally:
        policy.model.train(was_training)


def success_row(successes: Sequence[float]) -> dict[str, float]:
    """``success`` (the mean of per-episode 0/1 successes), ``ci_low`` and ``ci_high``."""
    low, high = wilson_interval(round(sum(successes)), len(successes))
    return {"success": float(np.mean(successes)), "ci_low": low, "ci_high": high}
