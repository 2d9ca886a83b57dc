"""MiniWoB types Unicode through the browser and refuses what it cannot do before acting."""

from __future__ import annotations

import shutil

import pytest

from pixelrl.envs.gui import bbox_center
from pixelrl.envs.gui_action import Action, ActionError

pytest.importorskip("miniwob", reason="needs the web extra: pip install 'pixelrl[web]'")
pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)


def test_unicode_reaches_the_page_and_unsupported_actions_are_refused():
    from pixelrl.envs.web.env import MiniWoBEnv

    env = MiniWoBEnv("enter-text")
    try:
        _, info = env.reset(seed=1)
        box = next(e for e in info["a11y"] if e["role"] == "textbox")
        env.step(Action.click(*bbox_center(box["bbox"])))
        _, _, _, _, info = env.step("type(content='caf\u00e9 \u5317\u4eac')")
        field = next(e for e in info["a11y"] if e["role"] == "textbox")
        assert field["state"]["value"] == "caf\u00e9 \u5317\u4eac"
        steps = env.steps
        for action in (
            Action.key_down("shift"),
            Action.scroll(None, None, dy=5),
            Action.type_text("\U0001f600"),
        ):
            with pytest.raises(ActionError, match="MiniWoB backend"):
                env.step(action)
        assert env.steps == steps  # refused before anything happened
    finally:
        env.close()
