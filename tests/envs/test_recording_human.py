"""Human mode: raw X input events -> Actions (pure function), and the device listener on Xvfb
driven by a scripted person pressing through the server's input devices, with the screenshot
taken before each action."""

from __future__ import annotations

import importlib.util
import shutil
import time

import numpy as np
import pytest
from recording_xvfb import DevicePerson, private_xvfb

from pixelrl.envs.gui_action import Action
from pixelrl.envs.recording.human import (
    HumanRecorder,
    InputEvent,
    TimedAction,
    events_to_actions,
    load_shot,
    pair_screenshots,
)


def ev(t, kind, **kw):
    return InputEvent(t, kind, **kw)


def test_events_to_actions_coalesces_and_detects_gestures():
    events = [
        ev(0.0, "move", x=5, y=5),
        ev(0.1, "press", x=10, y=10, button="left"),
        ev(0.15, "release", x=11, y=10, button="left"),  # 1 px: still a click
        ev(1.0, "press", x=10, y=10, button="left"),  # 0.85 s later: another click
        ev(1.05, "release", x=10, y=10, button="left"),
        ev(1.2, "press", x=11, y=11, button="left"),  # 0.15 s later, 1 px off: double
        ev(1.25, "release", x=11, y=11, button="left"),
        ev(2.0, "key_press", key="h", char="h"),
        ev(2.1, "key_press", key="shift"),
        ev(2.2, "key_press", key="i", char="I"),
        ev(2.3, "key_release", key="shift"),
        ev(2.4, "key_press", key="x", char="x"),
        ev(2.5, "key_press", key="backspace"),  # edits the typed text
        ev(2.6, "key_press", key="space", char=" "),
        ev(2.7, "key_press", key="enter"),  # ends the text with "\n" (submit)
        ev(3.0, "press", x=20, y=20, button="left"),
        ev(3.1, "move", x=40, y=30),
        ev(3.2, "release", x=60, y=45, button="left"),
        ev(4.0, "scroll", x=30, y=30, dy=1),
        ev(4.1, "scroll", x=31, y=30, dy=1),
        ev(4.2, "scroll", x=30, y=30, dx=-1),
        ev(5.0, "key_press", key="ctrl"),
        ev(5.1, "key_press", key="shift"),
        ev(5.2, "key_press", key="t", char="\x14"),  # ctrl+shift+t, as a control character
        ev(5.3, "key_release", key="ctrl"),
        ev(5.3, "key_release", key="shift"),
        ev(6.0, "key_press", key="escape"),
        ev(6.5, "press", x=5, y=6, button="right"),
        ev(6.6, "release", x=5, y=6, button="right"),
    ]
    actions = events_to_actions(events)
    assert [a.action for a in actions] == [
        Action.click(10, 10),
        Action.double_click(10, 10),
        Action.type_text("hI \n"),
        Action.drag(20, 20, 60, 45),
        Action.scroll(30, 30, dx=-1, dy=2),
        Action.hotkey("ctrl", "shift", "t"),
        Action.key("escape"),
        Action.right_click(5, 6),
    ]
    assert [a.time for a in actions] == [0.1, 1.0, 2.0, 3.0, 4.0, 5.2, 6.0, 6.5]


def test_pair_screenshots_takes_the_last_one_before_each_action():
    shots = [(t, np.full((2, 2, 3), i, np.uint8)) for i, t in enumerate([0.0, 1.0, 2.0, 3.0])]
    actions = [TimedAction(Action.wait(), t) for t in (0.5, 2.0, 2.5, 9.0)]
    picked = [int(s[0, 0, 0]) for s in pair_screenshots(actions, shots, margin=0.02)]
    assert picked == [0, 1, 2, 3]


def test_user_display_needs_opt_in(monkeypatch):
    import pixelrl.envs.recording.human as human

    monkeypatch.setattr(human, "_USER_DISPLAY", ":0")
    with pytest.raises(PermissionError, match="allow_user_display"):
        HumanRecorder(":0")


@pytest.fixture
def xvfb():
    with private_xvfb() as name:
        yield name


