"""Registers pixelrl/MiniWoB-<task>-v0 for every task the installed miniwob package registers.

The task list is miniwob's own (``miniwob/<task>-v1`` in Gymnasium's registry, including the
``nondeterministic`` marks it sets); nothing is registered when miniwob is not installed.
Importing ``miniwob`` only registers its ids: no selenium, no browser. The ``miniwob``
:class:`~pixelrl.envs.families.TaskFamily` names those tasks (none without miniwob); its expert is
the oracle (:mod:`pixelrl.envs.web.oracle`), which plays the tasks of its ``SUPPORTED_TASKS``.
"""

import importlib.util

from pixelrl.envs.families import (
    GUI_PRIVILEGED,
    PARITY,
    ExpertActionMethod,
    TaskFamily,
    register_family,
)
from pixelrl.envs.registry import register


def env_id(task: str) -> str:
    """``"click-button"`` -> ``"pixelrl/MiniWoB-click-button-v0"``."""
    return f"pixelrl/MiniWoB-{task}-v0"


def _oracle_plays(task: str) -> bool:
    from pixelrl.envs.web.oracle import SUPPORTED_TASKS

    return task in SUPPORTED_TASKS


_tasks: list[str] = []
if importlib.util.find_spec("miniwob") is not None:
    import gymnasium
    import miniwob  # noqa: F401  (registers miniwob/* ids)

    for _id, _spec in list(gymnasium.registry.items()):
        if not (_id.startswith("miniwob/") and _id.endswith("-v1")):
            continue
        _task = _id[len("miniwob/") : -len("-v1")]
        _tasks.append(_task)
        register(
            env_id(_task),
            entry_point="pixelrl.envs.web.env:MiniWoBEnv",
            description=f"MiniWoB++ {_task} in headless Chromium (screenshot + a11y, pixel actions)",
            nondeterministic=bool(_spec.nondeterministic),
            kwargs={"task": _task},
        )

register_family(
    TaskFamily(
        name="miniwob",
        description="MiniWoB++ tasks in headless Chromium (needs the web extra)",
        env_id=env_id,
        tasks=tuple(_tasks),
        seeds=PARITY,
        expert=ExpertActionMethod,
        expert_plays=_oracle_plays,
        # the oracle's aim is not in info: env.unwrapped.expert_target_bbox after expert_action()
        privileged={k: v for k, v in GUI_PRIVILEGED.items() if k != "target_bbox"},
    )
)
