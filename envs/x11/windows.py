"""What is on an X display: its top-level windows, their titles, and waiting for one to map.

Without a window manager (a bare Xvfb) an app's top-level window is a direct child of the root;
under a window manager it sits inside a frame. :func:`list_windows` walks two levels and keeps
the windows that carry a title (``WM_NAME`` / ``_NET_WM_NAME``) and are viewable.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

MAX_TITLE_BYTES = 4096  # what is read of a window's title (python-xlib reads it all otherwise)
MAX_WINDOWS = 256  # top-level windows looked at (the topmost)


@dataclass(frozen=True)
class Window:
    """A viewable top-level window: X id, title, and ``bbox`` [x0, y0, x1, y1] on the screen."""

    id: int
    title: str
    bbox: tuple[int, int, int, int]


class WindowTimeout(TimeoutError):
    """No window with the wanted title appeared in time."""


class Windows:
    """A python-xlib connection to one display, for reading its windows (never for input)."""

    def __init__(self, display_name: str) -> None:
        from Xlib import display as xdisplay

        self.display_name = display_name
        self._d = xdisplay.Display(display_name)
        self._net_wm_name = self._d.intern_atom("_NET_WM_NAME")
        self._utf8 = self._d.intern_atom("UTF8_STRING")

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

    def wm_class(self, window_id: int) -> tuple[str, ...]:
        """The window's ``WM_CLASS`` (instance, class), bounded like titles; () when gone."""
        from Xlib import Xatom
        from Xlib.error import XError

        try:
            w = self._d.create_resource_object("window", window_id)
            text = self._text(w, Xatom.WM_CLASS, Xatom.STRING, "latin-1")
        except XError:
            return ()
        return tuple(p for p in (text or "").split("\0") if p)

    def list(self) -> list[Window]:
        """Viewable windows with a title, in stacking order (bottom first)."""
        from Xlib import X
        from Xlib.error import XError

        root = self._d.screen().root
        found: list[Window] = []
        try:
            children = root.query_tree().children
        except XError:
            return found
        for top in children[-MAX_WINDOWS:]:  # the topmost: an app may map thousands
            try:
                attrs = top.get_attributes()
                if attrs.map_state != X.IsViewable:
                    continue
                candidates = [top] + list(top.query_tree().children)
                for w in candidates:
                    title = self._title(w)
                    if title is None:
                        continue
                    g = top.get_geometry()
                    found.append(Window(w.id, title, (g.x, g.y, g.x + g.width, g.y + g.height)))
                    break
            except XError:
                continue
        return found

    def titles(self) -> list[str]:
        return [w.title for w in self.list()]

    def wait_for(self, pattern: str, timeout_s: float = 10.0, poll_s: float = 0.05) -> Window:
        """The first viewable window whose title matches the regex ``pattern`` (a search by the
        ``regex`` engine with a time limit: both the pattern and the titles come from the task)."""
        from pixelrl.envs.x11.tasks import search

        deadline = time.monotonic() + timeout_s
        while True:
            for w in self.list():
                if search(pattern, w.title, "window"):
                    return w
            if time.monotonic() > deadline:
                raise WindowTimeout(
                    f"no window titled like {pattern!r} appeared on {self.display_name} within "
                    f"{timeout_s:.0f} s; windows there: {self.titles() or 'none'}"
                )
            time.sleep(poll_s)

    def close(self) -> None:
        try:
            self._d.close()
        except Exception:  # the server may already be gone; nothing left to release
            pass
