"""The X11 backend types any printable Unicode (xdotool for non-ASCII) and holds keys."""

from __future__ import annotations

import json
import shutil

import pytest

import pixelrl.envs  # noqa: F401  (registers the ids)
from pixelrl.envs.gui_action import Action
from pixelrl.envs.x11.env import XDesktopEnv
from pixelrl.envs.x11.tasks import parse_task

pytestmark = pytest.mark.skipif(
    shutil.which("Xvfb") is None or shutil.which("xdotool") is None,
    reason="needs Xvfb and xdotool: run scripts/install_system_deps.sh",
)


def form_task() -> object:
    # The app runs in the env's sandbox, which sees no host folder: it writes into {workdir}.
    return parse_task(
        {
            "id": "UnicodeProbe",
            "instruction": "Type a name with accents and submit.",
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


def test_unicode_text_and_held_shift_reach_a_tk_entry():
    with XDesktopEnv(form_task(), screen_size=(800, 600)) as env:
        env.reset(seed=0)
        out = "{workdir}/form.json"
        env.step(Action.click(280, 35))  # the Name entry
        env.step("type(content='Caf\u00e9 \u5317\u4eac ')")
        env.step(Action.key_down("shift"))
        env.step(Action.key("a"))
        env.step(Action.key_up("shift"))
        env.step(Action.key("b"))
        env.step(Action.click(170, 248))  # Submit
        assert json.loads(env.read_file(out))["name"] == "Caf\u00e9 \u5317\u4eac Ab"


def test_angle_brackets_are_typed_as_themselves():
    # pyautogui alone typed '<' as '>' (shift on the key that carries less/greater).
    with XDesktopEnv(form_task(), screen_size=(800, 600)) as env:
        env.reset(seed=0)
        out = "{workdir}/form.json"
        env.step(Action.click(280, 35))
        env.step(Action.type_text("a<b>c <= 2"))
        env.step(Action.click(170, 248))
        assert json.loads(env.read_file(out))["name"] == "a<b>c <= 2"


def test_a_key_left_held_is_released_before_the_next_episode():
    with XDesktopEnv(form_task(), screen_size=(800, 600)) as env:
        env.reset(seed=0)
        env.step(Action.key_down("shift"))  # never released by the agent
        env.reset(seed=0)
        out = "{workdir}/form.json"
        env.step(Action.click(280, 35))
        env.step(Action.key("b"))
        env.step(Action.click(170, 248))
        assert json.loads(env.read_file(out))["name"] == "b"
