"""The X11 desktop env on a private Xvfb: real Tk/X apps, pyautogui input, task evaluators."""

from __future__ import annotations

import json
import os
import shutil

import gymnasium
import numpy as np
import pytest

import pixelrl.envs  # noqa: F401  (registers the ids)
from pixelrl.envs.gui_action import Action, ActionError
from pixelrl.envs.x11.tasks import APPS_DIR, load_task, parse_task, task_files

pytestmark = pytest.mark.skipif(
    shutil.which("Xvfb") is None, reason="needs Xvfb: run scripts/install_system_deps.sh"
)
needs_x11_apps = pytest.mark.skipif(
    shutil.which("xedit") is None or shutil.which("xcalc") is None,
    reason="needs xedit and xcalc: apt-get install x11-apps",
)


def missing_programs(task) -> list[str]:
    """The programs a task launches that are not installed (placeholders like {python} aside)."""
    programs = [s["command"][0] for s in task.config if s["type"] in ("launch", "command")]
    return [p for p in programs if not p.startswith("{") and shutil.which(p) is None]


# A wrong scripted attempt for every shipped task: close to the solution, but not it.
WRONG = {
    "TkCounterThree": ["pyautogui.click(x=160, y=100)", "pyautogui.click(x=160, y=100)", "DONE"],
    "TkFormSignup": [
        "pyautogui.click(x=280, y=35)",
        "pyautogui.write('Ada Lovelace')",
        "pyautogui.click(x=280, y=85)",
        "pyautogui.write('ada@example.org')",
        "pyautogui.click(x=170, y=248)",  # submitted on the basic plan, no newsletter
        "DONE",
    ],
    "TkFormTeamPlan": ["pyautogui.click(x=280, y=35)", "pyautogui.write('Grace')", "DONE"],
    "TkCopyCode": ["pyautogui.doubleClick(x=240, y=35)", "DONE"],  # selected, never copied
    "XcalcMultiply": [
        "pyautogui.click(x=157, y=316)",
        "pyautogui.click(x=201, y=346)",  # + instead of *
        "pyautogui.click(x=70, y=286)",
        "pyautogui.click(x=201, y=376)",
        "pyautogui.click(x=120, y=17)",
        "DONE",
    ],
    "XeditWriteNote": ["pyautogui.click(x=300, y=250)", "pyautogui.write('hello pixelrl')", "DONE"],
    "XeditAppendItem": [
        "pyautogui.click(x=300, y=400)",
        "pyautogui.write('bred')",  # a typo, saved
        "pyautogui.click(x=54, y=10)",
        "DONE",
    ],
}


def run_script(env, actions):
    first, info = env.reset(seed=0)
    reward, terminated, truncated = 0.0, False, False
    for text in actions:
        obs, reward, terminated, truncated, info = env.step(text)
        if terminated or truncated:
            break
    return first["screenshot"], reward, terminated, truncated, info


@pytest.mark.parametrize("path", task_files(), ids=lambda p: p.stem)
def test_every_task_is_solved_by_its_script_and_failed_by_a_wrong_one(path):
    task = load_task(path)
    assert task.id in WRONG, f"add a wrong scripted attempt for {task.id} to WRONG"
    if missing_programs(task):
        pytest.skip(f"{task.id} needs {missing_programs(task)}: apt-get install x11-apps")
    env = gymnasium.make(f"pixelrl/XDesktop-{task.id}-v0").unwrapped
    try:
        first, reward, terminated, truncated, info = run_script(env, task.solution)
        assert (reward, terminated, info["success"]) == (1.0, True, True), info.get("error")
        again, reward, terminated, truncated, info = run_script(env, WRONG[task.id])
        assert reward == 0.0 and not info["success"]
        # Every episode starts from the same pixels (apps restart; no random path on screen).
        assert np.array_equal(first, again)
        assert terminated  # the wrong attempt ends with DONE: evaluated, and failed
    finally:
        env.close()


