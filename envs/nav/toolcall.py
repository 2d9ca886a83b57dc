"""The navigation tool-call dialect: an answer as the JSON tool calls of Qwen-style chat
templates, ``<tool_call>\\n{"name": "move_forward", "arguments": {"steps": 3}}\\n</tool_call>``.

Its tools are those of TRL's navigation environment
(:class:`pixelrl.embodied.trl_env.NavEnvironment`, which plays a call's low-level actions with
:func:`tool_actions`, so a name and its arguments mean the same on both sides)::

    move_forward(steps=1)   turn_left(times=1)   turn_right(times=1)   stop()

A count is a whole number in 1..``MAX_REPEAT`` (an omitted one is 1, the tool's default). One
answer may hold several calls, played in order (TRL runs every call of a message). Reading uses
:mod:`json` (:func:`pixelrl.envs.gui_action.toolcall.read_calls`), never ``eval``: malformed
JSON, an unknown tool, an unknown or mistyped argument, a count out of range, a call after
``stop`` or more than ``max_steps`` low-level steps is refused with its reason.
:class:`NavToolCallCodec` is the navigation codec (:class:`NavActionCodec`'s interface) of a
policy that answers so (``action_format: toolcall`` in the navigation VLM recipes).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pixelrl.envs.gui_action.errors import ActionError
from pixelrl.envs.gui_action.toolcall import call_text, read_calls, whole_number
from pixelrl.envs.nav.action_text import MAX_TEXT, NavActionCodec, NavAnswer, _Refused
from pixelrl.envs.nav.tasks import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT

# Each tool's low-level action and the name of its count argument (None: it takes none).
TOOLS: dict[str, tuple[int, str | None]] = {
    "move_forward": (MOVE_FORWARD, "steps"),
    "turn_left": (TURN_LEFT, "times"),
    "turn_right": (TURN_RIGHT, "times"),
    "stop": (STOP, None),
}
TOOL_OF = {action: name for name, (action, _) in TOOLS.items()}
MAX_REPEAT = 10  # low-level steps one tool call may take

# The words a TRL navigation environment's prompt starts with (pixelrl.trl_env.NAV_PROMPT), and
# the user turn of a policy answering in this dialect: the goal follows on the next line, as
# TRL's reset writes it, so a model trained on these prompts meets the same words in TRL.
TOOL_PROMPT = (
    "You move a robot through a house with the tools. Look at the camera frame, act with one "
    "tool call at a time, and call stop when you have reached the goal."
)
PROMPT_TEMPLATE = "{hint}\n{instruction}"


def tool_actions(name: object, arguments: dict[str, Any]) -> tuple[int, ...]:
    """The low-level actions of the tool ``name`` called with ``arguments`` (keyword values as
    a model wrote them), or an :class:`ActionError` saying why not."""
    if not isinstance(name, str) or name not in TOOLS:
        shown = repr(name) if len(repr(name)) <= 40 else repr(name)[:37] + "..."
        raise ActionError(f"unknown tool {shown}; tools: {', '.join(TOOLS)}")
    action, count_name = TOOLS[name]
    allowed = {count_name} if count_name else set()
    if not set(arguments) <= allowed:
        takes = f"({count_name}=1)" if count_name else "no arguments"
        extra = ", ".join(str(k)[:40] for k in sorted(set(arguments) - allowed, key=str))
        raise ActionError(f"{name} takes {takes}, got ({extra})")
    times = 1
    if count_name in arguments:
        times = whole_number(arguments[count_name], f"{count_name} (the count)", 1, MAX_REPEAT)
    return (action,) * times


def runs(actions: Sequence[int], most: int = MAX_REPEAT) -> list[tuple[int, int]]:
    """``actions`` as ``(action, count)`` runs of one action, each at most ``most`` long."""
    out: list[tuple[int, int]] = []
    for a in actions:
        if out and out[-1][0] == a and out[-1][1] < most:
            out[-1] = (a, out[-1][1] + 1)
        else:
            out.append((int(a), 1))
    return out


def run_call(action: int, count: int) -> str:
    """One run of ``action`` as its tool call (``stop`` takes no count)."""
    name = TOOL_OF[action]
    count_name = TOOLS[name][1]
    return call_text(name, {count_name: count} if count_name else {})


class NavToolCallCodec(NavActionCodec):
    """Navigation answers as TRL's navigation tool calls. ``tools``: their JSON schemas, which
    the chat template shows in the system turn (as TRL does); the prompt is TRL's first one,
    word for word (:data:`TOOL_PROMPT`, then the goal)."""

    action_format = "toolcall"
    prompt_template = PROMPT_TEMPLATE

    def __init__(self, *args: Any, tools: Sequence[dict] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # NavActionCodec's step and turn sizes and bounds
        self.tools = tuple(tools)

    @property
    def answer_hint(self) -> str:
        return TOOL_PROMPT

    def _parse(self, text: object) -> NavAnswer:
        # a tool-call answer is longer than a text one: each call's JSON around its name
        limit = MAX_TEXT + 96 * self.max_steps
        try:
            calls = read_calls(text, limit, most=self.max_steps)
            actions: list[int] = []
            for name, arguments in calls:
                if actions and actions[-1] == STOP:
                    raise _Refused(f"{str(name)[:40]!r} follows stop: stop ends the episode")
                actions.extend(tool_actions(name, arguments))
                if len(actions) > self.max_steps:
                    raise _Refused(f"the answer asks for more than {self.max_steps} steps")
        except ActionError as e:
            raise _Refused(str(e)) from None
        return tuple(actions)

    def render(
        self, actions: Sequence[int] | int, screen_size: tuple[int, int] | None = None
    ) -> str:
        """One tool call a run of one action (at most ``max_repeat`` long), one a line."""
        seq = [int(actions)] if isinstance(actions, int) else [int(a) for a in actions]
        if not seq:
            raise ValueError("no actions to write")
        return "\n".join(run_call(a, n) for a, n in runs(seq, self.max_repeat))

    def corpus(self, seed: int = 0) -> list[str]:
        """Every tool with every count up to ``max_repeat``, the prompt's words and the tools'
        schemas (the system turn), for a tiny model's tokenizer."""
        texts = [TOOL_PROMPT, *(json.dumps(tool) for tool in self.tools)]
        for action in TOOL_OF:
            counts = [1] if action == STOP else range(1, self.max_repeat + 1)
            texts.extend(run_call(action, n) for n in counts)
        return texts
