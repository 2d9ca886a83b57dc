"""pixelrl environments: every one a ``gymnasium.Env`` registered under ``pixelrl/``.

``import envs`` registers all ids and stays light: no torch, no display, no browser is touched
until an env is made. Backends: ``envs.desktop`` (emulated desktop), ``envs.nav`` (embedded 3D
navigation) and ``envs.habitat`` (habitat-sim adapter), ``envs.x11`` (real X desktop),
``envs.web`` (MiniWoB++). The GUI action type and its text codec live in ``envs.actions``.
"""

# Each backend's registration module calls envs.registry.register for its ids (imports nothing heavy).
from envs.desktop import registration as _desktop_registration  # noqa: F401
from envs.nav import registration as _nav_registration  # noqa: F401
from envs.registry import list_envs, register
from envs.web import registration as _web_registration  # noqa: F401
from envs.x11 import registration as _x11_registration  # noqa: F401

__all__ = ["list_envs", "register"]
