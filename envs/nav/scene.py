"""The scene: a triangle soup with, per face, a colour, an optional texture and a semantic instance.

Everything the simulator needs from a scene lives here as flat numpy arrays so that rendering and
navigation are vectorised gathers: ``triangles[f]`` is face ``f``'s three vertices (y up, metres),
``face_instance[f]`` its semantic instance id (0 = unlabelled) and ``instances[id]`` tells that
instance's category and bounding box. ObjectNav goals are instances whose category is in
``OBJECTNAV_CATEGORIES`` (habitat's MP3D/HM3D names).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# habitat ObjectNav goal categories (the HM3D six first, then more MP3D ones).
OBJECTNAV_CATEGORIES: tuple[str, ...] = (
    "chair",
    "bed",
    "plant",
    "toilet",
    "tv_monitor",
    "sofa",
    "table",
    "cabinet",
    "sink",
    "bathtub",
    "counter",
    "stool",
)
# Structure categories: labelled, but never goals.
STRUCTURE_CATEGORIES: tuple[str, ...] = ("wall", "floor", "ceiling", "door_frame")


@dataclass
class ObjectInstance:
    """One semantic instance: ``category`` name and its axis-aligned box ``[min, max]`` (xyz)."""

    instance_id: int
    category: str
    aabb_min: np.ndarray
    aabb_max: np.ndarray

    @property
    def center(self) -> np.ndarray:
        return (self.aabb_min + self.aabb_max) / 2


@dataclass
class Scene:
    """A renderable, navigable scene.

    Conventions: y up, metres; faces are triangles ``(F, 3, 3)`` float32. ``face_uv`` ``(F, 3, 2)``
    and ``face_texture`` ``(F,)`` (index into ``textures`` ``(T, S, S, 3)`` uint8, -1 = flat colour)
    give texture lookups, repeated outside [0, 1). ``face_color`` ``(F, 3)`` uint8 tints the
    texture (or is the colour). ``floor_height`` is the walkable floor level, when known;
    ``floor_levels``, the floor height of each storey of a multi-storey scene (two or more make
    the navigability grid one level per storey, joined by stairs and ramps: ``levels``).
    """

    triangles: np.ndarray
    face_color: np.ndarray
    face_instance: np.ndarray
    instances: dict[int, ObjectInstance] = field(default_factory=dict)
    face_uv: np.ndarray | None = None
    face_texture: np.ndarray | None = None
    textures: np.ndarray | None = None
    floor_height: float | None = None
    name: str = "scene"
    floor_levels: tuple[float, ...] | None = None
    # The procedural generator's rooms and doors (an ``apartment.ApartmentLayout``); None for
    # scenes loaded from files.
    layout: object | None = None

    def __post_init__(self) -> None:
        self.triangles = np.ascontiguousarray(self.triangles, dtype=np.float32)
        n = len(self.triangles)
        if self.triangles.ndim != 3 or self.triangles.shape[1:] != (3, 3):
            raise ValueError(
                f"scene {self.name!r}: triangles must be (F, 3, 3), got {self.triangles.shape}"
            )
        self.face_color = np.asarray(self.face_color, dtype=np.uint8).reshape(n, 3)
        self.face_instance = np.asarray(self.face_instance, dtype=np.int32).reshape(n)
        if self.face_texture is None:
            self.face_texture = np.full(n, -1, dtype=np.int32)
        if self.face_uv is None:
            self.face_uv = np.zeros((n, 3, 2), dtype=np.float32)
        self.face_texture = np.asarray(self.face_texture, dtype=np.int32).reshape(n)
        self.face_uv = np.asarray(self.face_uv, dtype=np.float32).reshape(n, 3, 2)
        if self.floor_height is None:
            self.floor_height = estimate_floor_height(self.triangles)

    @property
    def num_faces(self) -> int:
        return len(self.triangles)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        flat = self.triangles.reshape(-1, 3)
        return flat.min(axis=0), flat.max(axis=0)

    def goal_instances(self, category: str | None = None) -> list[ObjectInstance]:
        """Instances that can be ObjectNav goals (optionally of one category), by id."""
        return [
            inst
            for _, inst in sorted(self.instances.items())
            if inst.category in OBJECTNAV_CATEGORIES
            and (category is None or inst.category == category)
        ]

    def face_normals(self) -> np.ndarray:
        """Unit normals ``(F, 3)`` from the winding (zero for degenerate faces)."""
        t = self.triangles.astype(np.float64)
        n = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
        length = np.linalg.norm(n, axis=1, keepdims=True)
        return np.divide(n, length, out=np.zeros_like(n), where=length > 0)


def estimate_floor_height(triangles: np.ndarray) -> float:
    """The height with the most upward-facing area: the floor of a single-storey scene."""
    heights, area = upward_area_by_height(triangles)
    return float(heights[area.argmax()])


def upward_area_by_height(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Upward-facing area in 5 cm height bins, weighted by area (thin table tops lose against a
    floor): each bin's lowest face height and its area. No upward face: the lowest vertex, 0."""
    t = np.asarray(triangles, dtype=np.float64)
    n = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
    area = np.linalg.norm(n, axis=1) / 2
    up = (n[:, 1] > 0.9 * np.maximum(np.linalg.norm(n, axis=1), 1e-12)) & (area > 0)
    if not up.any():
        return np.array([t[:, :, 1].min()]), np.zeros(1)
    heights = t[up, :, 1].mean(axis=1)
    bins = np.round(heights / 0.05).astype(np.int64)
    _, inverse = np.unique(bins, return_inverse=True)
    weight = np.bincount(inverse, weights=area[up])
    lowest = np.full(len(weight), np.inf)
    np.minimum.at(lowest, inverse, heights)
    return lowest, weight


