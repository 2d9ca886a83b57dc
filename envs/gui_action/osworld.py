"""OSWorld's names in action text: ``WAIT``, ``DONE``, ``FAIL``, ``time.sleep`` and the
``pyperclip.copy`` + paste pair that types text."""

from __future__ import annotations

from pixelrl.envs.gui_action.action import Action
from pixelrl.envs.gui_action.errors import ActionParseError
from pixelrl.envs.gui_action.syntax import _Call

_OSWORLD_NAMES = ("WAIT", "DONE", "FAIL", "time.sleep", "pyperclip.copy")


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
