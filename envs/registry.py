"""One place that registers pixelrl environments with Gymnasium and remembers a line about each.

Every backend calls :func:`register` from its own ``registration`` module; ``envs/__init__.py``
imports those modules so that ``import pixelrl.envs`` makes every id available to ``gymnasium.make``.
Registration imports nothing heavy: entry points are strings resolved on ``make``.
"""

from __future__ import annotations

from typing import Any

import gymnasium

NAMESPACE = "pixelrl"
DESCRIPTIONS: dict[str, str] = {}


def register(env_id: str, entry_point: str, description: str, **kwargs: Any) -> None:
    """Register ``env_id`` (must start with ``pixelrl/``) unless it already is."""
    if not env_id.startswith(NAMESPACE + "/"):
        raise ValueError(f"pixelrl env ids live in the {NAMESPACE}/ namespace, got {env_id!r}")
    DESCRIPTIONS[env_id] = description
    if env_id in gymnasium.registry:
        return
    gymnasium.register(id=env_id, entry_point=entry_point, **kwargs)


def list_envs() -> list[tuple[str, str]]:
    """Every registered pixelrl env id with its one-line description, sorted by id."""
    return sorted(DESCRIPTIONS.items())
