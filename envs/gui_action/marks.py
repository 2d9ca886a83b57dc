"""Mark actions: ``click(mark=7)`` names the 7th element of a Set-of-Mark screen parse, and the
harness clicks that element's centre (Set-of-Mark prompting, SeeAct, OmniParser).

The marks are what the prompt showed: the numbered boxes of the screen's parse
(:class:`pixelrl.vision.reader.SetOfMarks`: ``[7] "Stop" (407,388)``), numbered from 1, in
screen pixels ``(x0, y0, x1, y1)`` with ``x1, y1`` exclusive. A mark action is resolved to an
ordinary pointer :class:`Action` at parse time, so envs, rewards and recordings only ever see
points. A number that names no mark, a mark that is not an integer, or a mark action with no
marks at all (no screen parse in the prompt) is an :class:`ActionParseError` with its reason:
the policy's refused-action path, never a click at (0, 0).
"""

from __future__ import annotations

from collections.abc import Sequence

from pixelrl.envs.gui_action.action import Action, _short
from pixelrl.envs.gui_action.errors import ActionParseError
from pixelrl.envs.gui_action.syntax import _Call
from pixelrl.envs.gui_action.uitars import _UITARS_POINTER

Box = tuple[int, int, int, int]

# the calls that may name a mark: UI-TARS' pointer calls (click, left_double, right_single, hover)
MARK_CALLS = _UITARS_POINTER
# the call each pointer kind is written as: one name a kind, UI-TARS' own
_CALL_OF_KIND = {"click": "click", "double_click": "left_double", "right_click": "right_single",
                 "move": "hover"}  # fmt: skip


def mark_centre(box: Sequence[int]) -> tuple[int, int]:
    """The pixel a mark's click lands on: its box's centre pixel, the point the screen parse
    writes beside the mark (:class:`pixelrl.vision.reader.SetOfMarks`)."""
    x0, y0, x1, y1 = (int(v) for v in box)
    return (x0 + x1 - 1) // 2, (y0 + y1 - 1) // 2


def mark_action(call: _Call, marks: Sequence[Sequence[int]] | None) -> Action:
    """The pointer action of ``click(mark=N)`` (or ``left_double``, ``right_single``, ``hover``)
    at the centre of mark ``N`` of ``marks``; :class:`ActionParseError` with the reason when it
    names none."""
    call.check_arguments(["mark"])
    number = call.arg(0, "mark", types=(int,))
    if marks is None:
        raise ActionParseError(
            f"{call.name}(mark={number}): there are no marks to name (no screen parse in the "
            "prompt); answer with a point"
        )
    if not 1 <= number <= len(marks):
        have = f"marks 1-{len(marks)}" if marks else "no marks"
        raise ActionParseError(
            f"{call.name}(): mark {_short(number)} is not on the screen ({have})"
        )
    return Action(MARK_CALLS[call.name], *mark_centre(marks[number - 1]))


def mark_text(action: Action, number: int) -> str:
    """``action`` (a pointer action) written as naming mark ``number``: ``click(mark=7)``."""
    if action.kind not in _CALL_OF_KIND:
        raise ValueError(f"a {action.kind} action names no mark")
    return f"{_CALL_OF_KIND[action.kind]}(mark={int(number)})"


def mark_of_box(marks: Sequence[Sequence[int]], box: Sequence[float]) -> int | None:
    """The number of the mark whose click lands in ``box`` (its centre pixel inside it), the one
    overlapping ``box`` most when several do; None when no mark's centre is in ``box`` (a
    checkbox whose label is drawn beside it, an empty field)."""
    bx0, by0, bx1, by1 = box
    best, best_area = None, -1.0
    for number, mark in enumerate(marks, start=1):
        x, y = mark_centre(mark)
        if not (bx0 <= x < bx1 and by0 <= y < by1):
            continue
        x0, y0, x1, y1 = mark
        area = max(0.0, min(x1, bx1) - max(x0, bx0)) * max(0.0, min(y1, by1) - max(y0, by0))
        if area > best_area:
            best, best_area = number, area
    return best
