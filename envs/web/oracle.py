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

Supported tasks: :data:`SUPPORTED_TASKS`.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import numpy as np

from pixelrl.envs.gui_action import Action

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
)
# click-widget's widget kinds -> the tag miniwob's DOM reports for the widget's control
WIDGET_TAGS = {
    "button": "button",
    "checkbox": "input_checkbox",
    "radio": "input_radio",
    "text": "input_text",
    "textarea": "textarea",
}


class OracleError(ValueError):
    """The oracle cannot plan this episode (unsupported task, unexpected page)."""


class Step(NamedTuple):
    """One planned action and the screen box it aims at (None for typing)."""

    action: Action
    target_bbox: list[int] | None = None


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
    task: str, instruction: str, a11y: list[dict[str, Any]], fields: list | None = None
) -> list[Step]:
    """:func:`plan` with each step's target box. ``fields``: ``info["fields"]`` of the reset
    (the tasks that do not quote their targets need it)."""
    if task not in SUPPORTED_TASKS:
        raise OracleError(
            f"the oracle does not know {task!r}; it knows {', '.join(SUPPORTED_TASKS)}"
        )
    values = {str(k): str(v) for k, v in (fields or [])}

    def click(e: dict[str, Any]) -> Step:
        return Step(Action.click(*visible_point(e, a11y)), list(e["bbox"]))

    def typed(text: str) -> Step:
        return Step(Action.type_text(text))

    def field(key: str) -> str:
        if key not in values:
            raise OracleError(f"{task}: the episode has no field {key!r} (fields: {fields!r})")
        return values[key]

    words = _quoted(instruction)
    if task == "click-test":
        return [click(_find(a11y, task, role="button"))]
    if task == "click-test-2":
        m = re.search(r"Click button (\w+)", instruction)
        if not m:
            raise OracleError(f"{task}: cannot read the instruction {instruction!r}")
        return [click(_find(a11y, task, role="button", name=m.group(1)))]
    if task == "click-button":
        return [click(_find(a11y, task, role="button", name=words[0]))]
    if task == "click-link":
        return [click(_find(a11y, task, name=words[0]))]
    if task == "focus-text":
        return [click(_find(a11y, task, role="textbox"))]
    if task == "focus-text-2":
        m = re.search(r"(\d+)(?:st|nd|rd|th) input", instruction)
        boxes = [e for e in a11y if e["role"] == "textbox"]
        if not m or not 1 <= int(m.group(1)) <= len(boxes):
            raise OracleError(f"{task}: cannot read the instruction {instruction!r}")
        return [click(boxes[int(m.group(1)) - 1])]
    if task in ("enter-text", "enter-text-2"):
        text = words[0].upper() if "upper case" in instruction else words[0]
        if "lower case" in instruction:
            text = words[0].lower()
        return [
            click(_find(a11y, task, role="textbox")),
            typed(text),
            click(_find(a11y, task, role="button", name="Submit")),
        ]
    if task == "enter-password":
        return [
            click(_find(a11y, task, html_id="password")),
            typed(words[0]),
            click(_find(a11y, task, html_id="verify")),
            typed(words[0]),
            click(_find(a11y, task, role="button", name="Submit")),
        ]
    if task == "login-user":
        return [
            click(_find(a11y, task, html_id="username")),
            typed(words[0]),
            click(_find(a11y, task, html_id="password")),
            typed(words[1]),
            click(_find(a11y, task, role="button", name="Login")),
        ]
    if task in ("click-checkboxes", "click-option"):
        # each named item's label (its box and its text both toggle it), then Submit
        targets = [v for k, v in values.items() if k.startswith("target")]
        steps = [click(_labelled(a11y, task, name)) for name in targets]
        return steps + [click(_find(a11y, task, role="button", name="Submit"))]
    if task == "click-dialog":
        close = [e for e in a11y if "ui-dialog-titlebar-close" in e["state"].get("classes", "")]
        if not close:
            raise OracleError(f"{task}: no dialog close button on the page")
        return [click(close[0])]
    if task == "click-tab":
        return [click(_find(a11y, task, role="link", name=f"Tab #{field('target')}"))]
    if task == "click-widget":
        kind = field("target")
        if kind not in WIDGET_TAGS:
            raise OracleError(f"{task}: unknown widget kind {kind!r}")
        for e in a11y:
            if "widget" in e["state"].get("classes", "").split() and any(
                c["state"].get("tag") == WIDGET_TAGS[kind] for c in _children(e, a11y)
            ):
                return [click(e)]
        raise OracleError(f"{task}: no {kind!r} widget on the page")
    # choose-list
    return [
        click(_find(a11y, task, role="combobox")),
        typed(field("target")),
        click(_find(a11y, task, role="button", name="Submit")),
    ]


def _children(target: dict[str, Any], a11y: list[dict[str, Any]]) -> list[dict[str, Any]]:
    inside = _descendants(target, a11y) - {target["id"]}
    return [e for e in a11y if e["id"] in inside]


def _labelled(a11y: list[dict[str, Any]], where: str, name: str) -> dict[str, Any]:
    """The <label> whose text is ``name`` (a checkbox's or a radio button's)."""
    for e in a11y:
        if e["role"] == "label" and any(c["name"] == name for c in _children(e, a11y)):
            return e
    raise OracleError(f"{where}: no item labelled {name!r}")


class MiniWoBOracle:
    """Plans at reset, then hands out one action a step: ``oracle.reset(obs, info)``, ``act()``
    (``next_target_bbox``: the box the next action aims at)."""

    def __init__(self, task: str) -> None:
        if task not in SUPPORTED_TASKS:
            raise OracleError(
                f"the oracle does not know {task!r}; it knows {', '.join(SUPPORTED_TASKS)}"
            )
        self.task = task
        self._queue: list[Step] = []

    def reset(self, obs: dict[str, Any], info: dict[str, Any]) -> None:
        self._queue = plan_steps(self.task, obs["instruction"], info["a11y"], info.get("fields"))

    @property
    def next_target_bbox(self) -> list[int] | None:
        return self._queue[0].target_bbox if self._queue else None

    def act(self, obs: dict[str, Any] | None = None, info: dict[str, Any] | None = None) -> Action:
        return self._queue.pop(0).action if self._queue else Action.done()
