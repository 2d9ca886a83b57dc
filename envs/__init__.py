"""pixelrl environments: every one a ``gymnasium.Env`` registered under ``pixelrl/``.

``import pixelrl.envs`` registers all ids and stays light: no torch, no display, no browser is touched
until an env is made. Backends: ``pixelrl.envs.desktop`` (emulated desktop), ``pixelrl.envs.nav`` (embedded 3D
navigation) and ``pixelrl.envs.habitat`` (habitat-sim adapter), ``pixelrl.envs.x11`` (real X desktop),
``pixelrl.envs.web`` (MiniWoB++). The GUI action type and its text codec live in ``pixelrl.envs.gui_action``.
Each backend also registers its task family (``pixelrl.envs.families``): ``task_family(name)``.
"""

# Each backend's registration module calls pixelrl.envs.registry.register for its ids (imports nothing heavy).
from pixelrl.envs.desktop import registration as _desktop_registration  # noqa: F401
from pixelrl.envs.families import (
    FAMILIES,
    TaskFamily,
    family_of,
    task_family,
    unknown_family_message,
)
from pixelrl.envs.nav import registration as _nav_registration  # noqa: F401
from pixelrl.envs.registry import list_envs, register
from pixelrl.envs.web import registration as _web_registration  # noqa: F401
from pixelrl.envs.x11 import registration as _x11_registration  # noqa: F401

__all__ = [
    "FAMILIES",
    "TaskFamily",
    "family_of",
    "list_envs",
    "register",
    "task_family",
    "unknown_family_message",
]
