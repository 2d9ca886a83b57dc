"""The top-down map: occupancy, the agent's path, the goal(s), the agent; as an image or a PNG.

Colours: navigable floor white, non-navigable floor light grey, obstacles dark grey, goals red
(ObjectNav view points pink), the walked path blue, the shortest path from the start orange
(under the walked one, as habitat's top-down map draws it), the start a purple ring, the agent
green with a heading tick.
Image rows run along +z and columns along +x (the grid's layout), ``scale`` pixels per cell.
"""

from __future__ import annotations

import math
import os

import numpy as np

from pixelrl.envs.nav.navgrid import NavGrid

# What each colour means (RGB), for legends drawn next to the map.
COLORS = {
    "navigable floor": (255, 255, 255),
    "floor the agent cannot stand on": (200, 200, 200),
    "obstacle / outside": (60, 60, 60),
    "start": (150, 40, 200),
    "shortest path": (245, 150, 0),
    "walked path": (40, 90, 230),
    "goal": (220, 30, 30),
    "ObjectNav view point": (255, 170, 200),
    "agent (at the end), heading": (30, 170, 60),
}


def topdown_map(
    grid: NavGrid,
    path: np.ndarray | None = None,
    goals: np.ndarray | None = None,
    agent: tuple[np.ndarray, float] | None = None,
    view_points: np.ndarray | None = None,
    scale: int = 4,
    start: np.ndarray | None = None,
    shortest: np.ndarray | None = None,
) -> np.ndarray:
    """RGB image ``(rows*scale, cols*scale, 3)`` uint8 of the grid with overlays (a multi-storey
    grid: its levels one below the other, ground floor on top): ``path`` the walked points,
    ``shortest`` the shortest path's, ``start`` the episode's start."""
    import cv2

    img = np.full((grid.rows, grid.cols, 3), COLORS["obstacle / outside"], np.uint8)
    img[np.isfinite(grid.floor) & ~grid.occupied] = COLORS["floor the agent cannot stand on"]
    img[grid.navigable] = COLORS["navigable floor"]
    img = np.repeat(np.repeat(img, scale, 0), scale, 1)

    def level(points: np.ndarray) -> np.ndarray:
        """Which level's picture a point is drawn on (a multi-storey grid stacks them)."""
        p = np.asarray(points, float).reshape(-1, 3)
        return grid.levels_of(p) if hasattr(grid, "levels_of") else np.zeros(len(p), np.int64)

    def px(points: np.ndarray) -> np.ndarray:
        p = np.asarray(points, float).reshape(-1, 3)
        x = (p[:, 0] - grid.origin[0]) / grid.cell * scale
        y = (p[:, 2] - grid.origin[1]) / grid.cell * scale
        y = y + level(p) * getattr(grid, "level_rows", 0) * scale
        return np.stack([x, y], 1).round().astype(np.int32)

    if view_points is not None and len(view_points):
        for x, y in px(view_points):
            cv2.circle(
                img, (int(x), int(y)), max(1, scale // 2), COLORS["ObjectNav view point"], -1
            )

    def polyline(points: np.ndarray | None, colour: tuple[int, int, int], width: int) -> None:
        if points is None or len(points) < 2:
            return
        # One polyline per stretch on one level (stairs hand the path to the next picture).
        pieces = np.split(px(points), np.flatnonzero(np.diff(level(points))) + 1)
        cv2.polylines(img, pieces, False, colour, width, cv2.LINE_AA)

    # The shortest path wider and underneath: where the agent kept to it, both show.
    polyline(shortest, COLORS["shortest path"], max(2, scale))
    polyline(path, COLORS["walked path"], max(2, scale // 2 + 1))
    if goals is not None:
        for x, y in px(goals):
            cv2.circle(img, (int(x), int(y)), 2 * scale, COLORS["goal"], -1, cv2.LINE_AA)
    if agent is not None:
        (pos, yaw) = agent
        (x, y) = px(pos)[0]
        r = int(2 * scale)
        green = COLORS["agent (at the end), heading"]
        cv2.circle(img, (int(x), int(y)), r, green, -1, cv2.LINE_AA)
        tip = (int(x - 3 * r * math.sin(yaw)), int(y - 3 * r * math.cos(yaw)))
        cv2.line(img, (int(x), int(y)), tip, green, max(1, scale // 2), cv2.LINE_AA)
    if start is not None:  # last, a ring wider than the agent: both show at the start
        (x, y) = px(start)[0]
        cv2.circle(img, (int(x), int(y)), 3 * scale, COLORS["start"], max(2, scale // 2 + 1),
                   cv2.LINE_AA)  # fmt: skip
    return img


def save_topdown_png(path: str | os.PathLike, grid: NavGrid, **kwargs) -> np.ndarray:
    """Render :func:`topdown_map` and write it as PNG; returns the image."""
    from PIL import Image

    img = topdown_map(grid, **kwargs)
    Image.fromarray(img).save(os.fspath(path))
    return img
