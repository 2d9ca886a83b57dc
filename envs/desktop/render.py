"""Drawing onto one persistent numpy frame: fills, borders, anti-aliased text, shapes and icons.

The emulated desktop keeps a single ``H×W×3 uint8`` frame and repaints only the rectangles that
changed (see ``widgets.Desktop.render``). Everything here draws through a :class:`Canvas` whose
*clip* rectangle bounds every write, so a widget repaints exactly its share of a dirty region.

Conventions: rectangles are ``(x0, y0, x1, y1)`` with x1/y1 exclusive; colours are RGB tuples.
Text and shapes are rendered once by Pillow into alpha masks and cached (keyed by text, size and
weight), so steady-state drawing is numpy slicing and one integer blend per glyph run.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from pixelrl.assets import FONTS_DIR

Rect = tuple[int, int, int, int]
Color = tuple[int, int, int]

FONT_FILES = {False: FONTS_DIR / "DejaVuSans.ttf", True: FONTS_DIR / "DejaVuSans-Bold.ttf"}


@lru_cache(maxsize=64)
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    """The DejaVu Sans face at ``size`` pixels (bold or regular)."""
    return ImageFont.truetype(str(FONT_FILES[bool(bold)]), int(size))


@lru_cache(maxsize=64)
def line_metrics(size: int, bold: bool = False) -> tuple[int, int]:
    """(ascent, descent) of the face: every text line of a size has the same height."""
    return font(size, bold).getmetrics()


@lru_cache(maxsize=8192)
def text_mask(text: str, size: int, bold: bool = False) -> np.ndarray:
    """The alpha mask (uint16, 0..256) of one line of text; its height is the font's line height.

    The mask starts at the pen origin (x=0, top of the ascent), so text placed at (x, y) covers
    ``[x, x + text_width) × [y, y + line_height)``.
    """
    f = font(size, bold)
    ascent, descent = line_metrics(size, bold)
    # text_width is cached and mostly asked first (fit_text): one Pillow layout less per new text
    width = max(1, text_width(text, size, bold) + 1)
    img = Image.new("L", (width, ascent + descent), 0)
    ImageDraw.Draw(img).text((0, 0), text, fill=255, font=f)
    mask = np.asarray(img, dtype=np.uint16)
    # 0..255 -> 0..256 so that a fully covered pixel takes exactly the text colour after >> 8.
    return mask + (mask >> 7)


@lru_cache(maxsize=8192)
def text_width(text: str, size: int, bold: bool = False) -> int:
    """Advance width of ``text`` in pixels (what :func:`text_mask` covers, less the slack pixel)."""
    return int(np.ceil(font(size, bold).getlength(text)))


def line_height(size: int, bold: bool = False) -> int:
    ascent, descent = line_metrics(size, bold)
    return ascent + descent


def fit_text(text: str, size: int, max_width: int, bold: bool = False) -> str:
    """``text`` cut with an ellipsis so that it fits in ``max_width`` pixels."""
    if text_width(text, size, bold) <= max_width:
        return text
    while text and text_width(text + "...", size, bold) > max_width:
        text = text[:-1]
    return text + "..." if text else ""


@lru_cache(maxsize=1024)
def shape_mask(kind: str, width: int, height: int) -> np.ndarray:
    """Alpha mask (uint16, 0..256) of a simple shape drawn 4× supersampled for smooth edges.

    Kinds: ``disc``, ``ring``, ``check`` (a tick), ``cross`` (an ×), ``down``/``right``
    (filled triangles, for dropdown and submenu arrows).
    """
    s = 4
    w, h = width * s, height * s
    img = Image.new("L", (w, h), 0)
    d = ImageDraw.Draw(img)
    if kind == "disc":
        d.ellipse((0, 0, w - 1, h - 1), fill=255)
    elif kind == "ring":
        t = max(s, w // 10)
        d.ellipse((0, 0, w - 1, h - 1), fill=255)
        d.ellipse((t, t, w - 1 - t, h - 1 - t), fill=0)
    elif kind == "check":
        t = max(2 * s, w // 6)
        d.line(
            [(w * 0.18, h * 0.52), (w * 0.42, h * 0.76), (w * 0.84, h * 0.24)], fill=255, width=t
        )
    elif kind == "cross":
        t = max(2 * s, w // 7)
        d.line([(w * 0.2, h * 0.2), (w * 0.8, h * 0.8)], fill=255, width=t)
        d.line([(w * 0.8, h * 0.2), (w * 0.2, h * 0.8)], fill=255, width=t)
    elif kind == "down":
        d.polygon([(0, h * 0.2), (w - 1, h * 0.2), (w / 2, h * 0.8)], fill=255)
    elif kind == "right":
        d.polygon([(w * 0.2, 0), (w * 0.8, h / 2), (w * 0.2, h - 1)], fill=255)
    else:
        raise ValueError(f"unknown shape {kind!r}")
    mask = np.asarray(img.resize((width, height), Image.Resampling.BOX), dtype=np.uint16)
    return mask + (mask >> 7)


ICON_KINDS = ("file", "folder", "trash", "app", "image")


@lru_cache(maxsize=256)
def icon_rgba(kind: str, size: int, color: Color) -> tuple[np.ndarray, np.ndarray]:
    """(rgb uint16 S×S×3, alpha uint16 S×S×1 in 0..256) of a desktop icon drawn with primitives.

    ``color`` tints the icon (folder body, file stripe, app tile). Drawn 4× and downsampled.
    """
    if kind not in ICON_KINDS:
        raise ValueError(f"unknown icon kind {kind!r}; kinds: {', '.join(ICON_KINDS)}")
    s = 4
    n = size * s
    img = Image.new("RGBA", (n, n), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    dark = tuple(int(c * 0.6) for c in color)
    outline = (60, 60, 60, 255)
    lw = max(s, n // 28)
    if kind == "folder":
        d.rectangle((n * 0.08, n * 0.18, n * 0.45, n * 0.32), fill=dark + (255,))
        d.rectangle(
            (n * 0.08, n * 0.28, n * 0.92, n * 0.82), fill=color + (255,), outline=outline, width=lw
        )
    elif kind in ("file", "image"):
        d.polygon(
            [
                (n * 0.2, n * 0.08),
                (n * 0.62, n * 0.08),
                (n * 0.8, n * 0.26),
                (n * 0.8, n * 0.92),
                (n * 0.2, n * 0.92),
            ],
            fill=(250, 250, 250, 255),
            outline=outline,
            width=lw,
        )
        if kind == "file":
            for i in range(4):
                y = n * (0.38 + 0.12 * i)
                d.rectangle((n * 0.3, y, n * 0.7, y + lw * 1.5), fill=color + (255,))
        else:
            d.rectangle((n * 0.28, n * 0.4, n * 0.72, n * 0.8), fill=color + (255,))
            d.ellipse((n * 0.34, n * 0.45, n * 0.46, n * 0.57), fill=(255, 240, 120, 255))
    elif kind == "trash":
        d.rectangle((n * 0.2, n * 0.16, n * 0.8, n * 0.24), fill=(120, 120, 120, 255))
        d.rectangle((n * 0.4, n * 0.09, n * 0.6, n * 0.16), fill=(120, 120, 120, 255))
        d.polygon(
            [(n * 0.25, n * 0.26), (n * 0.75, n * 0.26), (n * 0.7, n * 0.92), (n * 0.3, n * 0.92)],
            fill=(170, 175, 180, 255),
            outline=outline,
            width=lw,
        )
        for fx in (0.4, 0.5, 0.6):
            d.line([(n * fx, n * 0.35), (n * fx, n * 0.84)], fill=(110, 110, 110, 255), width=lw)
    else:  # app
        d.rounded_rectangle(
            (n * 0.1, n * 0.1, n * 0.9, n * 0.9),
            radius=n // 6,
            fill=color + (255,),
            outline=outline,
            width=lw,
        )
        d.ellipse((n * 0.32, n * 0.32, n * 0.68, n * 0.68), fill=(255, 255, 255, 255))
    small = np.asarray(img.resize((size, size), Image.Resampling.BOX), dtype=np.uint16)
    alpha = small[..., 3:4]
    return small[..., :3], alpha + (alpha >> 7)


@lru_cache(maxsize=16)
def gradient(width: int, height: int, top: Color, bottom: Color) -> np.ndarray:
    """A vertical gradient H×W×3 uint8 (the desktop wallpaper), computed once per size."""
    t = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None]
    col = (1 - t) * np.array(top, np.float32) + t * np.array(bottom, np.float32)
    img = np.repeat(col[:, None, :], width, axis=1)
    img.setflags(write=False)
    return np.round(img).astype(np.uint8)


def intersect(a: Rect, b: Rect) -> Rect | None:
    """The overlap of two rectangles, or None when they do not overlap."""
    # Conditional expressions, not max()/min(): this runs ~100k times a second of stepping, and
    # a builtin call costs more than the comparison (same result).
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    x0 = ax0 if ax0 > bx0 else bx0
    x1 = ax1 if ax1 < bx1 else bx1
    if x0 >= x1:
        return None
    y0 = ay0 if ay0 > by0 else by0
    y1 = ay1 if ay1 < by1 else by1
    return (x0, y0, x1, y1) if y0 < y1 else None


def contains(rect: Rect, x: int, y: int) -> bool:
    """Whether pixel (x, y) lies in ``rect``."""
    return rect[0] <= x < rect[2] and rect[1] <= y < rect[3]


def subtract(rect: Rect, holes: list[Rect]) -> list[Rect]:
    """The parts of ``rect`` outside every hole, as disjoint rectangles (none: all covered)."""
    parts = [rect]
    for hx0, hy0, hx1, hy1 in holes:
        kept = []
        for part in parts:
            x0, y0, x1, y1 = part
            if hx0 >= x1 or x0 >= hx1 or hy0 >= y1 or y0 >= hy1 or hx0 >= hx1 or hy0 >= hy1:
                kept.append(part)  # the hole misses this part (or is empty)
                continue
            # the bands above and below the hole, then the pieces left and right of it
            if y0 < hy0:
                kept.append((x0, y0, x1, hy0))
            if hy1 < y1:
                kept.append((x0, hy1, x1, y1))
            my0, my1 = max(y0, hy0), min(y1, hy1)
            if x0 < hx0:
                kept.append((x0, my0, hx0, my1))
            if hx1 < x1:
                kept.append((hx1, my0, x1, my1))
        parts = kept
    return parts


def union(a: Rect | None, b: Rect) -> Rect:
    if a is None:
        return b
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


@lru_cache(maxsize=256)
def color_row(color: Color, width: int = 1920) -> np.ndarray:
    """``color`` repeated ``width`` times as one flat uint8 row (R, G, B, R, G, B, ...).

    Filling a rectangle copies slices of this row into each frame row: numpy does that as one
    memcpy per row, ~15× faster than broadcasting a 3-vector into an H×W×3 slice.
    """
    row = np.tile(np.asarray(color, dtype=np.uint8), width)
    row.setflags(write=False)
    return row


def _composite(alpha: np.ndarray, fg: Color | np.ndarray, bg: np.ndarray) -> np.ndarray:
    """fg over bg through alpha (0..256), as uint8."""
    a = alpha[..., None] if alpha.ndim == 2 else alpha
    bg = bg.astype(np.int32)
    return (bg + (((np.asarray(fg, dtype=np.int32) - bg) * a) >> 8)).astype(np.uint8)


@lru_cache(maxsize=256)
def blend_table(color: Color, bg: Color) -> np.ndarray:
    """(257, 3) uint8: ``color`` over a solid ``bg`` through each alpha 0..256 (:func:`_composite`
    of every alpha at once), so that compositing a mask over a solid colour is one lookup."""
    alpha = np.arange(257, dtype=np.uint16)[None, :]
    return _composite(alpha, color, np.broadcast_to(np.asarray(bg, np.int32), (1, 257, 3)))[0]


@lru_cache(maxsize=16384)
def text_patch(text: str, size: int, bold: bool, color: Color, bg: Color) -> np.ndarray:
    """The pixels of ``text`` drawn over a solid ``bg`` (cached: drawing it is then a copy)."""
    # the table's rows picked by the mask: _composite(mask, color, bg) pixel for pixel at half
    # its cost (a new text is drawn about once a step: ~2,500 distinct ones in 20,000 steps)
    patch = np.take(blend_table(color, bg), text_mask(text, size, bold), axis=0)
    patch.setflags(write=False)
    return patch


@lru_cache(maxsize=256)
def icon_patch(kind: str, size: int, color: Color, bg: Color) -> np.ndarray:
    """A desktop icon drawn over a solid ``bg`` (cached: what blending it there gives)."""
    rgb, alpha = icon_rgba(kind, size, color)
    patch = _composite(alpha, rgb, np.broadcast_to(np.asarray(bg, np.int32), rgb.shape))
    patch.setflags(write=False)
    return patch


@lru_cache(maxsize=8192)
def gradient_patch(
    kind: str, key: tuple, color: Color, wallpaper: tuple[int, int, Color, Color], y: int
) -> np.ndarray:
    """An icon (``kind="icon"``, key (icon kind, size)) or a text (``kind="text"``, key (text,
    size, bold)) drawn over rows y.. of a vertical-gradient wallpaper (same in every column, so
    the patch does not depend on x). Cached: desktop icons sit on a few grid rows."""
    width, height, top, bottom = wallpaper
    if kind == "icon":
        rgb, alpha = icon_rgba(key[0], key[1], color)
        fg: Color | np.ndarray = rgb
    elif kind == "label":  # text with a one-pixel dark shadow, readable on any wallpaper
        mask = text_mask(*key)
        alpha = np.zeros((mask.shape[0] + 1, mask.shape[1] + 1), np.uint16)
        alpha[1:, 1:] = mask
        fg = (0, 0, 0)
    else:
        alpha, fg = text_mask(*key), color
    h, w = alpha.shape[:2]
    column = gradient(1, height, top, bottom)[max(0, y) : max(0, y) + h, 0]
    bg = np.zeros((h, w, 3), np.int32)
    bg[: len(column)] = column[:, None, :]
    patch = _composite(alpha, fg, bg)
    if kind == "label":
        patch[:-1, :-1] = _composite(alpha[1:, 1:], color, patch[:-1, :-1])
    patch.setflags(write=False)
    return patch


@lru_cache(maxsize=1024)
def shape_patch(
    layers: tuple[tuple[str, int, Color], ...], size: tuple[int, int], bg: Color
) -> np.ndarray:
    """Shapes drawn in order over a solid ``bg`` (cached): each layer is (kind, inset, color),
    the shape filling ``size`` less ``inset`` pixels on every side."""
    w, h = size
    patch = np.empty((h, w, 3), np.uint8)
    patch[...] = bg
    for kind, inset, color in layers:
        mask = shape_mask(kind, w - 2 * inset, h - 2 * inset)
        region = patch[inset : h - inset, inset : w - inset]
        region[...] = _composite(mask, color, region)
    patch.setflags(write=False)
    return patch


SMALL_BOX = 128 * 128  # pixels: a box this small is cheaper written whole twice than by edges


class Canvas:
    """Draws onto ``frame`` (H×W×3 uint8), never outside ``clip``."""

    def __init__(self, frame: np.ndarray) -> None:
        self.frame = frame
        self.height, self.width = frame.shape[:2]
        self.rows = frame.reshape(self.height, self.width * 3)  # a view: one flat row per line
        self.clip: Rect = (0, 0, self.width, self.height)

    def set_clip(self, rect: Rect) -> None:
        r = intersect(rect, (0, 0, self.width, self.height))
        self.clip = r if r is not None else (0, 0, 0, 0)

    def copy_from(self, image: np.ndarray, rect: Rect) -> None:
        """Copy the same-placed pixels of a full-screen ``image`` into ``rect`` (clipped)."""
        r = intersect(rect, self.clip)
        if r:
            x0, y0, x1, y1 = r
            if x0 == 0 and x1 == self.width:  # whole rows: one contiguous copy
                np.copyto(self.frame[y0:y1], image[y0:y1])
            else:
                self.frame[y0:y1, x0:x1] = image[y0:y1, x0:x1]

    def fill(self, rect: Rect, color: Color) -> None:
        # intersect() inlined: the most frequent drawing call (~30 a step)
        x0, y0, x1, y1 = rect
        cx0, cy0, cx1, cy1 = self.clip
        if x0 < cx0:
            x0 = cx0
        if x1 > cx1:
            x1 = cx1
        if y0 < cy0:
            y0 = cy0
        if y1 > cy1:
            y1 = cy1
        if x0 < x1 and y0 < y1:
            self.rows[y0:y1, 3 * x0 : 3 * x1] = color_row(color)[: 3 * (x1 - x0)]

    def border(self, rect: Rect, color: Color, width: int = 1) -> None:
        x0, y0, x1, y1 = rect
        cx0, cy0, cx1, cy1 = self.clip
        # the four edges' bounding box (wider than rect only when rect is thinner than width)
        bx0, bx1 = min(x0, x1 - width), max(x1, x0 + width)
        by0, by1 = min(y0, y1 - width), max(y1, y0 + width)
        if bx0 >= cx1 or bx1 <= cx0 or by0 >= cy1 or by1 <= cy0:
            return  # no edge meets the clip (a repaint elsewhere in the window)
        if x0 + width <= cx0 and cx1 <= x1 - width and y0 + width <= cy0 and cy1 <= y1 - width:
            return  # the clip lies inside the edges (a repaint of a widget in the window)
        fill = self.fill
        fill((x0, y0, x1, y0 + width), color)
        fill((x0, y1 - width, x1, y1), color)
        fill((x0, y0, x0 + width, y1), color)
        fill((x1 - width, y0, x1, y1), color)

    def box(self, rect: Rect, fill: Color, outline: Color | None = None, width: int = 1) -> None:
        if outline is None:
            self.fill(rect, fill)
            return
        x0, y0, x1, y1 = rect
        w, h = x1 - x0, y1 - y0
        if w >= 2 * width and h >= 2 * width and w * h <= SMALL_BOX:
            # the outline's colour everywhere, then the inside: the same pixels in 2 numpy
            # writes instead of 5 (for a widget-sized box; a window's would be written twice)
            self.fill(rect, outline)
            self.fill((x0 + width, y0 + width, x1 - width, y1 - width), fill)
        else:
            self.fill(rect, fill)
            self.border(rect, outline, width)

    def paste(self, x: int, y: int, patch: np.ndarray) -> None:
        """Copy an h×w×3 ``patch`` to (x, y), clipped."""
        h, w = patch.shape[:2]
        # intersect((x, y, x + w, y + h), self.clip), inlined (a paste per text and icon)
        x0, y0, x1, y1 = self.clip
        if x > x0:
            x0 = x
        if y > y0:
            y0 = y
        if x + w < x1:
            x1 = x + w
        if y + h < y1:
            y1 = y + h
        if x0 < x1 and y0 < y1:
            self.frame[y0:y1, x0:x1] = patch[y0 - y : y1 - y, x0 - x : x1 - x]

    def blend(self, x: int, y: int, alpha: np.ndarray, color: Color | np.ndarray) -> None:
        """Blend ``color`` (RGB, or an H×W×3 array) through ``alpha`` (0..256) at (x, y)."""
        h, w = alpha.shape[:2]
        r = intersect((x, y, x + w, y + h), self.clip)
        if not r:
            return
        x0, y0, x1, y1 = r
        a = alpha[y0 - y : y1 - y, x0 - x : x1 - x]
        dst = self.frame[y0:y1, x0:x1]
        fg = color[y0 - y : y1 - y, x0 - x : x1 - x] if isinstance(color, np.ndarray) else color
        dst[...] = _composite(a, fg, dst)

    def text(
        self,
        x: int,
        y: int,
        text: str,
        size: int,
        color: Color,
        bold: bool = False,
        bg: Color | None = None,
    ) -> None:
        """One line of text with its top-left at (x, y).

        Pass ``bg`` when the text lies on a solid colour: the composited text is cached and
        drawing it is a copy. Without ``bg`` it is blended with whatever is below.
        """
        if not text:
            return
        if bg is not None:
            self.paste(x, y, text_patch(text, size, bold, color, bg))
        else:
            self.blend(x, y, text_mask(text, size, bold), color)

    def shape(self, kind: str, rect: Rect, color: Color, bg: Color | None = None) -> None:
        """A shape filling ``rect``; with a solid ``bg`` under it, a cached patch is copied."""
        x0, y0, x1, y1 = rect
        if bg is not None:
            self.paste(x0, y0, shape_patch(((kind, 0, color),), (x1 - x0, y1 - y0), bg))
        else:
            self.blend(x0, y0, shape_mask(kind, x1 - x0, y1 - y0), color)

    def shapes(self, layers: tuple[tuple[str, int, Color], ...], rect: Rect, bg: Color) -> None:
        """Several shapes over a solid ``bg`` in ``rect`` (see :func:`shape_patch`)."""
        x0, y0, x1, y1 = rect
        self.paste(x0, y0, shape_patch(layers, (x1 - x0, y1 - y0), bg))

    def icon(
        self, kind: str, x: int, y: int, size: int, color: Color, bg: Color | None = None
    ) -> None:
        """A desktop icon at (x, y); over a solid ``bg`` (a selected icon's) a cached patch."""
        if bg is not None:
            self.paste(x, y, icon_patch(kind, size, color, bg))
        else:
            rgb, alpha = icon_rgba(kind, size, color)
            self.blend(x, y, alpha, rgb)

    def on_wallpaper(
        self, kind: str, key: tuple, x: int, y: int, color: Color, wallpaper: tuple
    ) -> None:
        """An icon or text drawn straight on the gradient wallpaper (see :func:`gradient_patch`)."""
        self.paste(x, y, gradient_patch(kind, key, color, wallpaper, y))
