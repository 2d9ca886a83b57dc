"""pixelrl environments: every one a ``gymnasium.Env`` registered under ``pixelrl/``.

``import envs`` registers all ids and stays light: no torch, no display, no browser is touched
until an env is made. Backends: ``envs.desktop`` (emulated desktop), ``envs.nav`` (embedded 3D
navigation) and ``envs.habitat`` (habitat-sim adapter), ``envs.x11`` (real X desktop),
``envs.web`` (MiniWoB++). The GUI action type and its text codec live in ``envs.actions``.
"""

from envs.registry import list_envs, register

# Each backend's registration module calls envs.registry.register for its ids.
from envs.desktop import registration as _desktop_registration  # noqa: F401,E402

__all__ = ["list_envs", "register"]
