"""Sizes and colours of the emulated desktop, scaled to the screen and varied per episode.

A :class:`Theme` holds every metric a widget needs (font sizes, paddings, row height, title bar
and taskbar heights, icon size) derived from the screen size, so one layout code path works from
320×240 to 1920×1080, and a :class:`Palette` drawn from the episode's random generator so that
colours vary between episodes (a pixel policy must not key on one colour).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pixelrl.envs.desktop.render import Color, line_height

MIN_SCREEN = (320, 240)
MAX_SCREEN = (1920, 1080)


@dataclass(frozen=True)
class Palette:
    name: str
    wallpaper: tuple[Color, Color]  # top, bottom of the gradient
    window: Color
    title_active: Color
    title_inactive: Color
    title_text: Color
    text: Color
    muted: Color
    accent: Color
    accent_text: Color
    button: Color
    border: Color
    field: Color
    selection: Color
    menu: Color
    taskbar: Color
    taskbar_text: Color
    icon_label: Color


PALETTES: tuple[Palette, ...] = (
    Palette(
        "sky",
        ((58, 110, 165), (22, 52, 94)),
        (240, 240, 242),
        (44, 98, 170),
        (128, 142, 160),
        (255, 255, 255),
        (25, 25, 30),
        (120, 120, 128),
        (30, 110, 220),
        (255, 255, 255),
        (225, 227, 232),
        (138, 142, 150),
        (255, 255, 255),
        (170, 205, 250),
        (250, 250, 252),
        (30, 34, 42),
        (235, 235, 240),
        (255, 255, 255),
    ),
    Palette(
        "forest",
        ((70, 120, 80), (28, 60, 40)),
        (246, 244, 236),
        (52, 110, 70),
        (140, 150, 138),
        (255, 255, 255),
        (30, 32, 28),
        (118, 122, 112),
        (36, 140, 80),
        (255, 255, 255),
        (228, 230, 220),
        (140, 146, 132),
        (255, 255, 250),
        (180, 228, 190),
        (252, 252, 246),
        (36, 44, 36),
        (236, 240, 230),
        (255, 255, 240),
    ),
    Palette(
        "dusk",
        ((110, 80, 140), (40, 30, 70)),
        (236, 234, 240),
        (96, 64, 140),
        (146, 136, 160),
        (255, 255, 255),
        (28, 24, 36),
        (120, 114, 130),
        (140, 70, 200),
        (255, 255, 255),
        (222, 218, 230),
        (140, 134, 152),
        (255, 255, 255),
        (214, 190, 245),
        (248, 246, 252),
        (34, 28, 46),
        (240, 236, 246),
        (255, 255, 255),
    ),
    Palette(
        "graphite",
        ((90, 96, 104), (40, 42, 48)),
        (232, 233, 235),
        (60, 64, 72),
        (150, 152, 156),
        (250, 250, 250),
        (20, 20, 22),
        (116, 118, 122),
        (220, 110, 30),
        (255, 255, 255),
        (214, 216, 220),
        (128, 130, 136),
        (255, 255, 255),
        (250, 210, 170),
        (246, 246, 248),
        (24, 24, 28),
        (230, 230, 232),
        (255, 255, 255),
    ),
    Palette(
        "sand",
        ((200, 170, 120), (120, 90, 60)),
        (250, 247, 240),
        (160, 100, 50),
        (170, 156, 140),
        (255, 255, 255),
        (40, 30, 20),
        (130, 118, 104),
        (190, 90, 40),
        (255, 255, 255),
        (236, 228, 214),
        (150, 136, 118),
        (255, 255, 255),
        (245, 210, 180),
        (255, 252, 246),
        (60, 44, 30),
        (246, 238, 226),
        (255, 255, 255),
    ),
)


@dataclass(frozen=True)
class Theme:
    """Screen-scaled metrics (pixels) and the episode's palette."""

    width: int
    height: int
    scale: float
    font_size: int
    title_size: int
    pad: int  # inner padding of boxes
    gap: int  # space between widgets
    row_height: int  # height of a one-line widget (button, field, checkbox)
    title_height: int
    taskbar_height: int
    icon_size: int
    palette: Palette

    @property
    def line_height(self) -> int:
        return line_height(self.font_size)

    @property
    def work_area(self) -> tuple[int, int, int, int]:
        """Where windows and icons live: the screen above the taskbar."""
        return (0, 0, self.width, self.height - self.taskbar_height)


def check_screen_size(screen_size: tuple[int, int]) -> tuple[int, int]:
    """``screen_size`` as (W, H) ints, or ValueError naming the allowed range."""
    try:
        width, height = (int(v) for v in screen_size)
    except (TypeError, ValueError):
        raise ValueError(f"screen_size must be (width, height), got {screen_size!r}") from None
    if not (MIN_SCREEN[0] <= width <= MAX_SCREEN[0] and MIN_SCREEN[1] <= height <= MAX_SCREEN[1]):
        raise ValueError(
            f"screen_size {width}x{height} is outside the supported range "
            f"{MIN_SCREEN[0]}x{MIN_SCREEN[1]} .. {MAX_SCREEN[0]}x{MAX_SCREEN[1]}"
        )
    return width, height


def make_theme(screen_size: tuple[int, int], rng: np.random.Generator | None = None) -> Theme:
    """The theme of a W×H screen; with ``rng`` the palette and font size vary a little."""
    width, height = check_screen_size(screen_size)
    jitter = int(rng.integers(-1, 2)) if rng is not None else 0
    palette = int(rng.integers(len(PALETTES))) if rng is not None else 0
    return _theme(width, height, jitter, palette)


@lru_cache(maxsize=256)
def _theme(width: int, height: int, jitter: int, palette: int) -> Theme:
    # Cached: a reset asks for one of a few themes per screen size (a Theme is frozen).
    scale = min(max(min(width / 1280, height / 800), 0.7), 1.4)
    font_size = max(9, round(13 * scale) + jitter)
    pad = max(3, round(6 * scale))
    lh = line_height(font_size)
    return Theme(
        width=width,
        height=height,
        scale=scale,
        font_size=font_size,
        title_size=font_size,
        pad=pad,
        gap=max(3, round(8 * scale)),
        row_height=lh + max(4, round(8 * scale)),
        title_height=lh + max(4, round(10 * scale)),
        taskbar_height=lh + max(6, round(12 * scale)),
        icon_size=max(20, round(40 * scale)),
        palette=PALETTES[palette],
    )
