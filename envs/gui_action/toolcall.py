"""The tool-call dialect: an action as the JSON tool call of Qwen-style chat templates,
``<tool_call>\\n{"name": "click", "arguments": {"x": 120, "y": 45}}\\n</tool_call>``.

Its tools are the GUI tools of TRL environments (:class:`pixelrl.trl_env.GUIEnvironment`, which
builds its actions with :func:`tool_action`, so a name and its arguments mean the same in both),
in pixels of the screenshot::

    click(x, y)   double_click(x, y)   right_click(x, y)   drag(x, y, to_x, to_y)
    scroll(x, y, clicks)   type(text)   hotkey(keys)   done()

``hotkey`` takes key names joined by ``+`` (``"enter"``, ``"ctrl+s"``). ``scroll``'s ``clicks``
is the :class:`Action`'s ``dy`` (what the TRL tool plays). A model that learns this text in SFT
writes what TRL's ``GRPOTrainer`` parses as tool calls. Reading uses :mod:`json`, never
``eval``: malformed JSON, an unknown tool, a missing, extra or mistyped argument is an
:class:`ActionParseError` with its reason.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from pixelrl.envs.gui_action.action import (
    DEFAULT_MAX_TEXT_LENGTH,
    MAX_ACTION_TEXT_OVERHEAD,
    MAX_SCROLL,
    Action,
    _short,
)
from pixelrl.envs.gui_action.errors import ActionError, ActionParseError

# Each tool's arguments, in the order the TRL tool's signature names them.
TOOL_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "click": ("x", "y"),
    "double_click": ("x", "y"),
    "right_click": ("x", "y"),
    "drag": ("x", "y", "to_x", "to_y"),
    "scroll": ("x", "y", "clicks"),
    "type": ("text",),
    "hotkey": ("keys",),
    "done": (),
}

# The words a TRL environment's prompt starts with (pixelrl.trl_env.GUI_PROMPT), and the user
# turn of a policy that answers in this dialect: the task then reads as TRL's reset writes it, so
# a model trained on these prompts meets the same words in TRL's GRPOTrainer.
TOOL_PROMPT = (
    "You control a computer's mouse and keyboard through the tools. Look at the screenshot, "
    "act with one tool call at a time, and call done when the task is complete."
)
PROMPT_TEMPLATE = "{hint}\nTask: {instruction}"

_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def whole_number(value: Any, name: str, low: int, high: int) -> int:
    """A count a model wrote as an int in ``low..high``, or an :class:`ActionError` naming
    ``name`` (a model's arguments are anything JSON holds: ``2.5``, ``"3"``, ``true``, NaN,
    10**400)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ActionError(
            f"{name} must be a whole number in {low}..{high}, got {str(value)[:40]!r}"
        )
    if not low <= value <= high:
        shown = str(value) if abs(value) < 10**40 else "a number of more than 40 digits"
        raise ActionError(f"{name} must be a whole number in {low}..{high}, got {shown}")
    return int(value)


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ActionError(f"{name} must be a string, got {_short(value)}")
    return value


def tool_action(name: str, arguments: dict[str, Any]) -> Action:
    """The :class:`Action` of the tool ``name`` called with ``arguments`` (keyword values as a
    model wrote them), or an :class:`ActionError` saying why not."""
    if name not in TOOL_ARGUMENTS:
        raise ActionError(f"unknown tool {_short(name)}; tools: {', '.join(TOOL_ARGUMENTS)}")
    wanted = TOOL_ARGUMENTS[name]
    if set(arguments) != set(wanted):
        raise ActionError(
            f"{name} takes the arguments ({', '.join(wanted)}), got ({', '.join(map(str, arguments))})"
        )
    a = arguments
    if name in ("click", "double_click", "right_click"):
        return Action(name, a["x"], a["y"])
    if name == "drag":
        return Action.drag(a["x"], a["y"], a["to_x"], a["to_y"])
    if name == "scroll":
        # checked here: Action.scroll takes int(clicks), which turns 2.5 into 2 and NaN into
        # a ValueError
        clicks = whole_number(a["clicks"], "clicks", -MAX_SCROLL, MAX_SCROLL)
        return Action.scroll(a["x"], a["y"], dy=clicks)
    if name == "type":
        return Action.type_text(_text(a["text"], "text"))
    if name == "hotkey":
        keys = _text(a["keys"], "keys")
        names = [k.strip() for k in keys.split("+")]
        if not all(names):
            raise ActionError(f"keys must be key names joined by '+', got {_short(keys)}")
        return Action.key(names[0]) if len(names) == 1 else Action.hotkey(*names)
    return Action.done()


