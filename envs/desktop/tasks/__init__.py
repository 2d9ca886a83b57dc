"""The task families of the emulated desktop, by name (``FAMILIES``), and the expert over ``info``.

Families are kebab-case names (``"click-button"``); :func:`camel` gives the CamelCase form used
in env ids (``pixelrl/Desktop-ClickButton-v0``).
"""

from __future__ import annotations

from typing import Any

from pixelrl.envs.desktop.tasks.base import Plan, Task
from pixelrl.envs.desktop.tasks.controls import (
    CheckBoxes,
    ChooseRadio,
    ClickButton,
    FillForm,
    SelectDropdown,
    SetSlider,
    TypeInField,
)
from pixelrl.envs.desktop.tasks.files import DragToTarget, OpenIcon, RenameFile
from pixelrl.envs.desktop.tasks.navigation import (
    CloseDialog,
    MenuItem,
    MultiWindow,
    ScrollAndClick,
    SwitchTabAndClick,
)
from pixelrl.envs.gui_action import Action

FAMILIES: dict[str, type[Task]] = {
    cls.family: cls
    for cls in (
        ClickButton,
        OpenIcon,
        TypeInField,
        FillForm,
        CheckBoxes,
        SelectDropdown,
        ChooseRadio,
        MenuItem,
        CloseDialog,
        DragToTarget,
        ScrollAndClick,
        SwitchTabAndClick,
        SetSlider,
        RenameFile,
        MultiWindow,
    )
}


def camel(family: str) -> str:
    """``"click-button"`` -> ``"ClickButton"``."""
    return "".join(part.capitalize() for part in family.split("-"))


def expert_plan(info: dict[str, Any]) -> Plan:
    """The expert's next step from an env's ``info`` (needs ``family``, ``task``, ``a11y``)."""
    try:
        task_cls = FAMILIES[info["family"]]
    except KeyError:
        raise ValueError(
            f"info has no known 'family' (got {info.get('family')!r}); families: {', '.join(FAMILIES)}"
        ) from None
    return task_cls.plan(info["a11y"], info["task"])


def expert_action(info: dict[str, Any]) -> Action:
    """The scripted expert's next :class:`Action`: a pure function of an env's ``info``."""
    return expert_plan(info).action


__all__ = ["FAMILIES", "Plan", "Task", "camel", "expert_action", "expert_plan"]
