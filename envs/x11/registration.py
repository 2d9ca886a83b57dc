"""Registers pixelrl/XDesktop-<Task>-v0 for every task file in assets/x11_tasks/ and
assets/osworld_tasks/ (OSWorld's schema; <Task> is the file's UUID), and the ``x11`` task family
whose tasks they are (its expert plays a task file's ``solution``)."""

from pixelrl.envs.families import PARITY, TaskFamily, register_family
from pixelrl.envs.registry import register
from pixelrl.envs.x11.osworld import OSWORLD_TASK_DIR
from pixelrl.envs.x11.tasks import SolutionExpert, task_files


def env_id(task: str) -> str:
    """A task file's stem (an OSWorld task's UUID) -> ``"pixelrl/XDesktop-<stem>-v0"``."""
    return f"pixelrl/XDesktop-{task}-v0"


_files = {path.stem: path for path in [*task_files(), *task_files(OSWORLD_TASK_DIR)]}

for _path in task_files():
    register(
        env_id(_path.stem),
        entry_point="pixelrl.envs.x11.env:XDesktopEnv",
        description=f"X11 desktop task {_path.stem} on a private Xvfb (assets/x11_tasks/{_path.name})",
        kwargs={"task": _path.stem},
    )

for _path in task_files(OSWORLD_TASK_DIR):
    register(
        env_id(_path.stem),
        entry_point="pixelrl.envs.x11.env:XDesktopEnv",
        description=f"OSWorld-schema task on a private Xvfb (assets/osworld_tasks/{_path.name})",
        kwargs={"task": str(_path)},
    )


def _has_solution(task: str) -> bool:
    from pixelrl.envs.x11.tasks import resolve_task

    return bool(resolve_task(str(_files[task])).solution)


register_family(
    TaskFamily(
        name="x11",
        description="X11 desktop and OSWorld-schema task files on a private Xvfb",
        env_id=env_id,
        tasks=tuple(_files),
        seeds=PARITY,
        expert=SolutionExpert,
        expert_plays=_has_solution,
        privileged={"a11y": "accessibility elements of the task's windows, read-only"},
    )
)
