"""The UI-TARS dialect (``click(start_box='(120,45)')``, every form the official ``ui-tars``
parser reads): reading its calls, repairing its unquoted ``type`` content, writing an action."""

from __future__ import annotations

import re

from pixelrl.envs.gui_action.action import UITARS_SCROLL_NOTCHES, Action, _short
from pixelrl.envs.gui_action.coordinates import CoordinateSpace, _from_pixels, coordinate_space
from pixelrl.envs.gui_action.errors import ActionParseError
from pixelrl.envs.gui_action.syntax import _box_point, _Call, _num


def uitars_quote(text: str) -> str:
    """``text`` as a single-quoted literal the way UI-TARS writes it (its prompt asks for \\',
    \\" and \\n escapes), which both the official ``ui-tars`` parser and ours read back."""
    out = text.replace("\\", "\\\\").replace("'", "\\'").replace('"', '\\"')
    return "'" + out.replace("\n", "\\n").replace("\t", "\\t") + "'"


POINT_SYNTAXES = ("start_box", "point")


def to_uitars(
    action: Action,
    screen_size: tuple[int, int] | None = None,
    coordinates: str | CoordinateSpace = "relative1000",
    point_syntax: str = "start_box",
) -> str:
    """The action in UI-TARS' action text, as the official ``ui-tars`` parser reads it.

    UI-TARS-1.0 writes 0-1000 coordinates (``relative1000``, the default; needs
    ``screen_size``); UI-TARS-1.5 pixels of its resized image (``smart_resize``).
    ``point_syntax``: ``start_box='(x,y)'`` (UI-TARS-1.0/1.5) or ``point='<point>x y</point>'``
    (the ``ui-tars`` package's current prompt). A scroll keeps only its direction (UI-TARS
    names no amount); held keys are ``keydown``/``keyup``.
    """
    space = coordinate_space(coordinates)
    if point_syntax not in POINT_SYNTAXES:
        raise ValueError(f"point_syntax must be one of {', '.join(POINT_SYNTAXES)}")
    a = action

    def at(x: int, y: int, start: str = "start") -> str:
        bx, by = (_num(v) for v in _from_pixels(x, y, space, screen_size))
        if point_syntax == "point":
            name = "point" if start == "only" else f"{start}_point"
            return f"{name}='<point>{bx} {by}</point>'"
        return f"{'start' if start == 'only' else start}_box='({bx},{by})'"

    if a.kind == "move":
        return f"hover({at(a.x, a.y, 'only')})"
    if a.kind == "click":
        return f"click({at(a.x, a.y, 'only')})"
    if a.kind == "double_click":
        return f"left_double({at(a.x, a.y, 'only')})"
    if a.kind == "right_click":
        return f"right_single({at(a.x, a.y, 'only')})"
    if a.kind == "drag":
        return f"drag({at(a.x, a.y)}, {at(a.x2, a.y2, 'end')})"
    if a.kind == "scroll":
        if abs(a.dy) >= abs(a.dx):
            direction = "down" if a.dy > 0 else "up"
        else:
            direction = "right" if a.dx > 0 else "left"
        where = "" if a.point is None else at(a.x, a.y, "only") + ", "
        return f"scroll({where}direction='{direction}')"
    if a.kind == "type":
        return f"type(content={uitars_quote(a.text)})"
    if a.kind == "key":
        return f"hotkey(key={uitars_quote(a.keys[0])})"
    if a.kind == "hotkey":
        return f"hotkey(key={uitars_quote(' '.join(a.keys))})"
    if a.kind == "key_down":
        return f"keydown(key={uitars_quote(a.keys[0])})"
    if a.kind == "key_up":
        return f"keyup(key={uitars_quote(a.keys[0])})"
    if a.kind == "wait":
        return "wait()"
    if a.kind == "done":
        return "finished()"
    return "call_user()"


# The official parser's repair of UI-TARS text that is not valid Python: actions are separated by
# ")\n\n", a missing ")" is added, and type(content='...') takes everything up to its last "')"
# as the text, escaping the quotes a model left bare ("It's").
_TYPE_CONTENT = re.compile(r"\s*type\(content='(.*)'\s*\)?\s*", re.S)


