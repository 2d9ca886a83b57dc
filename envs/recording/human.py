"""Human demonstrations on an X display: raw input events -> :class:`pixelrl.envs.gui_action.Action`.

Two parts, the second testable without any display:

- :class:`HumanRecorder` listens with pynput on one X display (the Xvfb an X11 env started; the
  user's own display only with ``allow_user_display=True``, since it records every keystroke)
  and grabs a screenshot with mss every ``screenshot_interval`` seconds.
- :func:`events_to_actions` turns the event list into Actions: consecutive printable keys are
  coalesced into one ``type`` (backspace edits it, enter ends it with ``"\\n"``, UI-TARS'
  submit convention), a press and release further apart than ``drag_px`` is a ``drag``, two
  clicks within ``double_click_s`` and ``double_click_px`` are a ``double_click``, wheel notches
  at one spot add up into one ``scroll``, modifiers held with a key make a ``hotkey``.
  :func:`pair_screenshots` picks for each action the last screenshot taken before it began.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from pixelrl.envs.gui_action import TEXT_CHARSET, Action, ActionError

MODIFIERS = ("ctrl", "shift", "alt", "win")
# pynput's Key names -> pyautogui names (pixelrl.envs.gui_action.KEY_NAMES); keys not listed are ignored.
PYNPUT_KEYS = {
    "alt": "alt", "alt_l": "alt", "alt_r": "alt", "alt_gr": "alt",
    "ctrl": "ctrl", "ctrl_l": "ctrl", "ctrl_r": "ctrl",
    "shift": "shift", "shift_l": "shift", "shift_r": "shift",
    "cmd": "win", "cmd_l": "win", "cmd_r": "win",
    "enter": "enter", "tab": "tab", "space": "space", "backspace": "backspace",
    "delete": "delete", "esc": "escape", "up": "up", "down": "down", "left": "left",
    "right": "right", "home": "home", "end": "end", "page_up": "pageup",
    "page_down": "pagedown", "insert": "insert",
    **{f"f{i}": f"f{i}" for i in range(1, 13)},
}  # fmt: skip


ISO_LEFT_TAB = 0xFE20  # X keysym of tab pressed with shift


@dataclass(frozen=True)
class InputEvent:
    """One raw input event.

    ``kind``: ``move``, ``press``/``release`` (mouse button ``button``: left/right/middle),
    ``scroll`` (``dx``/``dy`` notches, ``dy > 0`` = down as in :class:`Action`), ``key_press`` /
    ``key_release`` (``key``: a pyautogui key name, or ``char``: the printable character typed).
    """

    time: float
    kind: str
    x: int = 0
    y: int = 0
    button: str = ""
    dx: int = 0
    dy: int = 0
    key: str = ""
    char: str = ""


@dataclass(frozen=True)
class TimedAction:
    action: Action
    time: float  # when its first event happened


@dataclass
class _Typing:
    text: str = ""
    time: float = 0.0


@dataclass
class _State:
    out: list[TimedAction] = field(default_factory=list)
    typing: _Typing = field(default_factory=_Typing)
    held: set[str] = field(default_factory=set)
    press: InputEvent | None = None
    scroll: list | None = None  # [x, y, dx, dy, time]
    last_click: tuple[int, int, float, int] | None = None  # x, y, time, index in out


def events_to_actions(
    events: Iterable[InputEvent],
    double_click_s: float = 0.5,
    double_click_px: int = 4,
    drag_px: int = 5,
) -> list[TimedAction]:
    """The Actions a person's raw events amount to (see the module docstring)."""
    s = _State()

    def emit(action: Action, t: float) -> None:
        s.out.append(TimedAction(action, t))

    def flush_typing() -> None:
        if s.typing.text:
            emit(Action.type_text(s.typing.text), s.typing.time)
        s.typing = _Typing()

    def flush_scroll() -> None:
        if s.scroll is not None and (s.scroll[2] or s.scroll[3]):
            x, y, dx, dy, t = s.scroll
            emit(Action.scroll(x, y, dx=dx, dy=dy), t)
        s.scroll = None

    def flush_all() -> None:
        flush_typing()
        flush_scroll()

    for e in sorted(events, key=lambda e: e.time):
        if e.kind == "move":
            continue
        if e.kind == "press":
            flush_all()
            s.press = e
        elif e.kind == "release":
            p, s.press = s.press, None
            if p is None or p.button != e.button:
                continue
            if e.button == "right":
                emit(Action.right_click(p.x, p.y), p.time)
                s.last_click = None
            elif e.button == "left":
                if np.hypot(e.x - p.x, e.y - p.y) >= drag_px:
                    emit(Action.drag(p.x, p.y, e.x, e.y), p.time)
                    s.last_click = None
                elif (
                    s.last_click is not None
                    and p.time - s.last_click[2] <= double_click_s
                    and max(abs(p.x - s.last_click[0]), abs(p.y - s.last_click[1]))
                    <= double_click_px
                ):
                    x, y, t, index = s.last_click
                    s.out[index] = TimedAction(Action.double_click(x, y), t)
                    s.last_click = None
                else:
                    emit(Action.click(p.x, p.y), p.time)
                    s.last_click = (p.x, p.y, p.time, len(s.out) - 1)
        elif e.kind == "scroll":
            flush_typing()
            near = (
                s.scroll is not None
                and max(abs(e.x - s.scroll[0]), abs(e.y - s.scroll[1])) <= drag_px
            )
            if not near:
                flush_scroll()
                s.scroll = [e.x, e.y, 0, 0, e.time]
            s.scroll[2] += e.dx
            s.scroll[3] += e.dy
        elif e.kind == "key_press":
            _key_press(e, s, emit, flush_all, flush_typing)
        elif e.kind == "key_release":
            s.held.discard(e.key)
    flush_all()
    return s.out


