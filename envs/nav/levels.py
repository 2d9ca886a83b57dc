"""Multi-storey scenes: one navigability grid per floor level, joined where stairs or ramps meet.

A two-storey house has two floors over the same ground-plane cells, which one 2D grid cannot
hold. ``LevelledNavGrid`` builds a :class:`NavGrid` per floor level, each over a height band
around its floor (level k reaches from halfway down to the level below, minus an overlap, to
halfway up to the level above, plus the overlap), so a staircase between two floors appears on
both levels where their bands overlap. A cell navigable on both levels with the same floor is a
*portal*: the geodesic graph joins the two levels there at no cost, as Recast's navmesh is one
surface over stairs.

The levels are stacked row-wise into one grid of ``L * level_rows`` rows (level k's row r is row
``k * level_rows + r``), so everything that reads a grid's arrays (``navigable``, ``islands``,
``floor``; ``to_cell`` / ``cell_centre``; the geodesic graph and its fields) works unchanged:
the two padding rows at each level's edges have no floor, so no grid edge reaches from one
level into the next. Point queries pick the level whose floor is at the point's height.
"""

from __future__ import annotations

import numpy as np

from pixelrl.envs.nav.navgrid import AgentSpec, NavGrid
from pixelrl.envs.nav.scene import Scene, upward_area_by_height

# How far above a floor a point may be and still stand on it (its height is the floor's, up
# to a step, plus rounding of stored positions).
_ON_FLOOR = 0.05


