"""The :class:`Action` value: what a GUI agent does in one step, checked when it is made."""

from __future__ import annotations

import string
from dataclasses import dataclass, field

import numpy as np

from pixelrl.envs.gui_action.errors import ActionError
from pixelrl.envs.gui_action.keys import _KEY_INDEX, KEY_NAMES, _order_hotkey, normalize_key

KINDS: tuple[str, ...] = (
    "move",
    "click",
    "double_click",
    "right_click",
    "drag",
    "scroll",
    "type",
    "key",
    "hotkey",
    "wait",
    "done",
    "fail",
    # held keys, after the first twelve: a kind's index (action space, recordings) never changes
    "key_down",
    "key_up",
)


POINTER_KINDS = frozenset({"move", "click", "double_click", "right_click", "drag", "scroll"})


# Kinds that name one key in ``keys``.
ONE_KEY_KINDS = frozenset({"key", "key_down", "key_up"})


# Characters of an observation's instruction, and of the Gymnasium action space's text (what a
# sampling policy types); a `type` Action itself holds any printable Unicode (typeable_text).
TEXT_CHARSET: str = "".join(c for c in string.printable if c not in "\r\x0b\x0c")


# Longest text in the Gymnasium action space (what a PPO policy samples).
SAMPLE_TEXT_LENGTH = 256


# Longest `type` text by default: an option (validate, parse_action, the envs' max_text_length),
# generous enough for a paragraph or a short file; agents that need more raise it.
DEFAULT_MAX_TEXT_LENGTH = 8192


# What parse_action reads at most beyond twice the longest text (quotes, escapes, a Thought, the
# official generated code's docstring): agent output is untrusted and ast.parse of a huge text
# is slow.
MAX_ACTION_TEXT_OVERHEAD = 16384


# Wheel notches of one UI-TARS scroll (its text names a direction, not an amount).
UITARS_SCROLL_NOTCHES = 5


MAX_SCROLL = 50


# No screen is this many pixels across: a coordinate beyond it is a mistake, and bounding it keeps
# every Action representable in the int32 action space (``to_sample``).
MAX_COORDINATE = 100_000


# "Action:" markers parse_action tries before giving up on finding the action after one.
MAX_ACTION_MARKERS = 8


