"""A small retained-mode widget toolkit: the things on the emulated desktop and how they react.

Every widget keeps its own state (text, checked, value, ...) and a rectangle ``rect`` in its
parent's coordinates (``(x0, y0, x1, y1)``, x1/y1 exclusive); :meth:`Widget.abs_rect` is where
it lies on the screen. A widget

- draws itself with a :class:`~pixelrl.envs.desktop.render.Canvas` (``draw``), only ever inside its rect;
- answers input (``click``, ``double_click``, ``right_click``, ``drag``, ``scroll``, ``key``,
  ``hotkey``, ``text``) after the :class:`Desktop` has hit-tested the pointer to it;
- reports itself to the accessibility tree (``a11y``) and appends what happened to
  ``desktop.events`` (``(kind, widget, payload)``) for the task checkers;
- calls :meth:`Widget.invalidate` whenever its look changes, so that the desktop repaints just
  that rectangle (see :meth:`Desktop.render`).

The :class:`~pixelrl.envs.desktop.screen.Desktop` owns the z-order, hit-testing, dispatch and the
frame; widgets reach it through ``self.desktop``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pixelrl.envs.desktop import render
from pixelrl.envs.desktop.render import Canvas, Rect, contains, fit_text, intersect, text_width
from pixelrl.envs.desktop.theme import Theme
from pixelrl.envs.gui import a11y_element

if TYPE_CHECKING:
    from pixelrl.envs.desktop.screen import Desktop

SCROLL_ROWS_PER_NOTCH = 3


class Widget:
    """Base class: a rectangle with state, drawn by the desktop, reacting to input."""

    role = "widget"
    focusable = False

    def __init__(self, name: str = "", rect: Rect = (0, 0, 0, 0)) -> None:
        self.name = name
        self.rect = rect
        self.parent: Widget | None = None
        self.desktop: Desktop | None = None
        self.id = ""
        self.enabled = True

    # -- tree ----------------------------------------------------------------------------------
    @property
    def children(self) -> list[Widget]:
        """The children drawn and hit-tested now (containers override)."""
        return []

    def all_children(self) -> list[Widget]:
        """Every child, shown or not (attached together with this widget)."""
        return self.children

    def attach(self, desktop: Desktop, parent: Widget | None) -> None:
        self.desktop, self.parent = desktop, parent
        if not self.id:
            self.id = desktop.new_id()
        for child in self.all_children():
            child.attach(desktop, self)

    def abs_rect(self) -> Rect:
        parent = self.parent
        if parent is None:
            return self.rect
        ox, oy = parent.origin()
        x0, y0, x1, y1 = self.rect
        return (x0 + ox, y0 + oy, x1 + ox, y1 + oy)

    def origin(self) -> tuple[int, int]:
        # abs_rect()[:2] without building the rectangle: every draw and a11y element asks this
        parent = self.parent
        x0, y0 = self.rect[0], self.rect[1]
        if parent is None:
            return x0, y0
        ox, oy = parent.origin()
        return x0 + ox, y0 + oy

    def window(self) -> Window | None:
        w: Widget | None = self
        while w is not None and not isinstance(w, Window):
            w = w.parent
        return w

    def invalidate(self) -> None:
        if self.desktop is not None:
            self.desktop.invalidate(self.abs_rect())

    @property
    def theme(self) -> Theme:
        return self.desktop._theme  # not desktop.theme: one property call less, asked per draw

    def emit(self, kind: str, payload: Any = None) -> None:
        self.desktop.events.append((kind, self, payload))

    # -- drawing and hit-testing ----------------------------------------------------------------
    def draw(self, c: Canvas) -> None:
        children = self.children
        if not children:
            return
        cx0, cy0, cx1, cy1 = c.clip
        ox, oy = self.origin()  # what each child's abs_rect() would ask again
        for child in children:
            # intersect(child.abs_rect(), c.clip) is not None, inlined (a test per child a step)
            if child.parent is self and type(child).abs_rect is Widget.abs_rect:
                x0, y0, x1, y1 = child.rect
                x0, y0, x1, y1 = x0 + ox, y0 + oy, x1 + ox, y1 + oy
            else:  # placed otherwise (a window's close button)
                x0, y0, x1, y1 = child.abs_rect()
            if x0 < cx1 and cx0 < x1 and y0 < cy1 and cy0 < y1 and x0 < x1 and y0 < y1:
                child.draw(c)

    def hit(self, x: int, y: int) -> Widget:
        for child in reversed(self.children):
            if contains(child.abs_rect(), x, y):
                return child.hit(x, y)
        return self

    # -- input (defaults: nothing happens) ----------------------------------------------------
    def click(self, x: int, y: int) -> None:
        pass

    def double_click(self, x: int, y: int) -> None:
        """Widgets without a double-click meaning take it as one click."""
        self.click(x, y)

    def right_click(self, x: int, y: int) -> None:
        pass

    def drag(self, x: int, y: int, x2: int, y2: int) -> None:
        pass

    def scroll(self, dx: int, dy: int) -> bool:
        """Scroll by wheel notches; False lets the parent have it."""
        return False

    def key(self, key: str) -> None:
        pass

    def hotkey(self, keys: tuple[str, ...]) -> None:
        pass

    def text(self, text: str) -> None:
        pass

    # -- accessibility --------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {}

    def a11y(self, out: list[dict], window: str) -> None:
        """Append this widget's element, then its children's."""
        out.append(
            self.desktop.element(self, self.role, self.name, self.abs_rect(), self.state(), window)
        )
        for child in self.children:
            child.a11y(out, window)

    def text_y(self, rect: Rect, size: int | None = None) -> int:
        """The y at which one line of text sits vertically centred in ``rect``."""
        lh = render.line_height(size or self.theme.font_size)
        return rect[1] + (rect[3] - rect[1] - lh) // 2


# ---------------------------------------------------------------------------------------------
# Leaf widgets
# ---------------------------------------------------------------------------------------------
class Label(Widget):
    role = "label"

    def __init__(self, text: str, bold: bool = False, muted: bool = False) -> None:
        super().__init__(text)
        self.bold, self.muted = bold, muted

    def preferred_size(self, t: Theme) -> tuple[int, int]:
        return text_width(self.name, t.font_size, self.bold) + 2, t.row_height

    def draw(self, c: Canvas) -> None:
        r, t = self.abs_rect(), self.theme
        color = t.palette.muted if self.muted else t.palette.text
        c.text(r[0], self.text_y(r), self.name, t.font_size, color, self.bold, bg=t.palette.window)


class Button(Widget):
    """A push button; ``primary`` ones are drawn in the accent colour. Emits ``press``."""

    role = "button"
    focusable = True

    def __init__(
        self, label: str, primary: bool = False, on_press: Callable[[], None] | None = None
    ) -> None:
        super().__init__(label)
        self.primary = primary
        self.on_press = on_press
        self.presses = 0

    def preferred_size(self, t: Theme) -> tuple[int, int]:
        return text_width(self.name, t.font_size) + 4 * t.pad, t.row_height

    def draw(self, c: Canvas) -> None:
        r, t, p = self.abs_rect(), self.theme, self.theme.palette
        fill = p.accent if self.primary else p.button
        c.box(r, fill, p.border)
        label = fit_text(self.name, t.font_size, r[2] - r[0] - 2 * t.pad)
        x = r[0] + (r[2] - r[0] - text_width(label, t.font_size)) // 2
        c.text(
            x,
            self.text_y(r),
            label,
            t.font_size,
            p.accent_text if self.primary else p.text,
            bg=fill,
        )
        if self.desktop.focus is self:
            c.border(
                (r[0] + 2, r[1] + 2, r[2] - 2, r[3] - 2),
                p.accent if not self.primary else p.accent_text,
            )

    def press(self) -> None:
        self.presses += 1
        self.emit("press")
        if self.on_press is not None:
            self.on_press()

    def click(self, x: int, y: int) -> None:
        self.press()

    def key(self, key: str) -> None:
        if key in ("enter", "space"):
            self.press()

    def state(self) -> dict[str, Any]:
        return {"enabled": self.enabled}


class TextField(Widget):
    """One line of editable text with a caret and a selection. Enter emits ``submit``.

    Keys: typing replaces the selection, backspace/delete, left/right/home/end, ctrl+a selects
    all, enter submits, escape emits ``cancel``. A click puts the caret at the nearest gap.
    """

    role = "textbox"
    focusable = True

    def __init__(
        self, name: str, value: str = "", width_chars: int = 14, placeholder: str = ""
    ) -> None:
        super().__init__(name)
        self.value = value
        self.caret = len(value)
        self.anchor = self.caret  # selection is [min(anchor, caret), max(anchor, caret))
        self.width_chars = width_chars
        self.placeholder = placeholder

    def preferred_size(self, t: Theme) -> tuple[int, int]:
        return self.width_chars * text_width("n", t.font_size) + 2 * t.pad, t.row_height

    @property
    def selection(self) -> tuple[int, int]:
        return min(self.anchor, self.caret), max(self.anchor, self.caret)

    def select_all(self) -> None:
        self.anchor, self.caret = 0, len(self.value)
        self.invalidate()

    def _scroll_x(self, inner: int) -> int:
        """How far the text is shifted left so that the caret stays in view."""
        return max(0, text_width(self.value[: self.caret], self.theme.font_size) - inner + 2)

    def draw(self, c: Canvas) -> None:
        r, t, p = self.abs_rect(), self.theme, self.theme.palette
        focused = self.desktop.focus is self
        c.box(r, p.field, p.accent if focused else p.border, 2 if focused else 1)
        inner = (r[0] + t.pad, r[1] + 2, r[2] - t.pad, r[3] - 2)
        saved = c.clip
        c.set_clip(intersect(saved, inner) or (0, 0, 0, 0))
        y = self.text_y(r)
        if not self.value and self.placeholder and not focused:
            c.text(inner[0], y, self.placeholder, t.font_size, p.muted, bg=p.field)
        x = inner[0] - self._scroll_x(inner[2] - inner[0])
        s0, s1 = self.selection
        selected = focused and s1 > s0
        if selected:
            a = x + text_width(self.value[:s0], t.font_size)
            b = x + text_width(self.value[:s1], t.font_size)
            c.fill((a, y, b, y + t.line_height), p.selection)
        c.text(x, y, self.value, t.font_size, p.text, bg=None if selected else p.field)
        if focused:
            cx = x + text_width(self.value[: self.caret], t.font_size)
            c.fill((cx, y, cx + 1, y + t.line_height), p.text)
        c.clip = saved

    def click(self, x: int, y: int) -> None:
        r, t = self.abs_rect(), self.theme
        inner_w = r[2] - r[0] - 2 * t.pad
        rel = x - (r[0] + t.pad) + self._scroll_x(inner_w)
        # the gap nearest to the pointer
        best, best_d = 0, abs(rel)
        for i in range(1, len(self.value) + 1):
            d = abs(text_width(self.value[:i], t.font_size) - rel)
            if d < best_d:
                best, best_d = i, d
        self.caret = self.anchor = best
        self.invalidate()

    def double_click(self, x: int, y: int) -> None:
        self.select_all()

    def _replace_selection(self, s: str) -> None:
        s0, s1 = self.selection
        self.value = self.value[:s0] + s + self.value[s1:]
        self.caret = self.anchor = s0 + len(s)

    def text(self, text: str) -> None:
        self._replace_selection(text.replace("\n", "").replace("\t", " "))
        self.invalidate()
        self.emit("edit", self.value)

    def key(self, key: str) -> None:
        s0, s1 = self.selection
        n = len(self.value)
        if key == "backspace":
            if s1 == s0 and s0 > 0:
                self.anchor = s0 - 1
            self._replace_selection("")
            self.emit("edit", self.value)
        elif key == "delete":
            if s1 == s0 and s1 < n:
                self.caret = s1 + 1
            self._replace_selection("")
            self.emit("edit", self.value)
        elif key in ("left", "right", "home", "end"):
            to = {
                "left": max(0, self.caret - 1) if s0 == s1 else s0,
                "right": min(n, self.caret + 1) if s0 == s1 else s1,
                "home": 0,
                "end": n,
            }[key]
            self.caret = self.anchor = to
        elif key == "enter":
            self.emit("submit", self.value)
        elif key == "escape":
            self.emit("cancel", self.value)
        elif key == "space":
            self.text(" ")
            return
        elif len(key) == 1:
            self.text(key)
            return
        self.invalidate()

    def hotkey(self, keys: tuple[str, ...]) -> None:
        if keys == ("ctrl", "a"):
            self.select_all()
        elif keys[0] == "shift" and len(keys) == 2 and len(keys[1]) == 1:
            self.text(keys[1].upper())

    def state(self) -> dict[str, Any]:
        s0, s1 = self.selection
        return {"value": self.value, "selection": [s0, s1], "enabled": self.enabled}


class Checkbox(Widget):
    """A box and its label; a click anywhere on either toggles it (emits ``toggle``)."""

    role = "checkbox"
    focusable = True

    def __init__(self, label: str, checked: bool = False) -> None:
        super().__init__(label)
        self.checked = checked

    def preferred_size(self, t: Theme) -> tuple[int, int]:
        return t.line_height + t.gap + text_width(self.name, t.font_size) + 4, t.row_height

    def draw(self, c: Canvas) -> None:
        r, t, p = self.abs_rect(), self.theme, self.theme.palette
        s = t.line_height - 2
        y = r[1] + (r[3] - r[1] - s) // 2
        box = (r[0] + 2, y, r[0] + 2 + s, y + s)  # inset: the focus ring stays inside the widget
        if self.checked:
            c.box(box, p.accent, p.accent)
            c.shape("check", box, p.accent_text, bg=p.accent)
        else:
            c.box(box, p.field, p.border)
        if self.desktop.focus is self:
            c.border((box[0] - 2, box[1] - 2, box[2] + 2, box[3] + 2), p.selection)
        c.text(box[2] + t.gap, self.text_y(r), self.name, t.font_size, p.text, bg=p.window)

    def toggle(self) -> None:
        self.checked = not self.checked
        self.invalidate()
        self.emit("toggle", self.checked)

    def click(self, x: int, y: int) -> None:
        self.toggle()

    def key(self, key: str) -> None:
        if key == "space":
            self.toggle()

    def state(self) -> dict[str, Any]:
        return {"checked": self.checked, "enabled": self.enabled}


class RadioGroup:
    """The radios of one question: selecting one deselects the others."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.radios: list[Radio] = []

    @property
    def selected(self) -> Radio | None:
        return next((r for r in self.radios if r.checked), None)


