"""The GUI action: one value type shared by every GUI backend, and its codecs.

An :class:`Action` is what a GUI agent does in one step. Its kinds follow OSWorld's
``computer_13`` set::

    move(x, y)            click(x, y)          double_click(x, y)     right_click(x, y)
    drag(x, y, x2, y2)    scroll(x, y, dx, dy) type(text)             key(key)
    hotkey(keys)          key_down(key)        key_up(key)            wait()
    done()                fail()

Coordinates are absolute screen pixels (origin top-left, x right, y down). ``scroll`` counts
wheel notches: ``dy > 0`` scrolls down (content moves up), ``dx > 0`` scrolls right; a scroll
with no point turns the wheel wherever the pointer is. A ``type`` text is any printable Unicode
(tabs and newlines too) and may end in ``"\\n"``, which presses enter after typing (UI-TARS'
convention). ``key_down``/``key_up`` hold and release one key (the backends that cannot hold a
key refuse them).

Codecs, all in this module:

- coordinates (:mod:`pixelrl.envs.coordinates`): ``pixels``, ``relative1000`` (UI-TARS-1.0),
  ``unit`` (0-1) and ``smart_resize`` (pixels of the model's resized image: Qwen2.5-VL,
  UI-TARS-1.5); :func:`to_relative1000` / :func:`from_relative1000` and :func:`to_unit` /
  :func:`from_unit` for single points;
- action text: :func:`parse_action` reads pyautogui calls (``pyautogui.click(x=120, y=45)``,
  OSWorld's and the ``ui-tars`` package's generated code) and UI-TARS calls
  (``click(start_box='(120,45)')``, ``click(point='<point>120 45</point>')``, every form the
  official ``ui-tars`` parser reads); :func:`to_pyautogui` and :func:`to_uitars` write them.
  Parsing uses :mod:`ast` with a whitelist of calls and literal argument types and never
  evaluates anything; any other text raises :class:`ActionParseError` saying what is wrong;
- Gymnasium: :func:`action_space` builds the ``Dict`` space a PPO policy samples from, and
  :meth:`Action.to_sample` / :meth:`Action.from_sample` convert both ways.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces

from pixelrl.envs.coordinates import CoordinateSpace, coordinate_space

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

MODIFIER_KEYS: tuple[str, ...] = ("ctrl", "shift", "alt", "win")
# The key vocabulary, in pyautogui's names. Modifiers first: a hotkey lists its keys in this order.
KEY_NAMES: tuple[str, ...] = (
    MODIFIER_KEYS
    + (
        "enter",
        "tab",
        "space",
        "backspace",
        "delete",
        "escape",
        "up",
        "down",
        "left",
        "right",
        "home",
        "end",
        "pageup",
        "pagedown",
        "insert",
    )
    + tuple(f"f{i}" for i in range(1, 13))
    + tuple(string.ascii_lowercase)
    + tuple(string.digits)
    + tuple("`-=[]\\;',./")
    # after the first set, so that older key indices keep their meaning
    + ("capslock", "printscreen", "numlock", "scrolllock", "pause", "apps")
)
_KEY_INDEX = {k: i for i, k in enumerate(KEY_NAMES)}
KEY_ALIASES: dict[str, str] = {
    "return": "enter",
    "esc": "escape",
    "control": "ctrl",
    "ctrlleft": "ctrl",
    "ctrlright": "ctrl",
    "shiftleft": "shift",
    "shiftright": "shift",
    "altleft": "alt",
    "altright": "alt",
    "option": "alt",
    "cmd": "win",
    "command": "win",
    "super": "win",
    "meta": "win",
    "winleft": "win",
    "winright": "win",
    "del": "delete",
    "bksp": "backspace",
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "page_up": "pageup",
    "page_down": "pagedown",
    "pgup": "pageup",
    "pgdn": "pagedown",
    " ": "space",
    "\n": "enter",
    "\t": "tab",
    "caps_lock": "capslock",
    "prtsc": "printscreen",
    "prtscr": "printscreen",
    "prntscrn": "printscreen",
    "print": "printscreen",
    "print_screen": "printscreen",
    "num_lock": "numlock",
    "scroll_lock": "scrolllock",
    "break": "pause",
    "menu": "apps",
}

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


class ActionError(ValueError):
    """An action that is not valid: unknown kind, missing or off-screen coordinates, bad key."""


class ActionParseError(ActionError):
    """Action text that does not parse into exactly one valid :class:`Action`."""


def normalize_key(name: str) -> str:
    """The canonical (pyautogui) name of a key, case-insensitive, or :class:`ActionError`."""
    if not isinstance(name, str) or not name:
        raise ActionError(f"a key must be a non-empty string, got {name!r}")
    key = name if name in (" ", "\n", "\t") else name.strip().lower()
    key = KEY_ALIASES.get(key, key)
    if key not in _KEY_INDEX:
        raise ActionError(f"unknown key {name!r}; known keys: {', '.join(KEY_NAMES)}")
    return key


def _order_hotkey(keys: Sequence[str]) -> tuple[str, ...]:
    """Modifiers first (in KEY_NAMES order), then the other keys in the order given."""
    keys = [normalize_key(k) for k in keys]
    mods = sorted({k for k in keys if k in MODIFIER_KEYS}, key=_KEY_INDEX.__getitem__)
    rest = [k for k in keys if k not in MODIFIER_KEYS]
    return tuple(mods + list(dict.fromkeys(rest)))


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

    # -- constructors -------------------------------------------------------------------------
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

    # -- checks -------------------------------------------------------------------------------
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

    # -- Gymnasium ----------------------------------------------------------------------------
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


class GuiActionSpace(spaces.Dict):
    """:func:`action_space`'s ``Dict``, less the kinds and keys a backend cannot do.

    Gymnasium's contract is that every element of an env's space is a valid action, so a refused
    kind or key is neither sampled nor contained.
    """

    def __init__(
        self,
        subspaces: dict[str, spaces.Space],
        refused_kinds: tuple[str, ...] = (),
        refused_keys: tuple[str, ...] = (),
    ):
        super().__init__(subspaces)
        self.refused_kinds = tuple(refused_kinds)
        self.refused_keys = tuple(refused_keys)

    def sample(self, mask=None, probability=None) -> dict:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        if not (self.refused_kinds or self.refused_keys):
            return super().sample()
        kinds = np.array([k not in self.refused_kinds for k in KINDS], dtype=np.int8)
        keys = np.array([k not in self.refused_keys for k in KEY_NAMES], dtype=np.int8)
        masks: dict = {name: None for name in self.spaces}
        # MultiBinary's mask: 0 forces a 0, 2 draws the bit
        masks.update(kind=kinds, key=keys, hotkey=np.where(keys == 1, 2, 0).astype(np.int8))
        return super().sample(mask=masks)

    def contains(self, x) -> bool:
        if not super().contains(x):
            return False
        if KINDS[int(x["kind"])] in self.refused_kinds:
            return False
        refused = [_KEY_INDEX[k] for k in self.refused_keys]
        return int(x["key"]) not in refused and not np.asarray(x["hotkey"])[refused].any()

    def __eq__(self, other) -> bool:
        return (
            super().__eq__(other)
            and getattr(other, "refused_kinds", ()) == self.refused_kinds
            and getattr(other, "refused_keys", ()) == self.refused_keys
        )


def action_space(
    screen_size: tuple[int, int],
    refused_kinds: tuple[str, ...] = (),
    refused_keys: tuple[str, ...] = (),
) -> GuiActionSpace:
    """The Gymnasium ``Dict`` action space of a W×H GUI env.

    ``kind`` indexes :data:`KINDS`; ``point``/``point2`` are pixel (x, y); ``scroll`` is
    (dx, dy) notches; ``key`` indexes :data:`KEY_NAMES`; ``hotkey`` marks the keys of a chord.
    ``refused_kinds``/``refused_keys``: what the backend cannot do (see :class:`GuiActionSpace`).
    """
    width, height = screen_size
    high = np.array([width - 1, height - 1], dtype=np.int32)
    return GuiActionSpace(
        {
            "kind": spaces.Discrete(len(KINDS)),
            "point": spaces.Box(low=0, high=high, shape=(2,), dtype=np.int32),
            "point2": spaces.Box(low=0, high=high, shape=(2,), dtype=np.int32),
            "scroll": spaces.Box(low=-10, high=10, shape=(2,), dtype=np.int32),
            "text": spaces.Text(max_length=SAMPLE_TEXT_LENGTH, min_length=0, charset=TEXT_CHARSET),
            "key": spaces.Discrete(len(KEY_NAMES)),
            "hotkey": spaces.MultiBinary(len(KEY_NAMES)),
        },
        refused_kinds,
        refused_keys,
    )


def as_action(
    action: Action | dict | str,
    screen_size: tuple[int, int],
    coordinates: str | CoordinateSpace | None = None,
    max_text_length: int = DEFAULT_MAX_TEXT_LENGTH,
) -> Action:
    """What a GUI env's ``step`` accepts, as a validated :class:`Action`.

    An :class:`Action`, an element of :func:`action_space` (a dict) or action text (pyautogui or
    UI-TARS syntax, read in ``coordinates``: by default pixels for pyautogui, 0-1000 for UI-TARS).
    """
    if isinstance(action, Action):
        return action.validate(screen_size, max_text_length)
    if isinstance(action, dict):
        return Action.from_sample(action).validate(screen_size, max_text_length)
    if isinstance(action, str):
        return parse_action(action, screen_size, coordinates, max_text_length)
    raise ActionError(
        f"a GUI action is an Action, an action-space dict or action text, got {type(action).__name__}"
    )


# -- coordinates ------------------------------------------------------------------------------
def to_relative1000(x: float, y: float, screen_size: tuple[int, int]) -> tuple[int, int]:
    """Pixels -> UI-TARS v1 relative coordinates in 0..1000.

    Pixel x covers [x·1000/W, (x+1)·1000/W) in relative units; we take the first whole unit in
    it, so pixels -> 0-1000 -> pixels is exact on screens up to 1000 px and within
    ceil(W/1000) - 1 pixels beyond.
    """
    return coordinate_space("relative1000").from_pixels(x, y, screen_size)


def from_relative1000(rx: float, ry: float, screen_size: tuple[int, int]) -> tuple[int, int]:
    """UI-TARS v1 0..1000 coordinates -> the pixel whose area holds that point; 1000 is the
    last pixel, beyond 0..1000 is off-screen (ActionError)."""
    return coordinate_space("relative1000").to_pixels(rx, ry, screen_size)


def to_unit(x: float, y: float, screen_size: tuple[int, int]) -> tuple[float, float]:
    """Pixels -> 0..1 floats (the pixel's centre)."""
    return coordinate_space("unit").from_pixels(x, y, screen_size)


def from_unit(ux: float, uy: float, screen_size: tuple[int, int]) -> tuple[int, int]:
    """0..1 floats -> the pixel whose area holds that point; beyond 0..1 is off-screen."""
    return coordinate_space("unit").to_pixels(ux, uy, screen_size)


def _to_pixels(
    x: float, y: float, space: CoordinateSpace, screen_size: tuple[int, int] | None
) -> tuple[float, float]:
    for name, value in (("x", x), ("y", y)):
        _as_pixel(value, name)  # finite and in range before any arithmetic (ActionError)
    if space.kind == "pixels":
        return x, y
    if screen_size is None:
        raise ActionParseError(f"{space.name} coordinates need the screen size to map to pixels")
    return space.to_pixels(x, y, screen_size)


def _from_pixels(
    x: int, y: int, space: CoordinateSpace, screen_size: tuple[int, int] | None
) -> tuple[float, float]:
    if space.kind == "pixels":
        return x, y
    if screen_size is None:
        raise ValueError(f"{space.name} coordinates need the screen size")
    return space.from_pixels(x, y, screen_size)


# -- action text: writing ---------------------------------------------------------------------
def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.4f}".rstrip("0")


