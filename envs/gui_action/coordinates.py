"""Coordinate spaces: how the numbers in GUI action text map to screen pixels.

A model writes a point in its own space; an :class:`~pixelrl.envs.gui_action.Action` holds screen
pixels. The spaces, by name:

- ``pixels``: screen pixels (pyautogui, OSWorld);
- ``relative1000``: 0..1000 across the screen (UI-TARS-1.0, Qwen2-VL grounding);
- ``unit``: 0..1 floats across the screen;
- ``smart_resize``: pixels of the image the model saw, the screenshot resized by Qwen's
  ``smart_resize`` (sides multiples of ``factor``, area within [min_pixels, max_pixels]);
  Qwen2.5-VL and UI-TARS-1.5 answer this way. ``smart_resize:<preset>`` names the settings of
  one model family (:data:`SMART_RESIZE_PRESETS`); plain ``smart_resize`` is UI-TARS-1.5's.

A point maps to the screen pixel whose area holds it, the official ``ui-tars`` parser's
``fraction × screen size``. A number outside the space (beyond 1000, 1.0 or the resized
image) is off-screen and raises :class:`~pixelrl.envs.gui_action.ActionError`; the far edge itself
(1000, 1.0, the image width) is the last pixel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pixelrl.envs.gui_action.action import _as_pixel
from pixelrl.envs.gui_action.errors import ActionError, ActionParseError

# Qwen's image processors resize to multiples of 28 (14 px patches, 2×2 merged) within an area.
QWEN_FACTOR = 28


@dataclass(frozen=True)
class SmartResize:
    """The settings of ``smart_resize``: side multiple and the area bounds, in pixels."""

    factor: int = QWEN_FACTOR
    min_pixels: int = 100 * 28 * 28
    max_pixels: int = 16384 * 28 * 28

    def size(self, screen_size: tuple[int, int]) -> tuple[int, int]:
        """The (width, height) of the image the model sees for a W×H screenshot."""
        width, height = screen_size
        h, w = smart_resize(height, width, self.factor, self.min_pixels, self.max_pixels)
        return w, h


# The preprocessor settings each family ships: Qwen2-VL and Qwen2.5-VL's
# preprocessor_config.json (min 56×56, max 16384·28²), UI-TARS-1.5's official parser
# (ui_tars.action_parser: MIN_PIXELS = 100·28², MAX_PIXELS = 16384·28²).
SMART_RESIZE_PRESETS: dict[str, SmartResize] = {
    "qwen2-vl": SmartResize(QWEN_FACTOR, 56 * 56, 16384 * 28 * 28),
    "qwen2.5-vl": SmartResize(QWEN_FACTOR, 56 * 56, 16384 * 28 * 28),
    "ui-tars-1.5": SmartResize(QWEN_FACTOR, 100 * 28 * 28, 16384 * 28 * 28),
}
DEFAULT_SMART_RESIZE = "ui-tars-1.5"
SPACES: tuple[str, ...] = ("pixels", "relative1000", "unit", "smart_resize")

# Which space each released model family writes its points in, matched against the hub id (or
# its cache folder, "models--org--name") in lower case; first match wins ("ui-tars-1.5" before the
# 1.0 models' "ui-tars"). Only the published weights: a model trained here from scratch answers
# in whatever its recipe taught it, whatever its architecture.
MODEL_COORDINATES: tuple[tuple[str, str], ...] = (
    ("ui-tars-1.5", "smart_resize:ui-tars-1.5"),
    ("/ui-tars-", "relative1000"),
    ("--ui-tars-", "relative1000"),
    ("qwen/qwen2.5-vl", "smart_resize:qwen2.5-vl"),
    ("qwen--qwen2.5-vl", "smart_resize:qwen2.5-vl"),
    ("qwen/qwen2-vl", "relative1000"),
    ("qwen--qwen2-vl", "relative1000"),
)


def smart_resize(
    height: int,
    width: int,
    factor: int = QWEN_FACTOR,
    min_pixels: int = 100 * 28 * 28,
    max_pixels: int = 16384 * 28 * 28,
) -> tuple[int, int]:
    """Qwen2-VL's ``smart_resize``: (height, width) rounded to multiples of ``factor`` with the
    area in [min_pixels, max_pixels] and the aspect ratio kept as well as that allows.

    The same arithmetic as ``qwen_vl_utils`` and ``ui_tars.action_parser`` (Python's ``round``,
    half to even), so the model's image size, and so its coordinates, agree with theirs.
    """
    if min(height, width) < 1:
        raise ValueError(f"smart_resize needs a positive size, got {width}x{height}")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio over 200: {width}x{height}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class CoordinateSpace:
    """One space: ``kind`` in :data:`SPACES`, and the resize settings for ``smart_resize``."""

    kind: str
    resize: SmartResize | None = None

    @property
    def name(self) -> str:
        if self.kind != "smart_resize":
            return self.kind
        for preset, settings in SMART_RESIZE_PRESETS.items():
            if settings == self.resize:
                return f"smart_resize:{preset}"
        return f"smart_resize(factor={self.resize.factor}, min={self.resize.min_pixels}, " + (
            f"max={self.resize.max_pixels})"
        )

    def extent(self, screen_size: tuple[int, int]) -> tuple[float, float]:
        """The numbers that span the screen's width and height in this space."""
        if self.kind == "pixels":
            return float(screen_size[0]), float(screen_size[1])
        if self.kind == "relative1000":
            return 1000.0, 1000.0
        if self.kind == "unit":
            return 1.0, 1.0
        w, h = self.resize.size(screen_size)
        return float(w), float(h)

    def to_pixels(self, x: float, y: float, screen_size: tuple[int, int]) -> tuple[int, int]:
        """The screen pixel holding point (x, y) of this space; ValueError when off-screen."""

        if self.kind == "pixels":
            return int(round(x)), int(round(y))
        width, height = screen_size
        ew, eh = self.extent(screen_size)
        if not (0 <= x <= ew and 0 <= y <= eh):
            raise ActionError(
                f"({_num(x)}, {_num(y)}) is off-screen: {self.name} coordinates on a "
                f"{width}x{height} screen run 0..{_num(ew)} across and 0..{_num(eh)} down"
            )
        # the far edge (1000, 1.0, the image width) is the last pixel, not one past it
        return min(int(math.floor(x * width / ew)), width - 1), min(
            int(math.floor(y * height / eh)), height - 1
        )

    def from_pixels(self, x: int, y: int, screen_size: tuple[int, int]) -> tuple[float, float]:
        """Pixel (x, y) in this space: a point inside that pixel, so that it maps back to it.

        Integer spaces take the first whole number in the pixel's span (exact both ways when
        the space has at least as many units as the screen has pixels); ``unit`` takes the
        pixel's centre.
        """
        if self.kind == "pixels":
            return x, y
        width, height = screen_size
        ew, eh = self.extent(screen_size)
        if self.kind == "unit":
            return (x + 0.5) / width, (y + 0.5) / height
        return (
            min(math.ceil(x * ew / width - 1e-9), int(ew)),
            min(math.ceil(y * eh / height - 1e-9), int(eh)),
        )


