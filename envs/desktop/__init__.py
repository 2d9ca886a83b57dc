"""The emulated desktop: a Pillow-rendered widget toolkit and task families (pixelrl/Desktop-*).

Modules, one idea each: ``render`` (drawing on one persistent frame), ``theme``
(screen-scaled sizes and palettes), ``widgets`` (the toolkit: windows, controls, icons, each
with its state, look and input), ``screen`` (the ``Desktop``: z-order, hit-testing, input
dispatch, repaint, a11y tree), ``tasks`` (the task families, their checkers and experts),
``env`` (``DesktopEnv``), ``registration`` (the ``pixelrl/Desktop-*-v0`` ids).

``DesktopEnv``, ``FAMILIES`` and ``expert_action`` are attributes loaded on first use.
Registration imports the task classes (numpy and Pillow, ~50 ms); fonts load when a desktop
is first drawn.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DesktopEnv", "FAMILIES", "expert_action"]


def __getattr__(name: str) -> Any:
    if name == "DesktopEnv":
        from pixelrl.envs.desktop.env import DesktopEnv

        return DesktopEnv
    if name in ("FAMILIES", "expert_action"):
        from pixelrl.envs.desktop import tasks

        return getattr(tasks, name)
    raise AttributeError(f"module 'pixelrl.envs.desktop' has no attribute {name!r}")
