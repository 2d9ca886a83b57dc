"""The seeds a client may ask an env for (``pixelrl serve``'s reset, a TRL dataset row): ``None``
or an integer in 0..2**63-1.

gymnasium refuses a negative seed with its own ``Error``, and numpy a float or a string with a
``TypeError``; checked here first, a bad seed is one clear message in the caller's own error type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_SEED = 2**63 - 1


def checked_seed(seed: Any, error: type[Exception] = ValueError) -> int | None:
    """``seed`` as an ``int`` (``None`` stays ``None``), or ``error`` naming what was wrong."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise error(f"seed must be an integer in 0..2**63-1, got {str(seed)[:40]!r}")
    if not 0 <= seed <= MAX_SEED:
        shown = str(seed) if abs(seed) < 10**40 else "a number of more than 40 digits"
        raise error(f"seed must be an integer in 0..2**63-1, got {shown}")
    return int(seed)
