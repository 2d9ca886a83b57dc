"""A seeded procedural apartment: rooms, doors, corridors, furniture of habitat's categories.

Layout: the footprint is split recursively (a BSP tree) into 1-8 rooms; every split wall gets one
door, which keeps the apartment connected. A thin split becomes a corridor. Walls have thickness
and a lintel over each door; floors and walls carry procedural textures (planks, tiles,
plaster). Furniture (chair, table, bed, sofa, toilet, tv_monitor, plant, ...) is built from boxes
at plausible sizes, placed per room type with clearance in front of doors.
Same ``seed`` and knobs -> the same scene, face for face.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pixelrl.envs.nav.scene import Scene, SceneBuilder

TEXTURE_SIZE = 128
# Texture indices into the stacked texture array.
TEX_PLANKS, TEX_TILES, TEX_PLASTER, TEX_CARPET, TEX_FABRIC = range(5)


@dataclass
class ApartmentConfig:
    """Generator knobs.

    ``rooms``: (min, max) room count (1-8). ``room_size``: (min, max) side of a room in metres.
    ``clutter``: furniture density (items per 10 m² of room, roughly). ``wall_height`` and
    ``wall_thickness`` in metres; ``door_width`` the clear opening.
    """

    rooms: tuple[int, int] = (3, 6)
    room_size: tuple[float, float] = (2.8, 5.5)
    clutter: float = 1.0
    wall_height: float = 2.6
    wall_thickness: float = 0.1
    door_width: float = 1.0
    corridor_probability: float = 0.3

    def validate(self) -> None:
        lo, hi = self.rooms
        if not (1 <= lo <= hi <= 8):
            raise ValueError(
                f"ApartmentConfig.rooms must satisfy 1 <= min <= max <= 8, got {self.rooms}"
            )
        if not (1.5 <= self.room_size[0] <= self.room_size[1]):
            raise ValueError(
                f"ApartmentConfig.room_size must be (min >= 1.5, max >= min), got {self.room_size}"
            )
        if self.clutter < 0:
            raise ValueError(f"ApartmentConfig.clutter must be >= 0, got {self.clutter}")


# category -> (footprint x range, footprint z range, height range, colour); sizes in metres.
FURNITURE = {
    "bed": ((1.4, 1.8), (1.9, 2.1), (0.5, 0.6), (200, 190, 210)),
    "sofa": ((1.6, 2.2), (0.8, 0.95), (0.8, 0.9), (90, 110, 150)),
    "table": ((0.8, 1.4), (0.7, 1.0), (0.72, 0.78), (150, 100, 60)),
    "chair": ((0.42, 0.5), (0.42, 0.5), (0.85, 0.95), (170, 120, 70)),
    "toilet": ((0.38, 0.42), (0.6, 0.7), (0.75, 0.8), (235, 235, 235)),
    "tv_monitor": ((0.9, 1.3), (0.08, 0.12), (0.55, 0.75), (25, 25, 30)),
    "plant": ((0.3, 0.45), (0.3, 0.45), (0.7, 1.3), (60, 140, 60)),
    "cabinet": ((0.6, 1.2), (0.4, 0.55), (0.9, 1.8), (130, 90, 60)),
    "sink": ((0.5, 0.7), (0.45, 0.55), (0.85, 0.9), (220, 225, 230)),
    "bathtub": ((1.5, 1.7), (0.7, 0.8), (0.55, 0.6), (240, 240, 245)),
    "counter": ((1.2, 2.4), (0.6, 0.65), (0.9, 0.92), (180, 170, 150)),
    "stool": ((0.35, 0.4), (0.35, 0.4), (0.6, 0.75), (100, 70, 50)),
}
ROOM_TYPES = {
    "bedroom": (["bed", "cabinet", "plant", "chair", "tv_monitor"], TEX_CARPET),
    "living_room": (["sofa", "tv_monitor", "table", "chair", "plant", "cabinet"], TEX_PLANKS),
    "kitchen": (["counter", "table", "chair", "stool", "sink", "cabinet"], TEX_TILES),
    "bathroom": (["toilet", "sink", "bathtub", "plant"], TEX_TILES),
    "office": (["table", "chair", "tv_monitor", "cabinet", "plant"], TEX_PLANKS),
}


@dataclass
class Room:
    """A room: the floor rectangle [x0, x1] x [z0, z1] and its kind (a ROOM_TYPES key or "corridor")."""

    x0: float
    z0: float
    x1: float
    z1: float
    kind: str = "living_room"

    def contains(self, x, z, margin: float = 0.0):
        """Whether (x, z) lies on the floor, ``margin`` inside the walls (numbers or arrays)."""
        inside_x = (x >= self.x0 + margin) & (x <= self.x1 - margin)
        return inside_x & (z >= self.z0 + margin) & (z <= self.z1 - margin)


@dataclass(frozen=True)
class Door:
    """A doorway: its centre on the floor, the wall it opens (``axis`` "x": a wall at x = const,
    "z": at z = const) and the indices of the two rooms it joins."""

    x: float
    z: float
    axis: str
    rooms: tuple[int, int]


@dataclass
class ApartmentLayout:
    """The rooms and doors a procedural apartment was built from (``Scene.layout``), for task
    logic that talks about them (InstructNav's instructions). One door per split wall, so the
    rooms and doors form a tree."""

    rooms: list[Room]
    doors: list[Door]

    def room_at(self, x: float, z: float) -> int | None:
        """Index of the room whose floor holds (x, z), or None (outside, or on a wall line)."""
        inside = [k for k, r in enumerate(self.rooms) if r.contains(x, z)]
        return inside[0] if len(inside) == 1 else None


def make_textures(rng: np.random.Generator, size: int = TEXTURE_SIZE) -> np.ndarray:
    """Procedural greyscale-ish textures ``(5, size, size, 3)`` uint8, tinted per face later."""
    yy, xx = np.mgrid[0:size, 0:size] / size
    noise = rng.random((size, size))
    out = np.zeros((5, size, size, 3), np.float32)
    # Planks: 6 boards across, each with its own shade, fine grain along the board.
    board = np.floor(xx * 6).astype(int)
    shade = 0.75 + 0.25 * rng.random(6)
    grain = 0.92 + 0.08 * np.sin(yy * 80 + board * 3 + noise * 2)
    seam = (np.abs(xx * 6 - np.round(xx * 6)) < 0.03).astype(np.float32)
    out[TEX_PLANKS] = (shade[board] * grain * (1 - 0.5 * seam))[..., None]
    # Tiles: 4x4 with grout lines.
    grout = (np.abs(xx * 4 - np.round(xx * 4)) < 0.04) | (np.abs(yy * 4 - np.round(yy * 4)) < 0.04)
    out[TEX_TILES] = np.where(grout, 0.55, 0.95 + 0.05 * noise)[..., None]
    # Plaster: low-contrast smooth noise.
    smooth = _blur(noise, 6)
    out[TEX_PLASTER] = (0.9 + 0.2 * (smooth - smooth.mean()))[..., None]
    # Carpet: high-frequency speckle.
    out[TEX_CARPET] = (0.8 + 0.2 * noise)[..., None]
    # Fabric: a weave.
    weave = 0.85 + 0.15 * (np.sin(xx * 2 * np.pi * 32) * np.sin(yy * 2 * np.pi * 32))
    out[TEX_FABRIC] = weave[..., None]
    return (np.clip(out, 0, 1) * 255).astype(np.uint8)


def _blur(a: np.ndarray, k: int) -> np.ndarray:
    """Box blur with wrap-around (keeps the texture tileable)."""
    out = a.copy()
    for axis in (0, 1):
        out = sum(np.roll(out, s, axis=axis) for s in range(-k, k + 1)) / (2 * k + 1)
    return out


def generate_apartment(seed: int, config: ApartmentConfig | None = None) -> Scene:
    """Generate the apartment for ``seed`` (deterministic)."""
    cfg = config or ApartmentConfig()
    cfg.validate()
    rng = np.random.default_rng(seed)
    n_rooms = int(rng.integers(cfg.rooms[0], cfg.rooms[1] + 1))
    rooms, splits = _layout(rng, n_rooms, cfg)
    builder = SceneBuilder(name=f"apartment_{seed}")
    wall_id = builder.new_instance("wall")
    floor_id = builder.new_instance("floor")
    ceiling_id = builder.new_instance("ceiling")
    h, t = cfg.wall_height, cfg.wall_thickness
    x_max = max(r.x1 for r in rooms)
    z_max = max(r.z1 for r in rooms)
    wall_color = tuple(int(c) for c in rng.integers(170, 240, 3))

    # Floors (one per room, so rooms differ) and one ceiling.
    for room in rooms:
        tex = ROOM_TYPES[room.kind][1] if room.kind in ROOM_TYPES else TEX_PLANKS
        tint = tuple(int(c) for c in rng.integers(140, 255, 3))
        builder.add_box(
            (room.x0, 0, room.z0), (room.x1, 0, room.z1), tint, floor_id, tex, 1.2, faces="Y"
        )
    builder.add_box(
        (0, h, 0), (x_max, h, z_max), (235, 235, 230), ceiling_id, TEX_PLASTER, 2.0, faces="y"
    )

    # Outer walls: boxes straddling the footprint's edges.
    outer = [
        ((-t / 2, 0, -t / 2), (x_max + t / 2, h, t / 2)),
        ((-t / 2, 0, z_max - t / 2), (x_max + t / 2, h, z_max + t / 2)),
        ((-t / 2, 0, -t / 2), (t / 2, h, z_max + t / 2)),
        ((x_max - t / 2, 0, -t / 2), (x_max + t / 2, h, z_max + t / 2)),
    ]
    for lo, hi in outer:
        builder.add_box(lo, hi, wall_color, wall_id, TEX_PLASTER, 2.0)

    # Interior walls along every split, each with one door (plus a lintel above it).
    doors: list[tuple[float, float]] = []
    for axis, coord, lo, hi, blocked in splits:
        door_w = cfg.door_width
        candidates = np.arange(lo + 0.3 + door_w / 2, hi - 0.3 - door_w / 2, 0.05)
        ok = [c for c in candidates if all(abs(c - b) > door_w / 2 + 0.4 for b in blocked)]
        centre = float(rng.choice(ok)) if ok else (lo + hi) / 2
        d0, d1 = centre - door_w / 2, centre + door_w / 2
        segments = [(lo, d0), (d1, hi)]
        door_top = 2.1
        for a, b in segments:
            if b - a > 1e-3:
                builder.add_box(
                    *_wall_box(axis, coord, a, b, 0, h, t), wall_color, wall_id, TEX_PLASTER, 2.0
                )
        builder.add_box(
            *_wall_box(axis, coord, d0, d1, door_top, h, t), wall_color, wall_id, TEX_PLASTER, 2.0
        )
        doors.append((centre, coord) if axis == "z" else (coord, centre))

    # Furniture per room, against walls, away from doors.
    for room in rooms:
        _furnish(builder, rng, room, doors, cfg)
    textures = make_textures(np.random.default_rng(seed + 7919))
    scene = builder.build(textures=textures, floor_height=0.0)
    scene.layout = ApartmentLayout(
        rooms, [_door(rooms, x, z, split[0]) for (x, z), split in zip(doors, splits)]
    )
    return scene


def _door(rooms: list[Room], x: float, z: float, axis: str) -> Door:
    """The door at (x, z) in a wall on ``axis``, with the two rooms whose edges hold it."""
    if axis == "x":
        sides = [
            k
            for k, r in enumerate(rooms)
            if np.isclose(x, (r.x0, r.x1)).any() and r.z0 <= z <= r.z1
        ]
    else:
        sides = [
            k
            for k, r in enumerate(rooms)
            if np.isclose(z, (r.z0, r.z1)).any() and r.x0 <= x <= r.x1
        ]
    if len(sides) != 2:
        raise AssertionError(f"door at ({x:.2f}, {z:.2f}) joins {len(sides)} rooms, not 2")
    return Door(float(x), float(z), axis, (sides[0], sides[1]))


def _wall_box(axis: str, coord: float, a: float, b: float, y0: float, y1: float, t: float):
    """Box of a wall at ``coord`` on ``axis`` ("x": wall at x = coord, running along z)."""
    if axis == "x":
        return (coord - t / 2, y0, a), (coord + t / 2, y1, b)
    return (a, y0, coord - t / 2), (b, y1, coord + t / 2)


def _layout(rng: np.random.Generator, n_rooms: int, cfg: ApartmentConfig):
    """BSP split of a footprint into ``n_rooms`` rooms.

    Returns rooms and splits ``(axis, coord, lo, hi, blocked)``: a wall at x=coord (axis "x") or
    z=coord spanning [lo, hi], with ``blocked`` the positions where later walls meet it (doors
    keep away from those).
    """
    smin, smax = cfg.room_size
    # Footprint sized so that n rooms of medium size fit.
    area = n_rooms * rng.uniform(smin, smax) ** 2
    aspect = rng.uniform(0.7, 1.4)
    width = max(smin, float(np.sqrt(area * aspect)))
    depth = max(smin, float(area / width))
    rooms = [Room(0.0, 0.0, width, depth)]
    splits: list[list] = []
    while len(rooms) < n_rooms:
        # Split the largest room that can still hold two rooms.
        order = sorted(range(len(rooms)), key=lambda i: -_area(rooms[i]))
        done = False
        for i in order:
            r = rooms[i]
            w, d = r.x1 - r.x0, r.z1 - r.z0
            corridor = rng.random() < cfg.corridor_probability
            min_part = 1.4 if corridor else smin * 0.8
            axis = "x" if w >= d else "z"
            span = w if axis == "x" else d
            if span < 2 * min_part and (d if axis == "x" else w) >= 2 * min_part:
                axis = "z" if axis == "x" else "x"
                span = w if axis == "x" else d
            if span < 2 * min_part:
                continue
            lo0 = r.x0 if axis == "x" else r.z0
            if corridor:
                cut = lo0 + rng.uniform(1.3, 1.6)
            else:
                cut = lo0 + rng.uniform(min_part, span - min_part)
            cut = round(cut / 0.05) * 0.05
            if axis == "x":
                a, b = Room(r.x0, r.z0, cut, r.z1), Room(cut, r.z0, r.x1, r.z1)
                split = ["x", cut, r.z0, r.z1, []]
            else:
                a, b = Room(r.x0, r.z0, r.x1, cut), Room(r.x0, cut, r.x1, r.z1)
                split = ["z", cut, r.x0, r.x1, []]
            if corridor:
                a.kind = "corridor"
            # Walls already bounding this room now get a junction where the new wall meets them.
            for s in splits:
                if s[0] != axis:
                    if axis == "x" and s[1] in (r.z0, r.z1) and s[2] <= cut <= s[3]:
                        s[4].append(cut)
                    if axis == "z" and s[1] in (r.x0, r.x1) and s[2] <= cut <= s[3]:
                        s[4].append(cut)
            rooms[i : i + 1] = [a, b]
            splits.append(split)
            done = True
            break
        if not done:
            break
    kinds = list(ROOM_TYPES)
    for k, room in enumerate(rooms):
        if room.kind != "corridor":
            room.kind = kinds[int(rng.integers(len(kinds)))] if k else "living_room"
    return rooms, [tuple(s) for s in splits]


def _area(r: Room) -> float:
    return (r.x1 - r.x0) * (r.z1 - r.z0)


def _furnish(builder: SceneBuilder, rng, room: Room, doors, cfg: ApartmentConfig) -> None:
    if room.kind == "corridor":
        candidates = ["plant", "cabinet"]
        n_items = int(rng.random() < 0.5 * cfg.clutter)
    else:
        candidates = ROOM_TYPES[room.kind][0]
        n_items = int(round(cfg.clutter * _area(room) / 10 * rng.uniform(1.5, 3.0)))
    margin = cfg.wall_thickness / 2 + 0.02
    placed: list[tuple[float, float, float, float]] = []
    # Keep a 1.1 m square free in front of (both sides of) every door.
    keep_out = [(dx - 0.8, dz - 0.8, dx + 0.8, dz + 0.8) for dx, dz in doors]
    for k in range(n_items):
        # The room type's signature item first, then random picks.
        category = candidates[0] if k == 0 else candidates[int(rng.integers(len(candidates)))]
        (wx, wz, hy, color) = FURNITURE[category]
        sx, sz, sy = rng.uniform(*wx), rng.uniform(*wz), rng.uniform(*hy)
        for _ in range(20):
            rotate = rng.random() < 0.5
            fx, fz = (sz, sx) if rotate else (sx, sz)
            against_wall = category not in ("table", "chair", "stool") or rng.random() < 0.3
            x0_lo, x0_hi = room.x0 + margin, room.x1 - margin - fx
            z0_lo, z0_hi = room.z0 + margin, room.z1 - margin - fz
            if x0_hi <= x0_lo or z0_hi <= z0_lo:
                break
            x0, z0 = rng.uniform(x0_lo, x0_hi), rng.uniform(z0_lo, z0_hi)
            if against_wall:
                side = int(rng.integers(4))
                x0 = [x0_lo, x0_hi, x0, x0][side]
                z0 = [z0, z0, z0_lo, z0_hi][side]
            else:
                # Free-standing items stay 0.6 m from walls so that paths go around them.
                x0 = float(np.clip(x0, x0_lo + 0.6, max(x0_lo + 0.6, x0_hi - 0.6)))
                z0 = float(np.clip(z0, z0_lo + 0.6, max(z0_lo + 0.6, z0_hi - 0.6)))
            box = (x0, z0, x0 + fx, z0 + fz)
            if box[2] > room.x1 - margin or box[3] > room.z1 - margin:
                continue
            if any(_overlap(box, o, 0.25) for o in placed) or any(
                _overlap(box, o, 0) for o in keep_out
            ):
                continue
            placed.append(box)
            _build_item(builder, rng, category, box, sy, color)
            break


def _overlap(a, b, pad: float) -> bool:
    return a[0] < b[2] + pad and b[0] < a[2] + pad and a[1] < b[3] + pad and b[1] < a[3] + pad


def _build_item(builder: SceneBuilder, rng, category: str, box, height: float, color) -> None:
    """Build one furniture item from boxes inside footprint ``box`` (x0, z0, x1, z1)."""
    iid = builder.new_instance(category)
    x0, z0, x1, z1 = box
    jitter = rng.integers(-20, 21, 3)
    color = tuple(int(np.clip(c + j, 0, 255)) for c, j in zip(color, jitter))
    add = builder.add_box
    if category in ("table", "stool", "chair"):
        top = 0.45 if category == "chair" else height
        leg = 0.05
        add((x0, top - 0.04, z0), (x1, top, z1), color, iid)
        for lx, lz in ((x0, z0), (x1 - leg, z0), (x0, z1 - leg), (x1 - leg, z1 - leg)):
            add((lx, 0, lz), (lx + leg, top - 0.04, lz + leg), color, iid)
        if category == "chair":
            add((x0, top, z0), (x1, height, z0 + 0.05), color, iid)
    elif category == "bed":
        add((x0, 0, z0), (x1, height, z1), color, iid, 4, 0.5)
        add((x0, 0, z0), (x1, height + 0.5, z0 + 0.08), (120, 80, 50), iid)
    elif category == "sofa":
        long_x = (x1 - x0) >= (z1 - z0)
        add((x0, 0, z0), (x1, 0.45, z1), color, iid, 4, 0.5)
        if long_x:
            add((x0, 0.45, z0), (x1, height, z0 + 0.2), color, iid, 4, 0.5)
        else:
            add((x0, 0.45, z0), (x0 + 0.2, height, z1), color, iid, 4, 0.5)
    elif category == "toilet":
        add((x0, 0, z0 + 0.2), (x1, 0.42, z1), color, iid)
        add((x0, 0, z0), (x1, height, z0 + 0.2), color, iid)
    elif category == "tv_monitor":
        add((x0, 0, z0), (x1, 0.5, z1), (60, 50, 40), iid)
        add((x0, 0.5, z0), (x1, 0.5 + height, z1), color, iid)
    elif category == "plant":
        cx, cz = (x0 + x1) / 2, (z0 + z1) / 2
        add((cx - 0.12, 0, cz - 0.12), (cx + 0.12, 0.3, cz + 0.12), (150, 80, 50), iid)
        add((x0, 0.3, z0), (x1, height, z1), color, iid, 4, 0.3)
    else:
        add((x0, 0, z0), (x1, height, z1), color, iid)
