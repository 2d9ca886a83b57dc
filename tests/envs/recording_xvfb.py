"""A private Xvfb for the recording tests, and a scripted person whose input comes from its
input devices ("Xvfb mouse", "Xvfb keyboard"), as a person's does.

The human recorder leaves out XTEST input (xdotool: what a task's client could inject), so the
person here presses through XTEST's device events (XI 1 event types with a device id): the
server then makes the events of that slave device, as its driver would, and XInput2 names it
as their source.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

# XI 1 event offsets from the extension's first event (XI.h)
DEVICE_KEY_PRESS, DEVICE_KEY_RELEASE, DEVICE_BUTTON_PRESS, DEVICE_BUTTON_RELEASE = 1, 2, 3, 4


@contextlib.contextmanager
def private_xvfb(size: str = "320x240") -> Iterator[str]:
    """An Xvfb of this test's own (the server picks a free display number); yields its name."""
    if not (shutil.which("Xvfb") and shutil.which("xdotool")):
        pytest.skip("needs Xvfb and xdotool (scripts/install_system_deps.sh installs them)")
    read, write = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", f"{size}x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    try:
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=10)


class DevicePerson:
    """Moves the pointer and presses buttons and keys on ``display`` as its input devices."""

    def __init__(self, display: str, pause: float = 0.15) -> None:
        from Xlib.display import Display
        from Xlib.ext import xinput

        self.name = display
        self.pause = pause
        self.display = Display(display)
        self.first_event = self.display.query_extension("XInputExtension").first_event
        self.xtest = self.display.display.get_extension_major("XTEST")
        devices = self.display.xinput_query_device(xinput.AllDevices).devices
        slaves = {d.use: d.deviceid for d in devices if "XTEST" not in d.name}
        self.mouse = slaves[xinput.SlavePointer]
        self.keyboard = slaves[xinput.SlaveKeyboard]

    def close(self) -> None:
        self.display.close()

    def _send(self, offset: int, detail: int, device: int) -> None:
        from Xlib import X
        from Xlib.protocol import rq

        class FakeDeviceInput(rq.Request):  # XTestFakeInput with its device id (xtestproto)
            _request = rq.Struct(
                rq.Card8("opcode"), rq.Opcode(2), rq.RequestLength(), rq.Card8("event_type"),
                rq.Card8("detail"), rq.Pad(2), rq.Card32("time"), rq.Window("root", (X.NONE,)),
                rq.Pad(8), rq.Int16("x"), rq.Int16("y"), rq.Pad(7), rq.Card8("deviceid"),
            )  # fmt: skip

        FakeDeviceInput(
            display=self.display.display,
            opcode=self.xtest,
            event_type=self.first_event + offset,
            detail=detail,
            time=0,
            root=X.NONE,
            x=0,
            y=0,
            deviceid=device,
        )
        self.display.sync()

    def move(self, x: int, y: int) -> None:
        """The pointer to (x, y) (motion is not recorded: where a press happens is)."""
        self.display.screen().root.warp_pointer(x, y)
        self.display.sync()

    def press(self, button: int = 1) -> None:
        self._send(DEVICE_BUTTON_PRESS, button, self.mouse)

    def release(self, button: int = 1) -> None:
        self._send(DEVICE_BUTTON_RELEASE, button, self.mouse)

    def click(self, button: int = 1, repeat: int = 1, delay: float = 0.03, pause=None) -> None:
        for i in range(repeat):
            self.press(button)
            self.release(button)
            if i + 1 < repeat:
                time.sleep(delay)
        time.sleep(self.pause if pause is None else pause)

    def _keycode(self, name: str) -> tuple[int, bool]:
        """The keycode of an X keysym name (or one character) and whether it needs shift."""
        from Xlib import XK

        name = {"ctrl": "Control_L", "shift": "Shift_L", "alt": "Alt_L"}.get(name, name)
        keysym = XK.string_to_keysym(name) or ord(name)
        code = self.display.keysym_to_keycode(keysym)
        return code, self.display.keycode_to_keysym(code, 0) != keysym

    def key(self, combo: str, pause=None) -> None:
        """``"ctrl+s"``, ``"shift+Tab"``, ``"Return"``, ``"F12"``: pressed together, released."""
        codes = [self._keycode(name)[0] for name in combo.split("+")]
        for code in codes:
            self._send(DEVICE_KEY_PRESS, code, self.keyboard)
        for code in reversed(codes):
            self._send(DEVICE_KEY_RELEASE, code, self.keyboard)
        time.sleep(self.pause if pause is None else pause)

    def type(self, text: str) -> None:
        shift = self._keycode("Shift_L")[0]
        for char in text:
            code, shifted = self._keycode("space" if char == " " else char)
            if shifted:
                self._send(DEVICE_KEY_PRESS, shift, self.keyboard)
            self._send(DEVICE_KEY_PRESS, code, self.keyboard)
            self._send(DEVICE_KEY_RELEASE, code, self.keyboard)
            if shifted:
                self._send(DEVICE_KEY_RELEASE, shift, self.keyboard)
            time.sleep(0.02)
        time.sleep(self.pause)

    def xdotool(self, *args: str) -> None:
        """The same through xdotool (XTEST): what a task's client could inject."""
        env = dict(os.environ, DISPLAY=self.name)
        subprocess.run(["xdotool", *args], env=env, check=True)
        time.sleep(self.pause)