@dataclass(frozen=True)
class Action:
    """One GUI step. Build with the class methods (``Action.click(10, 20)``) or the constructor.

    Fields not used by a kind keep their defaults; :meth:`validate` checks a value against a
    screen size. ``keys`` holds one key for ``key`` and the chord for ``hotkey``.
    """

    kind: str
    x: int | None = None
    y: int | None = None
    x2: int | None = None
    y2: int | None = None
    dx: int = 0
    dy: int = 0
    text: str = ""
    keys: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ActionError(f"unknown action kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        for name in ("x", "y", "x2", "y2"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _as_pixel(value, name))
        if self.kind == "scroll" and self.x is None and self.y is None:
            pass  # at the current pointer (UI-TARS' scroll(direction=...) with no point)
        elif self.kind in POINTER_KINDS and (self.x is None or self.y is None):
            raise ActionError(f"{self.kind} needs x and y")
        if self.kind == "drag" and (self.x2 is None or self.y2 is None):
            raise ActionError("drag needs x2 and y2 (where the drag ends)")
        if self.kind == "scroll" and self.dx == 0 and self.dy == 0:
            raise ActionError("scroll needs a non-zero dx or dy")
        if self.kind == "type":
            if not isinstance(self.text, str) or not self.text:
                raise ActionError("type needs a non-empty text")
            bad = sorted({c for c in self.text if not typeable(c)})
            if bad:
                raise ActionError(
                    f"text holds characters that cannot be typed (control characters): "
                    f"{_short(bad)}"
                )
        if self.kind in ONE_KEY_KINDS:
            if len(self.keys) != 1:
                raise ActionError(f"key needs exactly one key, got {self.keys!r}")
            object.__setattr__(self, "keys", (normalize_key(self.keys[0]),))
        if self.kind == "hotkey":
            if not self.keys:
                raise ActionError("hotkey needs at least one key")
            object.__setattr__(self, "keys", _order_hotkey(self.keys))

    @classmethod
    def move(cls, x: int, y: int) -> Action:
        return cls("move", x, y)

    @classmethod
    def click(cls, x: int, y: int) -> Action:
        return cls("click", x, y)

    @classmethod
    def double_click(cls, x: int, y: int) -> Action:
        return cls("double_click", x, y)

    @classmethod
    def right_click(cls, x: int, y: int) -> Action:
        return cls("right_click", x, y)

    @classmethod
    def drag(cls, x: int, y: int, x2: int, y2: int) -> Action:
        return cls("drag", x, y, x2, y2)

    @classmethod
    def scroll(cls, x: int | None, y: int | None, dx: int = 0, dy: int = 0) -> Action:
        """``x, y = None, None`` scrolls wherever the pointer is."""
        return cls("scroll", x, y, dx=int(dx), dy=int(dy))

    @classmethod
    def type_text(cls, text: str) -> Action:
        return cls("type", text=text)

    @classmethod
    def key(cls, key: str) -> Action:
        return cls("key", keys=(key,))

    @classmethod
    def hotkey(cls, *keys: str) -> Action:
        return cls("hotkey", keys=tuple(keys))

    @classmethod
    def key_down(cls, key: str) -> Action:
        return cls("key_down", keys=(key,))

    @classmethod
    def key_up(cls, key: str) -> Action:
        return cls("key_up", keys=(key,))

    @classmethod
    def wait(cls) -> Action:
        return cls("wait")

    @classmethod
    def done(cls) -> Action:
        return cls("done")

    @classmethod
    def fail(cls) -> Action:
        return cls("fail")

    @property
    def point(self) -> tuple[int, int] | None:
        return None if self.x is None else (self.x, self.y)

    def check_text_length(self, max_text_length: int = DEFAULT_MAX_TEXT_LENGTH) -> Action:
        """Return self, or raise :class:`ActionError` if the text is over ``max_text_length``."""
        if len(self.text) > max_text_length:
            raise ActionError(
                f"text too long: {len(self.text)} characters (at most {max_text_length}; "
                f"the max_text_length option allows more)"
            )
        return self

    def validate(
        self, screen_size: tuple[int, int], max_text_length: int = DEFAULT_MAX_TEXT_LENGTH
    ) -> Action:
        """Return self, or raise :class:`ActionError` if a coordinate lies off a W×H screen or a
        ``type`` text is longer than ``max_text_length`` characters."""
        self.check_text_length(max_text_length)
        width, height = screen_size
        for xn, yn in (("x", "y"), ("x2", "y2")):
            x, y = getattr(self, xn), getattr(self, yn)
            if x is None:
                continue
            if not (0 <= x < width and 0 <= y < height):
                raise ActionError(
                    f"{self.kind} at ({x}, {y}) is off-screen: the screen is {width}x{height}, "
                    f"so x must lie in [0, {width - 1}] and y in [0, {height - 1}]"
                )
        if abs(self.dx) > MAX_SCROLL or abs(self.dy) > MAX_SCROLL:
            raise ActionError(f"scroll of ({self.dx}, {self.dy}) notches exceeds ±{MAX_SCROLL}")
        return self

    def to_sample(self) -> dict[str, np.ndarray | int | str]:
        """This action as an element of :func:`action_space` (unused fields are zero).

        A scroll at the pointer has none (the space's scroll has a point): ActionError. A text
        longer than the space's or outside its charset gives a sample the space does not
        contain (the env still takes it)."""
        if self.kind == "scroll" and self.x is None:
            raise ActionError("a scroll at the current pointer has no action-space sample")
        chord = np.zeros(len(KEY_NAMES), dtype=np.int8)
        for k in self.keys:
            chord[_KEY_INDEX[k]] = 1
        return {
            "kind": KINDS.index(self.kind),
            "point": np.array([self.x or 0, self.y or 0], dtype=np.int32),
            "point2": np.array([self.x2 or 0, self.y2 or 0], dtype=np.int32),
            "scroll": np.array([self.dx, self.dy], dtype=np.int32),
            "text": self.text,
            "key": _KEY_INDEX[self.keys[0]] if self.kind in ONE_KEY_KINDS else 0,
            "hotkey": chord,
        }

    @classmethod
    def from_sample(cls, sample: dict) -> Action:
        """The action an element of :func:`action_space` stands for (reads only what its kind uses).

        Every element of the space is an action: the degenerate samples — a scroll of (0, 0), an
        empty ``type`` text, a hotkey chord with no key — mean ``wait``.
        """
        try:
            kind = KINDS[int(sample["kind"])]
        except (KeyError, IndexError, TypeError, ValueError, OverflowError) as e:
            raise ActionError(f"action sample needs 'kind' in 0..{len(KINDS) - 1}: {e}") from None
        try:
            return cls._from_sample(kind, sample)
        except ActionError:
            raise
        except (KeyError, IndexError, TypeError, ValueError, OverflowError) as e:
            raise ActionError(f"malformed {kind} action sample: {type(e).__name__}: {e}") from None

    @classmethod
    def _from_sample(cls, kind: str, sample: dict) -> Action:
        x, y = (int(v) for v in np.asarray(sample.get("point", (0, 0))).reshape(2))
        if kind in ("move", "click", "double_click", "right_click"):
            return cls(kind, x, y)
        if kind == "drag":
            x2, y2 = (int(v) for v in np.asarray(sample["point2"]).reshape(2))
            return cls(kind, x, y, x2, y2)
        if kind == "scroll":
            dx, dy = (int(v) for v in np.asarray(sample["scroll"]).reshape(2))
            return cls(kind, x, y, dx=dx, dy=dy) if dx or dy else cls("wait")
        if kind == "type":
            text = str(sample["text"])
            return cls(kind, text=text) if text else cls("wait")
        if kind in ONE_KEY_KINDS:
            return cls(kind, keys=(KEY_NAMES[int(sample["key"])],))
        if kind == "hotkey":
            chord = np.asarray(sample["hotkey"]).reshape(-1)
            keys = tuple(KEY_NAMES[i] for i in np.flatnonzero(chord))
            return cls(kind, keys=keys) if keys else cls("wait")
        return cls(kind)


def typeable(char: str) -> bool:
    """Whether a ``type`` action may hold ``char``: printable Unicode, tab or newline."""
    return char.isprintable() or char in "\t\n"


def _as_pixel(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ActionError(f"{name} must be a number, got {_short(value)}")
    # Compare as Python numbers: np.isfinite fails on ints wider than 64 bits.
    number = int(value) if isinstance(value, (int, np.integer)) else float(value)
    if number != number or abs(number) == float("inf"):
        raise ActionError(f"{name} must be finite, got {_short(value)}")
    if abs(number) > MAX_COORDINATE:
        raise ActionError(f"{name} must lie within ±{MAX_COORDINATE:,} pixels, got {_short(value)}")
    return int(round(number))


def _short(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (error messages quote untrusted input)."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**limit else "<huge int>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
