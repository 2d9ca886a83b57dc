"""The process that acts on and looks at one X display: pyautogui input, mss screenshots.

Each X11 env runs one actuator (this file as a script, with ``DISPLAY`` set) and talks to it
over pipes. Why a process of its own:

- pyautogui binds itself to ``$DISPLAY`` when it is imported and keeps that connection in module
  globals, so one Python process can drive only one display; two envs need two processes;
- a time limit per action is enforceable: a stuck actuator is killed, not waited for;
- the X client libraries (libxcb under mss) can abort the whole process when the X server dies
  under them; that takes down the actuator, and the env reports an error instead of dying.

Protocol: one JSON object a line. The actuator first writes ``{"ready": true, "size": [w, h]}``.
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

import json
import subprocess
import sys
import time

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


class ActuatorError(RuntimeError):
    """The actuator process died, timed out, or could not start."""


class ActionTimeout(ActuatorError):
    """An action did not finish within its time limit (the actuator was killed)."""


class Actuator:
    """The env's handle on its actuator process: :meth:`perform` sends one action and waits."""

    def __init__(
        self, display_name: str, screen_size: tuple[int, int], start_timeout_s: float = 20.0
    ) -> None:
        import os
        import subprocess
        from multiprocessing import shared_memory

        from pixelrl.envs.processes import ChildProcess

        width, height = screen_size
        self._frame = shared_memory.SharedMemory(create=True, size=width * height * 3)
        env = dict(os.environ, DISPLAY=display_name, PYTHONUNBUFFERED="1")
        self.process = None
        self.process = ChildProcess(
            [sys.executable, os.path.abspath(__file__), self._frame.name],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            name="actuator",
        )
        reply = self._read(start_timeout_s, "start")
        if not reply.get("ready"):
            self.close()
            raise ActuatorError(f"the actuator did not start: {reply}")
        self.size = tuple(reply["size"])

    def _read(self, timeout_s: float, what: str) -> dict:
        import select

        stdout = self.process.popen.stdout
        ready, _, _ = select.select([stdout], [], [], timeout_s)
        if not ready:
            self.close()
            raise ActionTimeout(f"the actuator did not {what} within {timeout_s:.1f} s")
        line = stdout.readline()
        if not line:
            code = self.process.popen.poll()
            self.close()
            raise ActuatorError(f"the actuator exited (code {code}) during {what}")
        return json.loads(line)

    def perform(self, action: dict, timeout_s: float) -> dict:
        """Send ``action`` (Action fields as a dict); the reply, or :class:`ActuatorError`."""
        if not self.process.alive():
            raise ActuatorError(
                f"the actuator is not running (exit code {self.process.popen.poll()})"
            )
        try:
            self.process.popen.stdin.write((json.dumps(action) + "\n").encode())
            self.process.popen.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self.close()
            raise ActuatorError(f"the actuator is gone: {e}") from None
        return self._read(timeout_s, f"finish a {action['kind']} action")

    def screenshot(self, settle_s: float, settle_max_s: float, timeout_s: float):
        """The screen once it has settled (see the module doc), as an H×W×3 uint8 array."""
        import numpy as np

        request = {"kind": "screenshot", "settle_s": settle_s, "settle_max_s": settle_max_s}
        header = self.perform(request, timeout_s + settle_s + settle_max_s)
        if not header["ok"]:
            raise ActuatorError(f"screenshot failed: {header['type']}: {header['error']}")
        width, height = header["width"], header["height"]
        frame = np.frombuffer(self._frame.buf, dtype=np.uint8, count=width * height * 3)
        return frame.reshape(height, width, 3).copy()  # the caller's to keep

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def close(self) -> None:
        if self.process is not None:
            self.process.kill(grace_s=1.0)
        if self._frame is not None:
            self._frame.close()
            self._frame.unlink()
            self._frame = None


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

    pyautogui.FAILSAFE = True
    pyautogui.PAUSE = 0  # the env decides how long to let the screen settle
    sct = mss.MSS()
    frame = shared_memory.SharedMemory(name=sys.argv[1])
    # The env owns (and unlinks) the block; Python < 3.13 would also track it here.
    resource_tracker.unregister(frame._name, "shared_memory")
    out = sys.stdout.buffer
    out.write((json.dumps({"ready": True, "size": list(pyautogui.size())}) + "\n").encode())
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if request["kind"] == "screenshot":
                width, height, rgb = settled_screenshot(
                    sct, float(request["settle_s"]), float(request["settle_max_s"])
                )
                if len(rgb) > frame.size:
                    raise ValueError(f"the screen ({width}x{height}) outgrew the frame buffer")
                frame.buf[: len(rgb)] = rgb
                reply = {"ok": True, "width": width, "height": height}
            else:
                perform(pyautogui, request)
                reply = {"ok": True}
        except Exception as e:  # report, keep serving: the env decides what an error means
            reply = {"ok": False, "type": type(e).__name__, "error": str(e)}
        out.write((json.dumps(reply) + "\n").encode())
        out.flush()


if __name__ == "__main__":
    main()
