"""Module paths from before the one import namespace, mapped to today's.

Until pixelrl 0.1 the repository folders installed as top-level packages (``envs``, ``vision``,
``gui_agent``, ``embodied``, ``assets``); they are now ``pixelrl.envs`` ... A name written down by
that layout -- a recipe's task module in a user's own ``register_recipe`` call -- still
resolves through :func:`current_module`. (Classes pickled into checkpoints under those names do
not: checkpoints are read as data, see :func:`pixelrl.checkpoint.load_checkpoint`.)
"""

from __future__ import annotations

OLD_TOP_LEVEL = ("envs", "vision", "gui_agent", "embodied", "assets")


def current_module(name: str) -> str:
    """``envs.nav.config`` -> ``pixelrl.envs.nav.config``; any other name is returned as it is."""
    return f"pixelrl.{name}" if name.split(".")[0] in OLD_TOP_LEVEL else name