class Radio(Widget):
    role = "radio"
    focusable = True

    def __init__(self, label: str, group: RadioGroup, checked: bool = False) -> None:
        super().__init__(label)
        self.group = group
        self.checked = checked
        group.radios.append(self)

    def preferred_size(self, t: Theme) -> tuple[int, int]:
        return t.line_height + t.gap + text_width(self.name, t.font_size) + 2, t.row_height

    def draw(self, c: Canvas) -> None:
        r, t, p = self.abs_rect(), self.theme, self.theme.palette
        s = t.line_height - 2
        y = r[1] + (r[3] - r[1] - s) // 2
        box = (r[0], y, r[0] + s, y + s)
        layers = (("disc", 0, p.field), ("ring", 0, p.accent if self.checked else p.border))
        if self.checked:
            layers += (("disc", max(2, s // 4), p.accent),)
        c.shapes(layers, box, bg=p.window)
        c.text(r[0] + s + t.gap, self.text_y(r), self.name, t.font_size, p.text, bg=p.window)

    def click(self, x: int, y: int) -> None:
        if self.checked:
            return
        for other in self.group.radios:
            if other.checked:
                other.checked = False
                other.invalidate()
        self.checked = True
        self.invalidate()
        self.emit("select", self.group.name)

    def key(self, key: str) -> None:
        if key == "space":
            self.click(0, 0)

    def state(self) -> dict[str, Any]:
        return {"checked": self.checked, "group": self.group.name, "enabled": self.enabled}


class Dropdown(Widget):
    """A closed combo box; a click opens a :class:`Popup` listing its options (emits ``choose``)."""

    role = "combobox"
    focusable = True

    def __init__(
        self,
        name: str,
        options: Sequence[str],
        selected: int | None = None,
        placeholder: str = "Choose...",
    ) -> None:
        super().__init__(name)
        self.options = list(options)
        self.selected = selected
        self.placeholder = placeholder

    @property
    def value(self) -> str | None:
        return None if self.selected is None else self.options[self.selected]

    def preferred_size(self, t: Theme) -> tuple[int, int]:
        w = max(text_width(o, t.font_size) for o in [*self.options, self.placeholder])
        return w + 3 * t.pad + t.line_height, t.row_height

    def draw(self, c: Canvas) -> None:
        r, t, p = self.abs_rect(), self.theme, self.theme.palette
        c.box(r, p.field, p.accent if self.desktop.focus is self else p.border)
        y = self.text_y(r)
        if self.value is None:
            c.text(r[0] + t.pad, y, self.placeholder, t.font_size, p.muted, bg=p.field)
        else:
            c.text(r[0] + t.pad, y, self.value, t.font_size, p.text, bg=p.field)
        s = t.line_height // 2
        ax = r[2] - t.pad - s - 2
        ay = r[1] + (r[3] - r[1] - s) // 2
        c.shape("down", (ax, ay, ax + s + 2, ay + s), p.text, bg=p.field)

    def click(self, x: int, y: int) -> None:
        r = self.abs_rect()
        self.desktop.open_popup(
            Popup(
                "listbox",
                self.name,
                self.options,
                self.choose,
                self,
                (r[0], r[3]),
                min_width=r[2] - r[0],
                anchor_top=r[1],
            )
        )

    def choose(self, index: int) -> None:
        self.selected = index
        self.invalidate()
        self.emit("choose", self.options[index])

    def state(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "expanded": self.desktop.popup is not None and self.desktop.popup.owner is self,
            "enabled": self.enabled,
        }


class Slider(Widget):
    """A horizontal slider over ``[minimum, maximum]`` in ``step``s with its value shown on the right.

    A click or a drag ending at x sets the value of that point of the track: value =
    minimum + round(t·(max−min)/step)·step with t = (x − track_x0)/(track_width − 1).
    Left/right keys move one step. Emits ``slide``.
    """

    role = "slider"
    focusable = True

    def __init__(
        self, name: str, minimum: int, maximum: int, step: int, value: int, track_width: int
    ) -> None:
        super().__init__(name)
        self.minimum, self.maximum, self.step = minimum, maximum, step
        self.value = value
        self.track_width = track_width

    def preferred_size(self, t: Theme) -> tuple[int, int]:
        wide = max(text_width(str(v), t.font_size) for v in (self.minimum, self.maximum))
        return 2 * self.thumb_half(t) + self.track_width + t.gap + wide + 4, t.row_height

    def thumb_half(self, t: Theme) -> int:
        return max(3, t.row_height // 4)

    def track_rect(self) -> Rect:
        """The clickable track, in screen pixels (inset so that the thumb stays inside the widget)."""
        r = self.abs_rect()
        x0 = r[0] + self.thumb_half(self.theme)
        return (x0, r[1], x0 + self.track_width, r[3])

    def x_of(self, value: int) -> int:
        x0, _, x1, _ = self.track_rect()
        return x0 + round((value - self.minimum) / (self.maximum - self.minimum) * (x1 - x0 - 1))

    def value_at(self, x: int) -> int:
        x0, _, x1, _ = self.track_rect()
        t = min(max((x - x0) / (x1 - x0 - 1), 0.0), 1.0)
        steps = round(t * (self.maximum - self.minimum) / self.step)
        return self.minimum + steps * self.step

    def set_value(self, value: int) -> None:
        value = min(max(value, self.minimum), self.maximum)
        if value != self.value:
            self.value = value
            self.invalidate()
            self.emit("slide", value)

    def draw(self, c: Canvas) -> None:
        r, t, p = self.abs_rect(), self.theme, self.theme.palette
        x0, y0, x1, y1 = self.track_rect()
        cy = (y0 + y1) // 2
        h = max(2, t.row_height // 8)
        xv = self.x_of(self.value)
        c.fill((x0, cy - h, x1, cy + h), p.border)
        c.fill((x0, cy - h, xv + 1, cy + h), p.accent)
        tw = self.thumb_half(t)
        c.box(
            (xv - tw, y0 + 2, xv + tw + 1, y1 - 2),
            p.button,
            p.accent if self.desktop.focus is self else p.border,
        )
        c.text(x1 + tw + t.gap, self.text_y(r), str(self.value), t.font_size, p.text, bg=p.window)

    def hit(self, x: int, y: int) -> Widget:
        return self

    def click(self, x: int, y: int) -> None:
        if x < self.track_rect()[2]:
            self.set_value(self.value_at(x))

    def drag(self, x: int, y: int, x2: int, y2: int) -> None:
        self.set_value(self.value_at(x2))

    def key(self, key: str) -> None:
        delta = {"left": -1, "down": -1, "right": 1, "up": 1}.get(key)
        if delta:
            self.set_value(self.value + delta * self.step)
        elif key in ("home", "end"):
            self.set_value(self.minimum if key == "home" else self.maximum)

    def state(self) -> dict[str, Any]:
        x0, y0, x1, y1 = self.track_rect()
        return {
            "value": self.value,
            "min": self.minimum,
            "max": self.maximum,
            "step": self.step,
            "track": [x0, y0, x1, y1],
            "enabled": self.enabled,
        }


class ScrollList(Widget):
    """A list box showing ``rows`` items at a time; the wheel scrolls 3 items a notch.

    Items are virtual (not widgets). Each shown item is an a11y ``listitem``; items scrolled out
    of view are reported with ``visible=False, offscreen=True`` and an empty bbox, like the
    off-screen children of a real accessibility tree. A click selects (emits ``select_item``).
    """

    role = "list"
    focusable = True

    def __init__(self, name: str, items: Sequence[str], rows: int, width: int) -> None:
        super().__init__(name)
        self.items = list(items)
        self.rows = rows
        self.width = width
        self.top = 0
        self.selected: int | None = None

    def preferred_size(self, t: Theme) -> tuple[int, int]:
        return self.width, self.rows * self.item_height(t) + 2

    def item_height(self, t: Theme) -> int:
        return t.line_height + max(2, t.pad // 2) * 2

    @property
    def max_top(self) -> int:
        return max(0, len(self.items) - self.rows)

    def item_rect(self, i: int) -> Rect | None:
        """Screen rect of item ``i`` when shown, else None."""
        if not (self.top <= i < self.top + self.rows):
            return None
        r, t = self.abs_rect(), self.theme
        ih = self.item_height(t)
        y = r[1] + 1 + (i - self.top) * ih
        return (r[0] + 1, y, r[2] - 1 - self.scrollbar_width(t), y + ih)

    def scrollbar_width(self, t: Theme) -> int:
        return max(6, t.pad * 2)

    def draw(self, c: Canvas) -> None:
        r, t, p = self.abs_rect(), self.theme, self.theme.palette
        c.box(r, p.field, p.accent if self.desktop.focus is self else p.border)
        for i in range(self.top, min(len(self.items), self.top + self.rows)):
            ir = self.item_rect(i)
            bg = p.selection if i == self.selected else p.field
            c.fill(ir, bg)
            c.text(ir[0] + t.pad, self.text_y(ir), self.items[i], t.font_size, p.text, bg=bg)
        sw = self.scrollbar_width(t)
        track = (r[2] - 1 - sw, r[1] + 1, r[2] - 1, r[3] - 1)
        c.fill(track, p.button)
        n = max(1, len(self.items))
        th = track[3] - track[1]
        y0 = track[1] + th * self.top // n
        y1 = track[1] + th * min(n, self.top + self.rows) // n
        c.fill((track[0] + 1, y0, track[2] - 1, max(y1, y0 + 4)), p.border)

    def hit(self, x: int, y: int) -> Widget:
        return self

    def click(self, x: int, y: int) -> None:
        for i in range(self.top, min(len(self.items), self.top + self.rows)):
            if contains(self.item_rect(i), x, y):
                if self.selected != i:
                    self.selected = i
                    self.invalidate()
                self.emit("select_item", self.items[i])
                return

    def double_click(self, x: int, y: int) -> None:
        self.click(x, y)

    def scroll(self, dx: int, dy: int) -> bool:
        top = min(max(self.top + dy * SCROLL_ROWS_PER_NOTCH, 0), self.max_top)
        if top != self.top:
            self.top = top
            self.invalidate()
        return True

    def key(self, key: str) -> None:
        step = {"up": -1, "down": 1, "pageup": -self.rows, "pagedown": self.rows}.get(key)
        if step is None:
            return
        i = min(
            max((self.selected if self.selected is not None else self.top - 1) + step, 0),
            len(self.items) - 1,
        )
        self.selected = i
        self.top = min(max(self.top, i - self.rows + 1), i)
        self.invalidate()
        self.emit("select_item", self.items[i])

    def state(self) -> dict[str, Any]:
        return {
            "top": self.top,
            "rows": self.rows,
            "count": len(self.items),
            "selected": None if self.selected is None else self.items[self.selected],
            "enabled": self.enabled,
        }

    def a11y(self, out: list[dict], window: str) -> None:
        d = self.desktop
        out.append(d.element(self, "list", self.name, self.abs_rect(), self.state(), window))
        for i, item in enumerate(self.items):
            ir = self.item_rect(i)
            st = {"index": i, "selected": i == self.selected, "list": self.name}
            if ir is None:
                st.update(visible=False, offscreen=True)
                out.append(a11y_element(f"{self.id}.{i}", "listitem", item, (0, 0, 0, 0), st))
            else:
                out.append(
                    d.element(self, "listitem", item, ir, st, window, element_id=f"{self.id}.{i}")
                )


# ---------------------------------------------------------------------------------------------
# Containers
# ---------------------------------------------------------------------------------------------
class Panel(Widget):
    """A plain group of children (positions relative to the panel)."""

    role = "group"

    def __init__(self, children: Sequence[Widget] = (), name: str = "") -> None:
        super().__init__(name)
        self.kids = list(children)

    @property
    def children(self) -> list[Widget]:
        return self.kids

    def a11y(self, out: list[dict], window: str) -> None:
        for child in self.children:
            child.a11y(out, window)


class Tabs(Widget):
    """A row of tab headers over pages; only the selected page is drawn and clickable."""

    role = "tablist"

    def __init__(self, pages: Sequence[tuple[str, Sequence[Widget]]], selected: int = 0) -> None:
        super().__init__("tabs")
        self.titles = [title for title, _ in pages]
        self.pages = [list(kids) for _, kids in pages]
        self.selected = selected

    def all_children(self) -> list[Widget]:
        return [w for page in self.pages for w in page]

    @property
    def children(self) -> list[Widget]:
        return self.pages[self.selected]

    def header_height(self, t: Theme) -> int:
        return t.row_height

    def origin(self) -> tuple[int, int]:
        """Page children are placed below the header row."""
        r = self.abs_rect()
        return r[0], r[1] + self.header_height(self.theme)

    def tab_rect(self, i: int) -> Rect:
        r, t = self.abs_rect(), self.theme
        x = r[0]
        for j in range(i):
            x += text_width(self.titles[j], t.font_size) + 3 * t.pad
        return (
            x,
            r[1],
            x + text_width(self.titles[i], t.font_size) + 3 * t.pad,
            r[1] + self.header_height(t),
        )

    def draw(self, c: Canvas) -> None:
        r, t, p = self.abs_rect(), self.theme, self.theme.palette
        hh = self.header_height(t)
        c.box((r[0], r[1] + hh - 1, r[2], r[3]), p.window, p.border)
        for i, title in enumerate(self.titles):
            tr = self.tab_rect(i)
            selected = i == self.selected
            bg = p.window if selected else p.button
            c.fill(
                (tr[0], tr[1] + (0 if selected else 2), tr[2], tr[3] - (0 if selected else 1)), bg
            )
            c.text(
                tr[0] + t.pad + t.pad // 2,
                self.text_y(tr),
                title,
                t.font_size,
                p.text,
                selected,
                bg=bg,
            )
            if selected:
                c.border(tr, p.border)
                c.fill((tr[0] + 1, tr[3] - 1, tr[2] - 1, tr[3]), p.window)
                c.fill((tr[0] + 1, tr[1], tr[2] - 1, tr[1] + 3), p.accent)
            else:
                c.border((tr[0], tr[1] + 2, tr[2], tr[3] - 1), p.border)
        super().draw(c)

    def hit(self, x: int, y: int) -> Widget:
        if y < self.abs_rect()[1] + self.header_height(self.theme):
            return self
        return super().hit(x, y)

    def click(self, x: int, y: int) -> None:
        for i in range(len(self.titles)):
            if contains(self.tab_rect(i), x, y) and i != self.selected:
                self.selected = i
                self.invalidate()
                self.emit("tab", self.titles[i])
                return

    def a11y(self, out: list[dict], window: str) -> None:
        d = self.desktop
        for i, title in enumerate(self.titles):
            out.append(
                d.element(
                    self,
                    "tab",
                    title,
                    self.tab_rect(i),
                    {"selected": i == self.selected},
                    window,
                    element_id=f"{self.id}.{i}",
                )
            )
        for child in self.children:
            child.a11y(out, window)


class MenuBar(Widget):
    """A window's menu bar: ``menus`` is ``[(title, [item, ...]), ...]`` ("-" is a separator).

    Clicking a title opens its menu as a :class:`Popup`; choosing an item emits ``menu`` with
    the path ``"File > Save As..."``.
    """

    role = "menubar"

    def __init__(self, menus: Sequence[tuple[str, Sequence[str]]]) -> None:
        super().__init__("menubar")
        self.menus = [(title, list(items)) for title, items in menus]

    def title_rect(self, i: int) -> Rect:
        r, t = self.abs_rect(), self.theme
        x = r[0] + t.pad // 2
        for j in range(i):
            x += text_width(self.menus[j][0], t.font_size) + 2 * t.pad
        return (x, r[1], x + text_width(self.menus[i][0], t.font_size) + 2 * t.pad, r[3])

    def draw(self, c: Canvas) -> None:
        r, t, p = self.abs_rect(), self.theme, self.theme.palette
        c.fill(r, p.menu)
        c.fill((r[0], r[3] - 1, r[2], r[3]), p.border)
        popup = self.desktop.popup
        for i, (title, _) in enumerate(self.menus):
            tr = self.title_rect(i)
            bg = (
                p.selection
                if popup is not None and popup.owner is self and popup.name == title
                else p.menu
            )
            c.fill(tr, bg)
            c.text(tr[0] + t.pad, self.text_y(tr), title, t.font_size, p.text, bg=bg)

    def click(self, x: int, y: int) -> None:
        for i, (title, items) in enumerate(self.menus):
            tr = self.title_rect(i)
            if contains(tr, x, y):

                def choose(k: int, title: str = title, items: list[str] = items) -> None:
                    self.emit("menu", f"{title} > {items[k]}")

                self.desktop.open_popup(Popup("menu", title, items, choose, self, (tr[0], tr[3])))
                self.invalidate()
                return

    def a11y(self, out: list[dict], window: str) -> None:
        d = self.desktop
        popup = d.popup
        for i, (title, _) in enumerate(self.menus):
            expanded = popup is not None and popup.owner is self and popup.name == title
            out.append(
                d.element(
                    self,
                    "menu",
                    title,
                    self.title_rect(i),
                    {"expanded": expanded},
                    window,
                    element_id=f"{self.id}.{i}",
                )
            )


class Popup(Widget):
    """A list of choices drawn above everything: a dropdown's options, a menu, a context menu.

    Choosing an item calls ``on_choose(index)`` and closes the popup; a click anywhere else only
    closes it (the click is consumed, as in most toolkits).
    """

    def __init__(
        self,
        kind: str,
        name: str,
        items: Sequence[str],
        on_choose: Callable[[int], None],
        owner: Widget,
        at: tuple[int, int],
        min_width: int = 0,
        anchor_top: int | None = None,
    ) -> None:
        super().__init__(name)
        self.kind = kind  # "listbox" or "menu"
        self.role = kind
        self.items = list(items)
        self.on_choose = on_choose
        self.owner = owner
        self.at, self.min_width, self.anchor_top = at, min_width, anchor_top

    def attach(self, desktop: Desktop, parent: Widget | None) -> None:
        super().attach(desktop, parent)
        t = desktop.theme
        ih = self.item_height(t)
        w = max([self.min_width] + [text_width(i, t.font_size) + 4 * t.pad for i in self.items])
        h = sum(self._row_height(i, t) for i in self.items) + 2
        x, y = self.at
        area = t.work_area
        x = min(max(x, 0), area[2] - w)
        if y + h > area[3]:  # no room below: open above the anchor (or as high as fits)
            y = (self.anchor_top if self.anchor_top is not None else y) - h
            y = max(0, y)
        self.rect = (x, y, x + w, y + h)
        self._ih = ih

    def item_height(self, t: Theme) -> int:
        return t.line_height + t.pad

    def _row_height(self, item: str, t: Theme) -> int:
        return max(3, t.pad) if item == "-" else self.item_height(t)

    def item_rects(self) -> list[tuple[int, Rect]]:
        """(index, rect) of every choosable item."""
        r, t = self.rect, self.theme
        y = r[1] + 1
        out = []
        for i, item in enumerate(self.items):
            h = self._row_height(item, t)
            if item != "-":
                out.append((i, (r[0] + 1, y, r[2] - 1, y + h)))
            y += h
        return out

    def draw(self, c: Canvas) -> None:
        r, t, p = self.rect, self.theme, self.theme.palette
        c.box(r, p.menu, p.border)
        y = r[1] + 1
        for item in self.items:
            h = self._row_height(item, t)
            if item == "-":
                c.fill((r[0] + t.pad, y + h // 2, r[2] - t.pad, y + h // 2 + 1), p.border)
            else:
                selected = isinstance(self.owner, Dropdown) and self.owner.value == item
                bg = p.selection if selected else p.menu
                if selected:
                    c.fill((r[0] + 1, y, r[2] - 1, y + h), bg)
                c.text(
                    r[0] + 2 * t.pad, y + (h - t.line_height) // 2, item, t.font_size, p.text, bg=bg
                )
            y += h

    def hit(self, x: int, y: int) -> Widget:
        return self

    def click(self, x: int, y: int) -> None:
        for i, ir in self.item_rects():
            if contains(ir, x, y):
                self.desktop.close_popup()
                self.on_choose(i)
                return

    def double_click(self, x: int, y: int) -> None:
        self.click(x, y)

    def a11y(self, out: list[dict], window: str) -> None:
        d = self.desktop
        out.append(d.element(self, self.kind, self.name, self.rect, {"popup": True}, window))
        role = "option" if self.kind == "listbox" else "menuitem"
        for i, ir in self.item_rects():
            out.append(
                d.element(
                    self, role, self.items[i], ir, {"index": i}, window, element_id=f"{self.id}.{i}"
                )
            )


class Window(Widget):
    """A top-level window: title bar (drag to move, × to close), content children below it.

    Children's rects are relative to the window's top-left corner (content starts at
    ``content_top``). Clicking anywhere in a window raises it and gives it focus. A ``modal``
    window (a dialog) blocks input to every other window while it is open.
    """

    role = "window"

    def __init__(
        self,
        title: str,
        size: tuple[int, int],
        children: Sequence[Widget] = (),
        closable: bool = True,
        modal: bool = False,
    ) -> None:
        super().__init__(title)
        self.size = size
        self.kids = list(children)
        self.closable = closable
        self.modal = modal
        if modal:
            self.role = "dialog"
        self.close_button = WindowClose(self) if closable else None
        self.open = True
        self.serial = 0  # creation order, set by Desktop.add_window (taskbar order)

    @property
    def children(self) -> list[Widget]:
        return self.kids + ([self.close_button] if self.close_button else [])

    def place(self, x: int, y: int) -> None:
        self.rect = (x, y, x + self.size[0], y + self.size[1])

    def title_rect(self) -> Rect:
        r = self.rect
        return (r[0], r[1], r[2], r[1] + self.theme.title_height)

    @property
    def content_top(self) -> int:
        return self.theme.title_height

    def draw(self, c: Canvas) -> None:
        r, t, p = self.rect, self.theme, self.theme.palette
        saved = c.clip
        c.set_clip(intersect(saved, r) or (0, 0, 0, 0))
        active = self.desktop.top_window() is self
        c.box(r, p.window, p.border)
        tr = self.title_rect()
        if c.clip[1] < tr[3]:  # else the repaint lies below the title bar: nothing of it shows
            title_bg = p.title_active if active else p.title_inactive
            c.fill((tr[0] + 1, tr[1] + 1, tr[2] - 1, tr[3]), title_bg)
            close_w = t.title_height if self.closable else 0
            title = fit_text(
                self.name, t.title_size, tr[2] - tr[0] - 2 * t.pad - close_w, bold=True
            )
            c.text(
                tr[0] + t.pad,
                self.text_y(tr, t.title_size),
                title,
                t.title_size,
                p.title_text,
                True,
                bg=title_bg,
            )
        super().draw(c)
        c.clip = saved

    def hit(self, x: int, y: int) -> Widget:
        if self.close_button and contains(self.close_button.abs_rect(), x, y):
            return self.close_button
        if y < self.rect[1] + self.theme.title_height:
            return self
        return super().hit(x, y)

    def drag(self, x: int, y: int, x2: int, y2: int) -> None:
        if y >= self.rect[1] + self.theme.title_height:
            return
        t = self.theme
        w, h = self.size
        nx = min(max(self.rect[0] + x2 - x, 40 - w), t.width - 40)
        ny = min(max(self.rect[1] + y2 - y, 0), t.work_area[3] - t.title_height)
        if (nx, ny) != self.rect[:2]:
            self.invalidate()
            self.place(nx, ny)
            self.invalidate()
            self.emit("move", (nx, ny))

    def close(self) -> None:
        self.desktop.remove_window(self)
        self.emit("close")

    def state(self) -> dict[str, Any]:
        return {"active": self.desktop.top_window() is self, "modal": self.modal}

    def a11y(self, out: list[dict], window: str) -> None:
        d = self.desktop
        out.append(d.element(self, self.role, self.name, self.rect, self.state(), self.name))
        for child in self.children:
            child.a11y(out, self.name)


class WindowClose(Widget):
    """The × at the right end of a title bar."""

    role = "button"

    def __init__(self, window: Window) -> None:
        super().__init__("Close")
        self.owner = window

    def abs_rect(self) -> Rect:
        r, t = self.owner.rect, self.owner.theme
        s = t.title_height
        m = max(2, s // 6)
        return (r[2] - s + m, r[1] + m, r[2] - m, r[1] + s - m)

    def origin(self) -> tuple[int, int]:
        r = self.abs_rect()  # placed by its window's rect, not by self.rect
        return r[0], r[1]

    def draw(self, c: Canvas) -> None:
        r = self.abs_rect()
        q = (r[2] - r[0]) // 5
        c.shapes((("cross", q, (255, 255, 255)),), r, bg=(200, 60, 50))

    def click(self, x: int, y: int) -> None:
        self.owner.close()

    def state(self) -> dict[str, Any]:
        return {"enabled": True}


class Icon(Widget):
    """A desktop icon (file, folder, trash, app) with its label.

    Single click selects, double click opens (emits ``open``), right click shows a context menu
    (Open, Rename, Delete), F2 renames, Delete deletes, a drag drops it on a folder or the trash
    under the drop point (emits ``drop`` with the target) or moves it.
    """

    role = "icon"
    focusable = True

    def __init__(self, label: str, kind: str, color: tuple[int, int, int]) -> None:
        super().__init__(label)
        self.kind = kind
        self.color = color
        self.selected = False
        self.editor: TextField | None = None
        self.contents: list[str] = []  # names dropped into a folder / the trash

    @property
    def children(self) -> list[Widget]:
        return [self.editor] if self.editor else []

    def cell_size(self, t: Theme) -> tuple[int, int]:
        return t.icon_size * 2, t.icon_size + t.row_height + t.pad

    def draw(self, c: Canvas) -> None:
        r, t, p = self.abs_rect(), self.theme, self.theme.palette
        s = t.icon_size
        ix, iy = r[0] + (r[2] - r[0] - s) // 2, r[1] + t.pad // 2
        wallpaper = self.desktop.wallpaper_key
        if self.selected:
            c.fill(r, p.selection)
            c.icon(self.kind, ix, iy, s, self.color, bg=p.selection)
        else:  # straight on the wallpaper: a cached patch
            c.on_wallpaper("icon", (self.kind, s), ix, iy, self.color, wallpaper)
        if self.editor is None:
            label = fit_text(self.name, t.font_size, r[2] - r[0] - 2)
            x = r[0] + (r[2] - r[0] - text_width(label, t.font_size)) // 2
            y = r[1] + s + t.pad // 2 + (t.row_height - t.line_height) // 2
            if self.selected:
                c.text(x, y, label, t.font_size, p.text, bg=p.selection)
            else:
                c.on_wallpaper("label", (label, t.font_size, False), x, y, p.icon_label, wallpaper)
        super().draw(c)

    def set_selected(self, selected: bool) -> None:
        if selected != self.selected:
            self.selected = selected
            self.invalidate()

    def click(self, x: int, y: int) -> None:
        self.desktop.select_icon(self)

    def double_click(self, x: int, y: int) -> None:
        self.desktop.select_icon(self)
        self.open()

    def open(self) -> None:
        self.emit("open")
        self.desktop.open_icon_window(self)

    def right_click(self, x: int, y: int) -> None:
        self.desktop.select_icon(self)
        actions = ["Open", "Rename", "Delete"] if self.kind != "trash" else ["Open"]

        def choose(i: int) -> None:
            {"Open": self.open, "Rename": self.start_rename, "Delete": self.delete}[actions[i]]()

        self.desktop.open_popup(Popup("menu", "Context menu", actions, choose, self, (x, y)))

    def key(self, key: str) -> None:
        if key == "f2" and self.kind != "trash":
            self.start_rename()
        elif key == "delete" and self.kind != "trash":
            self.delete()
        elif key == "enter":
            self.open()

    def start_rename(self) -> None:
        t = self.theme
        w = self.rect[2] - self.rect[0]
        y = t.icon_size + t.pad // 2
        self.editor = TextField(f"Rename {self.name}", self.name)
        self.editor.rect = (0, y, w, y + t.row_height)
        self.editor.attach(self.desktop, self)
        # Like real desktops: the stem is selected, the extension kept.
        stem = self.name.rsplit(".", 1)[0] if "." in self.name[1:] else self.name
        self.editor.anchor, self.editor.caret = 0, len(stem)
        self.desktop.set_focus(self.editor)
        self.invalidate()
        self.emit("rename_start")

    def finish_rename(self, commit: bool) -> None:
        old, new = self.name, self.editor.value.strip()
        self.invalidate()
        self.editor = None
        self.desktop.set_focus(self)
        if commit and new and new != old:
            self.name = new
            self.emit("rename", (old, new))

    def delete(self) -> None:
        trash = next((i for i in self.desktop.icons if i.kind == "trash"), None)
        self.desktop.remove_icon(self)
        if trash is not None:
            trash.contents.append(self.name)
        self.emit("delete")

    def drag(self, x: int, y: int, x2: int, y2: int) -> None:
        d = self.desktop
        target = d.hit(x2, y2)
        if isinstance(target, Icon) and target is not self and target.kind in ("folder", "trash"):
            d.remove_icon(self)
            target.contents.append(self.name)
            self.emit("drop", target)
            return
        t = self.theme
        w, h = self.rect[2] - self.rect[0], self.rect[3] - self.rect[1]
        nx = min(max(self.rect[0] + x2 - x, 0), t.width - w)
        ny = min(max(self.rect[1] + y2 - y, 0), t.work_area[3] - h)
        self.invalidate()
        self.rect = (nx, ny, nx + w, ny + h)
        self.invalidate()
        self.emit("move", (nx, ny))

    def state(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "selected": self.selected,
            "renaming": self.editor is not None,
            "contents": list(self.contents),
        }

    def a11y(self, out: list[dict], window: str) -> None:
        out.append(self.desktop.element(self, "icon", self.name, self.abs_rect(), self.state(), ""))
        if self.editor:
            self.editor.a11y(out, "")


class Taskbar(Widget):
    """The strip along the bottom with a button per open window; a click raises that window."""

    role = "taskbar"

    def button_rects(self) -> list[tuple[Window, Rect]]:
        t = self.theme
        r = self.rect
        x = r[0] + t.pad
        out = []
        bw = max(
            40,
            min(
                round(160 * t.scale),
                (t.width - 2 * t.pad) // max(1, len(self.desktop.windows)) - t.pad,
            ),
        )
        for w in sorted(self.desktop.windows, key=lambda w: w.serial):
            out.append((w, (x, r[1] + 3, x + bw, r[3] - 3)))
            x += bw + t.pad
        return out

    def draw(self, c: Canvas) -> None:
        t, p = self.theme, self.theme.palette
        c.fill(self.rect, p.taskbar)
        top = self.desktop.top_window()
        for w, br in self.button_rects():
            bg = p.title_active if w is top else p.taskbar
            c.box(br, bg, p.taskbar_text if w is top else p.title_inactive)
            label = fit_text(w.name, t.font_size, br[2] - br[0] - 2 * t.pad)
            c.text(br[0] + t.pad, self.text_y(br), label, t.font_size, p.taskbar_text, bg=bg)

    def click(self, x: int, y: int) -> None:
        for w, br in self.button_rects():
            if contains(br, x, y):
                self.desktop.raise_window(w)
                self.emit("raise", w.name)
                return

    def a11y(self, out: list[dict], window: str) -> None:
        top = self.desktop.top_window()
        for w, br in self.button_rects():
            out.append(
                self.desktop.element(
                    self,
                    "taskbutton",
                    w.name,
                    br,
                    {"active": w is top},
                    "",
                    element_id=f"{self.id}.{w.id}",
                )
            )
