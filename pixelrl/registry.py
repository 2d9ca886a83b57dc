"""What the domains offer the spine, by name: the spine imports no domain.

The spine (``pixelrl/``: the CLI, the trainers, the TRL environments) knows *kinds* of things a
domain may add, and finds them by name. Each value is a ``"module:attr"`` string, imported only
when used (as Gymnasium's ``entry_point``), so listing the names stays instant::

    from pixelrl import registry

    registry.register("command", "eval", "pixelrl.gui_agent.eval_command:add_parser")
    add_parser = registry.resolve("command", "eval")

A domain (``pixelrl.gui_agent``, ``pixelrl.embodied`` or another package) fills it from one
registration module, declared as an entry point of the group ``pixelrl.domains`` in its
``pyproject.toml``::

    [project.entry-points."pixelrl.domains"]
    gui = "pixelrl.gui_agent.registration"

:func:`load_domains` imports every such module once (the first time a name is looked up), in the
order of the entry points' names. A registration module imports nothing heavy: it only calls
:func:`register` and :func:`pixelrl.recipes.register_recipe`.
"""

from __future__ import annotations

import difflib
import importlib
from importlib.metadata import entry_points
from typing import Any

ENTRY_POINT_GROUP = "pixelrl.domains"

# The kinds of things a domain registers, and what a value of each kind is.
KINDS = {
    "command": "a CLI verb: add_parser(subparsers) (pixelrl VERB)",
    "bench": "a benchmark: add_parser(subparsers) (pixelrl bench NAME)",
    "demo": "a part of pixelrl demo: the function that runs it (its module runs it with -m too)",
    "record_agent": "an agent pixelrl record plays from a file: .env_kwargs(path, env_id), .make(path, env)",
    "trl_env": "a TRL environment class for the envs of one kind (pixelrl.trl_env.env_kind)",
    "user_error": "an exception class whose instances are a user's mistake (one CLI line)",
}

_ENTRIES: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
_loaded = False


class UnknownName(KeyError):
    """A name no domain registered (a one-line error naming the known ones)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def register(kind: str, name: str, target: str) -> None:
    """Offer ``target`` (``"module:attr"``) as ``name`` of ``kind`` (:data:`KINDS`)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    module, _, attr = target.partition(":")
    if not module or not attr:
        raise ValueError(f"{kind} {name!r}: target must be 'module:attr', got {target!r}")
    _ENTRIES[kind][name] = target


def load_domains() -> None:
    """Import each domain's registration module (entry points of :data:`ENTRY_POINT_GROUP`)
    once; the first call does the work."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        point.load()


def names(kind: str) -> list[str]:
    """The names of ``kind``, in the order they were registered."""
    load_domains()
    return list(_ENTRIES[kind])


def target(kind: str, name: str) -> str:
    """The ``"module:attr"`` string of ``name``; an unknown name is :class:`UnknownName`."""
    load_domains()
    entries = _ENTRIES[kind]
    if name not in entries:
        near = difflib.get_close_matches(name, entries, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        known = (
            ", ".join(entries)
            or f"none: no domain is installed (entry points {ENTRY_POINT_GROUP!r}; in a checkout, pip install -e .)"
        )
        raise UnknownName(f"no {kind} named {name!r}{hint} (known: {known})")
    return entries[name]


def resolve(kind: str, name: str) -> Any:
    """The object ``name`` of ``kind`` names, imported now."""
    module, _, attr = target(kind, name).partition(":")
    return getattr(importlib.import_module(module), attr)
