"""Action codecs: the action language a vision-language policy writes and reads.

:class:`~pixelrl.vision.vlm.VLMPolicy` is the same for every env — prompting, sampling, scoring,
prompt sharing, LoRA, GRPO — and only its action language differs. A codec is that language:

- ``parse(text, screen_size) -> (action, None) | (None, reason)``: a whitelist parser that never
  raises and never executes (model output is untrusted); ``None`` is a format failure;
- ``render(action, screen_size) -> str``: the canonical text (history lines, SFT targets);
- ``noop``: what an unparsable answer does (a GUI ``wait``; nothing, for navigation);
- ``answer_hint``: the prompt's last line, saying what an answer looks like.

Two codecs ship: :class:`GUIActionCodec` (the desktop's :class:`~pixelrl.envs.actions.Action`,
UI-TARS or pyautogui text) and :class:`pixelrl.envs.nav.action_text.NavActionCodec` (stop /
move_forward / turn_left / turn_right with repeat counts).
"""

from __future__ import annotations

from typing import Any, Protocol

from pixelrl.envs.actions import Action, to_pyautogui, to_uitars
from pixelrl.envs.coordinates import CoordinateSpace, coordinate_space


class ActionCodec(Protocol):
    answer_hint: str
    noop: Any

    def parse(
        self, text: object, screen_size: tuple[int, int] | None = None
    ) -> tuple[Any | None, str | None]: ...

    def render(self, action: Any, screen_size: tuple[int, int] | None = None) -> str: ...


class GUIActionCodec:
    """GUI actions as UI-TARS calls (``click(start_box='(x,y)')``) or pyautogui calls.

    ``coordinates``: how numbers in the text are read and written (``None``: pyautogui in
    pixels, UI-TARS in 0-1000, the defaults of :func:`pixelrl.envs.actions.parse_action`; or a
    space of :mod:`pixelrl.envs.coordinates`: ``"pixels"``, ``"relative1000"``, ``"unit"``,
    ``"smart_resize:ui-tars-1.5"``, ``"smart_resize:qwen2.5-vl"``, ...)."""

    # The GUI policies' prompt line (unchanged since the first GUI recipes: models trained with
    # it keep their prompt).
    answer_hint = "Answer with one action, e.g. click(start_box='(x,y)') with x, y in 0-1000."

    def __init__(
        self, action_format: str = "uitars", coordinates: str | CoordinateSpace | None = None
    ) -> None:
        if action_format not in ("uitars", "pyautogui"):
            raise ValueError(
                f"action_format must be 'uitars' or 'pyautogui', got {action_format!r}"
            )
        self.action_format = action_format
        self.coordinates = None if coordinates is None else coordinate_space(coordinates)
        if action_format == "uitars" and self.coordinates is not None:
            # say which numbers a point takes; 0-1000 keeps the class's line (trained prompts)
            units = {"pixels": "screen pixels", "unit": "0-1",
                     "smart_resize": "pixels of the image you see"}  # fmt: skip
            if self.coordinates.kind in units:
                self.answer_hint = (
                    "Answer with one action, e.g. click(start_box='(x,y)') with x, y in "
                    f"{units[self.coordinates.kind]}."
                )

    @property
    def noop(self) -> Action:
        return Action.wait()

    def parse(
        self, text: object, screen_size: tuple[int, int] | None = None
    ) -> tuple[Action | None, str | None]:
        from pixelrl.vision.rewards import safe_parse

        return safe_parse(text, screen_size, self.coordinates)

    def render(self, action: Action, screen_size: tuple[int, int] | None = None) -> str:
        if self.action_format == "uitars":
            return to_uitars(action, screen_size, self.coordinates or "relative1000")
        return to_pyautogui(action, self.coordinates or "pixels", screen_size)
