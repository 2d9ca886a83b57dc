"""A task's apps against the host's helpers on their display (issue 51): a server grab, a flood.

An app can stop the X server answering anyone else (``XGrabServer``) or fill it with windows.
Every host request on the display must then end within its deadline with a clear
:class:`TaskError` (never hang the env), and the window walk must stay bounded. The apps here are
real X clients on a real Xvfb, launched through the task's sandbox as a task launches them;
nothing is mocked. pytest-timeout turns a hang (the code before the fix) into a failure.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest

from pixelrl.envs.gui_action import Action
from pixelrl.envs.x11.display import DisplayError, XDisplay
from pixelrl.envs.x11.env import XDesktopEnv
from pixelrl.envs.x11.helper import DisplayTimeout
from pixelrl.envs.x11.tasks import TaskError, X11Task, parse_task
from pixelrl.envs.x11.windows import Windows

MISSING = [p for p in ("Xvfb", "bwrap") if shutil.which(p) is None]
needs_x11 = pytest.mark.skipif(
    bool(MISSING), reason=f"needs {MISSING}: run scripts/install_system_deps.sh"
)

# Maps a window titled "grabber"; grabs the server at once ("now") or once the test writes ~/grab
# into the sandbox, says so in ~/grabbed, and holds the grab until it is killed.
GRABBER = """import os, sys, time
from Xlib import display
d = display.Display(); root = d.screen().root
w = root.create_window(0, 0, 100, 100, 0, d.screen().root_depth); w.set_wm_name("grabber")
w.map(); d.sync()
while sys.argv[1] != "now" and not os.path.exists(os.path.expanduser("~/grab")):
    time.sleep(0.02)
d.grab_server(); d.sync()
open(os.path.expanduser("~/grabbed"), "w").close()
time.sleep(3600)
"""

# Four untitled top-level windows of N untitled children each, then (topmost) one titled "flood".
FLOOD = """import sys, time
from Xlib import display
d = display.Display(); root = d.screen().root; depth = d.screen().root_depth
tops = [root.create_window(0, 0, 200, 200, 0, depth) for _ in range(4)]
for top in tops:
    for i in range(int(sys.argv[1])):
        top.create_window(0, 0, 1, 1, 0, depth)
        if i % 1000 == 0:
            d.flush()  # python-xlib grows its send buffer by copying: quadratic unflushed
for top in tops:
    top.map()
