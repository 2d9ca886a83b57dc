"""The process that acts on and looks at one X display: pyautogui input, mss screenshots.

Each X11 env runs one actuator (this file as a script, with ``DISPLAY`` set) and talks to it
over pipes. Why a process of its own:

- pyautogui binds itself to ``$DISPLAY`` when it is imported and keeps that connection in module
  globals, so one Python process can drive only one display; two envs need two processes;
- every request has a deadline (:mod:`pixelrl.envs.x11.helper`): an actuator stuck on the
  display (an app of the task grabbed the X server) is killed, not waited for;
- the X client libraries (libxcb under mss) can abort the whole process when the X server dies
  under them; that takes down the actuator, and the env reports an error instead of dying.

Protocol (the helper's, one JSON object a line): the actuator first writes ``{"ready": true,
"size": [w, h]}``.
A request ``{"kind": ..., "x": ..., ...}`` (the fields of ``pixelrl.envs.gui_action.Action``) performs the
action and answers ``{"ok": true}`` or ``{"ok": false, "error": ..., "type": ...}``; pyautogui's
fail-safe stays on (an action that starts with the pointer in a screen corner fails with
``"type": "FailSafeException"``). A request ``{"kind": "screenshot", "settle_s": s,
"settle_max_s": m}`` waits ``s``, then grabs until two grabs agree (at most ``m`` seconds),
writes the ``w*h*3`` RGB bytes into the shared-memory block the env created (its name is the
script's argument; a pipe would copy 3 MB a frame) and answers ``{"ok": true, "width": w,
"height": h}``.
"""

from __future__ import annotations

import subprocess
import sys
import time

# Standard library only at the top: this file is also the actuator's script (see helper_loop).

# Our key names are pyautogui's except the super key.
_PYAUTOGUI_KEY = {"win": "winleft"}


def _key(name: str) -> str:
    return _PYAUTOGUI_KEY.get(name, name)


