"""Module paths from before the one import namespace, mapped to today's.

Until pixelrl 0.1 the repository folders installed as top-level packages (``envs``, ``vision``,
``gui_agent``, ``embodied``, ``assets``); they are now ``pixelrl.envs`` ... A name written down by
that layout -- a class pickled into a checkpoint, a recipe's task module in a user's own
``register_recipe`` call -- still resolves through :func:`current_module`.
"""

from __future__ import annotations

import pickle

OLD_TOP_LEVEL = ("envs", "vision", "gui_agent", "embodied", "assets")


def current_module(name: str) -> str:
    """``envs.nav.config`` -> ``pixelrl.envs.nav.config``; any other name is returned as it is."""
    return f"pixelrl.{name}" if name.split(".")[0] in OLD_TOP_LEVEL else name


class Unpickler(pickle.Unpickler):
    """A pickle reader that finds classes pickled under the old top-level module names."""

    def find_class(self, module: str, name: str):
        return super().find_class(current_module(module), name)


class pickle_module:  # noqa: N801 (torch.load's pickle_module: anything with Unpickler and load)
    Unpickler = Unpickler
    load = staticmethod(lambda f, **kw: Unpickler(f, **kw).load())
