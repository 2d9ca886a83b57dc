"""The pyautogui dialect (``pyautogui.click(x=120, y=45)``, OSWorld's and the ``ui-tars``
package's generated code): reading its calls and writing an action as one."""

from __future__ import annotations

from pixelrl.envs.gui_action.action import Action
from pixelrl.envs.gui_action.coordinates import (
    CoordinateSpace,
    _from_pixels,
    _to_pixels,
    coordinate_space,
)
from pixelrl.envs.gui_action.errors import ActionParseError
from pixelrl.envs.gui_action.syntax import _NUMBER, _Call, _num, _point


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