def to_pyautogui(
    action: Action,
    coordinates: str | CoordinateSpace = "pixels",
    screen_size: tuple[int, int] | None = None,
) -> str:
    """The action as pyautogui calls (OSWorld's action text). A drag is ``moveTo`` then ``dragTo``;
    ``wait``/``done``/``fail`` are OSWorld's ``WAIT``/``DONE``/``FAIL``."""
    space = coordinate_space(coordinates)
    a = action
    if a.point is not None:
        px, py = (_num(v) for v in _from_pixels(a.x, a.y, space, screen_size))
    if a.kind == "move":
        return f"pyautogui.moveTo(x={px}, y={py})"
    if a.kind == "click":
        return f"pyautogui.click(x={px}, y={py})"
    if a.kind == "double_click":
        return f"pyautogui.doubleClick(x={px}, y={py})"
    if a.kind == "right_click":
        return f"pyautogui.rightClick(x={px}, y={py})"
    if a.kind == "drag":
        qx, qy = (_num(v) for v in _from_pixels(a.x2, a.y2, space, screen_size))
        return f"pyautogui.moveTo(x={px}, y={py}); pyautogui.dragTo(x={qx}, y={qy})"
    if a.kind == "scroll":
        at = "" if a.point is None else f", x={px}, y={py}"
        calls = []
        # pyautogui scrolls up for positive clicks; ours scrolls down for positive dy.
        if a.dy:
            calls.append(f"pyautogui.scroll({-a.dy}{at})")
        if a.dx:
            calls.append(f"pyautogui.hscroll({a.dx}{at})")
        return "; ".join(calls)
    if a.kind == "type":
        return f"pyautogui.write({a.text!r})"
    if a.kind == "key":
        return f"pyautogui.press({a.keys[0]!r})"
    if a.kind == "key_down":
        return f"pyautogui.keyDown({a.keys[0]!r})"
    if a.kind == "key_up":
        return f"pyautogui.keyUp({a.keys[0]!r})"
    if a.kind == "hotkey":
        return "pyautogui.hotkey(" + ", ".join(repr(k) for k in a.keys) + ")"
    return a.kind.upper()


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


