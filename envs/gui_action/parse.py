"""Action text to :class:`Action` values: one or several statements of any dialect, parsed with
:mod:`ast` and a whitelist of calls, never evaluated (:class:`ActionParseError` otherwise)."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Sequence

from pixelrl.envs.gui_action.action import (
    DEFAULT_MAX_TEXT_LENGTH,
    MAX_ACTION_MARKERS,
    MAX_ACTION_TEXT_OVERHEAD,
    Action,
    _short,
)
from pixelrl.envs.gui_action.coordinates import CoordinateSpace, coordinate_space
from pixelrl.envs.gui_action.errors import ActionError, ActionParseError
from pixelrl.envs.gui_action.marks import MARK_CALLS, mark_action
from pixelrl.envs.gui_action.osworld import _OSWORLD_NAMES, _paste
from pixelrl.envs.gui_action.pyautogui import _pyautogui_action
from pixelrl.envs.gui_action.syntax import _Call, _call_name, _literal, _point, _snippet
from pixelrl.envs.gui_action.uitars import _repair_uitars, _uitars_action


def _parse_python(part: str) -> ast.Module:
    try:
        return _quiet_parse(part)
    except (SyntaxError, ValueError) as first:
        try:
            return _quiet_parse(_repair_uitars(part))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise first from None


def _quiet_parse(text: str) -> ast.Module:
    """``ast.parse`` without the compiler's SyntaxWarnings (``1if``: "invalid decimal
    literal"): a model's text is data, and a warning line on stderr for each answer says
    nothing the parse's verdict does not."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.parse(text, mode="exec")


def _action_tree(text: str) -> tuple[str, ast.Module]:
    """The action part of ``text`` and its syntax tree.

    UI-TARS writes "Thought: ...\nAction: click(...)": the action follows an "Action:" marker.
    The marker is the last one after which the text is valid Python, so an "Action:" inside a
    quoted string (``type(content='Action: hi')``) is text; with no such marker, the whole text.
    A syntax error is reported for the last marker's part, the one a model meant.
    """
    starts = [m.end() for m in re.finditer("Action:", text)][-MAX_ACTION_MARKERS:]
    first_error = None
    for start in [*reversed(starts), 0]:
        part = text[start:].strip().strip("`").removeprefix("python").strip()
        if not part:
            first_error = first_error or ActionParseError("empty action text")
            continue
        try:
            tree = _parse_python(part)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            first_error = first_error or ActionParseError(
                f"action text is not a call: {e.__class__.__name__}: {_short(str(e), 200)}"
            )
            continue
        return part, tree
    raise first_error


def _split_statements(text: str, limit: int) -> list[_Call]:
    """Parse ``text`` into calls and bare names (``DONE``), checking only the shape."""
    if not isinstance(text, str):
        raise ActionParseError(f"action text must be a string, got {type(text).__name__}")
    if len(text) > limit:
        raise ActionParseError(f"action text too long: {len(text)} characters (at most {limit})")
    text, tree = _action_tree(text)
    calls = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            continue  # OSWorld scripts start with "import pyautogui"; importing is harmless here
        if not isinstance(stmt, ast.Expr):
            raise ActionParseError(
                f"only calls are allowed, got a {type(stmt).__name__} statement "
                f"({_snippet(stmt, text)})"
            )
        node = stmt.value
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            continue  # a string statement: the '''Observation/Thought''' of ui-tars' code
        if isinstance(node, ast.Name):
            calls.append(_Call(node.id, [], {}))
            continue
        if not isinstance(node, ast.Call):
            raise ActionParseError(f"expected a call, got {_snippet(node, text)}")
        name = _call_name(node.func, text)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise ActionParseError(f"{name}(): *args and **kwargs are not allowed")
        args = [_literal(a, name, text) for a in node.args]
        kwargs = {k.arg: _literal(k.value, name, text) for k in node.keywords}
        calls.append(_Call(name, args, kwargs))
    if not calls:
        raise ActionParseError("no action in the text")
    return calls


