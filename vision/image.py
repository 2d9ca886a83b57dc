"""Image preprocessing for policies: resize / letterbox with the exact map back to screen pixels.

A policy sees a resized screenshot, but its clicks must land on the real screen. Every resize
here returns the image together with an :class:`ImageMap` that moves points and boxes both ways.

Coordinates are continuous, origin at the top-left corner of the top-left pixel: pixel ``(i, j)``
covers ``[i, i+1) × [j, j+1)`` and its centre is ``(i + 0.5, j + 0.5)`` — the convention of
:mod:`pixelrl.vision.rewards` and :mod:`pixelrl.envs.gui` (boxes ``[x0, y0, x1, y1]``, x1/y1 exclusive). The map is
affine per axis::

    image_x = screen_x * scale_x + pad_left        screen_x = (image_x - pad_left) / scale_x
    image_y = screen_y * scale_y + pad_top         screen_y = (image_y - pad_top) / scale_y

with ``scale_x = new_width / screen_width`` (the exact ratio after rounding the new size, so the
image's content edges map onto the screen's edges). :meth:`ImageMap.screen_pixel` turns a point in
the image into the screen pixel that holds it (floor of the mapped point, clamped onto the screen).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# CLIP / SigLIP-style statistics, for encoders trained with them.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


@dataclass(frozen=True)
class ImageMap:
    """The affine map between a W×H screen and the (width × height) image made from it."""

    screen_size: tuple[int, int]  # (W, H) of the screenshot
    image_size: tuple[int, int]  # (width, height) of the processed image
    scale_x: float
    scale_y: float
    pad_left: int = 0
    pad_top: int = 0

    def to_image(self, points) -> np.ndarray:
        """Screen points (…, 2) -> image points (continuous coordinates)."""
        p = np.asarray(points, dtype=np.float64)
        return np.stack(
            [p[..., 0] * self.scale_x + self.pad_left, p[..., 1] * self.scale_y + self.pad_top], -1
        )

    def to_screen(self, points) -> np.ndarray:
        """Image points (…, 2) -> screen points (continuous coordinates); inverse of :meth:`to_image`."""
        p = np.asarray(points, dtype=np.float64)
        return np.stack(
            [(p[..., 0] - self.pad_left) / self.scale_x, (p[..., 1] - self.pad_top) / self.scale_y],
            -1,
        )

    def box_to_image(self, boxes) -> np.ndarray:
        """Screen boxes (…, 4) ``[x0, y0, x1, y1]`` -> image boxes (continuous corners)."""
        b = np.asarray(boxes, dtype=np.float64)
        return np.concatenate([self.to_image(b[..., :2]), self.to_image(b[..., 2:])], -1)

    def box_to_screen(self, boxes) -> np.ndarray:
        """Image boxes (…, 4) -> screen boxes (continuous corners); inverse of :meth:`box_to_image`."""
        b = np.asarray(boxes, dtype=np.float64)
        return np.concatenate([self.to_screen(b[..., :2]), self.to_screen(b[..., 2:])], -1)

    def screen_pixel(self, image_points) -> np.ndarray:
        """The integer screen pixel (…, 2) holding each image point: floor of the mapped point,
        clamped onto the screen (a point in the letterbox padding goes to the nearest edge)."""
        s = np.floor(self.to_screen(image_points))
        w, h = self.screen_size
        return np.stack([np.clip(s[..., 0], 0, w - 1), np.clip(s[..., 1], 0, h - 1)], -1).astype(
            np.int64
        )

    def image_pixel(self, screen_points) -> np.ndarray:
        """The integer image pixel (…, 2) holding the centre of each screen pixel."""
        p = np.floor(np.asarray(screen_points, dtype=np.float64)) + 0.5
        i = np.floor(self.to_image(p))
        w, h = self.image_size
        return np.stack([np.clip(i[..., 0], 0, w - 1), np.clip(i[..., 1], 0, h - 1)], -1).astype(
            np.int64
        )


def _check_image(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image)
    if image.ndim not in (2, 3) or image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"image must be H×W or H×W×C with H, W > 0, got shape {image.shape}")
    return image


def _check_size(size: tuple[int, int]) -> tuple[int, int]:
    width, height = (int(v) for v in size)
    if width <= 0 or height <= 0:
        raise ValueError(f"target size must be (width, height) > 0, got {size}")
    return width, height


def _cv2_resize(image: np.ndarray, width: int, height: int) -> np.ndarray:
    import cv2

    h, w = image.shape[:2]
    # INTER_AREA averages when shrinking (no aliasing of thin GUI lines); linear when enlarging.
    interp = cv2.INTER_AREA if width < w or height < h else cv2.INTER_LINEAR
    out = cv2.resize(np.ascontiguousarray(image), (width, height), interpolation=interp)
    return out.reshape(height, width, *image.shape[2:])


def resize(image: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, ImageMap]:
    """Stretch ``image`` (H×W[×C]) to ``size = (width, height)``, ignoring the aspect ratio."""
    image = _check_image(image)
    width, height = _check_size(size)
    h, w = image.shape[:2]
    out = _cv2_resize(image, width, height)
    return out, ImageMap((w, h), (width, height), width / w, height / h)


def letterbox(
    image: np.ndarray, size: tuple[int, int], pad_value: int | float = 0
) -> tuple[np.ndarray, ImageMap]:
    """Fit ``image`` inside ``size = (width, height)`` keeping its aspect ratio, centred, the rest
    filled with ``pad_value``. The scale is ``min(width/W, height/H)``; the content is
    ``round(W·s) × round(H·s)`` pixels placed at ``((width - nw)//2, (height - nh)//2)``."""
    image = _check_image(image)
    width, height = _check_size(size)
    h, w = image.shape[:2]
    s = min(width / w, height / h)
    nw, nh = max(1, min(width, round(w * s))), max(1, min(height, round(h * s)))
    left, top = (width - nw) // 2, (height - nh) // 2
    out = np.full((height, width, *image.shape[2:]), pad_value, dtype=image.dtype)
    out[top : top + nh, left : left + nw] = _cv2_resize(image, nw, nh)
    return out, ImageMap((w, h), (width, height), nw / w, nh / h, left, top)


def normalize(
    image: np.ndarray,
    mean: tuple[float, ...] = IMAGENET_MEAN,
    std: tuple[float, ...] = IMAGENET_STD,
    channels_first: bool = True,
) -> np.ndarray:
    """uint8 H×W×C (or a batch N×H×W×C) -> float32 ``(x/255 - mean) / std``, C×H×W
    (N×C×H×W) when ``channels_first``."""
    x = np.asarray(image)
    if x.ndim < 3:
        raise ValueError(f"normalize needs H×W×C or N×H×W×C, got shape {x.shape}")
    x = x.astype(np.float32) / 255.0
    x = (x - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    return np.moveaxis(x, -1, -3) if channels_first else x


def denormalize(
    x: np.ndarray,
    mean: tuple[float, ...] = IMAGENET_MEAN,
    std: tuple[float, ...] = IMAGENET_STD,
    channels_first: bool = True,
) -> np.ndarray:
    """Inverse of :func:`normalize`: back to uint8 H×W×C (rounded, clipped to 0..255)."""
    x = np.asarray(x, dtype=np.float32)
    if channels_first:
        x = np.moveaxis(x, -3, -1)
    x = (x * np.asarray(std, np.float32) + np.asarray(mean, np.float32)) * 255.0
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)
