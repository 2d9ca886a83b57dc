"""Human demonstrations on an X display: raw input events -> :class:`pixelrl.envs.gui_action.Action`.

Two parts, the second testable without any display:

- :class:`HumanRecorder` listens to one X display's input devices (the Xvfb an X11 env started;
  the user's own display only with ``allow_user_display=True``, since it records every
  keystroke) with :mod:`pixelrl.envs.recording.device_input`: input that the task's clients
  inject (XTEST, XSendEvent) is not the person's and is left out, an injected stop key
  included. It grabs a screenshot with mss every ``screenshot_interval`` seconds and keeps only
  the last few in memory: the one just before each press of a key or button is written to a
  spool folder at once, so memory stays bounded however long the person takes.
- :func:`events_to_actions` turns the event list into Actions: consecutive printable keys are
  coalesced into one ``type`` (backspace edits it, enter ends it with ``"\\n"``, UI-TARS'
  submit convention), a press and release further apart than ``drag_px`` is a ``drag``, two
  clicks within ``double_click_s`` and ``double_click_px`` are a ``double_click``, wheel notches
  at one spot add up into one ``scroll``, modifiers held with a key make a ``hotkey``.
  :func:`pair_screenshots` picks for each action the last screenshot taken before it began.
"""

from __future__ import annotations

import os
import queue
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pixelrl.envs.gui_action import TEXT_CHARSET, Action, ActionError
from pixelrl.envs.recording.device_input import InputEvent

__all__ = [
    "HumanRecorder",
    "InputEvent",  # the listener's, used here
    "TimedAction",
    "events_to_actions",
    "load_shot",
    "pair_screenshots",
]

MODIFIERS = ("ctrl", "shift", "alt", "win")


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


PAIRING_MARGIN_S = 0.02