def _key_press(e: InputEvent, s: _State, emit, flush_all, flush_typing) -> None:
    if e.key in MODIFIERS:
        s.held.add(e.key)
        return
    chord = [m for m in MODIFIERS if m in s.held and m != "shift"]
    char = e.char or (" " if e.key == "space" else "")
    if chord:  # ctrl/alt/win + key: a hotkey (shift joins it)
        flush_all()
        name = e.key or _char_key(char)
        if "shift" in s.held:
            chord.append("shift")
        try:
            emit(Action.hotkey(*chord, name), e.time)
        except ActionError:
            pass  # a chord with a key outside the vocabulary: nothing an Action can say
        return
    if char and char in TEXT_CHARSET and char not in "\t\n":
        if not s.typing.text:
            s.typing.time = e.time
        s.typing.text += char
        return
    if e.key == "backspace" and s.typing.text:
        s.typing.text = s.typing.text[:-1]
        return
    if e.key == "enter" and s.typing.text:
        s.typing.text += "\n"
        flush_typing()
        return
    flush_all()
    if not e.key:
        return
    if "shift" in s.held:
        emit(Action.hotkey("shift", e.key), e.time)
    else:
        emit(Action.key(e.key), e.time)


def _char_key(char: str) -> str:
    """The key a character came from (ctrl+letter arrives as a control character)."""
    if char and ord(char) < 32:
        return chr(ord(char) + 96)
    return char.lower()


def pair_screenshots(
    actions: list[TimedAction], shots: list[tuple[float, np.ndarray]], margin: float = 0.02
) -> list[np.ndarray]:
    """For each action, the last screenshot whose grab began ``margin`` seconds before it.

    ``shots`` are ``(time, image)`` pairs in time order. The margin covers the delay between an
    event reaching the X server and the listener hearing of it.
    """
    if not shots:
        raise ValueError("no screenshot was taken")
    times = np.array([t for t, _ in shots])
    out = []
    for a in actions:
        k = int(np.searchsorted(times, a.time - margin, side="left")) - 1
        out.append(shots[max(k, 0)][1])
    return out


# -- listening ----------------------------------------------------------------------------------
_USER_DISPLAY = os.environ.get("DISPLAY")  # the session's own display, fixed at import