def perform(pyautogui, a: dict) -> None:
    """Do one action (a dict with the fields of pixelrl.envs.gui_action.Action)."""
    kind = a["kind"]
    x, y = a.get("x"), a.get("y")
    if kind == "move":
        pyautogui.moveTo(x, y)
    elif kind == "click":
        pyautogui.click(x, y)
    elif kind == "double_click":
        pyautogui.doubleClick(x, y, interval=0.05)
    elif kind == "right_click":
        pyautogui.rightClick(x, y)
    elif kind == "drag":
        # Press, move in two legs, release: apps see real motion events between press and release.
        pyautogui.moveTo(x, y)
        pyautogui.mouseDown(button="left")
        pyautogui.moveTo((x + a["x2"]) // 2, (y + a["y2"]) // 2)
        pyautogui.moveTo(a["x2"], a["y2"])
        pyautogui.mouseUp(button="left")
    elif kind == "scroll":
        # Ours: dy > 0 scrolls down; pyautogui: positive clicks scroll up.
        if a.get("dy"):
            pyautogui.scroll(-int(a["dy"]), x=x, y=y)
        if a.get("dx"):
            pyautogui.hscroll(int(a["dx"]), x=x, y=y)
    elif kind == "type":
        if a["text"].isascii() and "<" not in a["text"]:
            pyautogui.write(a["text"], interval=0)
        else:
            # pyautogui types ASCII only, and '<' as '>' (it holds shift for '<', whose keysym
            # sits on the 102nd key, where shift gives '>'); xdotool maps any character to a spare keycode. Its
            # delay between keys: with none, apps read the remapped keycode after xdotool has
            # restored it and lose CJK characters (measured with Tk on Xvfb); its default 12 ms
            # still lost one on a loaded 2-core machine (CI beside two training runs), so 40.
            subprocess.run(["xdotool", "type", "--delay", "40", "--", a["text"]], check=True)
    elif kind == "key":
        pyautogui.press(_key(a["keys"][0]))
    elif kind == "key_down":
        pyautogui.keyDown(_key(a["keys"][0]))
    elif kind == "key_up":
        pyautogui.keyUp(_key(a["keys"][0]))
    elif kind == "hotkey":
        pyautogui.hotkey(*[_key(k) for k in a["keys"]])
    elif kind in ("wait", "done", "fail"):
        pass
    else:
        raise ValueError(f"unknown action kind {kind!r}")


class Actuator:
    """The env's handle on its actuator process: :meth:`perform` sends one action and waits.

    Every wait has a deadline (see :mod:`pixelrl.envs.x11.helper`): the start
    (``start_timeout_s``), an action (the caller's), a screenshot (the caller's beyond settling).
    """

    def __init__(
        self, display_name: str, screen_size: tuple[int, int], start_timeout_s: float = 20.0
    ) -> None:
        import os
        from multiprocessing import shared_memory

        from pixelrl.envs.x11.helper import Helper

        width, height = screen_size
        self._frame = shared_memory.SharedMemory(create=True, size=width * height * 3)
        try:
            self._helper = Helper(
                os.path.abspath(__file__),
                [self._frame.name],
                display_name,
                start_timeout_s,
                name="actuator",
            )
        except BaseException:
            self._release_frame()
            raise
        self.process = self._helper.process
        self.size = tuple(self._helper.hello["size"])

    def perform(self, action: dict, timeout_s: float) -> dict:
        """Send ``action`` (Action fields as a dict); the reply,
        :class:`~pixelrl.envs.x11.helper.ActionTimeout` past ``timeout_s``, or
        :class:`~pixelrl.envs.x11.helper.HelperError`."""
        from pixelrl.envs.x11.helper import ActionTimeout, DisplayTimeout

        try:
            return self._helper.request(action, timeout_s, f"finish a {action['kind']} action")
        except DisplayTimeout as e:
            raise ActionTimeout(str(e)) from None

    def screenshot(self, settle_s: float, settle_max_s: float, timeout_s: float):
        """The screen once it has settled (see the module doc), as an H×W×3 uint8 array;
        :class:`~pixelrl.envs.x11.helper.DisplayTimeout` when it takes ``timeout_s`` beyond the
        settling."""
        import numpy as np

        from pixelrl.envs.x11.helper import HelperError

        request = {"kind": "screenshot", "settle_s": settle_s, "settle_max_s": settle_max_s}
        header = self._helper.request(request, timeout_s + settle_s + settle_max_s, "screenshot")
        if not header["ok"]:
            raise HelperError(f"screenshot failed: {header['type']}: {header['error']}")
        width, height = header["width"], header["height"]
        frame = np.frombuffer(self._frame.buf, dtype=np.uint8, count=width * height * 3)
        return frame.reshape(height, width, 3).copy()  # the caller's to keep

    def alive(self) -> bool:
        return self._helper.alive()

    def _release_frame(self) -> None:
        if self._frame is not None:
            self._frame.close()
            self._frame.unlink()
            self._frame = None

    def close(self) -> None:
        self._helper.close()
        self._release_frame()


def settled_screenshot(sct, settle_s: float, settle_max_s: float) -> tuple[int, int, bytes]:
    """Wait ``settle_s``, then grab until two grabs agree (at most ``settle_max_s``)."""
    monitor = sct.monitors[1]
    time.sleep(settle_s)
    shot = sct.grab(monitor)
    previous = shot.rgb
    deadline = time.monotonic() + settle_max_s
    while time.monotonic() < deadline:
        time.sleep(0.02)
        shot = sct.grab(monitor)
        current = shot.rgb
        if current == previous:
            break
        previous = current
    return shot.width, shot.height, previous


def main() -> None:
    from multiprocessing import resource_tracker, shared_memory

    import mss
    import pyautogui  # binds to $DISPLAY, which the env set for this process
    from helper_loop import serve  # a sibling file (see its doc)

    pyautogui.FAILSAFE = True
    pyautogui.PAUSE = 0  # the env decides how long to let the screen settle
    sct = mss.MSS()
    frame = shared_memory.SharedMemory(name=sys.argv[1])
    # The env owns (and unlinks) the block; Python < 3.13 would also track it here.
    resource_tracker.unregister(frame._name, "shared_memory")

    # The last frame's bytes stay referenced until the next grab: freed at once, glibc gives the
    # megabytes back to the system and maps them anew for the next grab (page faults), which
    # made screenshots take twice as long (measured, 1280x800).
    last_frame = [b""]

    def answer(request: dict) -> dict:
        if request["kind"] != "screenshot":
            perform(pyautogui, request)
            return {}
        width, height, rgb = settled_screenshot(
            sct, float(request["settle_s"]), float(request["settle_max_s"])
        )
        if len(rgb) > frame.size:
            raise ValueError(f"the screen ({width}x{height}) outgrew the frame buffer")
        frame.buf[: len(rgb)] = rgb
        last_frame[0] = rgb
        return {"width": width, "height": height}

    serve({"size": list(pyautogui.size())}, answer)


if __name__ == "__main__":
    main()