def test_device_person_on_xvfb_yields_expected_actions(xvfb):
    for module in ("Xlib", "mss"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module} (pip install 'pixelrl[x11]')")
    person = DevicePerson(xvfb)
    recorder = HumanRecorder(xvfb, screenshot_interval=0.03, stop_key="f12")
    with recorder:
        time.sleep(0.2)
        person.move(100, 100)
        person.click(pause=0.7)
        person.move(200, 150)
        person.press()
        time.sleep(0.15)
        person.move(240, 170)
        time.sleep(0.15)
        person.move(260, 190)
        person.release()
        time.sleep(0.7)
        person.move(50, 60)
        person.click(repeat=2, delay=0.08, pause=0.7)
        person.type("Hi you")
        person.key("Return")
        person.key("ctrl+s")
        person.key("shift+Tab")
        person.move(300, 200)
        person.click(3)  # (Xvfb's mouse has 3 buttons: no wheel here)
        person.key("F12")
        assert recorder.wait(timeout=5), "the stop key was not seen"
    person.close()
    actions = recorder.actions()
    assert [a.action for a in actions] == [
        Action.click(100, 100),
        Action.drag(200, 150, 260, 190),
        Action.double_click(50, 60),
        Action.type_text("Hi you\n"),
        Action.hotkey("ctrl", "s"),
        Action.hotkey("shift", "tab"),
        Action.right_click(300, 200),
    ]
    shots = pair_screenshots(actions, recorder.shots)
    assert all(load_shot(s).shape == (240, 320, 3) for s in shots)
    shot_times = {path: t for t, path in recorder.shots}
    for a, s in zip(actions, shots):  # each paired shot was grabbed before its action began
        assert shot_times[s] < a.time
    recorder.cleanup()


def test_human_episode_on_the_x11_env_is_recorded_and_replays(tmp_path):
    """The whole human mode: the X11 env's own Xvfb, a scripted person clicking the counter
    three times (slowly: no double click), F12 to finish; stored with before-screenshots."""
    import threading

    import gymnasium

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.recording import EpisodeDataset, replay_dataset
    from pixelrl.envs.recording.human import record_human_episode
    from pixelrl.envs.recording.wrapper import dataset_info_for
    from pixelrl.envs.recording.writer import DatasetWriter

    env_id = "pixelrl/XDesktop-TkCounterThree-v0"
    if env_id not in gymnasium.registry:
        pytest.skip(f"{env_id} is not registered (X11 backend in progress)")
    if not shutil.which("Xvfb"):
        pytest.skip("needs Xvfb")
    env = gymnasium.make(env_id)
    writer = DatasetWriter(
        tmp_path / "human", dataset_info_for(env, extra={"recorded_by": "human"})
    )
    listening = threading.Event()
    result = {}

    def person_session():
        result["entry"] = record_human_episode(
            env, writer, seed=0, max_seconds=30, announce=lambda _: listening.set()
        )

    thread = threading.Thread(target=person_session)
    thread.start()
    try:
        assert listening.wait(60), "human recording did not start"
        person = DevicePerson(env.unwrapped.display.name, pause=0.7)
        time.sleep(0.7)
        person.move(160, 100)
        for _ in range(3):
            person.click()
        person.key("F12")
        person.close()
        thread.join(60)
    finally:
        env.close()
    entry = result["entry"]
    assert entry.length == 3 and entry.success is True and entry.total_reward == 1.0
    data = EpisodeDataset(tmp_path / "human")
    assert list(data.steps(0)["action"]) == ["pyautogui.click(x=160, y=100)"] * 3
    assert data.frames(0).shape == (4, *env.observation_space["screenshot"].shape)
    assert not np.array_equal(data.frame(0, 0), data.frame(0, 3))  # the counter changed
    # the person's actions replay in the env to the same outcome
    (result,) = replay_dataset(data)
    assert result.success_match and result.replayed_success is True


def test_a_display_held_by_a_client_ends_the_start_with_an_error_not_a_hang():
    """An app that holds the X server (XGrabServer) stops screenshots: the recorder's start
    gives up after its deadline instead of waiting for ever."""
    from Xlib import display as xdisplay

    with private_xvfb() as xvfb:
        grabber = xdisplay.Display(xvfb)
        try:
            grabber.grab_server()
            grabber.sync()
            recorder = HumanRecorder(xvfb, screenshot_interval=0.03)
            recorder.START_TIMEOUT_S = 2.0
            start = time.monotonic()
            with pytest.raises(RuntimeError, match=r"did not answer within 2 s"):
                recorder.start()
            assert time.monotonic() - start < 2.0 + 8.0  # the deadline, and the joins' 5 s
        finally:
            grabber.close()
