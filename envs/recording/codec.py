"""How observations, actions and infos become stored values, and back.

- :func:`infer_features` decides, from an observation space, where each key is stored
  (see :class:`pixelrl.envs.recording.format.Feature`): uint8 images as PNG or MP4 frames, other large
  arrays as ``.npz``, small vectors and text in parquet columns.
- :func:`action_format` / :func:`encode_action` / :func:`decode_action`: GUI actions are stored as
  pyautogui text (``pixelrl.envs.gui_action.to_pyautogui``), read back with ``pixelrl.envs.gui_action.parse_action``;
  ``Discrete`` actions as ints; anything else as JSON text.
- :func:`jsonable` keeps the JSON-able part of an ``info`` dict.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from pixelrl.envs.gui_action import Action, ActionError, as_action, parse_action, to_pyautogui
from pixelrl.envs.recording.format import (
    ARRAY_PATH,
    FIRST_FRAME_PATH,
    FRAME_PATH,
    INSTRUCTION_KEY,
    MAX_COLUMN_SIZE,
    VIDEO_PATH,
    Feature,
)

FRAME_FORMATS = ("auto", "png", "mp4")


def _is_image(space) -> bool:
    shape = getattr(space, "shape", None) or ()
    return (
        getattr(space, "dtype", None) == np.uint8
        and (len(shape) == 2 or (len(shape) == 3 and shape[-1] in (1, 3, 4)))
        and min(shape[:2]) >= 8
    )


def infer_features(observation_space, frame_format: str = "auto") -> dict[str, Feature]:
    """Where each observation key goes. ``frame_format``: ``png``, ``mp4``, or ``auto`` (PNG
    for GUI screenshots, which replay checks need exact, MP4 for other camera frames)."""
    from gymnasium import spaces

    if frame_format not in FRAME_FORMATS:
        raise ValueError(f"frame_format must be one of {FRAME_FORMATS}, got {frame_format!r}")
    items = (
        observation_space.spaces.items()
        if isinstance(observation_space, spaces.Dict)
        else [("observation", observation_space)]
    )
    features: dict[str, Feature] = {}
    first_image = True
    for key, space in items:
        if not key.replace("_", "").replace("-", "").isalnum():
            raise ValueError(
                f"observation key {key!r}: only letters, digits, '_' and '-' fit a path"
            )
        if isinstance(space, spaces.Text):
            column = "instruction" if key == INSTRUCTION_KEY else f"observation.{key}"
            features[key] = Feature(key, "text", "string", [], column=column)
        elif isinstance(space, spaces.Discrete):
            features[key] = Feature(key, "column", "int64", [], column=f"observation.{key}")
        elif isinstance(space, spaces.Box) and _is_image(space):
            fmt = frame_format
            if fmt == "auto":
                fmt = "png" if key == "screenshot" else "mp4"
            if fmt == "png":
                path = FIRST_FRAME_PATH if first_image else FRAME_PATH
            else:
                path = VIDEO_PATH
            first_image = first_image and fmt != "png"
            features[key] = Feature(key, fmt, "uint8", list(space.shape), path=path)
        elif isinstance(space, (spaces.Box, spaces.MultiBinary, spaces.MultiDiscrete)):
            size = int(np.prod(space.shape))
            dtype = str(np.dtype(space.dtype))
            if size <= MAX_COLUMN_SIZE and len(space.shape) <= 1:
                features[key] = Feature(
                    key, "column", dtype, list(space.shape), column=f"observation.{key}"
                )
            else:
                features[key] = Feature(key, "npz", dtype, list(space.shape), path=ARRAY_PATH)
        else:
            raise ValueError(
                f"observation key {key!r}: cannot record a {type(space).__name__} space "
                "(supported: Box, Discrete, MultiBinary, MultiDiscrete, Text)"
            )
    return features


def split_observation(observation: Any, features: dict[str, Feature]) -> dict[str, Any]:
    """The observation as a ``{key: value}`` dict matching ``features``."""
    if isinstance(observation, dict):
        missing = set(features) - set(observation)
        if missing:
            raise KeyError(f"observation lacks key(s) {sorted(missing)} that the dataset records")
        return {k: observation[k] for k in features}
    return {"observation": observation}


# -- actions ----------------------------------------------------------------------------------
# A navigation text policy's idle turn (pixelrl.envs.nav.tasks.IDLE: ``env.step("idle")``, a turn
# that runs nothing): discrete recordings store it as -1, which no Discrete space holds.
IDLE, IDLE_INDEX = "idle", -1


def action_format(action_space) -> str:
    from gymnasium import spaces

    if isinstance(action_space, spaces.Dict) and {"kind", "point"} <= set(action_space.spaces):
        return "pyautogui"
    if isinstance(action_space, spaces.Discrete):
        return "discrete"
    return "json"


def gui_screen_size(action_space) -> tuple[int, int]:
    """(W, H) of a GUI action space: its ``point`` box runs to (W-1, H-1)."""
    high = np.asarray(action_space["point"].high).reshape(2)
    return int(high[0]) + 1, int(high[1]) + 1


def encode_action(action: Any, fmt: str, screen_size: tuple[int, int] | None = None) -> str | int:
    """The stored value of an action given to ``env.step``.

    GUI: pyautogui text of the :class:`Action` it stands for. Action text that does not parse
    is kept as given, so that replay feeds the env the very same text (and the env answers it
    the same way, e.g. with a format penalty).
    """
    if fmt == "pyautogui":
        try:
            return to_pyautogui(as_action(action, screen_size))
        except ActionError:
            if isinstance(action, str):
                return action
            raise
    if fmt == "discrete":
        if isinstance(action, str) and action == IDLE:
            return IDLE_INDEX
        return int(np.asarray(action).item())
    return json.dumps(to_builtin(action))


def decode_action(value: Any, fmt: str, screen_size: tuple[int, int] | None = None):
    """What to pass to ``env.step`` for a stored action (an :class:`Action` for GUI)."""
    if fmt == "pyautogui":
        try:
            return parse_action(str(value), screen_size)
        except ActionError:
            return str(value)  # recorded as raw text the env rejected: replay it verbatim
    if fmt == "discrete":
        return IDLE if int(value) == IDLE_INDEX else int(value)
    raw = json.loads(value)
    return np.asarray(raw) if isinstance(raw, list) else raw


def action_as_gui(value: str, screen_size: tuple[int, int] | None = None) -> Action | None:
    """The :class:`Action` of a stored GUI action, or None if the text was not a valid action."""
    try:
        return parse_action(str(value), screen_size)
    except ActionError:
        return None


# -- infos ------------------------------------------------------------------------------------
def to_builtin(value: Any) -> Any:
    """``value`` with numpy arrays and scalars turned into lists and Python numbers."""
    if isinstance(value, dict):
        return {str(k): to_builtin(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_builtin(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def jsonable(info: dict[str, Any], keys: list[str] | None = None) -> dict[str, Any]:
    """The entries of ``info`` that JSON can hold (arrays up to 4,096 numbers become lists);
    ``keys`` limits which entries are kept. Maps, images and other objects are left out."""
    out = {}
    for k, v in info.items():
        if keys is not None and k not in keys:
            continue
        if isinstance(v, np.ndarray) and v.size > 4096:
            continue
        v = to_builtin(v)
        try:
            text = json.dumps(v, allow_nan=True)
        except (TypeError, ValueError):
            continue
        if len(text) <= 1_000_000:
            out[str(k)] = v
    return out


def target_bbox(info: dict[str, Any]) -> list[int] | None:
    box = info.get("target_bbox")
    if box is None:
        return None
    values = [int(v) for v in np.asarray(box).reshape(-1)]
    return values if len(values) == 4 else None


def success(info: dict[str, Any]) -> bool | None:
    value = info.get("success")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return bool(value)
