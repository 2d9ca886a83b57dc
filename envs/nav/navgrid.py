"""The navigability grid: where a cylinder agent can stand, and how it moves.

The ground plane (x, z) is cut into square cells of ``cell_size`` metres. A cell is navigable when

1. there is floor under it: a downward ray finds a surface within ``max_climb`` of the scene's
   floor height, and
2. nothing is in the agent's body band: every triangle part between ``floor + max_climb`` and
   ``floor + agent_height`` is projected onto the grid (occupied cells), and navigable cells keep
   a clearance of more than ``agent_radius`` from the obstacles, measured by a Euclidean distance
   transform on a raster five times finer than the grid (the agent is a cylinder, corners come
   out rounded; half a fine pixel of margin makes sure the body never overlaps geometry).

A grid built with a height ``band`` is one floor level of a multi-storey scene (see
``levels``): the floor is the highest surface in the band under each cell, so it may vary from
cell to cell (stairs, ramps); each cell's body band starts at its own floor; two neighbouring
cells whose floors differ by more than ``max_climb`` are separated by a ledge the body keeps its
radius from; and heights enter distances (``sloped``).

Moves follow habitat's navmesh ``try_step``: walk toward the target until the body would leave
the navigable area, then, with sliding on, spend the rest of the step along the wall.
Grid index convention: ``row`` runs along +z, ``col`` along +x; cell (r, c) has its centre at
``origin + ((c + 0.5) * cell, (r + 0.5) * cell)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pixelrl.envs.nav.scene import Scene

SUB = 5  # obstacle raster pixels per grid cell side (odd: a pixel centre on each cell centre)


@dataclass
class AgentSpec:
    """The agent's body (a cylinder) and its climbing limit, metres; habitat's defaults."""

    radius: float = 0.1
    height: float = 1.5
    max_climb: float = 0.2
    cell_size: float = 0.05

    def validate(self) -> None:
        if self.radius <= 0 or self.height <= 0 or self.cell_size <= 0 or self.max_climb < 0:
            raise ValueError(f"AgentSpec values must be positive, got {self}")
        if self.cell_size > self.radius:
            raise ValueError(
                f"AgentSpec.cell_size ({self.cell_size}) must not exceed the agent radius ({self.radius})"
            )


class NavGrid:
    """Navigable cells of one scene for one agent body; see the module docstring."""

    def __init__(
        self,
        scene: Scene,
        agent: AgentSpec | None = None,
        band: tuple[float, float] | None = None,
        floor_height: float | None = None,
    ) -> None:
        """``band``: (lowest, highest) floor height of one level of a multi-storey scene, with
        ``floor_height`` its nominal floor; None: the scene's single floor (``scene.floor_height``)."""
        from scipy import ndimage

        self.scene = scene
        self.agent = agent = agent or AgentSpec()
        agent.validate()
        self.cell = agent.cell_size
        lo, hi = scene.bounds
        pad = 2 * self.cell
        self.origin = np.array([lo[0] - pad, lo[2] - pad])
        self.cols = int(np.ceil((hi[0] - lo[0] + 2 * pad) / self.cell))
        self.rows = int(np.ceil((hi[2] - lo[2] + 2 * pad) / self.cell))
        self.floor_height = float(scene.floor_height if floor_height is None else floor_height)
        self.band = band
        # A level's floors vary from cell to cell: distances count the climb (GeodesicGraph).
        self.sloped = band is not None
        self.floor = self._find_floor()
        # Obstacles are rasterised SUB times finer than the grid so that clearances are exact to
        # a fifth of a cell; the fine pixel at the middle of each cell sits on the cell centre.
        if band is None:
            lo = self.floor_height + agent.max_climb
            fine = self._rasterise_body_band(SUB, lo, self.floor_height + agent.height)
        else:
            fine = self._rasterise_level_bodies(SUB)
        self.occupied = fine.reshape(self.rows, SUB, self.cols, SUB).any(axis=(1, 3))
        no_floor = np.repeat(np.repeat(~np.isfinite(self.floor), SUB, 0), SUB, 1)
        fine_clearance = ndimage.distance_transform_edt(~(fine | no_floor)) * (self.cell / SUB)
        # Clearance: distance (metres) from each cell centre to the nearest blocked fine pixel
        # (occupied, or without floor). Between centres it is interpolated bilinearly, which
        # rounds the navigable area's corners, so bodies slide around corners smoothly.
        self.clearance = fine_clearance[SUB // 2 :: SUB, SUB // 2 :: SUB]
        # Geometry anywhere in a blocked fine pixel may be half a pixel nearer than its centre.
        self.min_clearance = agent.radius + self.cell / SUB / 2
        self.navigable = self.clearance > self.min_clearance
        self.islands, self.num_islands = ndimage.label(self.navigable, structure=np.ones((3, 3)))
        self._graph = None  # geodesic graph, built on first use
        self._square_state = self._classify_squares()
        # Plain-Python copies for per-point tests (_navigable_point): list indexing is cheap.
        self._square_state_rows = self._square_state.tolist()
        self._clearance_rows = self.clearance.tolist()
        self._origin_x, self._origin_z = float(self.origin[0]), float(self.origin[1])

    # ----------------------------------------------------------------- construction
    def _cell_centres(self) -> tuple[np.ndarray, np.ndarray]:
        xs = self.origin[0] + (np.arange(self.cols) + 0.5) * self.cell
        zs = self.origin[1] + (np.arange(self.rows) + 0.5) * self.cell
        return np.meshgrid(xs, zs)

    def _find_floor(self) -> np.ndarray:
        """Floor height per cell (NaN where there is none) by one downward ray per cell."""
        from embreex import mesh_construction, rtcore_scene

        embree = rtcore_scene.EmbreeScene()
        mesh_construction.TriangleMesh(embree, self.scene.triangles)
        x, z = self._cell_centres()
        if self.band is None:
            top = self.floor_height + self.agent.max_climb + 0.01
            depth = 2 * self.agent.max_climb + 0.02
        else:
            top, depth = self.band[1] + 0.01, self.band[1] - self.band[0] + 0.02
        origins = np.stack([x.ravel(), np.full(x.size, top), z.ravel()], 1).astype(np.float32)
        dirs = np.tile(np.array([[0, -1, 0]], np.float32), (x.size, 1))
        reach = np.full(x.size, depth, np.float32)
        hit = embree.run(origins, dirs, dists=reach, output=True)
        height = np.where(hit["primID"] >= 0, top - hit["tfar"], np.nan)
        return height.reshape(self.rows, self.cols)

    def _rasterise_level_bodies(self, sub: int) -> np.ndarray:
        """A level's obstacle pixels: each cell's body band starts at its own floor (cells are
        grouped by floor height in 2 cm bins, each group's band from its lowest floor + climb to
        its highest + height, kept on that group's pixels), plus the ledges: the pixels on both
        sides of an edge between neighbouring cells whose floors differ by more than
        ``max_climb``."""
        agent, floor = self.agent, self.floor
        finite = np.isfinite(floor)
        bins = np.full(floor.shape, np.iinfo(np.int64).min)
        bins[finite] = np.round(floor[finite] / 0.02).astype(np.int64)
        fine = np.zeros((self.rows * sub, self.cols * sub), bool)
        for key in np.unique(bins[finite]):
            cells = bins == key
            heights = floor[cells]
            band = self._rasterise_body_band(
                sub, heights.min() + agent.max_climb, heights.max() + agent.height
            )
            fine |= band & np.repeat(np.repeat(cells, sub, 0), sub, 1)
        # NaN compares False: a missing floor is blocked by the caller (no_floor), not here.
        step_x = np.abs(np.diff(floor, axis=1)) > agent.max_climb
        step_z = np.abs(np.diff(floor, axis=0)) > agent.max_climb
        r, c = np.nonzero(step_x)  # edge between (r, c) and (r, c + 1)
        for side in (c * sub + sub - 1, (c + 1) * sub):
            fine[(r * sub)[:, None] + np.arange(sub), side[:, None]] = True
        r, c = np.nonzero(step_z)  # edge between (r, c) and (r + 1, c)
        for side in (r * sub + sub - 1, (r + 1) * sub):
            fine[side[:, None], (c * sub)[:, None] + np.arange(sub)] = True
        return fine

    def _rasterise_body_band(self, sub: int, lo: float, hi: float) -> np.ndarray:
        """Pixels (``sub`` per cell side) covered by any triangle part between heights ``lo``
        and ``hi`` (the body band above the floor)."""
        import cv2

        tris = self.scene.triangles.astype(np.float64)
        ymin, ymax = tris[:, :, 1].min(1), tris[:, :, 1].max(1)
        touching = (ymax >= lo) & (ymin <= hi)
        inside = touching & (ymin >= lo) & (ymax <= hi)
        polygons = [t[:, [0, 2]] for t in tris[inside]]
        for t in tris[touching & ~inside]:
            poly = _clip_to_slab(t, lo, hi)
            if len(poly) >= 2:
                polygons.append(poly[:, [0, 2]])
        grid = np.zeros((self.rows * sub, self.cols * sub), np.uint8)
        if polygons:
            shift = 4  # cv2 fixed-point: 1/16 pixel precision
            scale = (1 << shift) / (self.cell / sub)
            pts = [
                np.round((p - self.origin) * scale - 0.5 * (1 << shift)).astype(np.int32)
                for p in polygons
            ]
            # One convex polygon at a time: fillPoly on many would cancel overlaps (even-odd).
            for poly in pts:
                cv2.fillConvexPoly(grid, poly, 1, lineType=cv2.LINE_8, shift=shift)
            # Vertical faces project to segments, which fillPoly may leave empty.
            cv2.polylines(grid, pts, True, 1, thickness=1, lineType=cv2.LINE_8, shift=shift)
        return grid.astype(bool)

    def _classify_squares(self) -> np.ndarray:
        """Per interpolation square (the four cell centres around (r + 1/2, c + 1/2)): 1 when
        all four clearances are above ``min_clearance`` (every point inside is navigable: the
        bilinear value is a weighted mean of them), 0 when all are below, 2 when it depends
        on where. The 1e-9 margins absorb the rounding of the weighted mean."""
        g = self.clearance
        corners = np.stack([g[:-1, :-1], g[:-1, 1:], g[1:, :-1], g[1:, 1:]])
        state = np.full(corners.shape[1:], 2, np.uint8)
        state[corners.min(0) > self.min_clearance * (1 + 1e-9)] = 1
        state[corners.max(0) < self.min_clearance * (1 - 1e-9)] = 0
        return state

    # ----------------------------------------------------------------- queries
    def to_cell(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, col) of world points ``(..., 3)`` (clipped into the grid)."""
        p = np.asarray(points, dtype=np.float64)
        col = np.floor((p[..., 0] - self.origin[0]) / self.cell).astype(np.int64)
        row = np.floor((p[..., 2] - self.origin[1]) / self.cell).astype(np.int64)
        return np.clip(row, 0, self.rows - 1), np.clip(col, 0, self.cols - 1)

    def cell_centre(self, row: np.ndarray, col: np.ndarray) -> np.ndarray:
        """World points ``(..., 3)`` at the floor of cells (row, col)."""
        row, col = np.asarray(row), np.asarray(col)
        x = self.origin[0] + (col + 0.5) * self.cell
        z = self.origin[1] + (row + 0.5) * self.cell
        y = np.nan_to_num(self.floor[row, col], nan=self.floor_height)
        return np.stack([x, y, z], axis=-1)

    def clearance_at(self, points: np.ndarray) -> np.ndarray:
        """Bilinearly interpolated clearance (metres) at world points ``(..., 3)``; 0 outside."""
        p = np.asarray(points, dtype=np.float64)
        return self.clearance_xz(p[..., 0], p[..., 2])

    def clearance_xz(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        """:meth:`clearance_at` from ground-plane coordinates (no y to build or carry)."""
        fx = (x - self.origin[0]) / self.cell - 0.5
        fz = (z - self.origin[1]) / self.cell - 0.5
        c0, r0 = np.floor(fx).astype(np.int64), np.floor(fz).astype(np.int64)
        tx, tz = fx - c0, fz - r0
        inside = (r0 >= 0) & (r0 < self.rows - 1) & (c0 >= 0) & (c0 < self.cols - 1)
        r0, c0 = np.where(inside, r0, 0), np.where(inside, c0, 0)
        g = self.clearance
        value = (
            g[r0, c0] * (1 - tx) * (1 - tz)
            + g[r0, c0 + 1] * tx * (1 - tz)
            + g[r0 + 1, c0] * (1 - tx) * tz
            + g[r0 + 1, c0 + 1] * tx * tz
        )
        return np.where(inside, value, 0.0)

    def is_navigable(self, points: np.ndarray) -> np.ndarray:
        """Whether the body fits at world points ``(..., 3)`` (clearance > radius + cell/2)."""
        p = np.asarray(points, dtype=np.float64)
        return self.navigable_xz(p[..., 0], p[..., 2])

    def navigable_xz(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        """:meth:`is_navigable` from ground-plane coordinate arrays of one shape; interpolates
        only inside squares whose corners disagree (the same answer as comparing
        :meth:`clearance_xz` with ``min_clearance``, several times faster)."""
        fx = (x - self.origin[0]) / self.cell - 0.5
        fz = (z - self.origin[1]) / self.cell - 0.5
        c0, r0 = np.floor(fx).astype(np.int64), np.floor(fz).astype(np.int64)
        inside = (r0 >= 0) & (r0 < self.rows - 1) & (c0 >= 0) & (c0 < self.cols - 1)
        state = np.where(
            inside, self._square_state[np.where(inside, r0, 0), np.where(inside, c0, 0)], 0
        )
        out = state == 1
        mixed = state == 2
        if mixed.any():
            if out.ndim == 0:  # one point
                return self.clearance_xz(x, z) > self.min_clearance
            out[mixed] = self.clearance_xz(x[mixed], z[mixed]) > self.min_clearance
        return out

    def island_of(self, point: np.ndarray) -> int:
        """Island label (>0) of a point, 0 when it is not navigable."""
        if not self.is_navigable(point):
            return 0
        r, c = self.to_cell(point)
        return int(self.islands[r, c])

    def cell_of(self, point: np.ndarray) -> tuple[int, int]:
        """:meth:`to_cell` of one point, in plain Python (called every step)."""
        col = math.floor((float(point[0]) - self._origin_x) / self.cell)
        row = math.floor((float(point[2]) - self._origin_z) / self.cell)
        return min(max(row, 0), self.rows - 1), min(max(col, 0), self.cols - 1)

    def height_at(self, point: np.ndarray) -> float:
        h = float(self.floor[self.cell_of(point)])
        return h if math.isfinite(h) else self.floor_height

    def line_of_sight(self, a: np.ndarray, b: np.ndarray) -> bool:
        """True when every point of segment a-b (ground plane) is navigable."""
        return bool(self.is_navigable(self._samples(a, b)).all())

    def lines_of_sight(self, a: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """:meth:`line_of_sight` from ``a`` to each of ``targets`` ``(K, 3)`` (the same samples
        per segment, one navigability test for all)."""
        if len(targets) == 0:
            return np.zeros(0, dtype=bool)
        samples = [self._samples(a, b) for b in targets]
        starts = np.cumsum([0] + [len(s) for s in samples[:-1]])
        return np.logical_and.reduceat(self.is_navigable(np.concatenate(samples)), starts)

    def _samples(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.asarray(a, float), np.asarray(b, float)
        n = max(2, int(np.ceil(np.linalg.norm((b - a)[[0, 2]]) / (self.cell / 3))) + 1)
        f = np.linspace(0, 1, n)[:, None]
        return a + f * (b - a)

    def largest_island(self) -> int:
        if self.num_islands == 0:
            return 0
        counts = np.bincount(self.islands.ravel())[1:]
        return int(counts.argmax()) + 1

    def sample_navigable(self, rng: np.random.Generator, island: int | None = None) -> np.ndarray:
        """A uniformly random point in a random navigable cell (of ``island`` if given)."""
        mask = self.navigable if island is None else self.islands == island
        cells = np.flatnonzero(mask)
        if not len(cells):
            raise ValueError(f"scene {self.scene.name!r} has no navigable cell for this agent")
        k = cells[int(rng.integers(len(cells)))]
        r, c = divmod(int(k), self.cols)
        p = self.cell_centre(r, c)
        return p

    # ----------------------------------------------------------------- motion
    def try_step(
        self, start: np.ndarray, end: np.ndarray, allow_sliding: bool = True
    ) -> tuple[np.ndarray, bool]:
        """Move from ``start`` toward ``end`` (habitat's ``try_step``); returns the reached point
        and whether the move collided (did not reach ``end``).

        The body never leaves the navigable area: the straight part stops at the last navigable
        sample; with sliding, the rest of the displacement, minus its component into the wall
        (wall normal from the clearance gradient), is walked along the wall.
        """
        start = np.asarray(start, float)
        end = np.asarray(end, float)
        reached, blocker = self._walk(start, end)
        target = end
        # Up to two slides: along a wall, then along the next one (a corner).
        for _ in range(2 if allow_sliding else 0):
            rest = target - reached
            if blocker is None or np.linalg.norm(rest[[0, 2]]) <= 1e-6:
                break
            normal = self._wall_normal(reached, blocker)
            into = rest[0] * normal[0] + rest[2] * normal[1]
            if into >= 0:
                break
            slide = rest.copy()
            slide[0] -= into * normal[0]
            slide[2] -= into * normal[1]
            target = reached + slide
            reached, blocker = self._walk(reached, target)
        reached[1] = self.height_at(reached)
        collided = bool(np.linalg.norm((end - reached)[[0, 2]]) > 1e-4)
        return reached, collided

    def _walk(self, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Walk straight until the next sample would leave the navigable area; returns the
        reached point and the first blocked sample (None when ``end`` was reached).

        The samples are :meth:`_samples`' and the test is :meth:`navigable_xz`'s, computed one
        sample at a time in plain Python: a step has ~16 samples, too few for numpy's call
        overheads to pay (the same floating-point operations, so the same answers)."""
        n = max(2, int(np.ceil(np.linalg.norm((end - start)[[0, 2]]) / (self.cell / 3))) + 1)
        step = 1.0 / (n - 1)  # np.linspace(0, 1, n)[k] == k * step, and 1 at the end
        ax, ay, az = float(start[0]), float(start[1]), float(start[2])
        dx, dy, dz = float(end[0]) - ax, float(end[1]) - ay, float(end[2]) - az
        for k in range(n):
            f = 1.0 if k == n - 1 else k * step
            if not self._navigable_point(ax + f * dx, az + f * dz):
                if k == 0:
                    return start.copy(), start.copy()
                g = (k - 1) * step
                reached = np.array([ax + g * dx, ay + g * dy, az + g * dz])
                return reached, np.array([ax + f * dx, ay + f * dy, az + f * dz])
        return end.copy(), None

    def _clearance_point(self, x: float, z: float) -> float:
        """:meth:`clearance_xz` of one point, in plain Python."""
        fx = (x - self._origin_x) / self.cell - 0.5
        fz = (z - self._origin_z) / self.cell - 0.5
        c0, r0 = math.floor(fx), math.floor(fz)
        if not (0 <= r0 < self.rows - 1 and 0 <= c0 < self.cols - 1):
            return 0.0
        tx, tz = fx - c0, fz - r0
        g0, g1 = self._clearance_rows[r0], self._clearance_rows[r0 + 1]
        return (
            g0[c0] * (1 - tx) * (1 - tz)
            + g0[c0 + 1] * tx * (1 - tz)
            + g1[c0] * (1 - tx) * tz
            + g1[c0 + 1] * tx * tz
        )

    def _navigable_point(self, x: float, z: float) -> bool:
        """:meth:`navigable_xz` of one point, in plain Python."""
        fx = (x - self._origin_x) / self.cell - 0.5
        fz = (z - self._origin_z) / self.cell - 0.5
        c0, r0 = math.floor(fx), math.floor(fz)
        if not (0 <= r0 < self.rows - 1 and 0 <= c0 < self.cols - 1):
            return False
        state = self._square_state_rows[r0][c0]
        if state != 2:
            return state == 1
        return self._clearance_point(x, z) > self.min_clearance

    def _wall_normal(self, point: np.ndarray, blocker: np.ndarray) -> np.ndarray:
        """Unit (x, z) normal of the wall between ``point`` and ``blocker``: the gradient of the
        interpolated clearance (rounded at corners, so sliding goes around them)."""
        mid = (np.asarray(point, float) + np.asarray(blocker, float)) / 2
        h = self.cell / 4
        x, z = float(mid[0]), float(mid[2])
        c = [self._clearance_point(x + dx, z + dz) for dx, dz in ((h, 0), (-h, 0), (0, h), (0, -h))]
        d = np.array([c[0] - c[1], c[2] - c[3]])
        norm = np.hypot(*d)
        return d / norm if norm > 0 else np.zeros(2)


def _clip_to_slab(tri: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Sutherland-Hodgman clip of a polygon ``(n, 3)`` to lo <= y <= hi."""
    poly = list(tri)
    for bound, keep_above in ((lo, True), (hi, False)):
        out = []
        for i in range(len(poly)):
            p, q = poly[i], poly[(i + 1) % len(poly)]
            p_in = p[1] >= bound if keep_above else p[1] <= bound
            q_in = q[1] >= bound if keep_above else q[1] <= bound
            if p_in:
                out.append(p)
            if p_in != q_in:
                t = (bound - p[1]) / (q[1] - p[1])
                out.append(p + t * (q - p))
        poly = out
        if not poly:
            break
    return np.asarray(poly).reshape(-1, 3)