# -- action text: reading ---------------------------------------------------------------------
def _snippet(node: ast.AST, source: str) -> str:
    """The text of ``node`` (at most 60 characters) for an error message. Sliced from the source,
    not ``ast.unparse``: that recurses, and agent text can nest deeper than the stack."""
    try:
        text = ast.get_source_segment(source, node) or type(node).__name__
    except (ValueError, TypeError, IndexError):
        text = type(node).__name__
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _literal(node: ast.expr, where: str, source: str) -> object:
    """A literal argument (number, string, bool, None, or a list/tuple of those); nothing else."""
    if isinstance(node, ast.Constant) and isinstance(
        node.value, (int, float, str, bool, type(None))
    ):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e, where, source) for e in node.elts]
    raise ActionParseError(
        f"{where}: arguments must be literal numbers or strings, got {type(node).__name__} "
        f"({_snippet(node, source)})"
    )


def _call_name(func: ast.expr, source: str) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    raise ActionParseError(f"unknown function {_snippet(func, source)}")


@dataclass
class _Call:
    name: str
    args: list
    kwargs: dict

    def arg(self, index: int, name: str, default: object = ..., types: tuple = ()) -> object:
        if name in self.kwargs:
            value = self.kwargs[name]
        elif index is not None and index < len(self.args):
            value = self.args[index]
        elif default is not ...:
            return default
        else:
            raise ActionParseError(f"{self.name}() is missing its argument {name!r}")
        if types and not isinstance(value, types) or isinstance(value, bool) and bool not in types:
            want = " or ".join(t.__name__ for t in types)
            raise ActionParseError(f"{self.name}(): {name} must be {want}, got {_short(value)}")
        return value

    def check_arguments(self, allowed: Sequence[str]) -> None:
        extra = set(self.kwargs) - set(allowed)
        if extra:
            raise ActionParseError(
                f"{self.name}() got unknown argument(s) {', '.join(sorted(extra))}; "
                f"it takes {', '.join(allowed) or 'none'}"
            )
        if len(self.args) > len(allowed):
            raise ActionParseError(
                f"{self.name}() takes at most {len(allowed)} positional argument(s), "
                f"got {len(self.args)}"
            )

    def rename(self, names: dict[str, str]) -> None:
        """Rename keyword arguments (``point`` -> ``start_box``); both at once is an error."""
        for old, new in names.items():
            if old in self.kwargs:
                if new in self.kwargs:
                    raise ActionParseError(f"{self.name}(): give {old} or {new}, not both")
                self.kwargs[new] = self.kwargs.pop(old)