class LevelledNavGrid:
    """The navigable cells of a multi-storey scene: one :class:`NavGrid` a floor level, stacked;
    the same queries as :class:`NavGrid`, with a point's level read from its height."""

    sloped = True  # floors vary from cell to cell: distances count the climb

    def __init__(
        self, scene: Scene, agent: AgentSpec | None, floor_levels: tuple[float, ...]
    ) -> None:
        self.scene = scene
        self.agent = agent = agent or AgentSpec()
        agent.validate()
        heights = sorted(float(h) for h in floor_levels)
        if len(heights) < 2:
            raise ValueError(f"a levelled grid needs two floor levels or more, got {heights}")
        gaps = np.diff(heights)
        if gaps.min() <= agent.height:
            raise ValueError(
                f"scene {scene.name!r}: floor levels {heights} are closer than the agent's "
                f"height ({agent.height} m); give one level per storey"
            )
        self.floor_levels = tuple(heights)
        self.levels = [
            NavGrid(scene, agent, band=band, floor_height=h)
            for h, band in zip(heights, level_bands(heights, agent.max_climb))
        ]
        first = self.levels[0]
        self.cell, self.origin, self.cols = first.cell, first.origin, first.cols
        self.level_rows = first.rows
        self.rows = len(self.levels) * self.level_rows
        self.floor_height = first.floor_height
        self.floor = np.vstack([g.floor for g in self.levels])
        self.occupied = np.vstack([g.occupied for g in self.levels])
        self.navigable = np.vstack([g.navigable for g in self.levels])
        # Geodesic graph edges reach 4 cells; each level's 2 padding rows on either side (no
        # floor there) keep them inside their level.
        edges = np.concatenate(
            [
                self.navigable[k * self.level_rows + d]
                for k in range(len(self.levels))
                for d in (0, 1, self.level_rows - 2, self.level_rows - 1)
            ]
        )
        assert not edges.any(), "a level's padding rows must not be navigable"
        self.portals = self._find_portals()
        self.islands, self.num_islands = self._join_islands()
        self._graph = None  # geodesic graph, built on first use

    # ----------------------------------------------------------------- construction
    def _find_portals(self) -> np.ndarray:
        """Pairs of stacked flat cell indices ``(P, 2)`` (both directions) where two adjacent
        levels share a navigable cell at the same floor height."""
        pairs = []
        for k in range(len(self.levels) - 1):
            a, b = self.levels[k], self.levels[k + 1]
            same = a.navigable & b.navigable & (np.abs(a.floor - b.floor) < 1e-4)
            flat = np.flatnonzero(same)
            lo = flat + k * self.level_rows * self.cols
            hi = flat + (k + 1) * self.level_rows * self.cols
            pairs += [np.stack([lo, hi], 1), np.stack([hi, lo], 1)]
        return np.concatenate(pairs) if pairs else np.zeros((0, 2), np.int64)

    def _join_islands(self) -> tuple[np.ndarray, int]:
        """Island labels over the stack: each level's islands, merged across portals."""
        labels, offset = [], 0
        for g in self.levels:
            labels.append(np.where(g.islands > 0, g.islands + offset, 0))
            offset += g.num_islands
        stacked = np.vstack(labels)
        parent = np.arange(offset + 1)

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        flat = stacked.ravel()
        for a, b in self.portals:
            ra, rb = root(int(flat[a])), root(int(flat[b]))
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        roots = np.array([root(i) for i in range(offset + 1)])
        _, dense = np.unique(roots, return_inverse=True)  # root 0 (no island) stays 0
        return dense[stacked], int(dense.max())

    # ----------------------------------------------------------------- levels of points
    def levels_of(self, points: np.ndarray) -> np.ndarray:
        """The level each world point ``(..., 3)`` stands on: the level whose floor under it is
        nearest its height, preferring one where it is navigable (on stairs two levels share a
        floor); points off every floor get the nearest finite one (level 0 without any)."""
        p = np.asarray(points, dtype=np.float64)
        r, c = self.levels[0].to_cell(p)
        cost = []
        for g in self.levels:
            h = g.floor[r, c]
            off = np.abs(h - p[..., 1])
            nav = g.navigable_xz(p[..., 0], p[..., 2])
            score = (
                off
                + np.where(nav, 0.0, 10.0)
                + np.where(off <= self.agent.max_climb + _ON_FLOOR, 0.0, 100.0)
            )
            cost.append(np.where(np.isfinite(h), score, np.inf))
        cost = np.stack(cost, -1)
        return np.where(
            np.isfinite(cost).any(-1), np.argmin(np.nan_to_num(cost, posinf=1e30), -1), 0
        )

    def level_of(self, point: np.ndarray) -> int:
        return int(self.levels_of(np.asarray(point, dtype=np.float64)))

    def _on_level(self, k: int, points: np.ndarray) -> np.ndarray:
        """Whether points ``(..., 3)`` are at level ``k``'s floor height (within a step)."""
        g = self.levels[k]
        r, c = g.to_cell(points)
        off = np.abs(g.floor[r, c] - np.asarray(points, dtype=np.float64)[..., 1])
        return off <= self.agent.max_climb + _ON_FLOOR  # NaN compares False

    # ----------------------------------------------------------------- NavGrid's queries
    def to_cell(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stacked (row, col) of world points ``(..., 3)``: the cell on the point's level."""
        r, c = self.levels[0].to_cell(points)
        return r + self.levels_of(points) * self.level_rows, c

    def cell_of(self, point: np.ndarray) -> tuple[int, int]:
        r, c = self.to_cell(np.asarray(point, dtype=np.float64))
        return int(r), int(c)

    def cell_centre(self, row: np.ndarray, col: np.ndarray) -> np.ndarray:
        """World points ``(..., 3)`` at the floor of stacked cells (row, col)."""
        row, col = np.asarray(row), np.asarray(col)
        x = self.origin[0] + (col + 0.5) * self.cell
        z = self.origin[1] + (row % self.level_rows + 0.5) * self.cell
        nominal = np.asarray(self.floor_levels)[row // self.level_rows]
        y = np.where(np.isfinite(self.floor[row, col]), self.floor[row, col], nominal)
        return np.stack([x, y, z], axis=-1)

    def is_navigable(self, points: np.ndarray) -> np.ndarray:
        """Whether the body fits at world points ``(..., 3)`` on the level at their height."""
        p = np.asarray(points, dtype=np.float64)
        out = np.zeros(p.shape[:-1], dtype=bool)
        for k, g in enumerate(self.levels):
            out |= self._on_level(k, p) & g.navigable_xz(p[..., 0], p[..., 2])
        return out

    def height_at(self, point: np.ndarray) -> float:
        return self.levels[self.level_of(point)].height_at(point)

    def line_of_sight(self, a: np.ndarray, b: np.ndarray) -> bool:
        """True when the segment a-b is navigable all along on one level holding both ends."""
        a, b = np.asarray(a, float), np.asarray(b, float)
        ends = np.stack([a, b])
        return any(
            self._on_level(k, ends).all() and g.line_of_sight(a, b)
            for k, g in enumerate(self.levels)
        )

    def lines_of_sight(self, a: np.ndarray, targets: np.ndarray) -> np.ndarray:
        a, targets = np.asarray(a, float), np.asarray(targets, float).reshape(-1, 3)
        out = np.zeros(len(targets), dtype=bool)
        for k, g in enumerate(self.levels):
            if not self._on_level(k, a):
                continue
            mine = np.flatnonzero(self._on_level(k, targets) & ~out)
            if len(mine):
                out[mine] = g.lines_of_sight(a, targets[mine])
        return out

    # The same code over the stacked arrays and this class's point queries.
    island_of = NavGrid.island_of
    largest_island = NavGrid.largest_island
    sample_navigable = NavGrid.sample_navigable

    def try_step(
        self, start: np.ndarray, end: np.ndarray, allow_sliding: bool = True
    ) -> tuple[np.ndarray, bool]:
        """:meth:`NavGrid.try_step` on each level the start stands on (two on a staircase's
        shared part); the move that ends nearest ``end`` wins, so walking up the stairs hands
        the body over from the lower level to the upper one."""
        start = np.asarray(start, float)
        best = None
        for k, g in enumerate(self.levels):
            if not self._on_level(k, start):
                continue
            reached, collided = g.try_step(start, end, allow_sliding)
            miss = float(np.hypot(*(np.asarray(end, float) - reached)[[0, 2]]))
            if best is None or miss < best[0] - 1e-9:
                best = (miss, reached, collided)
        if best is None:  # off every floor: stay
            return start.copy(), True
        return best[1], best[2]


def level_bands(heights: list[float], max_climb: float) -> list[tuple[float, float]]:
    """Each level's (lowest, highest) floor height: halfway to the neighbouring levels, widened
    by an overlap (a quarter of the gap, at most 0.5 m) so that stairs between two levels are
    on both of them for a stretch; the bottom and top levels reach ``max_climb`` beyond."""
    bands = []
    for k, h in enumerate(heights):
        if k == 0:
            lo = h - max_climb
        else:
            gap = h - heights[k - 1]
            lo = h - gap / 2 - min(0.5, gap / 4)
        if k == len(heights) - 1:
            hi = h + max_climb
        else:
            gap = heights[k + 1] - h
            hi = h + gap / 2 + min(0.5, gap / 4)
        bands.append((lo, hi))
    return bands


def estimate_floor_levels(triangles: np.ndarray, min_storey: float = 2.0) -> tuple[float, ...]:
    """The floor height of each storey of a mesh: heights (5 cm bins) whose upward-facing area is
    at least a quarter of the largest one's, at least ``min_storey`` metres from a bigger one
    (table tops and stair treads are small; a flat roof counts, as an unreachable level)."""
    heights, area = upward_area_by_height(triangles)
    chosen: list[float] = []
    for b in np.argsort(-area, kind="stable"):
        if area[b] < area.max() / 4:
            break
        h = float(heights[b])
        if all(abs(h - c) >= min_storey for c in chosen):
            chosen.append(h)
    return tuple(sorted(chosen))


def navigation_grid(scene: Scene, agent: AgentSpec | None = None) -> NavGrid | LevelledNavGrid:
    """The grid for a scene: one level, or one per floor where ``scene.floor_levels`` names
    two or more."""
    levels = getattr(scene, "floor_levels", None)
    if levels is not None and len(levels) >= 2:
        return LevelledNavGrid(scene, agent, tuple(levels))
    return NavGrid(scene, agent)
