"""The action codec interface: the action language a vision-language policy writes and reads.

:class:`~pixelrl.vision.vlm.VLMPolicy` is the same for every env — prompting, sampling, scoring,
prompt sharing, LoRA, GRPO — and only its action language differs. A codec is that language:

- ``parse(text, screen_size) -> (action, None) | (None, reason)``: a whitelist parser that never
  raises and never executes (model output is untrusted); ``None`` is a format failure;
- ``render(action, screen_size) -> str``: the canonical text (history lines, SFT targets);
- ``noop``: what an unparsable answer does (a GUI ``wait``; nothing, for navigation);
- ``answer_hint``: the prompt's last line, saying what an answer looks like;
- ``corpus(seed) -> list[str]``: texts a tiny model's tokenizer is trained on (its action words).

The codecs live with their domains: :class:`pixelrl.envs.gui_action.codec.GUIActionCodec` (the desktop's
actions, UI-TARS or pyautogui text) and :class:`pixelrl.envs.nav.action_text.NavActionCodec`
(stop / move_forward / turn_left / turn_right with repeat counts). ``vision`` knows neither.
"""

from __future__ import annotations

from typing import Any, Protocol


class ActionCodec(Protocol):
    answer_hint: str
    noop: Any

    def parse(
        self, text: object, screen_size: tuple[int, int] | None = None
    ) -> tuple[Any | None, str | None]: ...

    def render(self, action: Any, screen_size: tuple[int, int] | None = None) -> str: ...

    def corpus(self, seed: int = 0) -> list[str]: ...