def _actions_of(
    calls: list[_Call], space: CoordinateSpace | None, screen, marks: Sequence | None
) -> list[Action]:
    actions: list[Action] = []
    i = 0
    while i < len(calls):
        call = calls[i]
        try:
            if call.name == "pyperclip.copy":
                action, i = _paste(calls, i)
                actions.append(action)
                continue
            if call.name in MARK_CALLS and "mark" in call.kwargs:  # click(mark=7)
                actions.append(mark_action(call, marks))
            elif call.name == "pyautogui.dragTo":
                previous = calls[i - 1] if i else None
                if not actions or previous is None or previous.name != "pyautogui.moveTo":
                    raise ActionParseError("pyautogui.dragTo() must follow pyautogui.moveTo()")
                call.check_arguments(["x", "y", "duration", "button"])
                start = actions.pop()
                x2, y2 = _point(call, space or coordinate_space("pixels"), screen)
                actions.append(Action.drag(start.x, start.y, x2, y2))
            elif call.name.startswith("pyautogui.") or call.name in _OSWORLD_NAMES:
                actions.append(_pyautogui_action(call, space or coordinate_space("pixels"), screen))
            else:
                actions.append(
                    _uitars_action(call, space or coordinate_space("relative1000"), screen)
                )
        except ActionParseError:
            raise
        except ActionError as e:
            raise ActionParseError(f"{call.name}(): {e}") from None
        i += 1
    return actions


def parse_actions(
    text: str,
    screen_size: tuple[int, int] | None = None,
    coordinates: str | CoordinateSpace | None = None,
    max_text_length: int = DEFAULT_MAX_TEXT_LENGTH,
    marks: Sequence[Sequence[int]] | None = None,
) -> list[Action]:
    """Every action in ``text`` (one per call; ``moveTo`` + ``dragTo`` make one drag, and
    ``pyperclip.copy`` + ctrl+v one ``type``).

    ``coordinates`` is how the text's numbers are to be read (a name of
    :mod:`pixelrl.envs.gui_action.coordinates`: ``"pixels"``, ``"relative1000"``, ``"unit"``,
    ``"smart_resize:ui-tars-1.5"``, ... or a :class:`CoordinateSpace`); by default pixels for
    pyautogui calls and 0-1000 for UI-TARS calls. With ``screen_size`` every action is checked
    to lie on the screen. A ``type`` text longer than ``max_text_length`` is refused.
    ``marks``: the boxes of the prompt's Set-of-Mark screen parse, which ``click(mark=N)`` names
    (:mod:`pixelrl.envs.gui_action.marks`); None: there are none, and a mark action is refused.
    """
    space = None if coordinates is None else coordinate_space(coordinates)
    calls = _split_statements(text, MAX_ACTION_TEXT_OVERHEAD + 2 * max_text_length)
    actions = _actions_of(calls, space, screen_size, marks)
    # Two scroll calls at one point (vertical + horizontal) are one scroll action.
    merged: list[Action] = []
    for a in actions:
        prev = merged[-1] if merged else None
        if prev and a.kind == prev.kind == "scroll" and a.point == prev.point:
            if not (prev.dx and a.dx or prev.dy and a.dy):
                merged[-1] = Action.scroll(a.x, a.y, dx=prev.dx + a.dx, dy=prev.dy + a.dy)
                continue
        merged.append(a)
    for a in merged:
        try:
            if screen_size is not None:
                a.validate(screen_size, max_text_length)
            else:
                a.check_text_length(max_text_length)
        except ActionError as e:
            raise ActionParseError(str(e)) from None
    return merged


def parse_action(
    text: str,
    screen_size: tuple[int, int] | None = None,
    coordinates: str | CoordinateSpace | None = None,
    max_text_length: int = DEFAULT_MAX_TEXT_LENGTH,
    marks: Sequence[Sequence[int]] | None = None,
) -> Action:
    """Exactly one :class:`Action` from agent text, or :class:`ActionParseError`.

    See :func:`parse_actions` for the accepted syntax, ``coordinates``, ``max_text_length`` and
    ``marks``.
    """
    actions = parse_actions(text, screen_size, coordinates, max_text_length, marks)
    if len(actions) != 1:
        raise ActionParseError(f"expected one action, found {len(actions)}")
    return actions[0]
