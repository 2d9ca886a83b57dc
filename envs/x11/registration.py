"""Registers pixelrl/XDesktop-<Task>-v0 for every task file in assets/x11_tasks/ and
assets/osworld_tasks/ (OSWorld's schema; <Task> is the file's UUID)."""

from pixelrl.envs.registry import register
from pixelrl.envs.x11.osworld import OSWORLD_TASK_DIR
from pixelrl.envs.x11.tasks import task_files

for _path in task_files():
    register(
        f"pixelrl/XDesktop-{_path.stem}-v0",
        entry_point="pixelrl.envs.x11.env:XDesktopEnv",
        description=f"X11 desktop task {_path.stem} on a private Xvfb (assets/x11_tasks/{_path.name})",
        kwargs={"task": _path.stem},
    )

for _path in task_files(OSWORLD_TASK_DIR):
    register(
        f"pixelrl/XDesktop-{_path.stem}-v0",
        entry_point="pixelrl.envs.x11.env:XDesktopEnv",
        description=f"OSWorld-schema task on a private Xvfb (assets/osworld_tasks/{_path.name})",
        kwargs={"task": str(_path)},
    )
