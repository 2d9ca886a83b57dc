"""Key names: the keys an action may press (pyautogui's names), their aliases and order."""

from __future__ import annotations

import string
from collections.abc import Sequence

from pixelrl.envs.gui_action.errors import ActionError

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
