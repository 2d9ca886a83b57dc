"""Display isolation: private displays, opt-in for existing ones, no process left behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pixelrl.envs.gui_action import Action
from pixelrl.envs.processes import wait_groups_gone as wait_gone
from pixelrl.envs.x11.display import DisplayError, XDisplay
from pixelrl.envs.x11.env import XDesktopEnv

pytestmark = pytest.mark.skipif(
    shutil.which("Xvfb") is None, reason="needs Xvfb: run scripts/install_system_deps.sh"
)
TASK = "TkCounterThree"


def test_existing_display_needs_opt_in(monkeypatch):
    monkeypatch.setenv("DISPLAY", ":0")
    with pytest.raises(DisplayError, match="allow_existing_display=True"):
        XDesktopEnv(TASK, display=":0")
    own = XDisplay(size=(640, 480))
    try:
        with XDesktopEnv(TASK, display=own.name, allow_existing_display=True) as env:
            assert env.display.name == own.name and env.screen_size == (640, 480)
            obs, info = env.reset(seed=0)
            assert info["a11y"][0]["name"] == "counter: 0"
            obs, reward, *_, info = env.step(Action.click(160, 100))
            assert info["a11y"][0]["name"] == "counter: 1"
        assert own.alive()  # closing an attached env leaves the display to its owner
    finally:
        own.close()
    # Without a display argument the env ignores $DISPLAY and starts its own server.
    with XDesktopEnv(TASK, screen_size=(320, 240)) as env:
        assert env.display.owned and env.display.server.alive()
        assert env.screen_size == (320, 240)


def test_two_envs_get_different_displays_and_do_not_see_each_other():
    with XDesktopEnv(TASK) as a, XDesktopEnv(TASK) as b:
        assert a.display.name != b.display.name
        obs_a, _ = a.reset(seed=0)
        obs_b, _ = b.reset(seed=0)
        assert np.array_equal(obs_a["screenshot"], obs_b["screenshot"])
        _, _, _, _, info_a = a.step(Action.click(160, 100))
        _, _, _, _, info_b = b.step(Action.wait())
        assert info_a["a11y"][0]["name"] == "counter: 1"
        assert info_b["a11y"][0]["name"] == "counter: 0"


def test_no_process_left_after_close():
    env = XDesktopEnv(TASK)
    env.reset(seed=0)
    pgids = [p.pid for p in env.processes]
    assert len(pgids) == 3  # Xvfb, actuator, the app
    env.close()
    assert wait_gone(pgids) == []
    env.close()  # twice is fine


def test_no_process_left_after_a_crash_inside_step():
    env = XDesktopEnv(TASK)
    env.reset(seed=0)
    pgids = [p.pid for p in env.processes]
    os.kill(env.display.server.pid, signal.SIGKILL)  # the X server dies under the env
    with pytest.raises(Exception):  # noqa: B017 - whichever part notices first raises
        env.step(Action.click(160, 100))
    assert wait_gone(pgids) == []
    # The env can start over.
    obs, info = env.reset(seed=0)
    assert info["a11y"][0]["name"] == "counter: 0"
    env.close()


@pytest.mark.parametrize("ending", ["KeyboardInterrupt", "SIGKILL"])
def test_no_process_left_after_the_python_process_ends(ending):
    script = textwrap.dedent(
        f"""
        import json, os, signal, sys
        from pixelrl.envs.x11.env import XDesktopEnv
        env = XDesktopEnv({TASK!r})
        env.reset(seed=0)
        print(json.dumps([p.pid for p in env.processes]), flush=True)
        if {ending!r} == "SIGKILL":
            os.kill(os.getpid(), signal.SIGKILL)   # no Python cleanup runs at all
        raise KeyboardInterrupt                    # atexit / finalizers run
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    pgids = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(pgids) == 3
    assert wait_gone(pgids) == []


def test_missing_xvfb_says_what_to_install():
    with pytest.raises(DisplayError, match="apt-get install xvfb"):
        XDesktopEnv(TASK, xvfb_path="/nonexistent/Xvfb")
