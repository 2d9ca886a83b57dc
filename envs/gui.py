"""What every GUI backend (emulated desktop, X11 desktop, MiniWoB++) shares besides the action.

The observation is a ``Dict`` with ``screenshot`` (uint8 H×W×3) and ``instruction`` (Text);
privileged facts go in ``info``: ``a11y`` — a list of :func:`a11y_element` dicts, bbox
``[x0, y0, x1, y1]`` in pixels, x1/y1 exclusive — ``target_bbox`` where the task has one, and
``success`` at the end of an episode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pixelrl.envs.gui_action import TEXT_CHARSET

MAX_INSTRUCTION_LENGTH = 512
MAX_A11Y_TEXT_LENGTH = 8192


def observation_space(screen_size: tuple[int, int], a11y_text: bool = False):
    """The GUI observation space of a W×H screen; ``a11y_text`` adds the a11y tree as text."""
    from gymnasium import spaces

    width, height = screen_size
    parts = {
        "screenshot": spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8),
        "instruction": spaces.Text(MAX_INSTRUCTION_LENGTH, min_length=0, charset=TEXT_CHARSET),
    }
    if a11y_text:
        parts["a11y_text"] = spaces.Text(MAX_A11Y_TEXT_LENGTH, min_length=0, charset=TEXT_CHARSET)
    return spaces.Dict(parts)


def a11y_element(
    id: str | int,
    role: str,
    name: str,
    bbox: tuple[int, int, int, int] | list[int],
    state: dict[str, Any] | None = None,
    focused: bool = False,
) -> dict[str, Any]:
    """One accessibility-tree element: the fields every GUI backend reports."""
    return {
        "id": id,
        "role": role,
        "name": name,
        "bbox": list(map(int, bbox)),
        "state": dict(state) if state else {},
        "focused": bool(focused),
    }


def a11y_to_text(elements: list[dict[str, Any]], limit: int = MAX_A11Y_TEXT_LENGTH) -> str:
    """The a11y tree as one line per element (``role "name" [x0,y0,x1,y1] state``), cut to fit."""
    lines = []
    for e in elements:
        state = " ".join(f"{k}={v}" for k, v in sorted(e.get("state", {}).items()))
        focus = " focused" if e.get("focused") else ""
        x0, y0, x1, y1 = e["bbox"]
        lines.append(f'{e["role"]} "{e["name"]}" [{x0},{y0},{x1},{y1}]{focus} {state}'.rstrip())
    text = "\n".join(lines)
    text = "".join(c for c in text if c in TEXT_CHARSET)
    return text[:limit]


def bbox_center(bbox: list[int] | tuple[int, ...]) -> tuple[int, int]:
    """The pixel at the centre of an ``[x0, y0, x1, y1)`` box."""
    x0, y0, x1, y1 = bbox
    return (x0 + x1 - 1) // 2, (y0 + y1 - 1) // 2
