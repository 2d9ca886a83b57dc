"""What every task family shares: the Task contract, layout helpers and expert helpers.

A task family is a :class:`Task` subclass. Built from the episode's random generator, it lays
out a scene on a :class:`~pixelrl.envs.desktop.widgets.Desktop`, writes an ``instruction`` and keeps the
``params`` an expert needs (target names, text to type). Then, after every step:

- :meth:`Task.on_event` sees what the widgets reported (``press``, ``submit``, ``drop``, ...)
  and settles the outcome when an event commits the task: right commit → success, a wrong
  *irreversible* action (pressing a wrong button, submitting wrong text, dropping the wrong file)
  → failure;
- :meth:`Task.satisfied` is the checker over widget state, for tasks that succeed as soon as the
  state is right (a slider value, a dropdown choice);
- :meth:`Task.progress` (0..1) feeds the shaped reward.

The expert is :meth:`Task.plan`, a pure function of the a11y tree and ``params`` (what ``info``
holds), returning the next :class:`Plan`: the action and the a11y element it acts on (whose bbox
is ``info["target_bbox"]``). It solves the task in the fewest steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pixelrl.envs.desktop.render import Rect
from pixelrl.envs.desktop.screen import Desktop
from pixelrl.envs.desktop.theme import Theme
from pixelrl.envs.desktop.widgets import Button, Icon, Widget, Window
from pixelrl.envs.gui import bbox_center
from pixelrl.envs.gui_action import Action


@dataclass(frozen=True)
class Plan:
    """The expert's next action and the a11y element it targets (None: no element).

    ``alternatives``: other elements the same kind of action could target instead with the same
    progress (ticking any of the wrong checkboxes); the expert's pick among them is arbitrary, so
    a learner scored against the expert should count them as right too.
    """

    action: Action
    target: dict | None = None
    alternatives: tuple[dict, ...] = ()


class Task:
    """Base class of a task family (see the module docstring for the contract)."""

    family: ClassVar[str] = ""  # kebab-case, e.g. "click-button"
    description: ClassVar[str] = ""
    vocabulary: ClassVar[tuple[str, ...]] = ()  # strings this family may need typed
    max_expert_steps: ClassVar[int] = 1  # longest expert solution (sets the default step limit)

    def __init__(self, desktop: Desktop, rng: np.random.Generator) -> None:
        self.desktop = desktop
        self.rng = rng
        self.theme: Theme = desktop.theme
        self.instruction = ""
        self.params: dict[str, Any] = {}
        self.outcome: bool | None = None
        self.keep_open: list[Window] = []  # closing one of these fails the task
        self.build()
        assert self.instruction, f"{type(self).__name__}.build() must set an instruction"

    # -- what a family defines ---------------------------------------------------------------
    def build(self) -> None:
        raise NotImplementedError

    def on_event(self, kind: str, widget: Widget, payload: Any) -> None:
        """React to one widget event: call :meth:`succeed` / :meth:`fail` when it commits."""

    def satisfied(self) -> bool:
        """The checker over widget state (tasks that end on a commit return False until then)."""
        return False

    def progress(self) -> float:
        """Share of the task done, 0..1, for the shaped reward (1 only on success)."""
        return 0.0

    @staticmethod
    def plan(a11y: list[dict], params: dict[str, Any]) -> Plan:
        raise NotImplementedError

    # -- shared machinery --------------------------------------------------------------------
    def succeed(self) -> None:
        if self.outcome is None:
            self.outcome = True

    def fail(self) -> None:
        if self.outcome is None:
            self.outcome = False

    def judge(self, events: Sequence[tuple[str, Widget, Any]]) -> bool | None:
        """The outcome after a step's events: True success, False failure, None still running."""
        for kind, widget, payload in events:
            if kind == "close" and widget in self.keep_open:
                self.fail()
            self.on_event(kind, widget, payload)
        if self.outcome is None and self.satisfied():
            self.outcome = True
        return self.outcome

    # -- helpers for build() -------------------------------------------------------------------
    def pick(self, pool: Sequence[str], k: int | None = None) -> Any:
        """One item (k None) or k distinct items of ``pool``, in random order."""
        if k is None:
            return pool[int(self.rng.integers(len(pool)))]
        idx = self.rng.choice(len(pool), size=k, replace=False)
        return [pool[int(i)] for i in idx]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def randint(self, lo: int, hi: int) -> int:
        """An int in [lo, hi] (inclusive)."""
        return int(self.rng.integers(lo, hi + 1))

    def fit_rows(self, extra_rows: int = 0, menubar: bool = False) -> int:
        """How many widget rows fit in a window as tall as the work area, less ``extra_rows``."""
        t = self.theme
        # layout_window's largest random padding and gaps, so that what fits here always fits
        avail = (
            t.work_area[3]
            - t.title_height
            - 6 * t.pad
            - (t.row_height if menubar else 0)
            + t.gap
            + t.gap // 2
        )
        return max(1, avail // (t.row_height + t.gap + t.gap // 2) - extra_rows)

    def window(self, title: str, rows: Sequence[Sequence[Widget]], **kwargs: Any) -> Window:
        return layout_window(title, rows, self.theme, self.rng, **kwargs)

    def place(self, window: Window, region: Rect | None = None) -> Window:
        """Add ``window`` at a random position inside ``region`` (default: the work area)."""
        t = self.theme
        x0, y0, x1, y1 = region or t.work_area
        w, h = window.size
        x = x0 + int(self.rng.integers(0, max(1, x1 - x0 - w + 1)))
        y = y0 + int(self.rng.integers(0, max(1, y1 - y0 - h + 1)))
        return self.desktop.add_window(window, min(x, t.width - w), min(y, t.work_area[3] - h))

    def place_icons(self, icons: Sequence[Icon], max_columns: int | None = None) -> None:
        """Icons on grid slots of the desktop, column by column from the left, with random gaps."""
        t = self.theme
        cw, ch = icons[0].cell_size(t)
        cols = max(1, (t.width - t.pad) // (cw + t.pad))
        rows = max(1, (t.work_area[3] - t.pad) // (ch + t.pad))
        if max_columns is not None:
            cols = min(cols, max_columns)
        n_slots = cols * rows
        if len(icons) > n_slots:
            raise ValueError(
                f"{len(icons)} icons do not fit on a {t.width}x{t.height} desktop ({n_slots} slots)"
            )
        # the first columns, with a few random empty slots in between
        span = min(n_slots, len(icons) + int(self.rng.integers(0, rows + 1)))
        slots = sorted(int(s) for s in self.rng.choice(span, size=len(icons), replace=False))
        for icon, s in zip(icons, slots):
            col, row = divmod(s, rows)
            self.desktop.add_icon(icon, t.pad + col * (cw + t.pad), t.pad + row * (ch + t.pad))

    def icon_columns(self, n_icons: int) -> int:
        """How many icon columns ``n_icons`` need at most (for keeping windows off them)."""
        t = self.theme
        _, ch = Icon("", "file", (0, 0, 0)).cell_size(t)
        rows = max(1, (t.work_area[3] - t.pad) // (ch + t.pad))
        return -(-(n_icons + rows) // rows)


def layout_window(
    title: str,
    rows: Sequence[Sequence[Widget]],
    t: Theme,
    rng: np.random.Generator,
    columns: bool = False,
    top: Widget | None = None,
    min_width: int = 0,
    modal: bool = False,
    closable: bool = True,
) -> Window:
    """A window holding ``rows`` of widgets, left to right, each at its preferred size.

    With ``columns`` the rows form a grid (a form: labels in one column, fields in the next).
    ``top`` (a menu bar) spans the full width under the title bar. Paddings vary with ``rng``.
    """
    pad = t.pad * 2 + int(rng.integers(0, t.pad + 1))
    gap = t.gap + int(rng.integers(0, t.gap // 2 + 1))
    sizes = [[w.preferred_size(t) for w in row] for row in rows]
    ncols = max((len(r) for r in rows), default=0)
    colw = [max((s[i][0] for s in sizes if i < len(s)), default=0) for i in range(ncols)]
    y = t.title_height + (t.row_height if top is not None else 0) + pad
    width = 0
    for row, size in zip(rows, sizes):
        x = pad
        h = max((s[1] for s in size), default=0)
        for i, (w, (pw, ph)) in enumerate(zip(row, size)):
            w.rect = (x, y + (h - ph) // 2, x + pw, y + (h - ph) // 2 + ph)
            x += (colw[i] if columns else pw) + gap
        width = max(width, x - gap + pad)
        y += h + gap
    height = y - gap + pad
    title_w = len(title) * t.title_size // 2 + 3 * t.title_height
    if width > t.width or height > t.work_area[3]:
        raise ValueError(
            f"window {title!r} needs {width}x{height} pixels but the work area is "
            f"{t.width}x{t.work_area[3]}: the task generator must make fewer or smaller widgets"
        )
    width = min(max(width, min_width, title_w), t.width)
    kids = list(rows and [w for row in rows for w in row])
    if top is not None:
        top.rect = (1, t.title_height, width - 1, t.title_height + t.row_height)
        kids.insert(0, top)
    return Window(title, (width, height), kids, closable=closable, modal=modal)


def right_align(buttons: Sequence[Button], window: Window, t: Theme) -> None:
    """Move the buttons of the last row to the right edge of ``window`` (dialog style)."""
    x = window.size[0] - t.pad * 2
    for b in reversed(buttons):
        w = b.rect[2] - b.rect[0]
        b.rect = (x - w, b.rect[1], x, b.rect[3])
        x -= w + t.gap


# -- expert helpers ------------------------------------------------------------------------------
def find(
    a11y: list[dict],
    role: str | None = None,
    name: str | None = None,
    window: str | None = None,
    **state: Any,
) -> dict | None:
    """The last (topmost) element matching role, name, window and every given state value."""
    for e in reversed(a11y):
        if role is not None and e["role"] != role:
            continue
        if name is not None and e["name"] != name:
            continue
        st = e["state"]
        if window is not None and st.get("window") != window:
            continue
        if all(st.get(k) == v for k, v in state.items()):
            return e
    return None


def need(element: dict | None, what: str) -> dict:
    """``element``, or a clear error when the expert cannot see what it needs."""
    if element is None:
        raise LookupError(f"expert: no a11y element for {what}")
    return element


def click(element: dict, alternatives: Sequence[dict] = ()) -> Plan:
    return Plan(Action.click(*bbox_center(element["bbox"])), element, tuple(alternatives))


def double_click(element: dict) -> Plan:
    return Plan(Action.double_click(*bbox_center(element["bbox"])), element)


def right_click(element: dict) -> Plan:
    return Plan(Action.right_click(*bbox_center(element["bbox"])), element)


def edit_plan(field: dict, wanted: str, submit: bool = False) -> Plan:
    """The next step to make a text field hold ``wanted`` (and press enter when ``submit``).

    Focus it with a click; replace wrong text by selecting all first; type (typing replaces the
    selection). ``submit`` appends the enter key to the typed text (``"...\\n"``).
    """
    value = field["state"].get("value", "")
    s0, s1 = field["state"].get("selection", [len(value)] * 2)
    enter = "\n" if submit else ""
    if not field["focused"]:
        return click(field)
    if value == wanted:
        return Plan(Action.key("enter"), field) if submit else Plan(Action.wait(), field)
    # text typed now replaces value[s0:s1]; it works when the rest already matches
    head, tail = value[:s0], value[s1:]
    if wanted.startswith(head) and wanted.endswith(tail) and len(head) + len(tail) < len(wanted):
        return Plan(Action.type_text(wanted[len(head) : len(wanted) - len(tail)] + enter), field)
    if s0 == 0 and s1 == len(value) and wanted:
        return Plan(Action.type_text(wanted + enter), field)
    return Plan(Action.hotkey("ctrl", "a"), field)