def test_click_tk_button_and_type_into_entry(tmp_path):
    """Through the env: type into a Tk Entry, click a Tk Button; the app writes what it got
    (into the episode's work folder: the app runs in the sandbox, which sees no other folder)."""
    task = parse_task(
        {
            "id": "FormProbe",
            "instruction": "Type pixel into the name field and submit.",
            "config": [
                {
                    "type": "launch",
                    "command": ["{python}", "{apps}/form.py", "--out", "{workdir}/form.json"],
                    "window": "^sign-up form",
                }
            ],
            "evaluator": {
                "result": {"type": "window_title", "pattern": "^sign-up"},
                "func": "contains",
                "expected": "submitted",
            },
        }
    )
    with pixelrl.envs.x11.env.XDesktopEnv(task, screen_size=(800, 600)) as env:
        obs, info = env.reset(seed=0)
        out = "{workdir}/form.json"
        assert obs["screenshot"].shape == (600, 800, 3)
        assert [e["name"] for e in info["a11y"]] == ["sign-up form"]
        before = obs["screenshot"].copy()
        obs, reward, terminated, _, info = env.step(Action.click(280, 35))  # the Name entry
        obs, reward, terminated, _, info = env.step(Action.type_text("pixel"))
        assert not np.array_equal(obs["screenshot"], before)  # the typed text is on screen
        assert env.read_file(out) is None and not terminated
        obs, reward, terminated, _, info = env.step(Action.click(170, 248))  # Submit button
        assert json.loads(env.read_file(out))["name"] == "pixel"
        assert (reward, terminated, info["success"]) == (1.0, True, True)
        assert info["a11y"][0]["name"] == "sign-up form (submitted)"


def test_check_env_and_reset_determinism():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("pixelrl/XDesktop-TkCounterThree-v0").unwrapped
    try:
        check_env(env, skip_render_check=True)
        a, _ = env.reset(seed=3)
        env.step(Action.click(160, 100))
        b, _ = env.reset(seed=3)
        assert np.array_equal(a["screenshot"], b["screenshot"])  # apps restart per episode
        assert a["instruction"] == "Make the counter show 3."
    finally:
        env.close()


def test_bad_actions_are_refused_and_limits_apply():
    env = gymnasium.make("pixelrl/XDesktop-TkCounterThree-v0", max_steps=2).unwrapped
    try:
        env.reset(seed=0)
        with pytest.raises(ActionError, match="off-screen"):
            env.step(Action.click(5000, 10))
        with pytest.raises(ActionError, match="unknown function"):
            env.step("os.system('rm -rf /')")
        obs, reward, terminated, truncated, info = env.step(Action.click(60, 100))  # -1
        assert info["a11y"][0]["name"] == "counter: -1" and not (terminated or truncated)
        obs, reward, terminated, truncated, info = env.step(Action.wait())
        assert truncated and not terminated and info["step"] == 2
        with pytest.raises(RuntimeError, match="call reset"):
            env.step(Action.wait())
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(Action.fail())
        assert terminated and reward == 0.0
    finally:
        env.close()


@needs_x11_apps
def test_scroll_drag_keys_and_hotkeys_reach_the_app():
    """xedit: typing, Enter via key, select-all-free editing with hotkeys, then save."""
    task = parse_task(
        {
            "id": "KeysProbe",
            "instruction": "probe",
            "config": [
                {"type": "write_file", "path": "{workdir}/keys.txt", "content": ""},
                {
                    "type": "launch",
                    "command": ["xedit", "-geometry", "640x480+0+0", "{workdir}/keys.txt"],
                    "window": "^xedit",
                },
            ],
            "evaluator": {
                "result": {"type": "file", "path": "{workdir}/keys.txt"},
                "func": "exact_match",
                "expected": "ab\ncd",
            },
        }
    )
    with pixelrl.envs.x11.env.XDesktopEnv(
        task, screen_size=(800, 600), check_every_step=False
    ) as env:
        env.reset(seed=0)
        path = "{workdir}/keys.txt"
        for action in [
            Action.click(300, 250),
            Action.type_text("abX"),
            Action.key("backspace"),
            Action.key("enter"),
            Action.type_text("cd"),
            Action.scroll(300, 250, dy=2),
            Action.drag(300, 250, 310, 250),
            Action.hotkey("ctrl", "e"),  # Xaw text: end of line (emacs binding)
        ]:
            env.step(action)
        obs, reward, terminated, _, info = env.step(Action.click(54, 10))  # Save
        assert env.read_file(path) == b"ab\ncd", info.get("error")
        _, reward, terminated, _, info = env.step(Action.done())
        assert reward == 1.0 and terminated


def test_an_action_past_its_time_limit_truncates_and_the_env_goes_on():
    env = gymnasium.make("pixelrl/XDesktop-TkCounterThree-v0", action_timeout_s=0.0005).unwrapped
    try:
        env.reset(seed=0)
        text = "a" * 256  # typing 256 keys takes far longer than half a millisecond
        obs, reward, terminated, truncated, info = env.step(Action.type_text(text))
        assert truncated and not terminated and "did not finish" in info["error"]
        assert obs["screenshot"].shape == (800, 1280, 3)
        env.action_timeout_s = 10.0
        env.reset(seed=0)
        _, _, _, _, info = env.step(Action.click(160, 100))
        assert info["a11y"][0]["name"] == "counter: 1"
    finally:
        env.close()


def test_apps_dir_is_shipped():
    assert {"counter.py", "form.py", "copy_code.py"} <= set(os.listdir(APPS_DIR))
