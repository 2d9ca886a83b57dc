"""The GUI action language of vision-language policies: :class:`GUIActionCodec`.

A codec (the interface is :class:`pixelrl.vision.action_codec.ActionCodec`) is what a
:class:`~pixelrl.vision.vlm.VLMPolicy` knows of its domain: how an answer is read (a whitelist
parser that never raises and never executes), how an action is written (history lines, SFT
targets), what an unparsable answer does, the prompt's answer hint, and the texts a tiny model's
tokenizer is trained on. This one reads and writes :class:`~pixelrl.envs.gui_action.Action` values
as UI-TARS calls (``click(start_box='(x,y)')``) or pyautogui calls, in a coordinate space of
:mod:`pixelrl.envs.gui_action.coordinates`, or as JSON tool calls (``toolcall``: the tools of
TRL environments, in pixels, :mod:`pixelrl.envs.gui_action.toolcall`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from pixelrl.envs.gui_action.action import Action
from pixelrl.envs.gui_action.coordinates import (
    CoordinateSpace,
    coordinate_space,
    coordinates_for_model,
)
from pixelrl.envs.gui_action.errors import ActionError
from pixelrl.envs.gui_action.marks import mark_of_box, mark_text
from pixelrl.envs.gui_action.parse import parse_action
from pixelrl.envs.gui_action.pyautogui import to_pyautogui
from pixelrl.envs.gui_action.syntax import _num
from pixelrl.envs.gui_action.toolcall import (
    PROMPT_TEMPLATE,
    TOOL_PROMPT,
    parse_toolcall,
    to_toolcall,
)
from pixelrl.envs.gui_action.uitars import to_uitars

ACTION_FORMATS = ("uitars", "pyautogui", "toolcall")

# Words of desktop instructions and labels, for a tiny tokenizer's corpus.
INSTRUCTION_WORDS = (
    "click the button OK Cancel Submit Yes No Save Open Close check box field type into text "
    "enter press key select menu item tab link icon on off file edit view help search name email "
    "password username login next back first second third left right top bottom red green blue "
    "and then a an of to in is fill form"
).split()


def safe_parse(
    text: object,
    screen_size: tuple[int, int] | None = None,
    coordinates=None,
    marks: Sequence[Sequence[int]] | None = None,
) -> tuple[Action | None, str | None]:
    """``(action, None)`` when ``text`` parses with :func:`pixelrl.envs.gui_action.parse_action`
    (``click(mark=N)`` against ``marks``), else ``(None, reason)``. Never raises: model output
    is untrusted."""
    try:
        return parse_action(text, screen_size, coordinates, marks=marks), None  # type: ignore[arg-type]
    except ActionError as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001 - any failure of untrusted text is a format failure
        return None, f"{type(e).__name__}: {e}"


class GUIActionCodec:
    """GUI actions as UI-TARS calls (``click(start_box='(x,y)')``), pyautogui calls or JSON
    tool calls (``"toolcall"``: ``<tool_call>{"name": "click", "arguments": {"x": 120, "y":
    45}}</tool_call>``, the GUI tools of TRL environments in screen pixels; ``tools``: their
    JSON schemas, which a chat template shows in the system turn, as TRL does).

    ``coordinates``: how numbers in the text are read and written (``None``: pyautogui in
    pixels, UI-TARS in 0-1000, the defaults of :func:`pixelrl.envs.gui_action.parse_action`; or a
    space of :mod:`pixelrl.envs.gui_action.coordinates`: ``"pixels"``, ``"relative1000"``, ``"unit"``,
    ``"smart_resize:ui-tars-1.5"``, ``"smart_resize:qwen2.5-vl"``, ...).

    ``mark_actions``: the answer may also name a mark of the prompt's Set-of-Mark screen parse,
    ``click(mark=7)``, which :meth:`parse` resolves against that parse's boxes
    (:mod:`pixelrl.envs.gui_action.marks`); an opt-in, both dialects' own calls are unchanged."""

    # with mark_actions: the prompt's line names both ways to point
    mark_hint = (
        "Answer with one action, e.g. click(mark=N) with N a number of the screen text, "
        "or click(start_box='(x,y)')."
    )

    # The GUI policies' prompt line (unchanged since the first GUI recipes: models trained with
    # it keep their prompt).
    answer_hint = "Answer with one action, e.g. click(start_box='(x,y)') with x, y in 0-1000."
    # the policy's own prompt template (None: vision.vlm.DEFAULT_PROMPT); toolcall has TRL's
    prompt_template: str | None = None

    def __init__(
        self,
        action_format: str = "uitars",
        coordinates: str | CoordinateSpace | None = None,
        mark_actions: bool = False,
        tools: Sequence[dict] = (),
    ) -> None:
        if action_format not in ACTION_FORMATS:
            raise ValueError(
                f"action_format must be one of {', '.join(ACTION_FORMATS)}, got {action_format!r}"
            )
        self.action_format = action_format
        self.coordinates = None if coordinates is None else coordinate_space(coordinates)
        self.tools = tuple(tools)
        if action_format == "toolcall":
            # the tools take screen pixels, and name no marks: one way to read a tool call
            if self.coordinates is not None and self.coordinates.kind != "pixels":
                raise ValueError(
                    "action_format 'toolcall' takes screen pixels (coordinates: pixels)"
                )
            if mark_actions:
                raise ValueError("action_format 'toolcall' has no mark actions")
            # TRL's words and order (the task after them), so the first prompt reads as in TRL
            self.answer_hint, self.prompt_template = TOOL_PROMPT, PROMPT_TEMPLATE
        if action_format == "uitars" and self.coordinates is not None:
            # say which numbers a point takes; 0-1000 keeps the class's line (trained prompts)
            units = {"pixels": "screen pixels", "unit": "0-1",
                     "smart_resize": "pixels of the image you see"}  # fmt: skip
            if self.coordinates.kind in units:
                self.answer_hint = (
                    "Answer with one action, e.g. click(start_box='(x,y)') with x, y in "
                    f"{units[self.coordinates.kind]}."
                )
        self.mark_actions = bool(mark_actions)
        if self.mark_actions:
            self.answer_hint = self.mark_hint

    @classmethod
    def for_model(
        cls,
        model: str,
        action_format: str = "uitars",
        coordinates: str | None = None,
        mark_actions: bool = False,
        tools: Sequence[dict] = (),
    ) -> GUIActionCodec:
        """The codec of a model: ``coordinates`` if given, else (UI-TARS syntax) the space its
        family answers in when its name or path says (UI-TARS-1.5 and Qwen2.5-VL: pixels of
        their resized image; UI-TARS-1.0 and Qwen2-VL: 0-1000); ``tiny-...`` models have none."""
        if coordinates is None and action_format == "uitars" and not model.startswith("tiny-"):
            coordinates = coordinates_for_model(model)
        return cls(action_format, coordinates, mark_actions, tools)

    @property
    def noop(self) -> Action:
        return Action.wait()

    def parse(
        self,
        text: object,
        screen_size: tuple[int, int] | None = None,
        marks: Sequence[Sequence[int]] | None = None,
    ) -> tuple[Action | None, str | None]:
        """``(action, None)`` or ``(None, reason)``; ``marks``: the boxes of the prompt's screen
        parse, which a mark action names (ignored without ``mark_actions``: then it names none)."""
        if self.action_format == "toolcall":
            try:
                return parse_toolcall(text, screen_size), None
            except ActionError as e:
                return None, str(e)
        return safe_parse(text, screen_size, self.coordinates, marks if self.mark_actions else None)

    def render(self, action: Action, screen_size: tuple[int, int] | None = None) -> str:
        if self.action_format == "uitars":
            return to_uitars(action, screen_size, self.coordinates or "relative1000")
        if self.action_format == "toolcall":
            if action.kind == "wait":  # a history line of a refused answer's noop: no tool plays it
                return "(no action)"
            return to_toolcall(action)
        return to_pyautogui(action, self.coordinates or "pixels", screen_size)

    def render_target(
        self,
        action: Action,
        screen_size: tuple[int, int],
        marks: Sequence[Sequence[int]] | None,
        box: Sequence[float],
    ) -> tuple[str, bool]:
        """An SFT target for pointing at ``box``: with ``mark_actions``, the mark whose click
        lands in it (``click(mark=7)``), else ``action`` as points; and whether a mark named it."""
        number = mark_of_box(marks, box) if self.mark_actions and marks else None
        if number is None:
            return self.render(action, screen_size), False
        return mark_text(action, number), True

    def resolved(
        self, text: str, screen_size: tuple[int, int], marks: Sequence[Sequence[int]] | None
    ) -> str:
        """``text`` with a mark action written as the points it resolves to, so that rewards
        that read points score it by where it clicks; any other text as it is."""
        if not self.mark_actions or self.parse(text, screen_size)[0] is not None:
            return text  # it needs no mark to parse: its points are its own
        action, _ = self.parse(text, screen_size, marks)
        return text if action is None else self.render(action, screen_size)

    def point_text(self, x: int, y: int, screen_size: tuple[int, int]) -> str:
        """A screen pixel as this codec writes a click's point, ``(x,y)`` in its coordinate
        space: what a Set-of-Mark screen parse gives the model to copy."""
        default = "relative1000" if self.action_format == "uitars" else "pixels"
        space = self.coordinates or coordinate_space(default)
        px, py = space.from_pixels(int(x), int(y), screen_size)
        return f"({_num(px)},{_num(py)})"

    def corpus(self, seed: int = 0, n_actions: int = 400) -> list[str]:
        """Texts for a tiny tokenizer: action texts in both syntaxes over random actions, and
        instruction-like sentences. Deterministic for a seed."""
        rng = random.Random(seed)
        texts: list[str] = []
        screen = (1000, 1000)
        kinds = ["click", "double_click", "right_click", "move", "type", "key", "hotkey",
                 "scroll", "drag", "wait", "done"]  # fmt: skip
        for _ in range(n_actions):
            kind = rng.choice(kinds)
            x, y, x2, y2 = (rng.randrange(1000) for _ in range(4))
            if kind in ("click", "double_click", "right_click", "move"):
                a = Action(kind, x, y)
            elif kind == "drag":
                a = Action.drag(x, y, x2, y2)
            elif kind == "scroll":
                a = Action.scroll(x, y, dy=rng.choice([-5, 5]))
            elif kind == "type":
                a = Action.type_text(" ".join(rng.sample(INSTRUCTION_WORDS, 2)))
            elif kind == "key":
                a = Action.key(rng.choice(["enter", "tab", "escape", "backspace", "a", "1"]))
            elif kind == "hotkey":
                a = Action.hotkey("ctrl", rng.choice(["c", "v", "s", "a"]))
            else:
                a = Action(kind)
            texts.append(to_uitars(a, screen))
            texts.append(to_pyautogui(a))
            if self.action_format == "toolcall" and a.kind not in ("move", "wait"):
                texts.append(to_toolcall(a))
            if self.mark_actions and a.kind in ("click", "double_click", "right_click", "move"):
                texts.append(mark_text(a, rng.randint(1, 40)))
        texts += [json.dumps(tool) for tool in self.tools]  # the system turn's schemas
        for _ in range(n_actions // 2):
            texts.append(" ".join(rng.choice(INSTRUCTION_WORDS) for _ in range(rng.randint(3, 8))))
        return texts
