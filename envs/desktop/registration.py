"""Registers ``pixelrl/Desktop-<Family>-v0`` for every task family and ``pixelrl/Desktop-Mixed-v0``."""

from pixelrl.envs.desktop.tasks import FAMILIES, camel
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
