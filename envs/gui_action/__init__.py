"""The GUI action: one value type shared by every GUI backend, its space, its text and its codec.

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

One module an idea:

- :mod:`.action` -- the :class:`Action` type and its limits; :mod:`.keys` -- key names,
  aliases and the order of a hotkey; :mod:`.errors` -- :class:`ActionError` and
  :class:`ActionParseError`;
- :mod:`.space` -- the Gymnasium ``Dict`` space a PPO policy samples from
  (:func:`action_space`), any form of action as an :class:`Action` (:func:`as_action`);
- :mod:`.coordinates` -- coordinate spaces (``pixels``, ``relative1000``, ``unit``,
  ``smart_resize``) and the space a model family answers in;
- the text dialects, each reading and writing: :mod:`.pyautogui` (``pyautogui.click(x=120,
  y=45)``), :mod:`.uitars` (``click(start_box='(120,45)')``), :mod:`.osworld` (``WAIT``,
  ``DONE``, ``FAIL``, the paste pair), :mod:`.toolcall` (``<tool_call>{"name": "click",
  "arguments": {"x": 120, "y": 45}}</tool_call>``, the tools of TRL environments, read with
  :mod:`json`); :mod:`.syntax` is what they share and :mod:`.parse`
  reads any of them (:func:`parse_action`): :mod:`ast` and a whitelist of calls, never
  evaluated;
- :mod:`.codec` -- :class:`GUIActionCodec`, the action language of a vision-language policy.

Everything public is importable from this package.
"""

from pixelrl.envs.gui_action.action import (
    DEFAULT_MAX_TEXT_LENGTH,
    KINDS,
    MAX_ACTION_MARKERS,
    MAX_ACTION_TEXT_OVERHEAD,
    MAX_COORDINATE,
    MAX_SCROLL,
    ONE_KEY_KINDS,
    POINTER_KINDS,
    SAMPLE_TEXT_LENGTH,
    TEXT_CHARSET,
    UITARS_SCROLL_NOTCHES,
    Action,
    typeable,
)
from pixelrl.envs.gui_action.codec import GUIActionCodec, safe_parse
from pixelrl.envs.gui_action.coordinates import (
    CoordinateSpace,
    coordinate_space,
    coordinates_for_model,
    from_relative1000,
    from_unit,
    smart_resize,
    to_relative1000,
    to_unit,
)
from pixelrl.envs.gui_action.errors import ActionError, ActionParseError
from pixelrl.envs.gui_action.keys import KEY_ALIASES, KEY_NAMES, MODIFIER_KEYS, normalize_key
from pixelrl.envs.gui_action.parse import parse_action, parse_actions
from pixelrl.envs.gui_action.pyautogui import to_pyautogui
from pixelrl.envs.gui_action.space import GuiActionSpace, action_space, as_action, sample_action
from pixelrl.envs.gui_action.toolcall import (
    TOOL_ARGUMENTS,
    parse_toolcall,
    to_toolcall,
    tool_action,
)
from pixelrl.envs.gui_action.uitars import POINT_SYNTAXES, to_uitars, uitars_quote

__all__ = [
    "DEFAULT_MAX_TEXT_LENGTH", "KINDS", "MAX_ACTION_MARKERS", "MAX_ACTION_TEXT_OVERHEAD",
    "MAX_COORDINATE", "MAX_SCROLL", "ONE_KEY_KINDS", "POINTER_KINDS", "SAMPLE_TEXT_LENGTH",
    "TEXT_CHARSET", "UITARS_SCROLL_NOTCHES", "Action", "typeable", "GUIActionCodec", "safe_parse",
    "CoordinateSpace", "coordinate_space", "coordinates_for_model", "from_relative1000",
    "from_unit", "smart_resize", "to_relative1000", "to_unit", "ActionError", "ActionParseError",
    "KEY_ALIASES", "KEY_NAMES", "MODIFIER_KEYS", "normalize_key", "parse_action", "parse_actions",
    "to_pyautogui", "GuiActionSpace", "action_space", "as_action", "sample_action",
    "POINT_SYNTAXES", "to_uitars", "uitars_quote", "TOOL_ARGUMENTS", "parse_toolcall",
    "to_toolcall", "tool_action",
]  # fmt: skip