w = root.create_window(0, 0, 100, 100, 0, depth); w.set_wm_name("flood"); w.map(); d.sync()
time.sleep(3600)
"""
FLOOD_CHILDREN = 20_000


def task(app: str, argv: list[str], window: str, title: str = "nothing") -> X11Task:
    """Launch ``app`` and wait for its ``window``; solved when a window is titled ``title``."""
    return parse_task(
        {
            "id": "HostileDisplay",
            "instruction": "Nothing to do.",
            "config": [
                {"type": "launch", "command": ["{python}", "-c", app, *argv], "window": window}
            ],
            "evaluator": {
                "result": {"type": "window_title", "pattern": f"^{title}$"},
                "func": "exact_match",
                "expected": title,
            },
        }
    )


def env_for(t, **kwargs) -> XDesktopEnv:
    limits = dict(action_timeout_s=2.0, display_timeout_s=2.0, window_timeout_s=4.0)
    return XDesktopEnv(t, screen_size=(320, 240), **{**limits, **kwargs})


def wait_for_file(env: XDesktopEnv, path: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while env.read_file(path) is None:
        assert time.monotonic() < deadline, f"{path} did not appear in the sandbox"
        time.sleep(0.05)


# -- a server grab ----------------------------------------------------------------------------
@needs_x11
@pytest.mark.timeout(60)
def test_a_grab_during_reset_ends_it_with_a_task_error_within_the_window_limit():
    env = env_for(task(GRABBER, ["now"], window="^never$"))
    try:
        start = time.monotonic()
        with pytest.raises(
            TaskError, match=r"config\[0\].*the window reader did not list its windows within"
        ):
            env.reset(seed=0)
        assert time.monotonic() - start < 4.0 + 4.0  # window_timeout_s and slack
        assert env.processes == []  # the sandbox (and its grab) went with the failed reset
    finally:
        env.close()


@needs_x11
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "action, bound_s",
    [
        # the window_title getter and the observation's window list: display_timeout_s
        (Action.wait(), 0.5 + 2.0),
        # the click (action_timeout_s), then the actuator's restart (display_timeout_s)
        (Action.click(10, 10), 2.0 + 2.0),
    ],
    ids=["wait", "click"],
)
def test_a_grab_during_a_step_ends_it_with_a_task_error_within_its_limit(action, bound_s):
    env = env_for(task(GRABBER, ["on-demand"], window="^grabber$"))
    try:
        env.reset(seed=0)
        ours = [p for p in env.processes]
        env.sandbox.write("grab", b"")
        wait_for_file(env, "{workdir}/grabbed")
        start = time.monotonic()
        with pytest.raises(TaskError, match="the (window reader|actuator) did not .* within 2.0 s"):
            env.step(action)
        assert time.monotonic() - start < bound_s + 3.0  # slack for a loaded machine
        assert not any(p.alive() for p in ours)  # Xvfb, actuator, sandbox: all stopped
    finally:
        env.close()


@needs_x11
@pytest.mark.timeout(60)
def test_the_window_reader_times_out_under_a_grab_and_recovers_after_it():
    from Xlib import display as xdisplay

    server = XDisplay(size=(320, 240))
    windows = Windows(server.name, timeout_s=1.0)
    grabber = xdisplay.Display(server.name)
    try:
        grabber.grab_server()
        grabber.sync()
        start = time.monotonic()
        with pytest.raises(DisplayTimeout, match=r"within 1\.0 s"):
            windows.list()
        assert time.monotonic() - start < 1.0 + 1.5
        with pytest.raises(DisplayError, match="did not answer within 1 s"):
            XDisplay(display=server.name, allow_existing_display=True, start_timeout_s=1.0)
        grabber.ungrab_server()
        grabber.sync()
        assert windows.list() == []  # a fresh reader once the server answers again
    finally:
        grabber.close()
        windows.close()
        server.close()


# -- a flood of windows -----------------------------------------------------------------------
@needs_x11
@pytest.mark.timeout(120)
def test_a_flood_of_child_windows_keeps_a_step_fast():
    from Xlib import display as xdisplay

    env = env_for(task(FLOOD, [str(FLOOD_CHILDREN)], "^flood$", "flood"), window_timeout_s=60)
    try:
        env.reset(seed=0)
        client = xdisplay.Display(env.display.name)  # the flood is there, as the app made it
        tops = client.screen().root.query_tree().children
        assert sum(len(t.query_tree().children) == FLOOD_CHILDREN for t in tops) == 4
        client.close()
        start = time.monotonic()
        _, reward, terminated, _, info = env.step(Action.wait())  # the window walk, twice
        took = time.monotonic() - start
        assert reward == 1.0 and terminated  # the titled window is still found
        assert [e["name"] for e in info["a11y"]] == ["flood"]
        # the wait's own 0.5 s, then ~0.1 s of bounded walks; the unbounded walk took 16 s here
        assert took < 0.5 + 2.5
    finally:
        env.close()


# -- the command line -------------------------------------------------------------------------
def pixelrl_record(tmp_path, env_kwargs: dict) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pixelrl", "record", "--env", "pixelrl/XDesktop-TkCounterThree-v0",
            "--env-kwargs", json.dumps(env_kwargs), "--agent", "expert", "--episodes", "1",
            "--out", str(tmp_path / "out")]  # fmt: skip
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)


@needs_x11
def test_a_grabbing_task_is_one_error_line_and_exit_2(tmp_path):
    grab = {"id": "Grab", "instruction": "x", "solution": ["WAIT"],
            "config": [{"type": "launch", "command": ["{python}", "-c", GRABBER, "now"],
                        "window": "^never$"}],
            "evaluator": {"result": {"type": "window_title", "pattern": "^n$"},
                          "func": "exact_match", "expected": "n"}}  # fmt: skip
    (tmp_path / "grab.json").write_text(json.dumps(grab))
    kwargs = {"task": str(tmp_path / "grab.json"), "display_timeout_s": 2, "window_timeout_s": 3}
    run = pixelrl_record(tmp_path, kwargs)
    last = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert last.startswith("pixelrl record: error: ") and "did not list its windows" in last


@pytest.mark.parametrize("value", [0, -1, "soon", float("nan"), True])
def test_a_wrong_display_timeout_is_one_error_line_and_exit_2(tmp_path, value):
    run = pixelrl_record(tmp_path, {"display_timeout_s": value})
    last = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert "display_timeout_s must be a finite number of seconds > 0" in last, last