_NUMBER = (int, float)
_NUMBER_TEXT = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")  # 12, 12., 12.5, .5 (not ".", "1.2.3")
_TAGGED = re.compile(r"<(point|bbox)>(.*)</\1>", re.S)
_BRACKETS = {"(": ")", "[": "]"}


def _box_numbers(raw: str) -> list[float] | None:
    """The numbers of a point or box string, or None if it is not one.

    The official parser's forms: ``(x,y)``, ``x,y``, ``(x1,y1,x2,y2)``, ``<point>x y</point>``;
    ours besides: ``[x,y]``, Qwen's ``<|box_start|>(x,y)<|box_end|>``, ``<bbox>x1 y1 x2 y2</bbox>``.
    """
    s = raw.strip().removeprefix("<|box_start|>").removesuffix("<|box_end|>").strip()
    tagged = _TAGGED.fullmatch(s)
    if tagged:
        parts = re.split(r"\s*,\s*|\s+", tagged.group(2).strip())
    else:
        if s[:1] in _BRACKETS:
            if s[-1:] != _BRACKETS[s[0]]:
                return None
            s = s[1:-1]
        parts = s.split(",")
    parts = [p.strip() for p in parts]
    if len(parts) not in (2, 4) or not all(_NUMBER_TEXT.fullmatch(p) for p in parts):
        return None
    return [float(p) for p in parts]


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


