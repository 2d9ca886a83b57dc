"""Registers ``pixelrl/Desktop-<Family>-v0`` for every task family and ``pixelrl/Desktop-Mixed-v0``,
and the ``desktop`` :class:`~pixelrl.envs.families.TaskFamily` whose tasks they are."""

from pixelrl.envs.desktop.tasks import FAMILIES, camel
from pixelrl.envs.families import (
    GUI_PRIVILEGED,
    PARITY,
    ExpertActionMethod,
    TaskFamily,
    register_family,
)
from pixelrl.envs.registry import register

ENTRY_POINT = "pixelrl.envs.desktop.env:DesktopEnv"


def env_id(family: str) -> str:
    """``"click-button"`` -> ``"pixelrl/Desktop-ClickButton-v0"`` (``"mixed"`` -> ``Desktop-Mixed-v0``)."""
    return f"pixelrl/Desktop-{camel(family)}-v0"


for _family, _task in FAMILIES.items():
    register(
        env_id(_family),
        ENTRY_POINT,
        f"emulated desktop: {_task.description}",
        kwargs={"family": _family},
    )
register(
    env_id("mixed"),
    ENTRY_POINT,
    f"emulated desktop: a random one of the {len(FAMILIES)} task families each episode",
    kwargs={"family": "mixed"},
)


register_family(
    TaskFamily(
        name="desktop",
        description="the emulated desktop's task kinds (click-button, fill-form, ...)",
        env_id=env_id,
        tasks=(*FAMILIES, "mixed"),
        seeds=PARITY,
        expert=ExpertActionMethod,
        privileged=GUI_PRIVILEGED,
    )
)