class HumanRecorder:
    """Listens to the mouse and keyboard of X display ``display`` and grabs screenshots.

    Use as a context manager or call :meth:`start` / :meth:`stop`; then :attr:`events` holds the
    raw :class:`InputEvent` s and :attr:`screenshots` ``(time, uint8 H×W×3)`` pairs.
    ``stop_key`` (default ``f12``) pressed by the person ends the recording (:meth:`wait`).
    """

    def __init__(
        self,
        display: str,
        screenshot_interval: float = 0.05,
        allow_user_display: bool = False,
        stop_key: str | None = "f12",
    ) -> None:
        if display == _USER_DISPLAY and not allow_user_display:
            raise PermissionError(
                f"{display} is your own display: listening there records every key you press. "
                "Record on the X11 env's Xvfb, or opt in with allow_user_display=True "
                "(--allow-user-display)"
            )
        self.display = display
        self.screenshot_interval = screenshot_interval
        self.stop_key = stop_key
        self.events: list[InputEvent] = []
        self.screenshots: list[tuple[float, np.ndarray]] = []
        self._stop = threading.Event()
        self._listeners: list = []
        self._grabber: threading.Thread | None = None
        self._grab_error: BaseException | None = None

    # pynput callbacks run on its listener threads; list.append is atomic in CPython.
    def _on_move(self, x, y) -> None:
        self.events.append(InputEvent(time.monotonic(), "move", int(x), int(y)))

    def _on_click(self, x, y, button, pressed) -> None:
        kind = "press" if pressed else "release"
        self.events.append(InputEvent(time.monotonic(), kind, int(x), int(y), button=button.name))

    def _on_scroll(self, x, y, dx, dy) -> None:  # pynput: dy > 0 is up
        self.events.append(
            InputEvent(time.monotonic(), "scroll", int(x), int(y), dx=int(dx), dy=-int(dy))
        )

    def _key_event(self, key, kind: str) -> None:
        name = getattr(key, "name", None)
        if name is not None:  # a pynput Key (special key)
            mapped = PYNPUT_KEYS.get(name)
            if mapped is None:
                return
            self.events.append(InputEvent(time.monotonic(), kind, key=mapped))
            if kind == "key_press" and mapped == self.stop_key:
                self._stop.set()
            return
        char = getattr(key, "char", None)
        if not char and getattr(key, "vk", None) == ISO_LEFT_TAB:  # what X sends for shift+tab
            self.events.append(InputEvent(time.monotonic(), kind, key="tab"))
            return
        if char:
            self.events.append(
                InputEvent(time.monotonic(), kind, char=char, key=_char_key_name(char))
            )

    def _grab_loop(self) -> None:
        import mss

        try:
            with mss.MSS(display=self.display) as sct:
                monitor = sct.monitors[0]
                while not self._stop.is_set():
                    t = time.monotonic()
                    shot = np.asarray(sct.grab(monitor))[..., :3][..., ::-1].copy()  # BGRA -> RGB
                    self.screenshots.append((t, shot))
                    self._stop.wait(self.screenshot_interval)
        except BaseException as e:  # reported by stop()
            self._grab_error = e

    def start(self) -> HumanRecorder:
        previous = os.environ.get("DISPLAY")
        os.environ["DISPLAY"] = self.display  # pynput's Xlib backend connects to $DISPLAY
        try:
            from pynput import keyboard, mouse

            self._listeners = [
                mouse.Listener(
                    on_move=self._on_move, on_click=self._on_click, on_scroll=self._on_scroll
                ),
                keyboard.Listener(
                    on_press=lambda k: self._key_event(k, "key_press"),
                    on_release=lambda k: self._key_event(k, "key_release"),
                ),
            ]
            for listener in self._listeners:
                listener.start()
            for listener in self._listeners:
                listener.wait()
        finally:
            if previous is None:
                os.environ.pop("DISPLAY", None)
            else:
                os.environ["DISPLAY"] = previous
        self._grabber = threading.Thread(target=self._grab_loop, daemon=True)
        self._grabber.start()
        while not self.screenshots and self._grab_error is None:  # a "before" shot must exist
            time.sleep(0.005)
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the stop key is pressed (True) or ``timeout`` seconds pass (False)."""
        return self._stop.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        count = len(self.events)
        for listener in self._listeners:
            listener.stop()
        # pynput's XRecord threads only notice the stop when one more event arrives (an idle
        # Xvfb sends none): send a shift tap and a zero-length pointer move, then forget them.
        self._wake_listeners()
        for listener in self._listeners:  # done before the display may go away
            listener.join(timeout=5)
        del self.events[count:]
        if self._grabber is not None:
            self._grabber.join(timeout=5)
        if self._grab_error is not None:
            raise RuntimeError(f"screenshots of {self.display} failed: {self._grab_error}")

    def _wake_listeners(self) -> None:
        from Xlib import XK, X
        from Xlib.display import Display
        from Xlib.ext import xtest

        display = Display(self.display)
        try:
            pointer = display.screen().root.query_pointer()
            xtest.fake_input(display, X.MotionNotify, x=pointer.root_x, y=pointer.root_y)
            shift = display.keysym_to_keycode(XK.XK_Shift_L)
            xtest.fake_input(display, X.KeyPress, shift)
            xtest.fake_input(display, X.KeyRelease, shift)
            display.sync()
        finally:
            display.close()

    def __enter__(self) -> HumanRecorder:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def actions(self, **kwargs) -> list[TimedAction]:
        """The Actions of the events so far (the stop key itself left out)."""
        events = [e for e in self.events if not (self.stop_key and e.key == self.stop_key)]
        return events_to_actions(events, **kwargs)


def _char_key_name(char: str) -> str:
    key = _char_key(char)
    return key if len(key) == 1 else ""


def record_human_episode(
    env,
    writer,
    seed: int | None = None,
    max_seconds: float = 300.0,
    allow_user_display: bool = False,
    announce=print,
):
    """Let a person play one episode of a GUI env that runs on an X display (the X11 env) and
    write it to ``writer`` (a :class:`pixelrl.envs.recording.writer.DatasetWriter`).

    The env is reset (which starts the task's apps); the person then acts directly on the
    display until they press F12 or ``max_seconds`` pass. Each action is stored with the
    screenshot taken just before it; the episode's reward is the env's ``evaluate()`` (1/0) on
    the last step where the env has one. Returns the manifest entry, or None if nothing was done.
    """
    from pixelrl.envs.gui_action import to_pyautogui

    unwrapped = env.unwrapped
    display = getattr(getattr(unwrapped, "display", None), "name", None)
    if display is None:
        raise ValueError(
            f"human mode records on an X display; {env.spec.id if env.spec else env} has none: "
            "use an X11 env (pixelrl/X11-*)"
        )
    obs, info = env.reset(seed=seed)
    recorder = HumanRecorder(display, allow_user_display=allow_user_display)
    with recorder:
        announce(f"recording on display {display}: act now, press F12 to finish")
        recorder.wait(max_seconds)
    timed = recorder.actions()
    if not timed:
        return None
    shots = pair_screenshots(timed, recorder.screenshots) + [recorder.screenshots[-1][1]]
    expected = tuple(env.observation_space["screenshot"].shape)
    if shots[0].shape != expected:
        raise ValueError(f"screenshots of {display} are {shots[0].shape}, the env's are {expected}")
    success = bool(unwrapped.evaluate()) if hasattr(unwrapped, "evaluate") else None

    def observation(image):
        return {**obs, "screenshot": image}

    episode = writer.begin_episode(observation(shots[0]), seed, None, info)
    for i, t in enumerate(timed):
        last = i == len(timed) - 1
        reward = float(success) if last and success is not None else 0.0
        step_info = {"success": success, "human_time": t.time} if last else {"human_time": t.time}
        episode.add_step(
            to_pyautogui(t.action), reward, last, False, step_info, observation(shots[i + 1])
        )
    return episode.finish()