_BARE_QUOTE = re.compile(r"(?<!\\)'")


def _repair_uitars(part: str) -> str:
    segments = part.split(")\n\n")
    repaired = []
    for i, segment in enumerate(segments):
        if i < len(segments) - 1:
            segment += ")"
        typed = _TYPE_CONTENT.fullmatch(segment)
        if typed:
            content = _BARE_QUOTE.sub("\\\\'", typed.group(1).replace("\n", "\\n"))
            segment = f"type(content='{content}')"
        elif not segment.rstrip().endswith(")"):
            segment = segment.rstrip() + ")"
        repaired.append(segment.strip())
    return "\n".join(repaired)


_UITARS_POINTER = {
    "hover": "move",
    "mouse_move": "move",
    "click": "click",
    "left_single": "click",
    "left_double": "double_click",
    "right_single": "right_click",
}


# UI-TARS' key calls: press is a press (the official code generator writes keyDown for it and
# never releases the key; see tests/envs/test_uitars_oracle.py), keydown/release/keyup hold keys.
_UITARS_KEYS = {"press": "key", "keydown": "key_down", "release": "key_up", "keyup": "key_up"}


# UI-TARS' point arguments and the names the official parser reads them as.
_UITARS_POINT_NAMES = {"start_point": "start_box", "end_point": "end_box", "point": "start_box"}


_SCROLL_DIRECTIONS = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}


def _uitars_action(call: _Call, space: CoordinateSpace, screen) -> Action:
    name = call.name
    call.rename(_UITARS_POINT_NAMES)
    if name in _UITARS_POINTER:
        call.check_arguments(["start_box"])
        return Action(_UITARS_POINTER[name], *_box_point(call, "start_box", space, screen))
    if name in ("drag", "select"):
        call.check_arguments(["start_box", "end_box"])
        x, y = _box_point(call, "start_box", space, screen)
        x2, y2 = _box_point(call, "end_box", space, screen)
        return Action.drag(x, y, x2, y2)
    if name == "scroll":
        call.check_arguments(["start_box", "direction"])
        if "start_box" in call.kwargs:
            x, y = _box_point(call, "start_box", space, screen)
        else:
            x = y = None  # the official parser: pyautogui.scroll(±5) at the pointer
        direction = call.arg(None, "direction", types=(str,)).strip().lower()
        if direction not in _SCROLL_DIRECTIONS:
            raise ActionParseError(
                f"scroll(): direction must be up/down/left/right, got {_short(direction)}"
            )
        sx, sy = _SCROLL_DIRECTIONS[direction]
        return Action.scroll(x, y, dx=sx * UITARS_SCROLL_NOTCHES, dy=sy * UITARS_SCROLL_NOTCHES)
    if name == "type":
        call.check_arguments(["content"])
        return Action.type_text(call.arg(None, "content", types=(str,)))
    if name in ("hotkey", "press", "keydown", "release", "keyup"):
        # the official parser reads key=, else hotkey= (hotkey) or press= (the others)
        call.check_arguments(["key", "hotkey" if name == "hotkey" else "press"])
        other = "hotkey" if name == "hotkey" else "press"
        keys = call.arg(None, "key" if "key" in call.kwargs else other, types=(str,)).split()
        if not keys:
            raise ActionParseError(f"{name}(): key is empty")
        if name in _UITARS_KEYS:
            if len(keys) != 1:
                raise ActionParseError(f"{name}() takes one key, got {_short(' '.join(keys))}")
            return Action(_UITARS_KEYS[name], keys=(keys[0],))
        return Action.key(keys[0]) if len(keys) == 1 else Action.hotkey(*keys)
    if name == "wait":
        call.check_arguments([])
        return Action.wait()
    if name == "finished":
        call.check_arguments(["content"])
        return Action.done()
    if name == "call_user":
        call.check_arguments([])
        return Action.fail()
    raise ActionParseError(f"unknown function {name!r}")