class SceneBuilder:
    """Collects boxes and quads into a :class:`Scene` (used by the generator and tests)."""

    def __init__(self, name: str = "scene") -> None:
        self.name = name
        self._tris: list[np.ndarray] = []
        self._colors: list[np.ndarray] = []
        self._inst: list[np.ndarray] = []
        self._uv: list[np.ndarray] = []
        self._tex: list[np.ndarray] = []
        self.instances: dict[int, ObjectInstance] = {}
        self._next_id = 1

    def new_instance(self, category: str) -> int:
        """Reserve an instance id for ``category``; its box grows as faces are added."""
        iid = self._next_id
        self._next_id += 1
        self.instances[iid] = ObjectInstance(iid, category, np.full(3, np.inf), np.full(3, -np.inf))
        return iid

    def add_triangles(
        self,
        tris: np.ndarray,
        color: tuple[int, int, int],
        instance: int = 0,
        texture: int = -1,
        uv: np.ndarray | None = None,
        texture_scale: float = 1.0,
    ) -> None:
        """Add ``(n, 3, 3)`` triangles. Without ``uv`` a textured face gets world-scale planar UVs
        (projected along its dominant normal axis, ``texture_scale`` metres per texture tile)."""
        tris = np.asarray(tris, dtype=np.float64).reshape(-1, 3, 3)
        n = len(tris)
        if uv is None:
            normal = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
            axis = np.abs(normal).argmax(axis=1)
            # Drop the dominant axis: floors use (x, z), x-walls (z, y), z-walls (x, y).
            keep = np.array([[2, 1], [0, 2], [0, 1]])[axis]
            uv = np.take_along_axis(tris, keep[:, None, :], axis=2) / texture_scale
        self._tris.append(tris)
        self._colors.append(np.tile(np.asarray(color, np.uint8), (n, 1)))
        self._inst.append(np.full(n, instance, np.int32))
        self._uv.append(np.asarray(uv, np.float32).reshape(n, 3, 2))
        self._tex.append(np.full(n, texture, np.int32))
        if instance:
            inst = self.instances[instance]
            flat = tris.reshape(-1, 3)
            inst.aabb_min = np.minimum(inst.aabb_min, flat.min(axis=0))
            inst.aabb_max = np.maximum(inst.aabb_max, flat.max(axis=0))

    def add_box(
        self,
        lo: tuple[float, float, float],
        hi: tuple[float, float, float],
        color: tuple[int, int, int],
        instance: int = 0,
        texture: int = -1,
        texture_scale: float = 1.0,
        faces: str = "xXyYzZ",
    ) -> None:
        """An axis-aligned box from ``lo`` to ``hi`` with outward-wound faces (``faces`` picks
        sides: x/X = min/max x, and so on)."""
        tris = box_triangles(np.asarray(lo, float), np.asarray(hi, float), faces)
        self.add_triangles(tris, color, instance, texture, texture_scale=texture_scale)

    def build(
        self,
        textures: np.ndarray | None = None,
        floor_height: float | None = None,
        floor_levels: tuple[float, ...] | None = None,
    ) -> Scene:
        return Scene(
            triangles=np.concatenate(self._tris).astype(np.float32),
            face_color=np.concatenate(self._colors),
            face_instance=np.concatenate(self._inst),
            instances=dict(self.instances),
            face_uv=np.concatenate(self._uv),
            face_texture=np.concatenate(self._tex),
            textures=textures,
            floor_height=floor_height,
            name=self.name,
            floor_levels=floor_levels,
        )


def box_triangles(lo: np.ndarray, hi: np.ndarray, faces: str = "xXyYzZ") -> np.ndarray:
    """Triangles of an axis-aligned box, two per side, wound so normals point outwards."""
    x0, y0, z0 = lo
    x1, y1, z1 = hi
    quads = {
        "x": [(x0, y0, z0), (x0, y0, z1), (x0, y1, z1), (x0, y1, z0)],
        "X": [(x1, y0, z0), (x1, y1, z0), (x1, y1, z1), (x1, y0, z1)],
        "y": [(x0, y0, z0), (x1, y0, z0), (x1, y0, z1), (x0, y0, z1)],
        "Y": [(x0, y1, z0), (x0, y1, z1), (x1, y1, z1), (x1, y1, z0)],
        "z": [(x0, y0, z0), (x0, y1, z0), (x1, y1, z0), (x1, y0, z0)],
        "Z": [(x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1)],
    }
    out = []
    for side in faces:
        a, b, c, d = quads[side]
        out += [(a, b, c), (a, c, d)]
    return np.asarray(out, dtype=np.float64)
