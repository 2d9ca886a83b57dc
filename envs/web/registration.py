"""Registers pixelrl/MiniWoB-<task>-v0 for every task the installed miniwob package registers.

The task list is miniwob's own (``miniwob/<task>-v1`` in Gymnasium's registry, including the
``nondeterministic`` marks it sets); nothing is registered when miniwob is not installed.
Importing ``miniwob`` only registers its ids: no selenium, no browser.
"""

import importlib.util

from pixelrl.envs.registry import register

if importlib.util.find_spec("miniwob") is not None:
    import gymnasium
    import miniwob  # noqa: F401  (registers miniwob/* ids)

    for _id, _spec in list(gymnasium.registry.items()):
        if not (_id.startswith("miniwob/") and _id.endswith("-v1")):
            continue
        _task = _id[len("miniwob/") : -len("-v1")]
        register(
            f"pixelrl/MiniWoB-{_task}-v0",
            entry_point="pixelrl.envs.web.env:MiniWoBEnv",
            description=f"MiniWoB++ {_task} in headless Chromium (screenshot + a11y, pixel actions)",
            nondeterministic=bool(_spec.nondeterministic),
            kwargs={"task": _task},
        )