def pair_screenshots(
    actions: list[TimedAction], shots: list[tuple], margin: float = PAIRING_MARGIN_S
) -> list:
    """For each action, the last screenshot whose grab began ``margin`` seconds before it.

    ``shots`` are ``(time, image)`` pairs in time order (the image: an array, or the path of
    one written by :class:`HumanRecorder`). The margin covers the delay between an event
    reaching the X server and the listener hearing of it.
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
    """Listens to the input devices of X display ``display`` and grabs screenshots.

    Use as a context manager or call :meth:`start` / :meth:`stop`; then :attr:`events` holds the
    person's raw :class:`InputEvent` s and :attr:`shots` ``(time, path)`` pairs: the PNG
    screenshots kept (the last one before each press, and the last of all), in ``spool``
    (a temporary folder unless given; :meth:`cleanup` removes it). ``stop_key`` (default
    ``f12``) pressed on a device ends the recording (:meth:`wait`).
    """

    RECENT = 4  # screenshots held in memory: enough to find the one before an event
    START_TIMEOUT_S = 10.0  # the first screenshot's deadline (threads join within 5 s at stop)

    def __init__(
        self,
        display: str,
        screenshot_interval: float = 0.05,
        allow_user_display: bool = False,
        stop_key: str | None = "f12",
        spool: str | os.PathLike | None = None,
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
        self.shots: list[tuple[float, Path]] = []
        self._spool_dir = (
            None if spool is not None else tempfile.TemporaryDirectory(prefix="human-")
        )
        self.spool = Path(spool if spool is not None else self._spool_dir.name)
        self._recent: deque[tuple[float, int, np.ndarray]] = deque(maxlen=self.RECENT)
        self._kept: set[int] = set()  # grab numbers already written
        self._to_write: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._listener = None
        self._threads: list[threading.Thread] = []
        self._error: BaseException | None = None

    @property
    def ignored(self) -> int:
        """Synthetic (XTEST) key and button events left out so far."""
        return self._listener.ignored if self._listener is not None else 0

    def _on_event(self, event: InputEvent) -> None:  # on the listener's thread
        if event.kind in ("press", "scroll", "key_press"):
            self._keep_shot_before(event.time - PAIRING_MARGIN_S)
        self.events.append(event)
        if event.kind == "key_press" and event.key == self.stop_key:
            self._stop.set()

    def _keep_shot_before(self, t: float) -> None:
        """Queue for writing the last screenshot grabbed before ``t`` (what
        :func:`pair_screenshots` will pair an action beginning then with)."""
        recent = list(self._recent)
        if not recent:
            return
        chosen = next((shot for shot in reversed(recent) if shot[0] < t), recent[0])
        if chosen[1] not in self._kept:
            self._kept.add(chosen[1])
            self._to_write.put(chosen)

    def _grab_loop(self) -> None:
        import mss

        try:
            with mss.MSS(display=self.display) as sct:
                monitor = sct.monitors[0]
                number = 0
                while not self._stop.is_set():
                    t = time.monotonic()
                    shot = np.asarray(sct.grab(monitor))[..., :3][..., ::-1].copy()  # BGRA -> RGB
                    self._recent.append((t, number, shot))
                    number += 1
                    self._stop.wait(self.screenshot_interval)
        except BaseException as e:  # reported by stop()
            self._error = e

    def _write_loop(self) -> None:
        from PIL import Image

        while True:
            item = self._to_write.get()
            if item is None:
                return
            t, number, image = item
            path = self.spool / f"shot_{number:07d}.png"
            try:
                Image.fromarray(image).save(path, compress_level=1)
            except BaseException as e:
                self._error = e
                continue
            self.shots.append((t, path))

    def start(self) -> HumanRecorder:
        from pixelrl.envs.recording.device_input import DeviceListener

        # python-xlib has no timeouts: a display an app holds (XGrabServer) would block the
        # listener's set-up for ever, so it runs on a thread the recorder stops waiting for
        listening: dict[str, object] = {}
        gave_up = threading.Event()

        def listen() -> None:
            try:
                listener = DeviceListener(self.display, self._on_event).start()
            except BaseException as e:  # noqa: BLE001  (raised below, on the caller's thread)
                listening["error"] = e
                return
            if gave_up.is_set():  # the display answered too late: nobody listens any more
                listener.stop()
            listening["listener"] = listener

        setup = threading.Thread(target=listen, daemon=True, name="device-input-setup")
        setup.start()
        setup.join(self.START_TIMEOUT_S)
        if "error" in listening:
            raise listening["error"]
        if setup.is_alive():
            gave_up.set()
            raise RuntimeError(
                f"recording {self.display} failed: the display did not answer within "
                f"{self.START_TIMEOUT_S:g} s (an app holding the X server?)"
            )
        self._listener = listening["listener"]
        self._threads = [
            threading.Thread(target=self._grab_loop, daemon=True, name="screenshots"),
            threading.Thread(target=self._write_loop, daemon=True, name="screenshot-writer"),
        ]
        for thread in self._threads:
            thread.start()
        deadline = time.monotonic() + self.START_TIMEOUT_S
        while not self._recent and self._error is None:  # a "before" shot must exist
            if time.monotonic() > deadline:  # an app may hold the X server (XGrabServer)
                self._error = TimeoutError(
                    f"no screenshot of {self.display} within {self.START_TIMEOUT_S:g} s"
                )
                self.stop()  # raises it, with the recorder's own wording
            time.sleep(0.005)
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the stop key is pressed (True) or ``timeout`` seconds pass (False)."""
        return self._stop.wait(timeout)

    def stop(self) -> None:
        """Stop listening and grabbing; the last screenshot joins :attr:`shots`."""
        self._stop.set()
        if self._listener is not None:
            self._listener.stop()
        grabber, writer = self._threads or (None, None)
        if grabber is not None:
            grabber.join(timeout=5)
            if self._recent:
                last = self._recent[-1]
                if last[1] not in self._kept:
                    self._kept.add(last[1])
                    self._to_write.put(last)
            self._to_write.put(None)
            writer.join()
        self.shots.sort(key=lambda shot: shot[0])
        error = self._error or (self._listener.error if self._listener is not None else None)
        if error is not None:
            raise RuntimeError(f"recording {self.display} failed: {error}")

    def cleanup(self) -> None:
        """Remove the spooled screenshots (a spool folder of the caller's stays)."""
        if self._spool_dir is not None:
            self._spool_dir.cleanup()

    def __enter__(self) -> HumanRecorder:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def actions(self, **kwargs) -> list[TimedAction]:
        """The Actions of the events so far (the stop key itself left out)."""
        events = [e for e in self.events if not (self.stop_key and e.key == self.stop_key)]
        return events_to_actions(events, **kwargs)


def load_shot(path: Path) -> np.ndarray:
    """A screenshot the recorder wrote, as uint8 H x W x 3."""
    from PIL import Image

    with Image.open(path, formats=["PNG"]) as im:
        return np.asarray(im.convert("RGB"))


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
    try:
        with recorder:
            announce(f"recording on display {display}: act now, press F12 to finish")
            recorder.wait(max_seconds)
        timed = recorder.actions()
        if not timed:
            return None
        shots = pair_screenshots(timed, recorder.shots) + [recorder.shots[-1][1]]
        expected = tuple(env.observation_space["screenshot"].shape)
        success = bool(unwrapped.evaluate()) if hasattr(unwrapped, "evaluate") else None

        def observation(path: Path):  # one screenshot in memory at a time
            image = load_shot(path)
            if image.shape != expected:
                raise ValueError(
                    f"screenshots of {display} are {image.shape}, the env's are {expected}"
                )
            return {**obs, "screenshot": image}

        episode = writer.begin_episode(observation(shots[0]), seed, None, info)
        for i, t in enumerate(timed):
            last = i == len(timed) - 1
            reward = float(success) if last and success is not None else 0.0
            step_info = (
                {"success": success, "human_time": t.time} if last else {"human_time": t.time}
            )
            episode.add_step(
                to_pyautogui(t.action), reward, last, False, step_info, observation(shots[i + 1])
            )
        return episode.finish()
    finally:
        recorder.cleanup()
