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


def unknown_env_message(env_id: str) -> str | None:
    """None if ``env_id`` is registered (``import pixelrl.envs`` first); else one line saying it
    is not, with the nearest registered ids (a missing ``pixelrl/`` prefix, a misspelled name, a
    version that does not exist). Callers raise their own error type with it."""
    import difflib

    ids = list(gymnasium.registry)
    if env_id in ids:
        return None
    near = [f"{NAMESPACE}/{env_id}"] if f"{NAMESPACE}/{env_id}" in ids else []
    near += difflib.get_close_matches(env_id, ids, n=3, cutoff=0.75)
    if not near:  # the same name at another version (pixelrl/PointNav-v9 -> -v0)
        base = env_id.rsplit("-v", 1)[0]
        near = [i for i in ids if i.rsplit("-v", 1)[0] == base]
    hint = f"; did you mean {', '.join(dict.fromkeys(near))}?" if near else ""
    return f"unknown env id {env_id!r}{hint} (`pixelrl envs` lists them)"
