"""The GUI action's errors: a value no backend takes, and text that is no action."""

from __future__ import annotations


class ActionError(ValueError):
    """An action that is not valid: unknown kind, missing or off-screen coordinates, bad key."""


class ActionParseError(ActionError):
    """Action text that does not parse into exactly one valid :class:`Action`."""