def coordinate_space(space: str | CoordinateSpace) -> CoordinateSpace:
    """The :class:`CoordinateSpace` a name stands for (``"smart_resize:qwen2.5-vl"``, ...)."""
    if isinstance(space, CoordinateSpace):
        return space
    if not isinstance(space, str):
        raise ValueError(f"coordinates must be a name or a CoordinateSpace, got {space!r}")
    kind, _, preset = space.partition(":")
    if kind == "smart_resize":
        preset = preset or DEFAULT_SMART_RESIZE
        if preset not in SMART_RESIZE_PRESETS:
            raise ValueError(
                f"unknown smart_resize preset {preset!r}; presets: {', '.join(SMART_RESIZE_PRESETS)}"
            )
        return CoordinateSpace("smart_resize", SMART_RESIZE_PRESETS[preset])
    if kind not in SPACES or preset:
        names = [*SPACES[:3], *(f"smart_resize:{p}" for p in SMART_RESIZE_PRESETS)]
        raise ValueError(f"coordinates must be one of {', '.join(names)}, got {space!r}")
    return CoordinateSpace(kind)


def coordinates_for_model(name: str) -> str | None:
    """The coordinate space a model family answers in, from its name or path; None if unknown."""
    lowered = name.lower().replace(" ", "")
    for needle, space in MODEL_COORDINATES:
        if needle in lowered:
            return space
    return None


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.4g}"


# -- single points -------------------------------------------------------------------------
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
