"""A person's input on one X display: XInput2 raw events that come from an input device.

The human recorder must record what the person does, not what the task's own clients inject.
XInput2 raw events (XI 2.0+) reach a client that selects them on the root window whatever
window has the pointer or a grab, and each names its ``sourceid``: the slave device it came
from. Input made with XTEST (xdotool, pyautogui, any client of the display) comes from the
master's XTEST slave device ("Virtual core XTEST pointer / keyboard", marked by the server with
the ``XTEST Device`` property), so it is left out; XSendEvent events never become raw events at
all. Pointer positions are read with ``QueryPointer`` when a button event arrives.

:class:`DeviceListener` runs one thread with its own connection and calls ``on_event`` with an
:class:`InputEvent` (time: ``time.monotonic()`` when read) for each key or button event of a
device; :meth:`DeviceListener.stop` ends it within :data:`POLL_S`.
"""

from __future__ import annotations

import functools
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

POLL_S = 0.05  # how often the thread looks at its stop flag while the display is quiet
# XI2 event types (XI2.h)
RAW_KEY_PRESS, RAW_KEY_RELEASE, RAW_BUTTON_PRESS, RAW_BUTTON_RELEASE = 13, 14, 15, 16
ALL_MASTER_DEVICES = 1
BUTTONS = {1: "left", 2: "middle", 3: "right"}
# wheel buttons -> (dx, dy) notches, dy > 0 down as in Action
WHEEL = {4: (0, -1), 5: (0, 1), 6: (-1, 0), 7: (1, 0)}
# X keysym names -> pyautogui key names (pixelrl.envs.gui_action.KEY_NAMES); others are ignored
X_KEYS = {
    "Shift_L": "shift", "Shift_R": "shift", "Control_L": "ctrl", "Control_R": "ctrl",
    "Alt_L": "alt", "Alt_R": "alt", "ISO_Level3_Shift": "alt", "Meta_L": "alt", "Meta_R": "alt",
    "Super_L": "win", "Super_R": "win", "Return": "enter", "KP_Enter": "enter", "Tab": "tab",
    "ISO_Left_Tab": "tab", "space": "space", "BackSpace": "backspace", "Delete": "delete",
    "Escape": "escape", "Up": "up", "Down": "down", "Left": "left", "Right": "right",
    "Home": "home", "End": "end", "Prior": "pageup", "Next": "pagedown", "Insert": "insert",
    **{f"F{i}": f"f{i}" for i in range(1, 13)},
}  # fmt: skip


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


