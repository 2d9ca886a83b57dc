"""The MiniWoB++ oracle plays the gesture tasks (drags, wheel turns, slider keys) in Chromium,
and every action it plays reads back the same from each GUI action dialect."""

from __future__ import annotations

import shutil

import pytest

from pixelrl.envs.gui_action import Action, parse_action, to_pyautogui, to_toolcall, to_uitars
from pixelrl.envs.gui_action.toolcall import parse_toolcall
from pixelrl.envs.web.oracle import GESTURE_TASKS, SLIDER_TASKS, MiniWoBOracle

pytest.importorskip("miniwob", reason="needs the web extra: pip install 'pixelrl[web]'")
needs_browser = pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)

# the gesture each task cannot be solved without
GESTURE = {task: "drag" for task in GESTURE_TASKS + SLIDER_TASKS}
GESTURE.update({"scroll-text": "scroll", "scroll-text-2": "scroll", "use-spinner": "click"})


def assert_dialects_read_back(action: Action) -> None:
    """pyautogui and tool-call text give the action back; UI-TARS keeps a scroll's direction
    only (its text has no amount)."""
    if action.kind == "done":
        return
    assert parse_action(to_pyautogui(action)) == action
    assert parse_toolcall(to_toolcall(action)) == action
    uitars = parse_action(to_uitars(action, coordinates="pixels"), coordinates="pixels")
    if action.kind == "scroll":
        assert (uitars.x, uitars.y, uitars.dy > 0) == (action.x, action.y, action.dy > 0)
    else:
        assert uitars == action


@needs_browser
@pytest.mark.parametrize("task", GESTURE_TASKS + SLIDER_TASKS)
def test_oracle_plays_gesture_task(task):
    from pixelrl.envs.web.env import MiniWoBEnv

    env = MiniWoBEnv(task)  # one browser for the task's seeds
    oracle = MiniWoBOracle(task)
    try:
        for seed in (0, 1):
            obs, info = env.reset(seed=seed)
            oracle.reset(obs, info)
            kinds = []
            terminated = truncated = False
            while not (terminated or truncated):
                action = oracle.act(obs, info)
                assert action.kind in ("drag", "scroll", "click", "type", "key", "done")
                assert_dialects_read_back(action)
                kinds.append(action.kind)
                obs, reward, terminated, truncated, info = env.step(action)
            assert info["success"], (task, seed, obs["instruction"], kinds)
            assert GESTURE[task] in kinds
    finally:
        env.close()