def _parse_python(part: str) -> ast.Module:
    try:
        return ast.parse(part, mode="exec")
    except (SyntaxError, ValueError) as first:
        try:
            return ast.parse(_repair_uitars(part), mode="exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise first from None


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


def _point(call: _Call, space: CoordinateSpace, screen) -> tuple[float, float]:
    x = call.arg(0, "x", types=_NUMBER)
    y = call.arg(1, "y", types=_NUMBER)
    return _to_pixels(x, y, space, screen)


def _box_point(
    call: _Call, name: str, space: CoordinateSpace, screen: tuple[int, int] | None
) -> tuple[float, float]:
    raw = call.arg(None, name, types=(str, list))
    if isinstance(raw, list):
        values = raw
    else:
        values = _box_numbers(raw)
        if values is None:
            raise ActionParseError(
                f"{call.name}(): {name} must look like '(x,y)' or '<point>x y</point>', "
                f"got {_short(raw)}"
            )
    numbers = all(isinstance(v, _NUMBER) and not isinstance(v, bool) for v in values)
    if len(values) not in (2, 4) or not numbers:
        raise ActionParseError(f"{call.name}(): {name} must hold 2 or 4 numbers, got {_short(raw)}")
    if len(values) == 4:  # a box: act at its centre
        values = [(values[0] + values[2]) / 2, (values[1] + values[3]) / 2]
    return _to_pixels(values[0], values[1], space, screen)


_PYAUTOGUI_POINTER = {
    "pyautogui.moveTo": "move",
    "pyautogui.click": "click",
    "pyautogui.leftClick": "click",
    "pyautogui.doubleClick": "double_click",
    "pyautogui.rightClick": "right_click",
}
_PYAUTOGUI_KEYS = {
    "pyautogui.press": "key",
    "pyautogui.keyDown": "key_down",
    "pyautogui.keyUp": "key_up",
}
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
_OSWORLD_NAMES = ("WAIT", "DONE", "FAIL", "time.sleep", "pyperclip.copy")


def _pyautogui_action(call: _Call, space: CoordinateSpace, screen) -> Action:
    name = call.name
    if name in _PYAUTOGUI_POINTER:
        kind = _PYAUTOGUI_POINTER[name]
        allowed = ["x", "y", "button", "clicks", "interval", "duration"]
        call.check_arguments(allowed)
        button = call.arg(None, "button", "left", (str,))
        clicks = call.arg(None, "clicks", 1, (int,))
        if button not in ("left", "right", "middle", "primary", "secondary"):
            raise ActionParseError(f"{name}(): unknown button {button!r}")
        if kind == "click" and button in ("right", "secondary"):
            kind = "right_click"
        if kind == "click" and clicks == 2:
            kind = "double_click"
        elif clicks not in (1, 2) or (clicks == 2 and kind != "double_click"):
            raise ActionParseError(f"{name}(): clicks must be 1 (or 2 for a left click)")
        return Action(kind, *_point(call, space, screen))
    if name in ("pyautogui.scroll", "pyautogui.hscroll", "pyautogui.vscroll"):
        call.check_arguments(["clicks", "x", "y"])
        clicks = call.arg(0, "clicks", types=(int,))
        has_x = "x" in call.kwargs or len(call.args) >= 2
        has_y = "y" in call.kwargs or len(call.args) >= 3
        if has_x != has_y:
            raise ActionParseError(f"{name}() needs both x and y, or neither (at the pointer)")
        if has_x:
            x, y = _to_pixels(
                call.arg(1, "x", types=_NUMBER), call.arg(2, "y", types=_NUMBER), space, screen
            )
        else:
            x = y = None  # pyautogui turns the wheel wherever the pointer is
        if name == "pyautogui.hscroll":
            return Action.scroll(x, y, dx=clicks)
        return Action.scroll(x, y, dy=-clicks)
    if name in ("pyautogui.write", "pyautogui.typewrite"):
        call.check_arguments(["message", "interval"])
        return Action.type_text(call.arg(0, "message", types=(str,)))
    if name in _PYAUTOGUI_KEYS:
        call.check_arguments(["keys", "presses", "interval"] if name.endswith("press") else ["key"])
        keys = call.arg(0, "keys" if name.endswith("press") else "key", types=(str, list))
        if isinstance(keys, list):
            if len(keys) != 1:
                raise ActionParseError(f"{name}() presses one key per action, got {keys!r}")
            keys = keys[0]
        if call.arg(1, "presses", 1, (int,)) != 1:
            raise ActionParseError(f"{name}(): presses must be 1")
        return Action(_PYAUTOGUI_KEYS[name], keys=(keys,))
    if name == "pyautogui.hotkey":
        if call.kwargs.keys() - {"interval"}:
            raise ActionParseError(f"{name}() takes the keys as positional strings")
        keys = call.args[0] if len(call.args) == 1 and isinstance(call.args[0], list) else call.args
        if not keys or not all(isinstance(k, str) for k in keys):
            raise ActionParseError(f"{name}() needs key names as strings, got {keys!r}")
        return Action.hotkey(*keys)
    if name in ("WAIT", "time.sleep"):
        return Action.wait()
    if name == "DONE":
        return Action.done()
    if name == "FAIL":
        return Action.fail()
    raise ActionParseError(f"unknown function {name!r}")


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


def _is_paste(call: _Call) -> bool:
    keys = call.args[0] if len(call.args) == 1 and isinstance(call.args[0], list) else call.args
    return call.name == "pyautogui.hotkey" and [str(k).lower() for k in keys] == ["ctrl", "v"]


def _paste(calls: list[_Call], i: int) -> tuple[Action, int]:
    """``pyperclip.copy(s)`` + ctrl+v (+ ``time.sleep`` + enter): how the official ``ui-tars``
    code types, read as one ``type`` action. Returns it and the index after its calls."""
    copy = calls[i]
    copy.check_arguments(["text"])
    text = copy.arg(0, "text", types=(str,))
    if i + 1 >= len(calls) or not _is_paste(calls[i + 1]):
        raise ActionParseError("pyperclip.copy() must be followed by pyautogui.hotkey('ctrl', 'v')")
    end = i + 2
    if end < len(calls) and calls[end].name == "time.sleep":
        end += 1  # the generated code's pause for the paste to land
    press = calls[end] if end < len(calls) else None
    if press is not None and press.name == "pyautogui.press" and press.args in (["enter"], ["\n"]):
        end += 1  # its submit: type(content='...\n') becomes paste + enter
        if not text.endswith("\n"):
            text += "\n"
    return Action.type_text(text), end


def _actions_of(calls: list[_Call], space: CoordinateSpace | None, screen) -> list[Action]:
    actions: list[Action] = []
    i = 0
    while i < len(calls):
        call = calls[i]
        try:
            if call.name == "pyperclip.copy":
                action, i = _paste(calls, i)
                actions.append(action)
                continue
            if call.name == "pyautogui.dragTo":
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
) -> list[Action]:
    """Every action in ``text`` (one per call; ``moveTo`` + ``dragTo`` make one drag, and
    ``pyperclip.copy`` + ctrl+v one ``type``).

    ``coordinates`` is how the text's numbers are to be read (a name of
    :mod:`pixelrl.envs.coordinates`: ``"pixels"``, ``"relative1000"``, ``"unit"``,
    ``"smart_resize:ui-tars-1.5"``, ... or a :class:`CoordinateSpace`); by default pixels for
    pyautogui calls and 0-1000 for UI-TARS calls. With ``screen_size`` every action is checked
    to lie on the screen. A ``type`` text longer than ``max_text_length`` is refused.
    """
    space = None if coordinates is None else coordinate_space(coordinates)
    calls = _split_statements(text, MAX_ACTION_TEXT_OVERHEAD + 2 * max_text_length)
    actions = _actions_of(calls, space, screen_size)
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
) -> Action:
    """Exactly one :class:`Action` from agent text, or :class:`ActionParseError`.

    See :func:`parse_actions` for the accepted syntax, ``coordinates`` and ``max_text_length``.
    """
    actions = parse_actions(text, screen_size, coordinates, max_text_length)
    if len(actions) != 1:
        raise ActionParseError(f"expected one action, found {len(actions)}")
    return actions[0]


def sample_action(space: spaces.Space, tries: int = 100) -> Any:
    """A sample of ``space`` that is a valid action: a GUI sample as an :class:`Action` (a
    sample can be a scroll of zero notches, which no Action is: drawn again)."""
    for _ in range(tries):
        sample = space.sample()
        if not isinstance(sample, dict):
            return sample
        try:
            return Action.from_sample(sample)
        except ActionError:
            continue
    raise RuntimeError(f"no valid action in {tries} samples of {space}")
