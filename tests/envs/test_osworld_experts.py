"""The shipped OSWorld-schema tasks (assets/osworld_tasks) on a real Xvfb, in the sandbox: each
scripted expert solves its task, and doing nothing (``done`` at once) does not."""

from __future__ import annotations

import shutil

import pytest

from pixelrl.envs.gui_action import parse_action
from pixelrl.envs.x11.env import XDesktopEnv
from pixelrl.envs.x11.osworld import OSWORLD_TASK_DIR
from pixelrl.envs.x11.tasks import load_task, task_files

TASKS = task_files(OSWORLD_TASK_DIR)
MISSING = [p for p in ("Xvfb", "xdotool", "bwrap", "xterm", "xedit") if shutil.which(p) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"needs {MISSING}: run scripts/install_system_deps.sh"
)


def name(path) -> str:
    return load_task(path).source.split("(")[-1].rstrip(")")


@pytest.mark.parametrize("path", TASKS, ids=[name(p) for p in TASKS])
def test_the_scripted_expert_solves_the_task_and_doing_nothing_does_not(path):
    task = load_task(path)
    with XDesktopEnv(task, screen_size=(1280, 800)) as env:
        _, info = env.reset(seed=0)
        assert "setup_errors" not in info, info.get("setup_errors")
        _, reward, terminated, _, info = env.step(parse_action("DONE", env.screen_size))
        assert terminated and reward < 1.0 and not info["success"]
        _, info = env.reset(seed=0)
        reward, terminated = 0.0, False
        for text in task.solution:
            assert not terminated, f"ended before {text!r}"
            _, reward, terminated, truncated, info = env.step(parse_action(text, env.screen_size))
            assert not truncated, info
        assert terminated and reward == 1.0 and info["success"], (env.setup_errors, info)
