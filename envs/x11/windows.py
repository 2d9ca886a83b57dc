"""What is on an X display: its top-level windows, their titles, and waiting for one to map.

Without a window manager (a bare Xvfb) an app's top-level window is a direct child of the root;
under a window manager it sits inside a frame. The walk looks two levels deep and keeps the
windows that carry a title (``WM_NAME`` / ``_NET_WM_NAME``) and are viewable.

The display is the task's: its apps choose how many windows there are and can stop the server
answering (``XGrabServer``). So the walk is bounded (the topmost :data:`MAX_WINDOWS`, the first
:data:`MAX_CHILDREN` children of each, :data:`MAX_REQUESTS` round trips in all) and runs in a
helper process (this file as a script, :mod:`pixelrl.envs.x11.helper`) with a deadline:
:class:`Windows` is the host's handle on it, and past the deadline it raises
:class:`~pixelrl.envs.x11.helper.DisplayTimeout`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

# Standard library only at the top: this file is also the window reader's script (helper_loop).

MAX_TITLE_BYTES = 4096  # what is read of a window's title (python-xlib reads it all otherwise)
MAX_WINDOWS = 256  # top-level windows looked at (the topmost)
MAX_CHILDREN = 8  # children of a top-level window looked at for a title (a frame's: the app's)
# X round trips of one walk (each 64 windows a reply lists count as one more: python-xlib takes
# about as long to read them); the topmost windows are walked first.
MAX_REQUESTS = 2048
WINDOWS_A_REQUEST = 64
WINDOWS_TIMEOUT_S = 10.0  # default deadline of one request (a walk takes milliseconds)
LOOK_S = 0.5  # the shortest deadline of one look while waiting for a window


@dataclass(frozen=True)
class Window:
    """A viewable top-level window: X id, title, and ``bbox`` [x0, y0, x1, y1] on the screen."""

    id: int
    title: str
    bbox: tuple[int, int, int, int]


class WindowTimeout(TimeoutError):
    """No window with the wanted title appeared in time."""


class Windows:
    """The host's handle on one display's windows (never used for input).

    Each request is answered within ``timeout_s`` (or the caller's, where it passes one) or
    raises :class:`~pixelrl.envs.x11.helper.DisplayTimeout`; the helper behind it is then
    killed, and the next request starts a fresh one.
    """

    def __init__(self, display_name: str, timeout_s: float = WINDOWS_TIMEOUT_S) -> None:
        self.display_name = display_name
        self.timeout_s = float(timeout_s)
        self._helper = None
        self._start(self.timeout_s)

    def _start(self, timeout_s: float):
        from pixelrl.envs.x11.helper import Helper

        self._helper = Helper(
            os.path.abspath(__file__), [], self.display_name, timeout_s, name="window reader"
        )
        return self._helper

    def _request(self, message: dict, timeout_s: float | None, what: str) -> dict:
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        helper = self._helper
        if helper is None or not helper.alive():  # killed at a past deadline
            helper = self._start(max(deadline - time.monotonic(), 0.0))
        reply = helper.request(message, max(deadline - time.monotonic(), 0.0), what)
        if not reply["ok"]:
            raise RuntimeError(f"the window reader failed: {reply['type']}: {reply['error']}")
        return reply

    @property
    def size(self) -> tuple[int, int]:
        """The screen's (width, height) as the display reported it when the reader connected."""
        width, height = self._helper.hello["size"]
        return int(width), int(height)

    def list(self, timeout_s: float | None = None) -> list[Window]:
        """Viewable windows with a title, in stacking order (bottom first)."""
        reply = self._request({"op": "list"}, timeout_s, "list its windows")
        return [
            Window(int(i), str(t), tuple(int(v) for v in box)) for i, t, box in reply["windows"]
        ]

    def titles(self, timeout_s: float | None = None) -> list[str]:
        return [w.title for w in self.list(timeout_s)]

    def wm_class(self, window_id: int) -> tuple[str, ...]:
        """The window's ``WM_CLASS`` (instance, class), bounded like titles; () when gone."""
        reply = self._request({"op": "wm_class", "id": int(window_id)}, None, "read a WM_CLASS")
        return tuple(reply["wm_class"])

    def activate(self, window_id: int) -> None:
        """Raise the window and give it the input focus (no-op when it is gone)."""
        self._request({"op": "activate", "id": int(window_id)}, None, "activate a window")

    def wait_for(self, pattern: str, timeout_s: float = 10.0, poll_s: float = 0.05) -> Window:
        """The first viewable window whose title matches the regex ``pattern`` (a search by the
        ``regex`` engine with a time limit: both the pattern and the titles come from the task).

        Raises :class:`WindowTimeout` after ``timeout_s``, or
        :class:`~pixelrl.envs.x11.helper.DisplayTimeout` when the display stops answering (no
        later than ``timeout_s`` either, or :data:`LOOK_S` after it)."""
        from pixelrl.envs.x11.helper import DisplayTimeout
        from pixelrl.envs.x11.tasks import search

        deadline = time.monotonic() + timeout_s
        while True:
            # Each look gets the time left, but never less than LOOK_S: a deadline of nearly
            # nothing would kill a reader that is merely about to answer.
            left = deadline - time.monotonic()
            try:
                windows = self.list(min(self.timeout_s, max(left, LOOK_S)))
            except DisplayTimeout as e:
                raise DisplayTimeout(f"waiting for a window titled like {pattern!r}: {e}") from None
            for w in windows:
                if search(pattern, w.title, "window"):
                    return w
            if time.monotonic() > deadline:
                titles = [w.title for w in windows]
                raise WindowTimeout(
                    f"no window titled like {pattern!r} appeared on {self.display_name} within "
                    f"{timeout_s:.0f} s; windows there: {titles or 'none'}"
                )
            time.sleep(poll_s)

    def close(self) -> None:
        if self._helper is not None:
            self._helper.close()
            self._helper = None


# -- the helper's side: runs in the window reader process -----------------------------------------
class _Reader:
    """A python-xlib connection to ``$DISPLAY`` that answers the :class:`Windows` requests."""

    def __init__(self) -> None:
        from Xlib import display as xdisplay

        self._d = xdisplay.Display()
        self._net_wm_name = self._d.intern_atom("_NET_WM_NAME")
        self._utf8 = self._d.intern_atom("UTF8_STRING")

    def hello(self) -> dict:
        screen = self._d.screen()
        return {"size": [int(screen.width_in_pixels), int(screen.height_in_pixels)]}

    def answer(self, request: dict) -> dict:
        op = request["op"]
        if op == "list":
            return {"windows": [[w.id, w.title, list(w.bbox)] for w in self.walk()]}
        if op == "wm_class":
            return {"wm_class": self.wm_class(int(request["id"]))}
        if op == "activate":
            self.activate(int(request["id"]))
            return {}
        raise ValueError(f"unknown request {op!r}")

    def _text(self, w, atom, kind, encoding: str) -> str | None:
        """A text property's first :data:`MAX_TITLE_BYTES` (python-xlib's own getters read all
        of it, and the task's app sets it)."""
        prop = w.get_property(atom, kind, 0, MAX_TITLE_BYTES // 4)
        if prop is None or not prop.value:
            return None
        v = prop.value
        return v.decode(encoding, "replace") if isinstance(v, bytes) else str(v)

    def _title(self, w) -> str | None:
        from Xlib import X, Xatom
        from Xlib.error import XError

        try:
            return self._text(w, self._net_wm_name, self._utf8, "utf-8") or self._text(
                w, Xatom.WM_NAME, X.AnyPropertyType, "latin-1"
            )
        except XError:
            return None  # the window went away while we looked

    def walk(self) -> list[Window]:
        """Viewable windows with a title, bottom first, within the bounds of the module doc."""
        from Xlib import X
        from Xlib.error import XError

        try:
            tops = self._d.screen().root.query_tree().children
        except XError:
            return []
        requests = 1 + len(tops) // WINDOWS_A_REQUEST
        tops = tops[-MAX_WINDOWS:]
        found: list[Window] = []
        for top in reversed(tops):  # topmost first: those are what a spent budget keeps
            if requests > MAX_REQUESTS:
                break
            try:
                requests += 1
                if top.get_attributes().map_state != X.IsViewable:
                    continue
                requests += 2
                window, title = top, self._title(top)
                if title is None:  # a window manager's frame: the app's window is a child
                    children = top.query_tree().children
                    requests += 1 + len(children) // WINDOWS_A_REQUEST
                    for child in children[:MAX_CHILDREN]:
                        requests += 2
                        window, title = child, self._title(child)
                        if title is not None or requests > MAX_REQUESTS:
                            break
                if title is None:
                    continue
                requests += 1
                g = top.get_geometry()
                found.append(Window(window.id, title, (g.x, g.y, g.x + g.width, g.y + g.height)))
            except XError:
                continue  # the window went away while we looked
        found.reverse()
        return found

    def wm_class(self, window_id: int) -> list[str]:
        from Xlib import Xatom
        from Xlib.error import XError

        try:
            w = self._d.create_resource_object("window", window_id)
            text = self._text(w, Xatom.WM_CLASS, Xatom.STRING, "latin-1")
        except XError:
            return []
        return [p for p in (text or "").split("\0") if p]

    def activate(self, window_id: int) -> None:
        from Xlib import X
        from Xlib.error import XError

        w = self._d.create_resource_object("window", window_id)
        try:
            w.configure(stack_mode=X.Above)
            w.set_input_focus(X.RevertToParent, X.CurrentTime)
            self._d.sync()
        except XError:
            pass  # the window went away


def main() -> None:
    from helper_loop import serve  # a sibling file (see its doc)

    reader = _Reader()
    serve(reader.hello(), reader.answer)


if __name__ == "__main__":
    main()
