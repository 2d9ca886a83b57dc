"""The screen: one :class:`Desktop` holding the wallpaper, icons, windows, taskbar and popup.

It owns what no single widget can: the z-order (windows bottom to top, then the taskbar, then
at most one popup), hit-testing along it (only what shows at a point receives input there; a
modal dialog blocks every other window), input dispatch for every :class:`~pixelrl.envs.gui_action.Action`
kind with keyboard focus, the frame and its dirty-rectangle repaint, and the accessibility tree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pixelrl.envs.desktop import render
from pixelrl.envs.desktop.render import (
    Canvas,
    Rect,
    contains,
    intersect,
    subtract,
    text_width,
    union,
)
from pixelrl.envs.desktop.theme import Theme
from pixelrl.envs.desktop.widgets import Icon, Label, Popup, Taskbar, TextField, Widget, Window
from pixelrl.envs.gui_action import MODIFIER_KEYS, Action

# How far past its rectangle an icon's drawing may reach: none seen (the label is fitted to the
# cell less 2 pixels, its shadow 1 pixel wide; tests/envs/test_desktop_repaint_shortcuts.py);
# 2 pixels of margin. A repaint draws an icon when this margin around it meets bare wallpaper.
ICON_OVERHANG = 2


def wallpaper_key(theme: Theme) -> tuple:
    """What a frame's bare wallpaper depends on: the screen size and the gradient's colours."""
    return (theme.width, theme.height, *theme.palette.wallpaper)


class Desktop(Widget):
    """The screen: wallpaper, icons, windows in z-order, taskbar, popup, focus, and the frame.

    ``frame`` is the one persistent H×W×3 image; :meth:`render` repaints the rectangles
    invalidated since the last call (overlapping ones merged), drawing every layer clipped to each.
    """

    role = "desktop"

    def __init__(
        self, theme: Theme, frame: np.ndarray | None = None, previous: Desktop | None = None
    ) -> None:
        """``frame``: an H×W×3 uint8 buffer to draw into (reused between episodes), or a new one.

        ``previous``: the desktop whose frame this one takes over (an earlier episode's). Where its
        wallpaper is this one's, only what it drew over the wallpaper is repainted, not the whole
        screen (the frame then holds the same pixels as after a full repaint).
        """
        if previous is not None:
            frame = previous.frame
        super().__init__("Desktop", (0, 0, theme.width, theme.height))
        self._theme = theme
        self.desktop = self
        self._next_id = 0
        self._next_serial = 0
        self.icons: list[Icon] = []
        self.windows: list[Window] = []  # bottom to top
        self.popup: Popup | None = None
        self.focus: Widget | None = None
        self.events: list[tuple[str, Widget, Any]] = []
        # Where the pointer is (a scroll with no point turns the wheel there; X servers start it
        # at the centre) and the keys held down by key_down actions (modifiers join later keys).
        self.pointer: tuple[int, int] = (theme.width // 2, theme.height // 2)
        self.held: list[str] = []
        self.taskbar = Taskbar(
            "taskbar", (0, theme.height - theme.taskbar_height, theme.width, theme.height)
        )
        self.taskbar.attach(self, self)
        shape = (theme.height, theme.width, 3)
        if frame is None or frame.shape != shape or frame.dtype != np.uint8:
            frame = np.zeros(shape, dtype=np.uint8)
        self.frame = frame
        self.canvas = Canvas(self.frame)
        self.wallpaper = render.gradient(theme.width, theme.height, *theme.palette.wallpaper)
        self.wallpaper_key = wallpaper_key(theme)
        self.dirty: list[Rect] = [self.rect]  # regions to repaint, kept disjoint
        if (
            previous is not None
            and previous.frame is self.frame
            and previous.wallpaper_key == self.wallpaper_key
        ):
            self.dirty = []
            for rect in (*previous.drawn_over_wallpaper(), self.taskbar.rect):
                self.invalidate(rect)
        self._a11y: list[dict] | None = None
        self._layer: Widget | None = None  # the layer a11y_tree() is walking
        self._modal: Window | None = None
        self.id = "desktop"

    @property
    def theme(self) -> Theme:
        return self._theme

    def drawn_over_wallpaper(self) -> list[Rect]:
        """Where ``frame`` may show something other than the bare wallpaper: every layer's
        rectangle and the regions not repainted yet (outside them it shows the wallpaper)."""
        rects = [*self.dirty, self.taskbar.rect]
        rects += [icon.rect for icon in self.icons]
        rects += [w.rect for w in self.windows]
        if self.popup is not None:
            rects.append(self.popup.rect)
        return rects

    def new_id(self) -> str:
        self._next_id += 1
        return f"e{self._next_id}"

    # -- scene changes ---------------------------------------------------------------------------
    def invalidate(self, rect: Rect) -> None:
        """Mark ``rect`` for repainting; overlapping dirty regions merge into their bounding box."""
        self._a11y = None
        rect = intersect(rect, self.rect)
        if rect is None:
            return
        x0, y0, x1, y1 = rect
        for r in self.dirty:
            if r[0] <= x0 and r[1] <= y0 and x1 <= r[2] and y1 <= r[3]:
                # already inside a dirty region (a reset's full-screen one, most often): merging
                # would give that region back (the regions are disjoint, so only the order of
                # repainting them would change, which no pixel depends on)
                return
        merged = True
        while merged:
            merged = False
            for i, r in enumerate(self.dirty):
                if intersect(r, rect):
                    rect = union(r, rect)
                    del self.dirty[i]
                    merged = True
                    break
        self.dirty.append(rect)

    def add_icon(self, icon: Icon, x: int, y: int) -> Icon:
        w, h = icon.cell_size(self.theme)
        icon.rect = (x, y, x + w, y + h)
        icon.attach(self, self)
        self.icons.append(icon)
        icon.invalidate()
        return icon

    def remove_icon(self, icon: Icon) -> None:
        icon.invalidate()
        self.icons.remove(icon)
        if self.focus is icon:
            self.focus = None

    def add_window(self, window: Window, x: int, y: int) -> Window:
        window.place(x, y)
        window.attach(self, None)
        window.serial = self._next_serial
        self._next_serial += 1
        self.windows.append(window)
        window.invalidate()
        self.taskbar.invalidate()
        self._previous_top_changed()
        return window

    def remove_window(self, window: Window) -> None:
        window.invalidate()
        self.windows.remove(window)
        window.open = False
        if self.focus is not None and self.focus.window() is window:
            self.focus = None
        if self.popup is not None and self.popup.owner.window() is window:
            self.close_popup()
        self.taskbar.invalidate()
        self._previous_top_changed()

    def top_window(self) -> Window | None:
        return self.windows[-1] if self.windows else None

    def raise_window(self, window: Window) -> None:
        if self.top_window() is window:
            return
        modal = self.top_window()
        if modal is not None and modal.modal:
            return  # a dialog stays on top until it is closed
        self.windows.remove(window)
        self.windows.append(window)
        window.invalidate()
        self.taskbar.invalidate()
        self._previous_top_changed()

    def _previous_top_changed(self) -> None:
        # The title bar colours of every window depend on which one is on top.
        for w in self.windows:
            self.invalidate(w.title_rect())

    def open_popup(self, popup: Popup) -> None:
        self.close_popup()
        popup.attach(self, None)
        self.popup = popup
        popup.invalidate()
        popup.owner.invalidate()

    def close_popup(self) -> None:
        if self.popup is not None:
            popup, self.popup = self.popup, None
            popup.invalidate()
            popup.owner.invalidate()

    def set_focus(self, widget: Widget | None) -> None:
        if widget is not self.focus:
            old, self.focus = self.focus, widget
            if old is not None:
                old.invalidate()
                if (
                    isinstance(old, TextField)
                    and isinstance(old.parent, Icon)
                    and old.parent.editor is old
                ):
                    old.parent.finish_rename(commit=True)  # clicking elsewhere commits a rename
            if widget is not None:
                widget.invalidate()

    def select_icon(self, icon: Icon | None) -> None:
        for i in self.icons:
            i.set_selected(i is icon)

    def open_icon_window(self, icon: Icon) -> None:
        """Opening an icon shows a small window naming it (what a file manager would)."""
        t = self.theme
        if icon.kind == "trash":
            lines = [f"{len(icon.contents)} item(s) in the Trash"] + icon.contents[:3]
        elif icon.kind == "folder":
            lines = [f"Folder {icon.name}", f"{len(icon.contents)} item(s)"] + icon.contents[:3]
        else:
            lines = [f"Opened {icon.name}"]
        labels = [Label(s) for s in lines]
        w = min(
            t.width - 2 * t.pad,
            max(text_width(s, t.font_size) for s in lines) + 4 * t.pad + t.title_height,
        )
        h = t.title_height + len(lines) * t.row_height + 2 * t.pad
        for k, lab in enumerate(labels):
            lab.rect = (
                2 * t.pad,
                t.title_height + t.pad + k * t.row_height,
                w - t.pad,
                t.title_height + t.pad + (k + 1) * t.row_height,
            )
        area = t.work_area
        x = min(icon.rect[2] + t.pad, area[2] - w)
        y = min(icon.rect[1], area[3] - h)
        self.add_window(Window(icon.name, (w, h), labels), max(0, x), max(0, y))

    # -- hit-testing ----------------------------------------------------------------------------
    def owner_at(self, x: int, y: int) -> Widget | None:
        """The top-level layer that shows at (x, y): the popup, a window, the taskbar, or None."""
        # contains() inlined: the a11y tree asks this once per element, every step
        popup = self.popup
        if popup is not None:
            x0, y0, x1, y1 = popup.rect
            if x0 <= x < x1 and y0 <= y < y1:
                return popup
        x0, y0, x1, y1 = self.taskbar.rect
        if x0 <= x < x1 and y0 <= y < y1:
            return self.taskbar
        for w in reversed(self.windows):
            x0, y0, x1, y1 = w.rect
            if x0 <= x < x1 and y0 <= y < y1:
                return w
        return None

    def hit(self, x: int, y: int) -> Widget | None:
        """The widget that receives input at (x, y); None where a modal dialog blocks it."""
        owner = self.owner_at(x, y)
        top = self.top_window()
        if top is not None and top.modal and owner is not top and owner is not self.popup:
            return None
        if owner is not None:
            return owner.hit(x, y)
        for icon in reversed(self.icons):
            if contains(icon.rect, x, y):
                return icon.hit(x, y)
        return self

    # -- input ------------------------------------------------------------------------------------
    def dispatch(self, action: Action) -> None:
        """Apply one validated :class:`Action`; what happened is appended to ``events``."""
        kind = action.kind
        if action.point is not None:
            self.pointer = (action.x2, action.y2) if kind == "drag" else action.point
        if kind == "key_down":
            key = action.keys[0]
            if key not in MODIFIER_KEYS:
                self._press(key)  # a held key types once (no auto-repeat)
            if key not in self.held:
                self.held.append(key)
        elif kind == "key_up":
            if action.keys[0] in self.held:
                self.held.remove(action.keys[0])
        elif kind in ("click", "double_click", "right_click", "drag"):
            x, y = action.x, action.y
            if self.popup is not None and not contains(self.popup.rect, x, y):
                self.close_popup()
                return
            target = self.hit(x, y)
            if target is None:
                self.events.append(("blocked", self, (x, y)))
                return
            window = target.window()
            if window is not None:
                self.raise_window(window)
            if kind != "drag" or not isinstance(target, Icon):
                self.set_focus(target if target.focusable else None)
            if not isinstance(target, Icon) and kind != "right_click":
                self.select_icon(None)
            if kind == "click":
                target.click(x, y)
            elif kind == "double_click":
                target.double_click(x, y)
            elif kind == "right_click":
                target.right_click(x, y)
            else:
                target.drag(x, y, action.x2, action.y2)
        elif kind == "scroll":
            target = self.hit(*self.pointer)
            while target is not None and not target.scroll(action.dx, action.dy):
                target = target.parent
        elif kind == "type":
            text = action.text
            submit = text.endswith("\n")
            if self.focus is not None:
                if submit:
                    text = text[:-1]
                if text:
                    self.focus.text(text)
                if submit:
                    self.key("enter")
        elif kind == "key":
            self._press(action.keys[0])
        elif kind == "hotkey":
            self._chord(action.keys)
        # move, wait, done, fail change nothing on screen

    def _press(self, key: str) -> None:
        """One key press, a chord with the modifiers held down by key_down."""
        held = [k for k in self.held if k in MODIFIER_KEYS and k != key]
        if held:
            self._chord((*held, key))
        else:
            self.key(key)

    def _chord(self, keys: tuple[str, ...]) -> None:
        if self.focus is not None:
            self.focus.hotkey(Action.hotkey(*keys).keys)

    def key(self, key: str) -> None:
        if key == "escape" and self.popup is not None:
            self.close_popup()
            return
        focus = self.focus
        if focus is None:
            return
        if (
            isinstance(focus, TextField)
            and isinstance(focus.parent, Icon)
            and focus.parent.editor is focus
        ):
            if key in ("enter", "escape"):
                focus.parent.finish_rename(commit=key == "enter")
                return
        focus.key(key)

    # -- rendering --------------------------------------------------------------------------------
    def render(self) -> np.ndarray:
        """Repaint the dirty regions of ``frame`` and return ``frame`` (not a copy)."""
        for rect in self.dirty:
            self._repaint(rect)
        self.dirty = []
        return self.frame

    def _repaint(self, rect: Rect) -> None:
        """Draw every layer, bottom to top, clipped to ``rect``.

        Windows, the taskbar and the popup are opaque: each starts with a box filling its whole
        rectangle. So what lies under them is not drawn (those pixels would all be overwritten):
        the wallpaper only where no layer covers ``rect``, an icon only where something of it
        may show, no window below the top-most one that covers ``rect`` whole.
        """
        c = self.canvas
        c.set_clip(rect)
        clip = c.clip
        cx0, cy0, cx1, cy1 = clip
        windows = self.windows
        lowest = len(windows)
        while lowest > 0:
            lowest -= 1
            x0, y0, x1, y1 = windows[lowest].rect
            if x0 <= cx0 and y0 <= cy0 and cx1 <= x1 and cy1 <= y1:
                break  # this window covers the clip: nothing below it shows
        else:
            covers = [w.rect for w in windows]
            covers.append(self.taskbar.rect)
            if self.popup is not None:
                covers.append(self.popup.rect)
            bare = subtract(clip, covers)
            for piece in bare:
                c.copy_from(self.wallpaper, piece)
            for icon in self.icons:
                if intersect(icon.rect, clip) and _meets_any(icon.rect, bare, ICON_OVERHANG):
                    icon.draw(c)
        for w in windows[lowest:]:
            if intersect(w.rect, clip):
                w.draw(c)
        if intersect(self.taskbar.rect, clip):
            self.taskbar.draw(c)
        if self.popup is not None and intersect(self.popup.rect, clip):
            self.popup.draw(c)

    # -- accessibility ---------------------------------------------------------------------------
    def element(
        self,
        widget: Widget,
        role: str,
        name: str,
        bbox: Rect,
        state: dict,
        window: str,
        element_id: str | None = None,
    ) -> dict:
        """An a11y element for ``widget`` with ``visible`` / ``enabled`` judged by the z-order.

        Called while :meth:`a11y_tree` walks one layer (``self._layer``: a window, the taskbar,
        the popup, or None for the icons on the desktop itself). ``state`` is the widget's fresh
        state dict and gains ``visible``, ``enabled`` (False behind a modal dialog), ``window``.
        """
        x0, y0, x1, y1 = bbox
        cx, cy = (x0 + x1 - 1) // 2, (y0 + y1 - 1) // 2
        layer = self._layer
        t = self._theme
        visible = 0 <= cx < t.width and 0 <= cy < t.height and self.owner_at(cx, cy) is layer
        blocked = self._modal is not None and layer is not self._modal and layer is not self.popup
        state["visible"] = visible
        if blocked or "enabled" in state:
            state["enabled"] = state.get("enabled", True) and not blocked
        if window:
            state["window"] = window
        if x0 < 0 or y0 < 0 or x1 > t.width or y1 > t.height:
            x0, y0, x1, y1 = intersect(bbox, (0, 0, t.width, t.height)) or (0, 0, 0, 0)
        # a11y_element's dict, built here (once per element and step): ``state`` is the widget's
        # own fresh dict, so it is kept rather than copied
        return {
            "id": element_id or widget.id,
            "role": role,
            "name": name,
            "bbox": [int(x0), int(y0), int(x1), int(y1)],
            "state": state,
            "focused": self.focus is widget and role != "listitem",
        }

    def a11y_tree(self) -> list[dict]:
        """Every element on screen, bottom layer first (cached until something changes)."""
        if self._a11y is None:
            out: list[dict] = []
            top = self.top_window()
            self._modal = top if top is not None and top.modal else None
            self._layer = None
            for icon in self.icons:
                icon.a11y(out, "")
            for w in self.windows:
                self._layer = w
                w.a11y(out, w.name)
            self._layer = self.taskbar
            self.taskbar.a11y(out, "")
            if self.popup is not None:
                self._layer = self.popup
                self.popup.a11y(out, "")
            self._a11y = out
        return self._a11y


def _meets_any(rect: Rect, others: list[Rect], margin: int = 0) -> bool:
    """Whether ``rect`` grown by ``margin`` on every side overlaps one of ``others``."""
    x0, y0, x1, y1 = rect[0] - margin, rect[1] - margin, rect[2] + margin, rect[3] + margin
    for ox0, oy0, ox1, oy1 in others:
        if x0 < ox1 and ox0 < x1 and y0 < oy1 and oy0 < y1:
            return True
    return False


def copy_element(element: dict) -> dict:
    """A copy of an a11y element that shares no container with it (the leaves are immutable)."""
    e = element.copy()
    e["bbox"] = e["bbox"][:]
    state = e["state"] = e["state"].copy()
    for key, value in state.items():
        if type(value) is list:  # a TextField's selection, a Slider's track, an Icon's contents
            state[key] = value[:]
    return e
