"""A scripted expert for MiniWoB++ click and type tasks that acts only through screen pixels.

It reads the instruction, the task's fields (``info["fields"]``: miniwob's own parse of the
instruction, e.g. ``[["target", "Pavia"]]``) and ``info["a11y"]`` (element bboxes in screenshot
pixels) and emits
plain :class:`~pixelrl.envs.gui_action.Action` values — clicks at pixel points and typed text — never
miniwob's element actions. So when it succeeds, the mapping from the page's DOM coordinates to
screenshot pixels and back to the page's pointer is right end to end.

A click goes to the visible part of the target: elements later in document order that are not
inside the target are painted over it (MiniWoB's click-test-2 overlaps its two buttons), so the
oracle takes the pixel of the target farthest from every such element and from the target's edge.

Each planned step also names its target's box (:class:`Step`): behaviour cloning counts any click
inside it as right. A select box is chosen by clicking it and typing the option's name (what a
person does with the keyboard; the native drop-down list is not part of the page's pixels).

Most tasks are planned once, from the first observation. A task whose page changes as it is
played (accordion sections, tabs, a file tree: :data:`REPLANNED`) is planned again from every
observation, and waits (``Action.wait``) while a section is still sliding open. Each task family
is one small planner function (:func:`_plans` registers it).

Issue 54's further tasks of the published table (:data:`TABLE_TASKS`) add key presses
(Backspace; Page Down and the arrow to scroll a box), the pointer resting on a menu item
(``Action.move``), the steps taken so far (``_Page.taken``: what a page does not show, such as
whether a scrolling box was clicked) and the screenshot (``screen``: colours, a canvas, an icon
drawn in the instruction).

Supported tasks: :data:`SUPPORTED_TASKS`.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import numpy as np

from pixelrl.envs.gui_action import Action

# issue 41's wider set (the tasks planned again from each observation are last)
WIDER_TASKS = (
    "click-test-transfer",
    "unicode-test",
    "click-button-sequence",
    "enter-text-dynamic",
    "enter-date",
    "enter-time",
    "click-checkboxes-large",
    "click-checkboxes-transfer",
    "click-dialog-2",
    "grid-coordinate",
    "identify-shape",
    "click-collapsible",
    "click-collapsible-2",
    "click-tab-2",
    "click-tab-2-hard",
    "navigate-tree",
)
# the inbox tasks: one planner (open the email from the inbox's search, then act on it)
EMAIL_TASKS = (
    "email-inbox",
    "email-inbox-delete",
    "email-inbox-forward",
    "email-inbox-forward-nl",
    "email-inbox-forward-nl-turk",
    "email-inbox-important",
    "email-inbox-nl-turk",
    "email-inbox-noscroll",
    "email-inbox-reply",
    "email-inbox-star-reply",
)
# issue 54's further tasks of the published table that take clicks, typed text, keys and the
# pointer resting on an item (the tasks planned again from each observation are last)
TABLE_REPLANNED_TASKS = (
    "click-tab-2-easy",
    "click-tab-2-medium",
    "guess-number",
    "login-user-popup",
    "search-engine",
    "use-autocomplete",
    *EMAIL_TASKS,
    "social-media",
    "social-media-all",
    "social-media-some",
    "terminal",
    "choose-date",
    "choose-date-easy",
    "choose-date-medium",
    "click-menu",
    "click-menu-2",
    "click-pie",
)
TABLE_TASKS = (
    "read-table",
    "read-table-2",
    "simple-arithmetic",
    "simple-algebra",
    "visual-addition",
    "find-word",
    "text-transform",
    "copy-paste",
    "copy-paste-2",
    "multi-layouts",
    "multi-orderings",
    "click-color",
    "click-shades",
    "click-shape",
    "count-shape",
    "count-sides",
    *TABLE_REPLANNED_TASKS,
)
SUPPORTED_TASKS = (
    "click-test",
    "click-test-2",
    "click-button",
    "click-link",
    "focus-text",
    "focus-text-2",
    "enter-text",
    "enter-text-2",
    "enter-password",
    "login-user",
    "click-checkboxes",
    "click-option",
    "click-dialog",
    "click-tab",
    "click-widget",
    "choose-list",
    *WIDER_TASKS,
    *TABLE_TASKS,
)
# Tasks whose page changes as they are played (sections open, folders expand): the oracle plans
# them again from every observation (MiniWoBOracle.act(obs, info)); the rest are planned once.
REPLANNED = frozenset(
    {"click-collapsible", "click-collapsible-2", "click-tab-2", "click-tab-2-hard", "navigate-tree"}
)
REPLANNED |= set(TABLE_REPLANNED_TASKS)
# click-widget's widget kinds -> the tag miniwob's DOM reports for the widget's control
WIDGET_TAGS = {
    "button": "button",
    "checkbox": "input_checkbox",
    "radio": "input_radio",
    "text": "input_text",
    "textarea": "textarea",
}
# identify-shape's figure tags -> the button that names them (a text figure: Number or Letter)
SHAPE_TAGS = {"rect": "Rectangle", "circle": "Circle", "polygon": "Triangle"}


class OracleError(ValueError):
    """The oracle cannot plan this episode (unsupported task, unexpected page)."""


class Step(NamedTuple):
    """One planned action and the screen box it aims at (None for typing). ``note``: what the
    step is for, where a planner reads its own past steps back (:attr:`_Page.taken`).
    ``unordered``: the step belongs to a run of steps the task takes in any order (the boxes to
    tick): each is as right as the next while it is left to do
    (:attr:`MiniWoBOracle.next_alternative_bboxes`)."""

    action: Action
    target_bbox: list[int] | None = None
    note: str = ""
    unordered: bool = False


def visible_point(target: dict[str, Any], a11y: list[dict[str, Any]]) -> tuple[int, int]:
    """The pixel of ``target`` deepest inside its part that no later element covers."""
    import cv2

    x0, y0, x1, y1 = target["bbox"]
    mask = np.ones((y1 - y0 + 2, x1 - x0 + 2), dtype=np.uint8)  # 1-px border = the edge
    mask[0, :] = mask[-1, :] = 0
    mask[:, 0] = mask[:, -1] = 0
    order = [id(e) for e in a11y]
    after = a11y[order.index(id(target)) + 1 :] if id(target) in order else []
    inside = _descendants(target, a11y)
    for e in after:
        if e["id"] in inside or e["state"].get("tag") == "t":
            continue  # its own content, or a text run (text boxes span lines, not paint)
        ex0, ey0, ex1, ey1 = e["bbox"]
        mask[
            max(ey0 - y0 + 1, 0) : max(ey1 - y0 + 1, 0), max(ex0 - x0 + 1, 0) : max(ex1 - x0 + 1, 0)
        ] = 0
    if not mask.any():
        raise OracleError(f"element {target['name']!r} at {target['bbox']} is fully covered")
    depth = cv2.distanceTransform(mask, cv2.DIST_L2, 3)
    row, col = np.unravel_index(int(np.argmax(depth)), depth.shape)
    return int(x0 + col - 1), int(y0 + row - 1)


def _descendants(target: dict[str, Any], a11y: list[dict[str, Any]]) -> set:
    inside = {target["id"]}
    for e in a11y:  # document order: a parent comes before its children
        if e["state"].get("parent") in inside:
            inside.add(e["id"])
    return inside


def _find(
    a11y, where: str, role: str | None = None, name: str | None = None, html_id: str | None = None
):
    for e in a11y:
        if role is not None and e["role"] != role:
            continue
        if name is not None and e["name"] != name:
            continue
        if html_id is not None and e["state"].get("html_id") != html_id:
            continue
        return e
    raise OracleError(f"{where}: no element with role={role!r} name={name!r} id={html_id!r}")


def _quoted(instruction: str) -> list[str]:
    return re.findall(r'"([^"]*)"', instruction)


def plan(
    task: str, instruction: str, a11y: list[dict[str, Any]], fields: list | None = None
) -> list[Action]:
    """The actions that solve this episode of ``task``, from its first observation."""
    return [step.action for step in plan_steps(task, instruction, a11y, fields)]


def plan_steps(
    task: str,
    instruction: str,
    a11y: list[dict[str, Any]],
    fields: list | None = None,
    taken: tuple[Step, ...] = (),
    screen: np.ndarray | None = None,
) -> list[Step]:
    """:func:`plan` with each step's target box. ``fields``: ``info["fields"]`` of the reset
    (the tasks that do not quote their targets need it). For a task of :data:`REPLANNED` the
    plan is what is left to do on the page as ``a11y`` shows it now (its first step is the one
    to take; the rest may change once that is done); ``taken``: the steps taken so far this
    episode (what a page does not show, such as which box has the keyboard's focus);
    ``screen``: the screenshot, for the tasks that name what they show by colour."""
    _require_known(task)
    return _PLANNERS[task](_Page(task, instruction, a11y, fields, taken, screen))


def _require_known(task: str) -> None:
    if task not in _PLANNERS:
        raise OracleError(
            f"the oracle does not know {task!r}; it knows {', '.join(SUPPORTED_TASKS)}"
        )


class _Page:
    """One observation of a task's page, and the steps an oracle can take on it."""

    def __init__(
        self, task: str, instruction: str, a11y: list[dict[str, Any]], fields, taken=(), screen=None
    ) -> None:
        self.task, self.instruction, self.a11y, self.fields = task, instruction, a11y, fields
        self.taken: tuple[Step, ...] = tuple(taken)
        self.screen = screen
        self.values = {str(k): str(v) for k, v in (fields or [])}
        self.words = _quoted(instruction)

    def click(self, e: dict[str, Any]) -> Step:
        return Step(Action.click(*visible_point(e, self.a11y)), list(e["bbox"]))

    @staticmethod
    def typed(text: str) -> Step:
        return Step(Action.type_text(text))

    def field(self, key: str) -> str:
        if key not in self.values:
            raise OracleError(
                f"{self.task}: the episode has no field {key!r} (fields: {self.fields!r})"
            )
        return self.values[key]

    def find(self, role: str | None = None, name: str | None = None, html_id: str | None = None):
        return _find(self.a11y, self.task, role=role, name=name, html_id=html_id)

    def submit(self, name: str = "Submit") -> Step:
        return self.click(self.find(role="button", name=name))

    def tagged(self, tag: str) -> list[dict[str, Any]]:
        return [e for e in self.a11y if e["state"].get("tag") == tag]

    def classed(self, cls: str) -> list[dict[str, Any]]:
        return [e for e in self.a11y if cls in e["state"].get("classes", "").split()]

    def unreadable(self) -> OracleError:
        return OracleError(f"{self.task}: cannot read the instruction {self.instruction!r}")


_PLANNERS: dict[str, Any] = {}


def _plans(*tasks: str):
    """Register a planner ``fn(page) -> list[Step]`` for ``tasks``."""

    def register(fn):
        for task in tasks:
            if task in _PLANNERS:  # two planners for one task: the later would win unseen
                raise ValueError(f"{task!r} has a planner already: {_PLANNERS[task].__name__}")
            _PLANNERS[task] = fn
        return fn

    return register


@_plans("click-test")
def _click_the_button(p: _Page) -> list[Step]:
    return [p.click(p.find(role="button"))]


@_plans("click-test-2")
def _click_button_read(p: _Page) -> list[Step]:
    m = re.search(r"Click button (\w+)", p.instruction)
    if not m:
        raise p.unreadable()
    return [p.click(p.find(role="button", name=m.group(1)))]


@_plans("click-button")
def _click_quoted_button(p: _Page) -> list[Step]:
    return [p.click(p.find(role="button", name=p.words[0]))]


@_plans("click-test-transfer", "unicode-test")
def _click_target_button(p: _Page) -> list[Step]:
    # the field, not the instruction: unicode-test's instruction loses its non-ASCII letters
    return [p.click(p.find(role="button", name=p.field("target")))]


@_plans("click-button-sequence")
def _click_one_then_two(p: _Page) -> list[Step]:
    return [p.click(p.find(role="button", name=n)) for n in ("ONE", "TWO")]


@_plans("click-link")
def _click_quoted_link(p: _Page) -> list[Step]:
    return [p.click(p.find(name=p.words[0]))]


@_plans("focus-text")
def _click_the_textbox(p: _Page) -> list[Step]:
    return [p.click(p.find(role="textbox"))]


@_plans("focus-text-2")
def _click_nth_textbox(p: _Page) -> list[Step]:
    m = re.search(r"(\d+)(?:st|nd|rd|th) input", p.instruction)
    boxes = [e for e in p.a11y if e["role"] == "textbox"]
    if not m or not 1 <= int(m.group(1)) <= len(boxes):
        raise p.unreadable()
    return [p.click(boxes[int(m.group(1)) - 1])]


@_plans("enter-text", "enter-text-2", "enter-text-dynamic")
def _enter_quoted_text(p: _Page) -> list[Step]:
    text = p.words[0].upper() if "upper case" in p.instruction else p.words[0]
    if "lower case" in p.instruction:
        text = p.words[0].lower()
    return [p.click(p.find(role="textbox")), p.typed(text), p.submit()]


# A date or time input's first segment (mm, hh) in screen pixels from the box's left edge, at
# MiniWoB's font: Chrome draws the input in segments and a click selects the one under it.
FIRST_SEGMENT = 22


@_plans("enter-date", "enter-time")
def _enter_target_value(p: _Page) -> list[Step]:
    # a date or time input takes the value typed as written (08/27/2013, 8:52AM) from its first
    # segment; a click on the year first would type the date into the year. So the click, and
    # the box that behaviour cloning scores a click against, is the first segment, not the field
    box = next(iter(p.tagged("input_date") + p.tagged("input_time")), None)
    if box is None:
        raise OracleError(f"{p.task}: no date or time input on the page")
    x0, y0, x1, y1 = box["bbox"]
    first = [x0, y0, min(x1, x0 + FIRST_SEGMENT), y1]
    x, y = visible_point(box, p.a11y)
    if not first[0] <= x < first[2]:
        x = (first[0] + first[2]) // 2
    return [Step(Action.click(x, y), first), p.typed(p.field("target")), p.submit()]


@_plans("enter-password")
def _enter_password_twice(p: _Page) -> list[Step]:
    return [
        p.click(p.find(html_id="password")),
        p.typed(p.words[0]),
        p.click(p.find(html_id="verify")),
        p.typed(p.words[0]),
        p.submit(),
    ]


@_plans("login-user")
def _log_in(p: _Page) -> list[Step]:
    return [
        p.click(p.find(html_id="username")),
        p.typed(p.words[0]),
        p.click(p.find(html_id="password")),
        p.typed(p.words[1]),
        p.submit("Login"),
    ]


@_plans("click-checkboxes", "click-option", "click-checkboxes-large", "click-checkboxes-transfer")
def _tick_targets(p: _Page) -> list[Step]:
    # each named item's label (its box and its text both toggle it), then Submit
    targets = [v for k, v in p.values.items() if k.startswith("target")]
    ticks = [p.click(_labelled(p.a11y, p.task, name))._replace(unordered=True) for name in targets]
    return ticks + [p.submit()]


@_plans("click-dialog")
def _close_dialog(p: _Page) -> list[Step]:
    return [p.click(_dialog_close(p))]


@_plans("click-dialog-2")
def _click_dialog_button(p: _Page) -> list[Step]:
    target = p.field("target")  # "x" is the title bar's close button, else a button's name
    return [p.click(_dialog_close(p) if target == "x" else p.find(role="button", name=target))]


def _dialog_close(p: _Page) -> dict[str, Any]:
    close = p.classed("ui-dialog-titlebar-close")
    if not close:
        raise OracleError(f"{p.task}: no dialog close button on the page")
    return close[0]


@_plans("click-tab")
def _click_numbered_tab(p: _Page) -> list[Step]:
    return [p.click(p.find(role="link", name=f"Tab #{p.field('target')}"))]


@_plans("click-widget")
def _click_widget_kind(p: _Page) -> list[Step]:
    kind = p.field("target")
    if kind not in WIDGET_TAGS:
        raise OracleError(f"{p.task}: unknown widget kind {kind!r}")
    for e in p.classed("widget"):
        if any(c["state"].get("tag") == WIDGET_TAGS[kind] for c in _children(e, p.a11y)):
            return [p.click(e)]
    raise OracleError(f"{p.task}: no {kind!r} widget on the page")


@_plans("choose-list")
def _choose_by_typing(p: _Page) -> list[Step]:
    return [p.click(p.find(role="combobox")), p.typed(p.field("target")), p.submit()]


@_plans("grid-coordinate")
def _click_grid_point(p: _Page) -> list[Step]:
    return [p.click(p.find(html_id=f"({p.field('x')},{p.field('y')})"))]


@_plans("identify-shape")
def _name_the_shape(p: _Page) -> list[Step]:
    svg = p.find(html_id="area_svg")
    shapes = _children(svg, p.a11y)
    if not shapes:
        raise OracleError(f"{p.task}: the figure is empty")
    shape = shapes[0]
    tag, text = shape["state"].get("tag"), shape["name"]
    if tag == "text":
        kind = "Number" if text.isdigit() else "Letter"
    else:
        kind = SHAPE_TAGS.get(tag)
        if kind is None:
            raise OracleError(f"{p.task}: unknown figure {tag!r}")
    return [p.click(p.find(role="button", name=kind))]


# -- tasks whose page changes as they are played: planned again from each observation --------


@_plans("click-collapsible")
def _expand_then_submit(p: _Page) -> list[Step]:
    header = p.classed("ui-accordion-header")
    if _moving(p):
        return [Step(Action.wait())]
    if header and "ui-accordion-header-collapsed" in header[0]["state"].get("classes", ""):
        return [p.click(header[0]), p.submit()]
    return [p.submit()]


@_plans("click-collapsible-2", "click-tab-2", "click-tab-2-hard")
def _open_sections_until_link(p: _Page) -> list[Step]:
    # the target is a link (span.alink) in one of the sections (accordion) or tabs; only the
    # open one is on the screen: click it there, else open the section after the open one
    target = p.field("target")
    if _moving(p):
        return [Step(Action.wait())]
    links = [e for e in p.classed("alink") if e["name"] == target]
    if links:
        return [p.click(links[0])]
    if p.task == "click-collapsible-2":
        sections = p.classed("ui-accordion-header")
        is_open = ["ui-accordion-header-active" in e["state"].get("classes", "") for e in sections]
    else:
        sections = [e for e in p.classed("ui-tabs-anchor")]
        tabs = p.classed("ui-tabs-tab")
        is_open = ["ui-tabs-active" in e["state"].get("classes", "") for e in tabs]
    if not sections:
        raise OracleError(f"{p.task}: no sections on the page")
    now = is_open.index(True) if True in is_open else -1
    if now == len(sections) - 1:
        raise OracleError(f"{p.task}: no section holds the link {target!r}")
    return [p.click(sections[now + 1])]


def _moving(p: _Page) -> bool:
    """An accordion section still sliding open: its box is shorter than what it holds."""
    for e in p.classed("ui-accordion-content"):
        inner = _children(e, p.a11y)
        if inner and max(c["bbox"][3] for c in inner) > e["bbox"][3] + 1:
            return True
    return False


@_plans("navigate-tree")
def _expand_folders_until_found(p: _Page) -> list[Step]:
    # click the file or folder once it is on the screen, else open the first closed folder
    target = p.field("target")
    for e in p.classed("file") + p.classed("folder"):
        if e["name"] == target:
            return [p.click(e)]
    closed = p.classed("expandable-hitarea")
    if not closed:
        raise OracleError(f"{p.task}: {target!r} is in no folder")
    return [p.click(closed[0])]


def _children(target: dict[str, Any], a11y: list[dict[str, Any]]) -> list[dict[str, Any]]:
    inside = _descendants(target, a11y) - {target["id"]}
    return [e for e in a11y if e["id"] in inside]


def _labelled(a11y: list[dict[str, Any]], where: str, name: str) -> dict[str, Any]:
    """The <label> whose text is ``name`` (a checkbox's or a radio button's)."""
    for e in a11y:
        if e["role"] == "label" and any(c["name"] == name for c in _children(e, a11y)):
            return e
    raise OracleError(f"{where}: no item labelled {name!r}")


# -- issue 54: the further tasks of the published table (TABLE_TASKS) -------------------------

_plans("click-tab-2-easy", "click-tab-2-medium")(_open_sections_until_link)


def _fill(p: _Page, box: dict[str, Any], text: str) -> list[Step]:
    """Click a text box, then type into it."""
    return [p.click(box), p.typed(text)]


def _named(p: _Page, *names: str) -> dict[str, Any]:
    """The last element whose text is one of ``names`` (a form's Submit, Search or Go!)."""
    found = [e for e in p.a11y if e["name"] in names]
    if not found:
        raise OracleError(f"{p.task}: no element named {' or '.join(map(repr, names))}")
    return found[-1]


def _cell_after(p: _Page, label: str) -> str:
    """A two-column table's value in the row whose first cell reads ``label``."""
    cells = [e for e in p.a11y if e["state"].get("tag") == "td"]
    for key, value in zip(cells, cells[1:]):
        if key["name"] == label and key["state"]["parent"] == value["state"]["parent"]:
            return value["name"]
    raise OracleError(f"{p.task}: no table row {label!r}")


@_plans("read-table")
def _type_table_value(p: _Page) -> list[Step]:
    value = _cell_after(p, p.field("target"))
    return _fill(p, p.find(role="textbox"), value) + [p.submit()]


@_plans("read-table-2")
def _type_table_values(p: _Page) -> list[Step]:
    # each label ("Color:") names a row of the table; its box follows it on the page
    steps: list[Step] = []
    for label in (e for e in p.a11y if e["role"] == "label"):
        box = p.find(html_id="tt" + label["state"].get("html_id", "")[2:])
        steps += _fill(p, box, _cell_after(p, label["name"].rstrip(":")))
    if not steps:
        raise OracleError(f"{p.task}: no labelled boxes on the page")
    return steps + [p.submit()]


# simple-arithmetic's "3 + 8 =" and simple-algebra's "x - 4 = 84" / "3 - x = 84" (x: times)
_ARITHMETIC = re.compile(r"^(-?\d+) ([-+x]) (-?\d+) =$")
_ALGEBRA = re.compile(r"^(x|-?\d+) ([-+]) (x|-?\d+) = (-?\d+)$")


@_plans("simple-arithmetic")
def _type_the_sum(p: _Page) -> list[Step]:
    m = _ARITHMETIC.match(p.find(html_id="math-problem")["name"])
    if not m:
        raise p.unreadable()
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    answer = a + b if op == "+" else a - b if op == "-" else a * b
    return _fill(p, p.find(html_id="math-answer"), str(answer)) + [p.submit()]


@_plans("simple-algebra")
def _type_x(p: _Page) -> list[Step]:
    m = _ALGEBRA.match(p.find(html_id="math-problem")["name"])
    if not m or (m.group(1) == "x") == (m.group(3) == "x"):
        raise p.unreadable()
    left, op, right, total = m.group(1), m.group(2), m.group(3), int(m.group(4))
    known = int(right if left == "x" else left)
    if op == "+":
        x = total - known
    else:  # x - k = t gives t + k; k - x = t gives k - t
        x = total + known if left == "x" else known - total
    return _fill(p, p.find(html_id="math-answer"), str(x)) + [p.submit()]


@_plans("visual-addition")
def _type_block_count(p: _Page) -> list[Step]:
    count = len(p.classed("addition-block"))
    return _fill(p, p.find(html_id="math-answer"), str(count)) + [p.submit()]


@_plans("find-word")
def _type_nth_word(p: _Page) -> list[Step]:
    words = p.find(role="p")["name"].split()
    n = int(p.field("target"))
    if not 1 <= n <= len(words):
        raise p.unreadable()
    word = re.sub(r"[^a-zA-Z]", "", words[n - 1])  # the task strips punctuation too
    return _fill(p, p.find(html_id="answer-input"), word) + [p.submit()]


@_plans("text-transform")
def _type_captcha(p: _Page) -> list[Step]:
    text = "".join(e["name"] for e in _children(p.find(html_id="captcha"), p.a11y))
    return _fill(p, p.find(role="textbox"), text) + [p.submit()]


@_plans("copy-paste", "copy-paste-2")
def _retype_textarea(p: _Page) -> list[Step]:
    # what a paste would put there, typed (the textarea's value, its trailing space included)
    area = p.find(html_id="to-copy" if p.task == "copy-paste" else f"text-{p.field('target')}")
    return _fill(p, p.find(html_id="answer-input"), area["state"].get("value", "")) + [p.submit()]


# multi-layouts' and multi-orderings' field -> the word of the label beside its box
MOVIE_LABELS = {"genre": ("Genre",), "director": ("Director",), "year": ("Year", "Date")}


@_plans("multi-layouts", "multi-orderings")
def _fill_movie_search(p: _Page) -> list[Step]:
    # a box's label is the nearest text within the box's row (its parent or grandparent)
    steps: list[Step] = []
    for box in (e for e in p.a11y if e["role"] == "textbox"):
        key = _movie_label(p, box)
        steps += _fill(p, box, p.field(key))
    return steps + [p.click(_named(p, "Submit", "Search", "Go!"))]


def _movie_label(p: _Page, box: dict[str, Any]) -> str:
    by_id = {e["id"]: e for e in p.a11y}
    row = box
    for _ in range(2):
        row = by_id.get(row["state"].get("parent"))
        if row is None:
            break
        for e in _children(row, p.a11y):
            for key, words in MOVIE_LABELS.items():
                if any(w in e["name"] for w in words):
                    return key
    raise OracleError(f"{p.task}: the box at {box['bbox']} has no label")


# click-color's colour names -> the CSS colour the page paints
CSS_COLOURS = {
    "red": (255, 0, 0),
    "blue": (0, 0, 255),
    "olive": (128, 128, 0),
    "lime": (0, 255, 0),
    "black": (0, 0, 0),
    "white": (255, 255, 255),
    "grey": (128, 128, 128),
    "purple": (128, 0, 128),
    "orange": (255, 165, 0),
    "yellow": (255, 255, 0),
    "cyan": (0, 255, 255),
    "pink": (255, 192, 203),
    "magenta": (255, 0, 255),
}
# click-shades' colour names -> their hue in degrees (the page draws shades of each)
SHADE_HUES = {"red": 0.0, "green": 120.0, "blue": 240.0}


def _colour(p: _Page, e: dict[str, Any]) -> np.ndarray:
    """The colour ``e`` is painted on the screenshot: the median of its pixels inside a 2-pixel
    margin (its border and anti-aliased edge left out)."""
    if p.screen is None:
        raise OracleError(f"{p.task}: telling colours apart needs the screenshot")
    x0, y0, x1, y1 = e["bbox"]
    m = 2 if min(x1 - x0, y1 - y0) > 6 else 0
    patch = np.asarray(p.screen)[y0 + m : y1 - m, x0 + m : x1 - m].reshape(-1, 3)
    if not len(patch):
        raise OracleError(f"{p.task}: the box at {e['bbox']} is off the screen")
    return np.median(patch, axis=0)


def _hue(rgb: np.ndarray) -> float:
    import colorsys

    return colorsys.rgb_to_hsv(*(float(v) / 255 for v in rgb))[0] * 360


@_plans("click-color")
def _click_named_colour(p: _Page) -> list[Step]:
    name = p.field("target")
    if name not in CSS_COLOURS:
        raise OracleError(f"{p.task}: unknown colour {name!r}")
    boxes = p.classed("color")
    if not boxes:
        raise OracleError(f"{p.task}: no coloured boxes on the page")
    want = np.array(CSS_COLOURS[name])
    return [p.click(min(boxes, key=lambda e: float(np.abs(_colour(p, e) - want).sum())))]


@_plans("click-shades")
def _click_every_shade(p: _Page) -> list[Step]:
    name = p.field("target")
    if name not in SHADE_HUES:
        raise OracleError(f"{p.task}: unknown colour {name!r}")
    area = p.find(html_id="area")["id"]
    swatches = [e for e in p.tagged("span") if e["state"].get("parent") == area]

    def nearest(e: dict[str, Any]) -> str:  # the hue circle's nearest of red, green, blue
        hue = _hue(_colour(p, e))
        return min(
            SHADE_HUES, key=lambda k: min(abs(hue - SHADE_HUES[k]), 360 - abs(hue - SHADE_HUES[k]))
        )

    clicks = [p.click(e) for e in swatches if nearest(e) == name]
    return clicks + [p.click(p.find(html_id="submit"))]


# the colours of MiniWoB's shapes (common/shapes.js), and what each figure tag draws
SHAPE_COLOURS = {
    "red": (255, 0, 0),
    "green": (0, 128, 0),
    "blue": (0, 0, 255),
    "aqua": (0, 255, 255),
    "black": (0, 0, 0),
    "magenta": (255, 0, 255),
    "yellow": (255, 255, 0),
}
FIGURES = {"rect": "rectangle", "circle": "circle", "polygon": "triangle"}


def _figure(p: _Page, e: dict[str, Any]) -> dict[str, str]:
    """A shapes.js figure as the page describes it: size, colour, type and what it is."""
    tag, (x0, y0, x1, y1) = e["state"].get("tag"), e["bbox"]
    if tag == "text":
        kind, text, large = ("digit" if e["name"].isdigit() else "letter"), e["name"], y1 - y0 > 16
    elif tag in FIGURES:
        kind, text, large = "shape", FIGURES[tag], x1 - x0 > 15  # 10 or 20 pixels wide
    else:
        raise OracleError(f"{p.task}: unknown figure {tag!r}")
    if p.screen is None:
        raise OracleError(f"{p.task}: telling colours apart needs the screenshot")
    # each pixel off the white page is a palette colour blended with white (anti-aliased edges,
    # thin strokes: a black letter's rim is grey): it votes for the colour that blend fits
    # best, by how much of that colour it holds (a neighbour's ink reaching in is outvoted)
    ink = np.asarray(p.screen)[y0:y1, x0:x1].reshape(-1, 3).astype(float) - 255
    ink = ink[np.abs(ink).sum(axis=1) > 60]
    if not len(ink):
        raise OracleError(f"{p.task}: the figure at {e['bbox']} shows no colour")
    towards = np.array(list(SHAPE_COLOURS.values()), dtype=float) - 255  # white -> colour
    share = np.clip(ink @ towards.T / (towards**2).sum(axis=1), 0, 1)  # pixels x colours
    misfit = np.linalg.norm(ink[:, None, :] - share[:, :, None] * towards[None], axis=2)
    best = misfit.argmin(axis=1)
    votes = np.bincount(best, weights=share[np.arange(len(ink)), best], minlength=len(towards))
    colour = list(SHAPE_COLOURS)[int(votes.argmax())]
    return {"size": "large" if large else "small", "color": colour, "type": kind, "text": text}


def _matching_figures(p: _Page) -> list[dict[str, Any]]:
    """The figures that fit the instruction's size, colour and kind (each may be left out)."""
    size, colour = p.values.get("size", ""), p.values.get("color", "")
    # "type": item, shape, letter or digit; "target": which one (a circle, the letter G)
    what = p.values.get("type") or p.values.get("target") or "item"
    figures = _children(p.find(html_id="area_svg"), p.a11y)
    matches = []
    for e in figures:
        f = _figure(p, e)
        if (size in ("", f["size"]) and colour in ("", f["color"])
                and what in ("item", f["type"], f["text"])):  # fmt: skip
            matches.append(e)
    return matches


@_plans("click-shape")
def _click_described_figure(p: _Page) -> list[Step]:
    matches = _matching_figures(p)
    if not matches:
        raise OracleError(f"{p.task}: no figure fits {p.instruction!r}")
    return [p.click(matches[0])]


@_plans("count-shape")
def _count_described_figures(p: _Page) -> list[Step]:
    return [p.click(p.find(role="button", name=str(len(_matching_figures(p)))))]


POLYGON_RADIUS = 35  # count-sides draws a regular polygon this many CSS pixels from its centre


@_plans("count-sides")
def _count_polygon_sides(p: _Page) -> list[Step]:
    # the polygon is drawn on a canvas (no elements to read): the dark pixels' distance from
    # the canvas's centre, against the outline of each regular polygon of 3 to 7 sides at
    # each turn, a degree apart; the closest fit names the button
    if p.screen is None:
        raise OracleError(f"{p.task}: a canvas is read from the screenshot")
    x0, y0, x1, y1 = p.find(html_id="c")["bbox"]
    ys, xs = np.nonzero(np.asarray(p.screen)[y0:y1, x0:x1].mean(axis=2) < 100)
    if len(xs) < 20:
        raise OracleError(f"{p.task}: no polygon on the canvas")
    dx, dy = xs + 0.5 - (x1 - x0) / 2, ys + 0.5 - (y1 - y0) / 2
    angle, radius = np.arctan2(dy, dx)[:, None], np.hypot(dx, dy)[:, None]
    size = POLYGON_RADIUS * (x1 - x0) / 150  # the canvas is 150 CSS pixels wide
    fits = {}
    for n in range(3, 8):
        turns = np.radians(np.arange(0, 360 / n, 1.0))[None, :]
        edge = np.mod(angle - turns, 2 * np.pi / n) - np.pi / n  # angle from the edge's middle
        fits[n] = float(np.abs(radius - size * np.cos(np.pi / n) / np.cos(edge)).mean(0).min())
    return [p.click(p.find(role="button", name=str(min(fits, key=fits.get))))]


# -- ... and those planned again from each observation (TABLE_REPLANNED_TASKS) ----------------


def _type_into(p: _Page, box: dict[str, Any], text: str) -> list[Step]:
    """What is left to make an empty text box read ``text``: click it unless it has the focus,
    then type (nothing once it reads ``text``)."""
    value = box["state"].get("value", "")
    if value == text:
        return []
    if value:
        raise OracleError(f"{p.task}: the box at {box['bbox']} reads {value!r}, not {text!r}")
    return ([] if box["focused"] else [p.click(box)]) + [p.typed(text)]


def _text_of(e: dict[str, Any], a11y: list[dict[str, Any]]) -> str:
    return " ".join(c["name"] for c in [e, *_children(e, a11y)] if c["name"])


@_plans("guess-number")
def _guess_from_feedback(p: _Page) -> list[Step]:
    # start at 5, then one up or down from the last guess as the feedback says: each plan is
    # read off the page alone (the feedback names the last guess)
    guess = 5
    for html_id, step in (("higher", 1), ("lower", -1)):
        shown = [e for e in p.a11y if e["state"].get("html_id") == html_id]
        if shown:
            last = re.search(r"-?\d+", _text_of(shown[0], p.a11y))
            if not last:
                raise p.unreadable()
            guess = int(last.group()) + step
    box = p.find(html_id="tt")
    value = box["state"].get("value", "")
    if value and value != str(guess):  # the last guess is still in the box
        return ([] if box["focused"] else [p.click(box)]) + [Step(Action.key("backspace"))]
    return _type_into(p, box, str(guess)) + [p.submit()]


@_plans("login-user-popup")
def _log_in_past_the_popup(p: _Page) -> list[Step]:
    # a pop-up may open when a box takes the focus: Cancel closes it (OK ends the episode)
    cancel = [e for e in p.a11y if e["state"].get("html_id") == "popup-cancel"]
    if cancel:
        return [p.click(cancel[0])]
    steps: list[Step] = []
    for key in ("username", "password"):
        steps += _type_into(p, p.find(html_id=key), p.field(key))
    return steps + [p.click(p.find(html_id="subbtn"))]


@_plans("search-engine")
def _search_then_click_result(p: _Page) -> list[Step]:
    titles = p.classed("search-title")
    if not titles:
        search = _type_into(p, p.find(html_id="search-text"), p.field("query"))
        return search + [p.click(p.find(html_id="search"))]
    rank = int(p.field("rank"))  # three results a page
    page, row = str((rank - 1) // 3 + 1), (rank - 1) % 3
    links = [e for e in p.classed("page-link")]
    active = [e for li in p.classed("active") for e in _children(li, p.a11y) if e in links]
    if not active or active[0]["name"] != page:
        return [p.click(next(e for e in links if e["name"] == page))]
    if row >= len(titles):
        raise OracleError(f"{p.task}: page {page} shows {len(titles)} results")
    return [p.click(titles[row])]


@_plans("use-autocomplete")
def _type_then_pick_completion(p: _Page) -> list[Step]:
    start, end = p.field("start"), p.values.get("end", "")
    box = p.find(html_id="tags")
    value = box["state"].get("value", "")
    if value.startswith(start) and value.endswith(end):
        return [p.submit()]
    items = [e for e in p.classed("ui-menu-item-wrapper") if e["name"].endswith(end)]
    if items:
        return [p.click(items[0])]
    if value == start:  # the list opens after a short delay
        return [Step(Action.wait())]
    return _type_into(p, box, start)


@_plans(*EMAIL_TASKS)
def _find_email_then_act(p: _Page) -> list[Step]:
    # the inbox scrolls, so the email is found with the inbox's own search box: open the search,
    # type the sender, open the email it lists, then reply, forward, delete or star it there
    sender, task = p.field("by"), p.values.get("task", "forward")  # -forward-nl names no task
    if p.classed("reply-body"):
        text = _type_into(p, p.find(html_id="reply-text"), p.field("message"))
        return text + [p.click(p.find(html_id="send-reply"))]
    if p.classed("forward-sender"):
        to = _type_into(p, p.classed("forward-sender")[0], p.field("to"))
        return to + [p.click(p.find(html_id="send-forward"))]
    if any(e["state"].get("html_id") == "close-email" for e in p.a11y):
        icon = {"reply": "email-reply", "forward": "email-forward", "delete": "trash"}
        found = p.classed(icon.get(task, "star"))
        if not found:
            raise OracleError(f"{p.task}: the open email has no {task!r} button")
        return [p.click(found[0])]
    search = [e for e in p.a11y if e["state"].get("html_id") == "search-input"]
    if not search:
        return [p.click(p.find(html_id="open-search"))]
    typed = _type_into(p, search[0], sender)
    if typed:
        return typed
    for thread in p.classed("email-thread"):
        name = [
            c for c in _children(thread, p.a11y) if "email-sender" in c["state"].get("classes", "")
        ]
        if name and _text_of(name[0], p.a11y) == sender:
            return [p.click(thread)]
    raise OracleError(f"{p.task}: the search lists no email by {sender!r}")


# social-media's button names -> the class of the control (the last six in a post's "more" menu)
SOCIAL_BUTTONS = {
    "Reply": "reply",
    "Retweet": "retweet",
    "Like": "like",
    "Share": "share",
    "Share via DM": "share",
    "Copy link to Tweet": "copy",
    "Embed Tweet": "embed",
    "Mute": "menu-user",
    "Block": "block-user",
    "Report": "report",
}
MENU_BUTTONS = ("Share via DM", "Copy link to Tweet", "Embed Tweet", "Mute", "Block", "Report")


def _in_view(e: dict[str, Any], box: dict[str, Any]) -> bool:
    """All of ``e`` inside ``box`` (a scrolling box's children report boxes it hides)."""
    (x0, y0, x1, y1), (bx0, by0, bx1, by1) = e["bbox"], box["bbox"]
    return bx0 <= x0 and by0 <= y0 and x1 <= bx1 and y1 <= by1


def _scroll_down(
    p: _Page, box: dict[str, Any], focus: list[dict[str, Any]], key: str = "pagedown"
) -> list[Step]:
    """One step down the scrolling ``box`` with the keyboard (its keys scroll the box last
    clicked): a click on an inert element of ``focus`` first, then ``key`` (Page Down, or the
    down arrow's smaller step)."""
    if not any(s.action.kind == "click" for s in p.taken):
        inert = [e for e in focus if _in_view(e, box)]
        if not inert:
            raise OracleError(f"{p.task}: nothing to click in the box at {box['bbox']}")
        return [p.click(inert[0])]
    return [Step(Action.key(key))]


def _sliding(p: _Page) -> bool:
    """Page Down was the last step: the box slides for a moment, so look again first."""
    return bool(p.taken) and p.taken[-1].action.kind == "key"


def _posts_by(p: _Page, user: str) -> list[list[dict[str, Any]]]:
    """The elements of each post by ``user`` (its handle, "@name")."""
    posts = []
    for post in p.classed("media"):
        inside = _children(post, p.a11y)
        if any("username" in _classes(e) and e["name"] == user for e in inside):
            posts.append(inside)
    return posts


def _classes(e: dict[str, Any]) -> list[str]:
    return e["state"].get("classes", "").split()


def _hover_then_click(p: _Page, e: dict[str, Any], on_top: bool = False) -> list[Step]:
    """Point at ``e``, then click it: social-media's icons swap their image on hover, and a
    click that arrives with the pointer misses while the new image loads. ``on_top``: ``e`` is
    painted over what follows it (an open menu), so its centre is clicked."""
    x0, y0, x1, y1 = e["bbox"]
    x, y = ((x0 + x1) // 2, (y0 + y1) // 2) if on_top else visible_point(e, p.a11y)
    click = Step(Action.click(x, y), list(e["bbox"]), note="post")
    if p.taken and p.taken[-1].action == Action.move(x, y):
        return [click]
    return [Step(Action.move(x, y), list(e["bbox"])), click]


@_plans("social-media", "social-media-all", "social-media-some")
def _click_posts_buttons(p: _Page) -> list[Step]:
    # the posts scroll in #area; every control is clicked where it is wholly in view, and the
    # page moves down a screen at a time (less than a screen: no control falls between two);
    # an open menu a line at a time (a screen would take the post's handle off the page)
    if _sliding(p):
        return [Step(Action.wait())]
    button, area = p.field("button"), p.find(html_id="area")
    if button not in SOCIAL_BUTTONS:
        raise OracleError(f"{p.task}: unknown button {button!r}")
    cls = SOCIAL_BUTTONS[button]
    # social-media ends at the right click: until then it clicks again (a click can miss)
    wanted = {"social-media": len(p.a11y), "social-media-some": int(p.values.get("amount", 0))}
    clicked = sum(s.note == "post" for s in p.taken)
    line = False
    if clicked < wanted.get(p.task, len(p.a11y)):
        for post in _posts_by(p, p.field("user")):
            controls = [e for e in post if cls in _classes(e) and "active" not in _classes(e)]
            if p.task == "social-media" and button in MENU_BUTTONS:
                menu = [e for e in post if e["role"] == "li"]  # shown once "more" is clicked
                controls = [e for e in menu if cls in _classes(e)]
                line = line or bool(menu)
                more = [e for e in post if "more" in _classes(e)]
                if not menu and more and _in_view(more[0], area):
                    return [s._replace(note="") for s in _hover_then_click(p, more[0])]
            for e in controls:
                if _in_view(e, area) and p.task == "social-media-all":
                    return [p.click(e)]  # a missed click shows: the control stays inactive
                if _in_view(e, area):
                    return _hover_then_click(p, e, on_top=e["role"] == "li")
    submit = [e for e in p.a11y if e["role"] == "button" and e["name"] == "Submit"]
    if p.task != "social-media" and submit and _in_view(submit[0], area):
        if clicked < wanted.get(p.task, 0):
            raise OracleError(f"{p.task}: {clicked} posts found, {wanted[p.task]} asked for")
        return [p.click(submit[0])]
    return _scroll_down(p, area, p.classed("body"), "down" if line else "pagedown")


@_plans("terminal")
def _list_then_remove(p: _Page) -> list[Step]:
    # type "ls", read the files it lists, "rm" the one with the extension asked for
    m = re.search(r"extension \.(\S+)$", p.instruction.strip())
    if not m and "no file extension" not in p.instruction:
        raise p.unreadable()
    lines = [e for e in p.a11y if {"command", "output"} & set(_classes(e))]
    listed = [b["name"].split() for a, b in zip(lines, lines[1:]) if a["name"] == "ls"]
    if not listed:
        if not any(s.action.kind == "click" for s in p.taken):
            return [p.click(p.find(html_id="terminal"))]  # its keys go to a hidden input
        return [p.typed("ls\n")]
    files = [f for f in listed[-1] if (f.endswith("." + m.group(1)) if m else "." not in f)]
    if not files:
        raise OracleError(f"{p.task}: ls lists no file for {p.instruction!r}")
    return [p.typed(f"rm {files[0]}\n")]


MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")  # fmt: skip


@_plans("choose-date", "choose-date-easy", "choose-date-medium")
def _pick_the_date(p: _Page) -> list[Step]:
    # the box is read-only: open its calendar, page to the month, click the day, then Submit
    box = p.find(html_id="datepicker")
    month, day, year = (int(p.field(k)) for k in ("month", "day", "year"))
    if box["state"].get("value") == f"{month:02d}/{day:02d}/{year}":
        return [p.submit()]
    shown = p.classed("ui-datepicker-month"), p.classed("ui-datepicker-year")
    if not all(shown):
        return [p.click(box)]
    at = (int(shown[1][0]["name"]), MONTHS.index(shown[0][0]["name"]) + 1)
    if at != (year, month):
        return [
            p.click(
                p.classed("ui-datepicker-prev" if at > (year, month) else "ui-datepicker-next")[0]
            )
        ]
    days = [
        e for e in p.classed("ui-state-default") if e["role"] == "link" and e["name"] == str(day)
    ]
    if not days:
        raise OracleError(f"{p.task}: the calendar shows no day {day}")
    return [p.click(days[0])]


@_plans("click-menu")
def _open_submenus_then_click(p: _Page) -> list[Step]:
    # "A>B>C": a click on a parent item selects it (and fails), so the pointer rests on A and
    # B until their submenus open, then C is clicked
    path = p.field("target").split(">")
    items = {_text_of(e, p.a11y): e for e in p.classed("ui-menu-item-wrapper")}
    depth = 0
    while depth < len(path) and path[depth] in items:
        depth += 1
    if depth == 0:
        raise OracleError(f"{p.task}: no menu item {path[0]!r}")
    item = items[path[depth - 1]]
    if depth == len(path):
        return [p.click(item)]
    return _rest_pointer_on(p, item)


def _rest_pointer_on(p: _Page, item: dict[str, Any]) -> list[Step]:
    """Move the pointer onto a menu item, then wait while its submenu opens."""
    x, y = visible_point(item, p.a11y)
    moved = [s.action for s in p.taken if s.action.kind != "wait"][-1:] == [Action.move(x, y)]
    return [Step(Action.wait() if moved else Action.move(x, y), list(item["bbox"]))]


@_plans("click-menu-2")
def _click_menu_item_by_label_or_icon(p: _Page) -> list[Step]:
    # open the menu; the item is named by its label, or shown by its icon in the instruction's
    # band of the screen (then matched against the menu's icons); Playback's four items show
    # once the pointer rests on it
    label = re.fullmatch(r'labeled "(.*)"', p.field("target"))
    items = p.classed("ui-menu-item-wrapper")
    if not items:
        return [p.click(p.find(role="button", name="Menu"))]
    if label:
        found = [e for e in items if _text_of(e, p.a11y) == label.group(1)]
    else:
        found = _items_with_the_shown_icon(p, items)
    if found:
        return [p.click(found[0])]
    parent = [e for e in items if _text_of(e, p.a11y) == "Playback"]
    if not parent:
        raise OracleError(f"{p.task}: no menu item fits {p.field('target')!r}")
    return _rest_pointer_on(p, parent[0])


def _dark(image: np.ndarray) -> np.ndarray:
    return (np.asarray(image, dtype=float).mean(axis=2) < 128).astype(np.float32)


def _items_with_the_shown_icon(p: _Page, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The menu items whose icon's dark pixels appear, pixel for pixel, above the task area
    (where the instruction is drawn)."""
    import cv2

    if p.screen is None:
        raise OracleError(f"{p.task}: an icon is found on the screenshot")
    band = _dark(np.asarray(p.screen)[: p.find(html_id="area")["bbox"][1]])
    found = []
    for item in items:
        icons = [c for c in _children(item, p.a11y) if {"ui-icon"} <= set(_classes(c))]
        icons = [c for c in icons if "ui-menu-icon" not in _classes(c)]  # not the submenu caret
        if not icons or "ui-state-active" in _classes(item):
            continue  # no icon, or drawn light on the highlight
        x0, y0, x1, y1 = icons[0]["bbox"]
        mask = _dark(np.asarray(p.screen)[y0:y1, x0:x1])
        ys, xs = np.nonzero(mask)
        if not len(xs):
            continue
        glyph = mask[max(ys.min() - 1, 0) : ys.max() + 2, max(xs.min() - 1, 0) : xs.max() + 2]
        if glyph.shape[0] > band.shape[0] or glyph.shape[1] > band.shape[1]:
            continue
        misses = cv2.matchTemplate(band, glyph, cv2.TM_SQDIFF).min()
        if misses <= 1:  # at most one pixel of the glyph's box differs
            found.append(item)
    return found


PIE_OPENING_WAITS = 3  # click-pie's slices fly out for about half a second (0.25 s a wait)


@_plans("click-pie")
def _open_pie_then_click(p: _Page) -> list[Step]:
    # click the pie's centre, wait while its slices fly out, then click the label's slice
    target = p.field("target")
    spreader = [e for e in p.a11y if e["state"].get("html_id") == "wheelnav-divWheel-spreader"]
    if not any(s.note == "spread" for s in p.taken):
        if not spreader:
            raise OracleError(f"{p.task}: no pie menu on the page")
        return [p.click(spreader[0])._replace(note="spread")]
    if sum(s.action.kind == "wait" for s in p.taken) < PIE_OPENING_WAITS:
        return [Step(Action.wait())]
    labels = [e for e in p.tagged("tspan") if e["name"] == target]
    if not labels:
        raise OracleError(f"{p.task}: the pie has no item {target!r}")
    x0, y0, x1, y1 = labels[0]["bbox"]  # its slice is drawn under it: the label's centre
    return [Step(Action.click((x0 + x1) // 2, (y0 + y1) // 2), list(labels[0]["bbox"]))]


class MiniWoBOracle:
    """Plans at reset, then hands out one action a step: ``oracle.reset(obs, info)``, ``act()``
    (``next_target_bbox``: the box the next action aims at). A task of :data:`REPLANNED` is
    planned again from each observation passed to ``act(obs, info)`` or :meth:`observe`."""

    def __init__(self, task: str) -> None:
        _require_known(task)
        self.task = task
        self.replans = task in REPLANNED
        self._instruction = ""
        self._fields: list | None = None
        self._queue: list[Step] = []
        self._taken: list[Step] = []
        self._handed = False  # the last act() handed out a planned step (not "done")

    def reset(self, obs: dict[str, Any], info: dict[str, Any]) -> None:
        self._instruction, self._fields = obs["instruction"], info.get("fields")
        self._taken, self._handed = [], False
        self._queue = plan_steps(
            self.task, self._instruction, info["a11y"], self._fields, screen=obs.get("screenshot")
        )

    def observe(self, info: dict[str, Any], screen: np.ndarray | None = None) -> None:
        """Plan again from ``info["a11y"]`` (and ``screen``, the screenshot), the page as it is
        now (tasks of :data:`REPLANNED`; the others keep the plan made at reset)."""
        if self.replans:
            self._queue = plan_steps(
                self.task, self._instruction, info["a11y"], self._fields, tuple(self._taken), screen
            )

    @property
    def next_target_bbox(self) -> list[int] | None:
        return self._queue[0].target_bbox if self._queue else None

    @property
    def next_alternative_bboxes(self) -> list[list[int]]:
        """The boxes of the planned steps as right as the next one: the rest of its run of
        :attr:`Step.unordered` steps (the other boxes still to tick), [] for an ordered step.
        Cloning counts a click in any of them as right, as the desktop expert's
        ``alternative_bboxes`` (issue 5's check-boxes)."""
        if not self._queue or not self._queue[0].unordered:
            return []
        run = []
        for step in self._queue[1:]:
            if not step.unordered:
                break
            if step.target_bbox is not None:
                run.append(list(step.target_bbox))
        return run

    @property
    def next_closes_run(self) -> int:
        """How many :attr:`Step.unordered` steps the next step closes: the boxes ticked before
        the Submit that follows them, 0 for any other step. Cloning may draw such a step that
        many times as often (``policy.bc_weigh_stops``): an episode shows its "all ticked,
        now Submit" state once against one state a tick."""
        if not self._queue or self._queue[0].unordered:
            return 0
        run = 0
        for step in reversed(self._taken):
            if not step.unordered:
                break
            run += 1
        return run

    def act(self, obs: dict[str, Any] | None = None, info: dict[str, Any] | None = None) -> Action:
        if info is not None and "a11y" in info:
            self.observe(info, (obs or {}).get("screenshot"))
        self._handed = bool(self._queue)
        if not self._queue:
            return Action.done()
        self._taken.append(self._queue.pop(0))
        return self._taken[-1].action

    def played(self, action: Action) -> None:
        """``action`` was played after the last :meth:`act`, not necessarily what it handed out
        (a policy's, where the oracle only labels the pages it leaves: DAgger). The steps taken
        then hold what was played, so a plan read back from them (the posts clicked, the waits
        for a pie to open) is the page's history: the handed-out step is kept when ``action``
        does what it does (:func:`same_step`: the same kind and text, a point in its box), else
        replaced by a bare step of ``action``. Only tasks the oracle replans read it."""
        if self._handed and same_step(self._taken[-1], action):
            return
        if self._handed:
            self._taken.pop()
        self._taken.append(Step(action))
        self._handed = False


def same_step(step: Step, action: Action) -> bool:
    """Whether ``action`` does what ``step`` plans: the same kind, text and keys, and a point in
    the step's box (the same point where it has none)."""
    planned = step.action
    if (action.kind, action.text, action.keys) != (planned.kind, planned.text, planned.keys):
        return False
    if planned.point is None or action.point is None:
        return planned.point == action.point
    if step.target_bbox is None:
        return planned.point == action.point
    x0, y0, x1, y1 = step.target_bbox
    return x0 <= action.point[0] <= x1 and y0 <= action.point[1] <= y1


# -- gestures: tasks played with drags, the wheel and a spinner's arrows (issue 54) ------------
# Each drag is one Action.drag from a point on what is dragged to where it goes; the step's
# target box is what the drag presses on (cloning scores the press as it scores a click).
GESTURE_TASKS = (
    "drag-box",
    "drag-items",
    "drag-sort-numbers",
    "drag-shapes",
    "highlight-text",
    "highlight-text-2",
    "resize-textarea",
    "scroll-text",
    "scroll-text-2",
    "use-spinner",
)
SUPPORTED_TASKS = (*SUPPORTED_TASKS, *GESTURE_TASKS)
# Wheel notches that scroll any of these text areas from end to end (50 px each, a few hundred
# pixels of text).
SCROLL_END = 20
# How far past a list item's centre a sortable drag ends, as a share of the item's height: the
# item must cross the middle of the one it replaces.
SORT_OVERSHOOT = 0.3
# How far a resize drag pulls a textarea's edge, in screen pixels.
RESIZE_BY = 20


def _centre(e: dict[str, Any]) -> tuple[int, int]:
    x0, y0, x1, y1 = e["bbox"]
    return (x0 + x1) // 2, (y0 + y1) // 2


def _drag_to(p: _Page, e: dict[str, Any], x: float, y: float) -> Step:
    """Press on the visible part of ``e``, release at (x, y)."""
    return Step(Action.drag(*visible_point(e, p.a11y), round(x), round(y)), list(e["bbox"]))


@_plans("drag-box")
def _drag_small_into_large(p: _Page) -> list[Step]:
    # centre on centre: the small box then lies inside the large one with room on every side.
    # The small box is drawn above the large one (its z-index; document order says the
    # opposite, so not visible_point): press its centre
    small, large = p.find(html_id="draggableSmall"), p.find(html_id="draggableLarge")
    drag = Action.drag(*_centre(small), *_centre(large))
    return [Step(drag, list(small["bbox"])), p.submit()]


def _sortable_items(p: _Page) -> list[dict[str, Any]]:
    items = _children(p.find(html_id="sortable"), p.a11y)
    items = [e for e in items if e["state"].get("tag") == "li"]
    if not items:
        raise OracleError(f"{p.task}: no list items on the page")
    return items


def _item_text(item: dict[str, Any], a11y: list[dict[str, Any]]) -> str:
    return " ".join(c["name"] for c in _children(item, a11y) if c["name"]).strip()


def _move_item(p: _Page, items: list[dict[str, Any]], src: int, dst: int) -> Step:
    """Drag item ``src`` of a vertical sortable list to the slot of item ``dst``."""
    x, y = _centre(items[dst])
    x0, y0, x1, y1 = items[dst]["bbox"]
    y += (1 if dst > src else -1) * SORT_OVERSHOOT * (y1 - y0)
    return _drag_to(p, items[src], x, y)


# drag-items' destinations ("Drag Marijo to the 3rd position.") as functions of (item, count)
_DESTINATIONS = {
    "to the top": lambda i, n: 0,
    "to the bottom": lambda i, n: n - 1,
    "down by one position": lambda i, n: i + 1,
    "up by one position": lambda i, n: i - 1,
}


@_plans("drag-items")
def _drag_item_to_place(p: _Page) -> list[Step]:
    items = _sortable_items(p)
    names = [_item_text(e, p.a11y) for e in items]
    m = re.fullmatch(r"Drag (.+?) (to the top|to the bottom|down by one position|"
                     r"up by one position|to the (\d+)\w\w position)\.", p.instruction)  # fmt: skip
    if not m or m.group(1) not in names:
        raise p.unreadable()
    src = names.index(m.group(1))
    dst = int(m.group(3)) - 1 if m.group(3) else _DESTINATIONS[m.group(2)](src, len(items))
    if not 0 <= dst < len(items) or dst == src:
        raise p.unreadable()
    return [_move_item(p, items, src, dst)]  # the list ends the episode when the drop lands


@_plans("drag-sort-numbers")
def _sort_by_dragging(p: _Page) -> list[Step]:
    # selection sort in place: bring the smallest of the rest up to each slot in turn; the
    # slots keep their boxes (every item is one line high), so the plan is made once
    items = _sortable_items(p)
    try:
        values = [int(_item_text(e, p.a11y)) for e in items]
    except ValueError:
        raise p.unreadable() from None
    steps = []
    for slot in range(len(values)):
        low = min(range(slot, len(values)), key=values.__getitem__)
        if values[low] != values[slot]:
            steps.append(_move_item(p, items, low, slot))
            values.insert(slot, values.pop(low))
    return [*steps, p.submit()]


# drag-shapes' names -> the SVG tag of those shapes
SHAPE_NAMES = {"rectangles": "rect", "circles": "circle", "triangles": "polygon"}


@_plans("drag-shapes")
def _drag_shapes_into_box(p: _Page) -> list[Step]:
    m = re.search(r"Drag all (\w+) into the black box", p.instruction)
    if not m or m.group(1) not in SHAPE_NAMES:
        raise p.unreadable()
    box = p.find(html_id="shape-container")
    shapes = [e for e in p.tagged(SHAPE_NAMES[m.group(1)]) if e is not box]
    return [_drag_to(p, e, *_centre(box)) for e in shapes] + [p.submit()]


@_plans("highlight-text", "highlight-text-2")
def _select_paragraph(p: _Page) -> list[Step]:
    # press just left of the first character, release right of the last line's end: the
    # browser selects every character between (a text selection is a drag, nothing more)
    if p.task == "highlight-text":
        text = p.find(html_id="randomText")
    else:
        paragraphs = p.tagged("p")
        n = int(p.field("target"))
        if not 1 <= n <= len(paragraphs):
            raise p.unreadable()
        text = paragraphs[n - 1]
    x0, y0, x1, y1 = text["bbox"]
    start = Action.drag(max(x0 - 1, 0), y0 + 3, x1 - 1, y1 - 3)
    return [Step(start, list(text["bbox"])), p.submit()]


@_plans("resize-textarea")
def _resize_textarea(p: _Page) -> list[Step]:
    m = re.fullmatch(r"(width|height) is (smaller|larger)", p.field("target"))
    if not m:
        raise p.unreadable()
    # the corner's grip, pulled along one axis: the edges' handles stick out of the wrapper,
    # which clips them (their a11y boxes show pixels the page does not let them take)
    handle = p.classed("ui-resizable-se")
    if not handle:
        raise OracleError(f"{p.task}: no resize handle on the page")
    x, y = _centre(handle[0])
    by = RESIZE_BY if m.group(2) == "larger" else -RESIZE_BY
    to = (x + by, y) if m.group(1) == "width" else (x, y + by)
    return [Step(Action.drag(x, y, *to), list(handle[0]["bbox"])), p.submit("Submit")]


def _wheel(p: _Page, e: dict[str, Any], notches: int) -> Step:
    return Step(Action.scroll(*visible_point(e, p.a11y), dy=notches), list(e["bbox"]))


@_plans("scroll-text-2")
def _scroll_to_end(p: _Page) -> list[Step]:
    where = p.field("target")
    if where not in ("top", "bottom"):
        raise p.unreadable()
    area = p.find(role="textbox")
    return [_wheel(p, area, SCROLL_END if where == "bottom" else -SCROLL_END), p.submit()]


@_plans("scroll-text")
def _type_last_word(p: _Page) -> list[Step]:
    area = p.find(role="textbox")  # the text area comes before the answer's field
    words = re.findall(r"[A-Za-z0-9]+", str(area["state"].get("value", area["name"])))
    if not words:
        raise p.unreadable()
    answer = p.find(html_id="answer-input")
    return [_wheel(p, area, SCROLL_END), p.click(answer), p.typed(words[-1]), p.submit()]


@_plans("use-spinner")
def _spin_to_value(p: _Page) -> list[Step]:
    # the field refuses typed keys: one click on an arrow a step of the value
    try:
        want = int(p.field("target"))
        now = int(p.find(html_id="spinner")["state"].get("value") or 0)
    except ValueError:
        raise p.unreadable() from None
    arrow = p.classed("ui-spinner-up" if want > now else "ui-spinner-down")
    if not arrow:
        raise OracleError(f"{p.task}: no spinner arrows on the page")
    return [p.click(arrow[0]) for _ in range(abs(want - now))] + [p.submit()]


# The ranges a slider task's page draws its sliders from (use-slider: a low end in -100, 0,
# 10, 100 and a width of 5, 10, 50 or 100; use-slider-2: 0 to 20). The page shows a value and
# where the handle is, not the range: the oracle takes the range that puts the value where the
# handle is, as a person who has played the task would.
SLIDER_RANGES = {
    "use-slider": tuple((lo, lo + w) for lo in (-100, 0, 10, 100) for w in (5, 10, 50, 100)),
    "use-slider-2": ((0, 20),),
}
# A focused slider handle this close to its value is moved by arrow keys (a drag lands within
# a pixel, which a wide range spreads over more than one value).
SLIDER_KEY_STEPS = 3
SLIDER_TASKS = tuple(SLIDER_RANGES)
SUPPORTED_TASKS = (*SUPPORTED_TASKS, *SLIDER_TASKS)
# a slider's value shows only once it has moved: these are planned again from each observation
REPLANNED = REPLANNED | set(SLIDER_TASKS)


@_plans(*SLIDER_TASKS)
def _slide_to_values(p: _Page) -> list[Step]:
    if p.task == "use-slider":
        pairs = [(p.find(html_id="slider"), p.find(html_id="val"), p.field("target"))]
    else:
        pairs = [(p.find(html_id=f"slider-{i}"), p.find(html_id=f"val-{i}"), p.field(f"n{i}"))
                 for i in (1, 2, 3)]  # fmt: skip
    for track, shown, want in pairs:
        try:
            value, want = int(shown["name"]), int(want)
        except ValueError:
            raise p.unreadable() from None
        if value != want:
            return [_slider_step(p, track, value, want)]
    return [p.submit()]


def _slider_step(p: _Page, track: dict[str, Any], value: int, want: int) -> Step:
    """One step that moves the slider ``track`` from ``value`` towards ``want``."""
    handles = [
        e for e in _children(track, p.a11y) if "ui-slider-handle" in e["state"].get("classes", "")
    ]
    if not handles:
        raise OracleError(f"{p.task}: the slider has no handle")
    handle = handles[0]
    vertical = "ui-slider-vertical" in track["state"].get("classes", "")
    up = want > value
    if handle.get("focused") and abs(want - value) <= SLIDER_KEY_STEPS:
        key = ("up" if up else "down") if vertical else ("right" if up else "left")
        return Step(Action.key(key), list(handle["bbox"]))
    x0, y0, x1, y1 = track["bbox"]
    hx, hy = _centre(handle)
    length = (y1 - y0) if vertical else (x1 - x0)
    at = (y1 - hy) / length if vertical else (hx - x0) / length  # where the value sits, 0..1

    def misfit(r: tuple[int, int]) -> tuple[bool, float]:
        return (not r[0] <= value <= r[1], abs(r[0] + at * (r[1] - r[0]) - value))

    lo, hi = min(SLIDER_RANGES[p.task], key=misfit)
    share = min(max((want - lo) / (hi - lo), 0.0), 1.0)
    to = (hx, y1 - share * length) if vertical else (x0 + share * length, hy)
    return Step(Action.drag(hx, hy, round(to[0]), round(to[1])), list(handle["bbox"]))


if set(_PLANNERS) != set(SUPPORTED_TASKS):
    raise AssertionError(
        f"planners and SUPPORTED_TASKS differ: {set(_PLANNERS) ^ set(SUPPORTED_TASKS)}"
    )
