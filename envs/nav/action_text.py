"""Navigation actions as text: what a vision-language policy writes, read back safely.

A navigation answer names one or more of habitat's four actions, each with an optional repeat
count, executed in order (VLN-R1 / NaVILA: one answer may be several low-level steps)::

    move_forward            one step (forward_step metres)
    move_forward(3)         three steps
    turn_left(2), move_forward(3)
    stop

Also read, so that answers in the anchors' own styles parse: VLN-R1's upper-case words
(``FORWARD``, ``LEFT``, ``RIGHT``, ``STOP``), NaVILA's mid-level phrases (``move forward 75 cm``,
``turn left 30 degrees``: whole multiples of the env's step and turn), and a reasoning preamble
ending in ``Action:`` (the text after the last one is the answer).

A parsed answer is a tuple of action ids (0 stop, 1 move_forward, 2 turn_left, 3 turn_right).
Parsing is a whitelist over a small grammar (regular expressions, no ``eval``): anything else —
an unknown word, a repeat outside 1..``max_repeat``, more than ``max_steps`` steps, something
after ``stop``, text longer than ``MAX_TEXT`` — is refused with a reason. :meth:`parse` never
raises; its ``None`` is the no-op the caller executes as nothing (format reward 0).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pixelrl.envs.nav.tasks import ACTION_NAMES, MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT

NavAnswer = tuple[int, ...]  # low-level action ids, in order

MAX_TEXT = 512  # characters: a model's answer is a line, not an essay
ALIASES = {
    "stop": STOP,
    "move_forward": MOVE_FORWARD,
    "forward": MOVE_FORWARD,
    "move forward": MOVE_FORWARD,
    "turn_left": TURN_LEFT,
    "left": TURN_LEFT,
    "turn left": TURN_LEFT,
    "turn_right": TURN_RIGHT,
    "right": TURN_RIGHT,
    "turn right": TURN_RIGHT,
}
_NAME = r"(move[ _]forward|turn[ _]left|turn[ _]right|forward|left|right|stop)"
# One item: a name, then nothing, "(n)" / "()", or NaVILA's "<amount> <unit>".
_ITEM = re.compile(
    rf"^{_NAME}\s*(?:\(\s*(\d{{1,4}})?\s*\)|\s+(\d{{1,4}}(?:\.\d{{1,2}})?)\s*(cm|m|degrees|degree|deg|°))?$",
    re.IGNORECASE,
)
_SEPARATORS = re.compile(r"\s*(?:,|;|\n|\bthen\b|\band\b)\s*", re.IGNORECASE)


class NavActionCodec:
    """Parse and write navigation action text for one env's step and turn sizes.

    ``max_repeat`` bounds one item's count; ``max_steps`` the low-level steps of one answer
    (the caller also cuts an answer at the episode's step limit)."""

    def __init__(
        self,
        forward_step: float = 0.25,
        turn_degrees: float = 30.0,
        max_repeat: int = 4,
        max_steps: int = 8,
    ) -> None:
        if max_repeat < 1 or max_steps < 1:
            raise ValueError(
                f"max_repeat and max_steps must be >= 1, got {max_repeat}, {max_steps}"
            )
        self.forward_step = float(forward_step)
        self.turn_degrees = float(turn_degrees)
        self.max_repeat = int(max_repeat)
        self.max_steps = int(max_steps)

    @property
    def answer_hint(self) -> str:
        """The prompt's last line: what an answer looks like."""
        return (
            "Answer with actions: move_forward(n), turn_left(n), turn_right(n) or stop, "
            f"n from 1 to {self.max_repeat}."
        )

    @property
    def noop(self) -> NavAnswer:
        """What an unparsable answer executes: nothing."""
        return ()

    # -- reading --------------------------------------------------------------------------------
    def parse(
        self, text: object, screen_size: tuple[int, int] | None = None
    ) -> tuple[NavAnswer | None, str | None]:
        """``(actions, None)`` or ``(None, reason)``; never raises (the text is untrusted).
        ``screen_size`` is ignored: it is there so that every codec is called alike."""
        try:
            return self._parse(text), None
        except _Refused as e:
            return None, str(e)

    def _parse(self, text: object) -> NavAnswer:
        if not isinstance(text, str):
            raise _Refused(f"action text must be a string, got {type(text).__name__}")
        if len(text) > MAX_TEXT:
            raise _Refused(f"action text is {len(text)} characters; at most {MAX_TEXT}")
        if "action:" in text.lower():  # "Thought: ... Action: move_forward(2)"
            text = text[text.lower().rindex("action:") + len("action:") :]
        body = text.strip().strip(".").strip()
        if not body:
            raise _Refused("no action in the answer")
        actions: list[int] = []
        for item in _SEPARATORS.split(body):
            item = item.strip().strip(".")
            if not item:
                continue
            if actions and actions[-1] == STOP:
                raise _Refused(f"{item!r} follows stop: stop ends the episode")
            action, count = self._item(item)
            actions.extend([action] * count)
            if len(actions) > self.max_steps:
                raise _Refused(f"the answer asks for more than {self.max_steps} steps")
        if not actions:
            raise _Refused("no action in the answer")
        return tuple(actions)

    def _item(self, item: str) -> tuple[int, int]:
        match = _ITEM.match(item)
        if match is None:
            shown = item if len(item) <= 40 else item[:40] + "..."
            raise _Refused(
                f"not an action: {shown!r} (known: stop, move_forward, turn_left, turn_right)"
            )
        name, repeat, amount, unit = match.groups()
        action = ALIASES[name.lower()]
        if amount is not None:
            count = self._count_from_amount(action, float(amount), unit.lower())
        else:
            count = 1 if repeat is None else int(repeat)
        if action == STOP and count != 1:
            raise _Refused("stop takes no count")
        if not 1 <= count <= self.max_repeat:
            raise _Refused(f"repeat count {count} is outside 1..{self.max_repeat}")
        return action, count

    def _count_from_amount(self, action: int, amount: float, unit: str) -> int:
        """NaVILA's "move forward 75 cm" / "turn left 30 degrees" in whole low-level steps."""
        if action == MOVE_FORWARD and unit in ("cm", "m"):
            step = self.forward_step * (100.0 if unit == "cm" else 1.0)
        elif action in (TURN_LEFT, TURN_RIGHT) and unit in ("degrees", "degree", "deg", "°"):
            step = self.turn_degrees
        else:
            raise _Refused(f"{ACTION_NAMES[action]} does not take {unit}")
        count = round(amount / step)
        if count < 1 or abs(count * step - amount) > 1e-6 * max(1.0, amount):
            raise _Refused(f"{amount:g} {unit} is not a whole number of {step:g} {unit} steps")
        return count

    # -- writing --------------------------------------------------------------------------------
    def render(
        self, actions: Sequence[int] | int, screen_size: tuple[int, int] | None = None
    ) -> str:
        """The canonical text of ``actions``: runs of one action as ``name(n)``, joined by
        ``", "``; a run longer than ``max_repeat`` is split. ``render(parse(t))`` re-parses to
        the same actions."""
        seq = [int(actions)] if isinstance(actions, int) else [int(a) for a in actions]
        if not seq:
            raise ValueError("no actions to write")
        parts: list[str] = []
        run_action, run = seq[0], 0
        for a in [*seq, None]:
            if a == run_action and run < self.max_repeat:
                run += 1
                continue
            name = ACTION_NAMES[run_action]
            parts.append(name if run == 1 else f"{name}({run})")
            if a is not None:
                run_action, run = a, 1
        return ", ".join(parts)

    def corpus(self, seed: int = 0) -> list[str]:
        """Action texts for a tiny model's tokenizer (every name with every count; the same
        for every seed)."""
        texts = [self.answer_hint]
        for a in range(4):
            texts.append(self.render([a]))
            if a != STOP:
                texts.extend(self.render([a] * n) for n in range(2, self.max_repeat + 1))
        return texts


class _Refused(Exception):
    """Internal: the answer is not a navigation action (turned into ``(None, reason)``)."""