def action_call(action: Action) -> tuple[str, dict[str, Any]]:
    """The tool name and arguments of ``action`` (its inverse of :func:`tool_action`); an
    :class:`ActionError` for an action no tool plays (move, wait, fail, held keys, a scroll
    sideways or at the pointer)."""
    a = action
    if a.kind in ("click", "double_click", "right_click"):
        return a.kind, {"x": a.x, "y": a.y}
    if a.kind == "drag":
        return "drag", {"x": a.x, "y": a.y, "to_x": a.x2, "to_y": a.y2}
    if a.kind == "scroll" and a.point is not None and not a.dx:
        return "scroll", {"x": a.x, "y": a.y, "clicks": a.dy}
    if a.kind == "type":
        return "type", {"text": a.text}
    if a.kind in ("key", "hotkey"):
        return "hotkey", {"keys": "+".join(a.keys)}
    if a.kind == "done":
        return "done", {}
    raise ActionError(
        f"no tool plays a {a.kind} action{' sideways or at the pointer' if a.kind == 'scroll' else ''}"
    )


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """One tool call as Qwen-style chat templates write an assistant's (``tojson``: ``", "`` and
    ``": "`` separators, non-ASCII kept): what a model learns to write and TRL parses."""
    call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{call}\n</tool_call>"


def to_toolcall(action: Action) -> str:
    """``action`` as a tool call (:func:`call_text`)."""
    return call_text(*action_call(action))


def read_calls(text: object, limit: int, most: int = 1) -> list[tuple[str, dict[str, Any]]]:
    """The ``(name, arguments)`` of each ``<tool_call>`` in ``text`` (words around them are
    allowed: a model's thinking), read with :mod:`json`; an :class:`ActionParseError` with the
    reason for text that is not a string, longer than ``limit`` characters, with no call or more
    than ``most``, or with a call that is not ``{"name": "...", "arguments": {...}}``. Which names and arguments
    a tool takes is the caller's (GUI: :func:`tool_action`; navigation:
    :mod:`pixelrl.envs.nav.toolcall`)."""
    if not isinstance(text, str):
        raise ActionParseError(f"action text must be a string, got {type(text).__name__}")
    if len(text) > limit:
        raise ActionParseError(f"action text too long: {len(text)} characters (at most {limit})")
    calls = _CALL.findall(text)
    if not 1 <= len(calls) <= most:
        wanted = "one tool call" if most == 1 else f"1 to {most} tool calls"
        what = "no <tool_call>...</tool_call>" if not calls else f"{len(calls)} tool calls"
        raise ActionParseError(f"expected {wanted}, found {what}")
    out = []
    for raw in calls:
        try:
            call = json.loads(raw)
        except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
            raise ActionParseError(f"the tool call is not JSON: {_short(str(e), 120)}") from None
        if not isinstance(call, dict) or set(call) != {"name", "arguments"}:
            raise ActionParseError('a tool call is {"name": ..., "arguments": {...}}, got '
                                   f"{_short(raw.strip())}")  # fmt: skip
        if not isinstance(call["arguments"], dict):
            raise ActionParseError(
                f"a tool call's arguments are an object, got {_short(call['arguments'])}"
            )
        out.append((call["name"], call["arguments"]))
    return out


def parse_toolcall(text: object, screen_size: tuple[int, int] | None = None) -> Action:
    """The one tool call in ``text`` (words before it are allowed: a model's thinking) as an
    :class:`Action`, checked on the screen when ``screen_size`` is given; otherwise an
    :class:`ActionParseError` with the reason."""
    limit = MAX_ACTION_TEXT_OVERHEAD + 2 * DEFAULT_MAX_TEXT_LENGTH  # as parse_action's
    calls = read_calls(text, limit)
    try:
        action = tool_action(*calls[0])
        if screen_size is not None:
            action.validate(screen_size)
        else:
            action.check_text_length()
    except ActionParseError:
        raise
    except ActionError as e:
        raise ActionParseError(str(e)) from None
    return action