class DeviceListener:
    """Calls ``on_event(InputEvent)`` for each key and button event a device of ``display``
    makes (never an XTEST or XSendEvent one), from its own thread, until :meth:`stop`."""

    def __init__(self, display: str, on_event: Callable[[InputEvent], None]) -> None:
        from Xlib.display import Display

        self.display_name = display
        self.on_event = on_event
        self.ignored = 0  # synthetic (XTEST) events left out
        self._display = Display(display)
        if not self._display.has_extension("XInputExtension"):
            self._display.close()
            raise RuntimeError(f"display {display} has no XInput extension")
        self._stop = threading.Event()
        self._xtest_devices: dict[int, bool] = {}
        self._shift = False
        self._thread = threading.Thread(target=self._run, daemon=True, name="device-input")
        self.error: BaseException | None = None

    def start(self) -> DeviceListener:
        from Xlib.ext import xinput
        from Xlib.protocol import rq

        raw = rq.Struct(
            rq.Card16("deviceid"),
            rq.Card32("time"),
            rq.Card32("detail"),
            rq.Card16("sourceid"),
            rq.Card16("valuators_len"),
            rq.Card32("flags"),
            rq.Pad(4),
        )
        opcode = self._display.display.get_extension_major(xinput.extname)
        # XI 2.1 or later: raw events reach this client even while another one grabs the
        # pointer or keyboard (a task's app could otherwise hide the person's input)
        version = xinput.XIQueryVersion(
            display=self._display.display, opcode=opcode, major_version=2, minor_version=2
        )
        if (version.major_version, version.minor_version) < (2, 1):
            raise RuntimeError(
                f"display {self.display_name} speaks XInput {version.major_version}."
                f"{version.minor_version}; recording a person needs 2.1 or later"
            )
        for evtype in (RAW_KEY_PRESS, RAW_KEY_RELEASE, RAW_BUTTON_PRESS, RAW_BUTTON_RELEASE):
            self._display.ge_add_event_data(opcode, evtype, raw)
        mask = sum(1 << t for t in (RAW_KEY_PRESS, RAW_KEY_RELEASE, RAW_BUTTON_PRESS,
                                    RAW_BUTTON_RELEASE))  # fmt: skip
        self._root = self._display.screen().root
        self._root.xinput_select_events([(ALL_MASTER_DEVICES, mask)])
        self._display.sync()  # selected before start() returns: no event of the person is lost
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self._display.close()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if not self._display.pending_events():
                    select.select([self._display], [], [], POLL_S)
                    continue
                event = self._display.next_event()
                if getattr(event, "evtype", None) in (
                    RAW_KEY_PRESS,
                    RAW_KEY_RELEASE,
                    RAW_BUTTON_PRESS,
                    RAW_BUTTON_RELEASE,
                ):
                    self._handle(event.evtype, event.data)
        except BaseException as e:  # reported by the recorder
            if not self._stop.is_set():
                self.error = e

    def _is_xtest(self, device: int) -> bool:
        """Whether ``device`` is an XTEST device: the server's ``XTEST Device`` property (which
        clients cannot delete) or its name ("... XTEST pointer/keyboard")."""
        if device not in self._xtest_devices:
            atom = self._display.get_atom("XTEST Device", only_if_exists=True)
            try:
                props = self._display.xinput_list_device_properties(device).atoms
                (info,) = self._display.xinput_query_device(device).devices
                xtest = (bool(atom) and atom in props) or "XTEST" in str(info.name)
            except Exception:  # a device gone since: treat as synthetic, record nothing
                xtest = True
            self._xtest_devices[device] = xtest
        return self._xtest_devices[device]

    def _handle(self, evtype: int, data) -> None:
        if self._is_xtest(data.sourceid):
            self.ignored += 1
            return
        now = time.monotonic()
        if evtype in (RAW_BUTTON_PRESS, RAW_BUTTON_RELEASE):
            pointer = self._root.query_pointer()
            x, y = int(pointer.root_x), int(pointer.root_y)
            if data.detail in WHEEL:
                if evtype == RAW_BUTTON_PRESS:
                    dx, dy = WHEEL[data.detail]
                    self.on_event(InputEvent(now, "scroll", x, y, dx=dx, dy=dy))
                return
            button = BUTTONS.get(data.detail)
            if button is not None:
                kind = "press" if evtype == RAW_BUTTON_PRESS else "release"
                self.on_event(InputEvent(now, kind, x, y, button=button))
            return
        kind = "key_press" if evtype == RAW_KEY_PRESS else "key_release"
        key, char = self._key(data.detail)
        if key == "shift":
            self._shift = kind == "key_press"
        if key or char:
            self.on_event(InputEvent(now, kind, key=key, char=char))

    def _key(self, keycode: int) -> tuple[str, str]:
        """(pyautogui key name, printable character) of a keycode, with shift as held."""
        keysym = self._display.keycode_to_keysym(keycode, 1 if self._shift else 0)
        if not keysym and self._shift:
            keysym = self._display.keycode_to_keysym(keycode, 0)
        name = _key_names().get(keysym)
        if name is not None:
            return name, ""
        if 0x20 < keysym < 0x7F or 0xA0 <= keysym <= 0xFF:  # Latin-1: the keysym is the code point
            char = chr(keysym)
            return (char.lower() if len(char.lower()) == 1 else ""), char
        return "", ""


@functools.cache
def _key_names() -> dict[int, str]:
    """X keysym -> pyautogui key name, for the keys of :data:`X_KEYS`."""
    from Xlib import XK

    XK.load_keysym_group("xkb")  # ISO_Left_Tab (shift+tab), ISO_Level3_Shift
    names = {XK.string_to_keysym(x_name): name for x_name, name in X_KEYS.items()}
    names.pop(XK.NoSymbol, None)
    return names
