"""Geodesic distance on the navigability grid: Dijkstra over a 48-neighbour graph.

Why 48 neighbours: an 8-connected grid overestimates diagonal-ish distances by up to 8 %; adding
every primitive offset up to 4 cells ((1,0), (1,1), (2,1), (3,1), (3,2), (4,1), (4,3) and their
mirrors) bounds the error of a straight line by 1/cos(7°) - 1 < 0.8 %, so geodesics come out
within a cell or so of the true shortest path around the (radius-inflated) obstacles. An edge
exists only when every cell it crosses is navigable.

The graph is built once per grid; a field for a set of goals is one multi-source Dijkstra from a
virtual source wired to the cells around each goal with their exact euclidean offsets (so goals
need not sit on cell centres). The nearest goal wins, as habitat's DistanceToGoal does. The graph
keeps its last couple of fields (fields are read-only), so the episode that the generator has
just drawn starts without a second Dijkstra.

On a multi-storey scene (``levels.LevelledNavGrid``: the levels stacked as one grid) the same
graph gets the climb in its edge lengths (3D), zero-cost edges at the portals where two levels
share a stairway cell, and paths are pulled taut one level at a time.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from functools import lru_cache
from math import gcd

import numpy as np

from pixelrl.envs.nav.navgrid import NavGrid

_OFFSETS = [
    (dr, dc)
    for dr in range(-4, 5)
    for dc in range(-4, 5)
    if (dr, dc) != (0, 0) and gcd(abs(dr), abs(dc)) == 1
]


class GeodesicGraph:
    """The 48-neighbour graph over a grid's navigable cells (CSR), with a spare last row for the
    virtual goal source."""

    # Fields kept per graph (each ~24 bytes per grid cell, ~0.4 MB for an apartment): enough for
    # the generator's last field to start its episode; a dataset pass revisits a field only when
    # its scene has this few episodes.
    FIELD_CACHE_SIZE = 2

    def __init__(self, grid: NavGrid) -> None:
        self.grid = grid
        self._fields: OrderedDict[tuple[bytes, float], GeodesicField] = OrderedDict()
        nav = grid.navigable
        self.node_of = -np.ones(nav.shape, np.int64)
        rows, cols = np.nonzero(nav)
        self.node_of[rows, cols] = np.arange(len(rows))
        self.node_rc = np.stack([rows, cols], 1)
        self.n = len(rows)
        src, dst, weight = [], [], []
        for dr, dc in _OFFSETS:
            r2, c2 = rows + dr, cols + dc
            ok = (r2 >= 0) & (r2 < grid.rows) & (c2 >= 0) & (c2 < grid.cols)
            ok[ok] = nav[r2[ok], c2[ok]]
            # Every cell the segment passes must be navigable (sampled at 1/2 cell steps).
            steps = 2 * max(abs(dr), abs(dc))
            for k in range(1, steps):
                f = k / steps
                rr = np.floor(rows + 0.5 + dr * f).astype(np.int64)
                cc = np.floor(cols + 0.5 + dc * f).astype(np.int64)
                idx = np.flatnonzero(ok)
                ok[idx] = nav[
                    np.clip(rr[idx], 0, grid.rows - 1), np.clip(cc[idx], 0, grid.cols - 1)
                ]
            idx = np.flatnonzero(ok)
            src.append(idx)
            dst.append(self.node_of[r2[idx], c2[idx]])
            flat = np.hypot(dr, dc) * grid.cell
            if getattr(grid, "sloped", False):  # stairs and ramps: the climb counts
                climb = grid.floor[r2[idx], c2[idx]] - grid.floor[rows[idx], cols[idx]]
                weight.append(np.hypot(flat, climb))
            else:
                weight.append(np.full(len(idx), flat))
        portals = getattr(grid, "portals", None)
        if portals is not None and len(portals):
            # Where two levels share a stairway cell: the same place, at no cost (scipy's
            # Dijkstra needs a positive weight to keep the edge).
            src.append(self.node_of.ravel()[portals[:, 0]])
            dst.append(self.node_of.ravel()[portals[:, 1]])
            weight.append(np.full(len(portals), 1e-12))
        src = np.concatenate(src)
        order = np.argsort(src, kind="stable")
        self.indices = np.concatenate(dst)[order].astype(np.int32)
        self.data = np.concatenate(weight)[order]
        counts = np.bincount(src, minlength=self.n)
        self.indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def field(self, goals: np.ndarray, seed_radius: float = 0.15) -> GeodesicField:
        """Distance field to the nearest of ``goals`` ``(G, 3)``.

        Each goal seeds the navigable cells within ``seed_radius`` (growing up to 1 m when a goal
        sits off the navigable area, like habitat snapping goals to the navmesh) with its exact
        euclidean distance. The same goals and radius give the same (shared, read-only) field.
        """
        goals = np.asarray(goals, dtype=np.float64).reshape(-1, 3)
        key = (goals.tobytes(), float(seed_radius))
        field = self._fields.get(key)
        if field is None:
            field = self._compute_field(goals, seed_radius)
            self._fields[key] = field
            if len(self._fields) > self.FIELD_CACHE_SIZE:
                self._fields.popitem(last=False)
        else:
            self._fields.move_to_end(key)
        return field

    def _compute_field(self, goals: np.ndarray, seed_radius: float) -> GeodesicField:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import dijkstra

        grid = self.grid
        seed_nodes, seed_cost, seed_goal = [], [], []
        for gi, g in enumerate(goals):
            radius = seed_radius
            while radius <= 1.0 + 1e-9:
                nodes, dist = self._cells_near(g, radius)
                if len(nodes):
                    break
                radius *= 2
            seed_nodes.append(nodes)
            seed_cost.append(dist)
            seed_goal.append(np.full(len(nodes), gi))
        nodes = np.concatenate(seed_nodes).astype(np.int32)
        cost = np.concatenate(seed_cost)
        source = self.n
        indptr = np.concatenate([self.indptr, [self.indptr[-1] + len(nodes)]])
        graph = csr_matrix(
            (
                np.concatenate([self.data, cost + 1e-9]),
                np.concatenate([self.indices, nodes]),
                indptr,
            ),
            shape=(self.n + 1, self.n + 1),
        )
        dist, pred = dijkstra(graph, indices=source, return_predecessors=True)
        values = np.full((grid.rows, grid.cols), np.inf)
        values[self.node_rc[:, 0], self.node_rc[:, 1]] = dist[: self.n]
        # Which goal each seed cell serves (for the last waypoint of a path).
        goal_of = -np.ones(self.n + 1, np.int64)
        order = np.argsort(cost)[::-1]  # nearest goal written last wins
        goal_of[nodes[order]] = np.concatenate(seed_goal)[order]
        return GeodesicField(self, goals, values, pred, goal_of)

    def _cells_near(self, point: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
        grid = self.grid
        r, c = grid.to_cell(point)
        k = int(np.ceil(radius / grid.cell)) + 1
        rr, cc = np.mgrid[
            max(r - k, 0) : min(r + k + 1, grid.rows), max(c - k, 0) : min(c + k + 1, grid.cols)
        ]
        rr, cc = rr.ravel(), cc.ravel()
        centres = grid.cell_centre(rr, cc)
        d = straight_distances(grid, centres, np.asarray(point, dtype=np.float64))
        keep = (d <= radius) & grid.navigable[rr, cc]
        return self.node_of[rr[keep], cc[keep]], d[keep]


class GeodesicField:
    """Geodesic distance (metres) from anywhere on the grid to the nearest goal."""

    def __init__(self, graph: GeodesicGraph, goals, values, predecessors, goal_of) -> None:
        self.graph = graph
        self.goals = goals
        self.values = values
        self._pred = predecessors
        self._goal_of = goal_of

    def distance(self, point: np.ndarray) -> float:
        """Geodesic distance from a world point: the best of the navigable cells around it
        (3x3) plus the straight hop to that cell's centre; ``inf`` when unreachable."""
        # Called every step of every agent: nine cells in plain Python beat numpy's overheads.
        grid = self.graph.grid
        point = np.asarray(point, dtype=np.float64)
        x, z = float(point[0]), float(point[2])
        ox, oz, cell = float(grid.origin[0]), float(grid.origin[1]), grid.cell
        r, c = grid.cell_of(point)
        oz -= (r - r % getattr(grid, "level_rows", grid.rows)) * cell  # a level's rows start at 0
        r0, c0 = max(r - 1, 0), max(c - 1, 0)
        best = math.inf
        # On a multi-storey grid the hop climbs too (a point a stair above a cell).
        floors = (
            grid.floor[r0 : r + 2, c0 : c + 2].tolist() if getattr(grid, "sloped", False) else None
        )
        y = float(point[1])
        for i, row in enumerate(self.values[r0 : r + 2, c0 : c + 2].tolist()):
            dz = oz + (r0 + i + 0.5) * cell - z
            for j, value in enumerate(row):
                if value < best:  # inf never is; the hop only adds
                    dx = ox + (c0 + j + 0.5) * cell - x
                    hop = math.hypot(dx, dz, floors[i][j] - y) if floors else math.hypot(dx, dz)
                    best = min(best, value + hop)
        if best == math.inf:
            return best
        # Beside the goal itself the straight line is the answer.
        direct = straight_distances(grid, self.goals, point)
        near = direct[direct < grid.cell * 2]
        if len(near) and grid.is_navigable(point):
            best = min(best, float(near.min()))
        return best

    def visible_distance(self, point: np.ndarray) -> float | None:
        """The exact geodesic when it is a straight line: the distance to the goal nearest
        ``point`` (ground plane) when that goal is in line of sight (every other goal's geodesic
        is at least its own straight distance, so no longer path can win); None otherwise."""
        point = np.asarray(point, dtype=np.float64)
        direct = straight_distances(self.graph.grid, self.goals, point)
        k = int(np.argmin(direct))
        grid = self.graph.grid
        if grid.is_navigable(point) and grid.line_of_sight(point, self.goals[k]):
            return float(direct[k])
        return None

    def exact_distance(self, point: np.ndarray) -> float:
        """Any-angle geodesic: the straight line to a goal in plain sight
        (:meth:`visible_distance`), else the length of :meth:`taut_path`, which removes the
        grid's directional error. Slower than :meth:`distance` (tens of ms) when the goal is out
        of sight; used for episode lengths (SPL's l) and the measures."""
        if np.isfinite(self.distance(point)):
            visible = self.visible_distance(point)
            if visible is not None:
                return visible
        path = self.taut_path(point)
        if len(path) < 2:
            return 0.0 if np.isfinite(self.distance(point)) else float("inf")
        legs = (
            np.diff(path, axis=0)
            if getattr(self.graph.grid, "sloped", False)
            else np.diff(path[:, [0, 2]], axis=0)
        )
        return float(np.linalg.norm(legs, axis=1).sum())

    def taut_path(self, point: np.ndarray, passes: int = 3) -> np.ndarray:
        """The grid shortest path pulled taut: greedy string pulling over the grid path (line of
        sight on the continuous navigable area), then each corner vertex slides, within two
        cells, to where the two legs through it are shortest (corners settle on the
        clearance boundary instead of on cell centres)."""
        if not np.isfinite(self.distance(point)):
            return np.asarray(point, dtype=np.float64)[None]
        path, levels = self._path_with_levels(point, max_points=100000)
        grid = self.graph.grid
        if not hasattr(grid, "levels"):
            return _pull_taut(grid, path, passes)
        # One level at a time (each a flat grid). Dijkstra may hop between two levels and back
        # inside a shared stretch of stairs (the portals cost nothing): stay on a level while
        # the path is on it, so each change of floor is one junction, a point on both levels.
        stay = [int(levels[0])]
        for i in range(1, len(path)):
            here = stay[-1]
            on_it = grid._on_level(here, path[i]) and grid.levels[here].is_navigable(path[i])
            stay.append(here if on_it else int(levels[i]))
        cuts = np.flatnonzero(np.diff(stay)) + 1
        pieces = []
        for start, stop in zip(
            np.concatenate([[0], cuts - 1]), np.concatenate([cuts, [len(path)]])
        ):
            level = grid.levels[stay[stop - 1]]
            taut = _pull_taut(level, path[start:stop], passes)
            for v in taut[1:-1]:  # moved vertices stand on their level's floor
                v[1] = level.height_at(v)
            pieces.append(taut if not pieces else taut[1:])
        # Last, the string pulled in 3D: vertices left on a straight flight of stairs (corner
        # splits, junctions) would make its length a staircase of legs instead of one ramp.
        path = np.concatenate(pieces)
        keep, i = [0], 0
        while i < len(path) - 1:
            visible = grid.lines_of_sight(path[i], path[i + 1 :])
            i = i + 1 + (int(np.flatnonzero(visible)[-1]) if visible.any() else 0)
            keep.append(i)
        return path[keep]

    def _start_node(self, point: np.ndarray) -> int:
        """The graph node a path from ``point`` starts at: its own cell, or the best reachable
        neighbour cell; -1 when none is reachable."""
        grid = self.graph.grid
        r, c = grid.to_cell(point)
        node = int(self.graph.node_of[r, c])
        if node < 0 or not np.isfinite(self.values[r, c]):
            rr, cc = np.mgrid[max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2]
            vals = self.values[np.clip(rr, 0, grid.rows - 1), np.clip(cc, 0, grid.cols - 1)]
            if not np.isfinite(vals).any():
                return -1
            k = int(np.argmin(vals))
            node = int(self.graph.node_of[rr.ravel()[k], cc.ravel()[k]])
        return node

    def exact_distance_bound(self, point: np.ndarray) -> float:
        """An upper bound on :meth:`exact_distance` for a single-goal field, at no cost: the
        length of the grid path that :meth:`taut_path` pulls taut (pulling a string and sliding
        its corners only ever shorten it), with a relative 1e-9 margin for rounding."""
        if len(self.goals) != 1:
            raise ValueError("exact_distance_bound needs a field with a single goal")
        point = np.asarray(point, dtype=np.float64)
        node = self._start_node(point)
        if node < 0:
            return float("inf")
        r, c = self.graph.node_rc[node]
        centre = self.graph.grid.cell_centre(r, c)
        hop = float(straight_distances(self.graph.grid, centre[None], point)[0])
        # values = grid edges + the seed edge (goal to last cell, +1e-9) = the rest of the path.
        return (hop + float(self.values[r, c])) * (1 + 1e-9) + 1e-9

    def path(self, point: np.ndarray, max_points: int = 400) -> np.ndarray:
        """The grid shortest path from ``point`` to its nearest goal, as world points ``(K, 3)``
        (starts at ``point``, ends at the goal; just ``point`` when unreachable)."""
        return self._path_with_levels(point, max_points)[0]

    def _path_with_levels(
        self, point: np.ndarray, max_points: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`path` and, for each of its points, the level of a levelled grid it is on (the
        start on its first cell's, the goal on its last cell's; zeros on a one-level grid)."""
        grid = self.graph.grid
        point = np.asarray(point, dtype=np.float64)
        node = self._start_node(point)
        if node < 0:
            return point[None].copy(), np.zeros(1, np.int64)
        source, start = self.graph.n, node
        nodes = []  # walk the predecessors first, then place every cell in one call
        while len(nodes) < max_points and node >= 0 and node != source:
            nodes.append(node)
            node = int(self._pred[node])
        rc = self.graph.node_rc[nodes]
        centres = grid.cell_centre(rc[:, 0], rc[:, 1]).reshape(-1, 3)
        last = nodes[-1] if nodes else start
        goal = self.goals[max(int(self._goal_of[last]), 0)]
        levels = rc[:, 0] // getattr(grid, "level_rows", grid.rows)
        levels = np.concatenate([levels[:1], levels, levels[-1:]])
        return np.concatenate([point[None], centres, goal[None]]), levels


def _pull_taut(grid: NavGrid, path: np.ndarray, passes: int) -> np.ndarray:
    """:meth:`GeodesicField.taut_path` on one flat grid, from the grid path ``path``."""
    keep, i = [0], 0
    while i < len(path) - 1:
        visible = _batch_line_of_sight(grid, path[i], path[i + 1 :])
        i = i + 1 + (int(np.flatnonzero(visible)[-1]) if visible.any() else 0)
        keep.append(i)
    taut = path[keep].copy()
    if len(taut) < 3:
        return taut
    c = grid.cell
    # Corners: slide vertices within 2 cells, then split the legs at corners and slide again,
    # so the polyline hugs the rounded clearance boundary instead of cutting it with one
    # chord (a single vertex around a 90 degree turn of radius r is ~0.04 r too long).
    for reach in (2.0, 1.0, 0.5):
        taut = _slide_vertices(grid, taut, reach * c, passes)
        if reach > 0.5:
            taut = _split_corner_legs(taut)
    return taut


def _slide_vertices(grid: NavGrid, taut: np.ndarray, reach: float, passes: int) -> np.ndarray:
    """Move each interior vertex within ``reach`` to where its two legs are shortest while
    both stay in line of sight (candidates best first, tested 32 at a time).

    A vertex whose last visit left it in place is visited again only once it or a neighbour
    has moved since: with the same three points the search would find the same nothing.
    """
    steps = np.linspace(-reach, reach, 17)
    offsets = np.stack(np.meshgrid(steps, steps), -1).reshape(-1, 2)
    taut = taut.copy()
    clock = 0
    moved_at = np.zeros(len(taut), np.int64)  # when each vertex last moved
    stuck_at = np.full(len(taut), -1, np.int64)  # when a visit last left it in place
    for _ in range(passes):
        for k in range(1, len(taut) - 1):
            if stuck_at[k] >= moved_at[k - 1 : k + 2].max():
                continue
            clock += 1
            cand = np.repeat(taut[k][None], len(offsets), 0)
            cand[:, 0] += offsets[:, 0]
            cand[:, 2] += offsets[:, 1]
            prev, nxt = taut[k - 1], taut[k + 1]
            to_prev = np.linalg.norm((cand - prev)[:, [0, 2]], axis=1)
            to_next = np.linalg.norm((nxt - cand)[:, [0, 2]], axis=1)
            length = to_prev + to_next
            current = np.linalg.norm((taut[k] - prev)[[0, 2]]) + np.linalg.norm(
                (nxt - taut[k])[[0, 2]]
            )
            order = np.argsort(length)
            order = order[length[order] < current - 1e-9]
            chunks = [order[i : i + 32] for i in range(0, len(order), 32)]
            # The best chunk alone first (usually enough), then all the others in one go.
            legs = (to_prev, to_next)
            best = _first_visible_from_both(grid, prev, nxt, cand, chunks[:1], *legs)
            if best is None and len(chunks) > 1:
                best = _first_visible_from_both(grid, prev, nxt, cand, chunks[1:], *legs)
            if best is None:
                stuck_at[k] = clock
            else:
                taut[k] = cand[best]
                moved_at[k] = clock
    return taut


def _split_corner_legs(taut: np.ndarray, near: float = 0.5) -> np.ndarray:
    """Insert a vertex on each leg next to an interior vertex, ``near`` metres from it (or at
    the leg's middle when shorter), giving the next slide more points to round the corner."""
    out = [taut[0]]
    for k in range(1, len(taut)):
        a, b = taut[k - 1], taut[k]
        length = float(np.linalg.norm((b - a)[[0, 2]]))
        cuts = []
        if k - 1 > 0:  # a is a corner
            cuts.append(min(near, length / 2) / max(length, 1e-12))
        if k < len(taut) - 1:  # b is a corner
            cuts.append(1 - min(near, length / 2) / max(length, 1e-12))
        for f in sorted(set(cuts)):
            if 0 < f < 1:
                out.append(a + f * (b - a))
        out.append(b)
    return np.asarray(out)


def _batch_line_of_sight(grid: NavGrid, a: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Line of sight from ``a`` to each of ``targets`` ``(K, 3)`` in one vectorised test: samples
    every cell/3 along the longest segment, the same count on each."""
    legs = np.linalg.norm((targets - a)[:, [0, 2]], axis=1)
    m = _sample_count(grid, float(np.max(legs)))
    return _visible(grid, a, targets, np.full(len(targets), m))


def _sample_count(grid: NavGrid, longest: float) -> int:
    """Samples along a batch whose longest segment is ``longest`` metres: one per cell/3."""
    return max(2, int(np.ceil(longest / (grid.cell / 3))) + 1)


@lru_cache(maxsize=4096)
def _fractions(m: int) -> np.ndarray:
    return np.linspace(0, 1, m)


def _visible(grid: NavGrid, a: np.ndarray, targets: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Line of sight from ``a`` to each of ``targets``, target i sampled at ``counts[i]`` evenly
    spaced points (all in one array: shorter rows repeat their end point)."""
    f = np.ones((len(targets), int(counts.max())))
    for m in np.unique(counts):
        f[counts == m, :m] = _fractions(int(m))
    x = a[0] + f * (targets[:, 0] - a[0])[:, None]
    z = a[2] + f * (targets[:, 2] - a[2])[:, None]
    return grid.navigable_xz(x, z).all(axis=1)


def _first_visible_from_both(
    grid: NavGrid,
    prev: np.ndarray,
    nxt: np.ndarray,
    cand: np.ndarray,
    chunks: list[np.ndarray],
    to_prev: np.ndarray,
    to_next: np.ndarray,
) -> int | None:
    """The first candidate (in chunk order) in line of sight of both ``prev`` and ``nxt``, each
    chunk sampled as :func:`_batch_line_of_sight` samples it alone (``to_prev`` / ``to_next``:
    every candidate's leg lengths); None when there is none."""
    if not chunks:
        return None
    order = np.concatenate(chunks)
    sizes = [len(c) for c in chunks]
    per_prev = [_sample_count(grid, float(to_prev[c].max())) for c in chunks]
    ok = _visible(grid, prev, cand[order], np.repeat(per_prev, sizes))
    if not ok.any():
        return None
    # From ``nxt``: only the candidates still in the running, sampled as their whole chunk is.
    alive = np.flatnonzero(ok)
    per_next = [_sample_count(grid, float(to_next[c].max())) for c in chunks]
    both = _visible(grid, nxt, cand[order[alive]], np.repeat(per_next, sizes)[alive])
    if not both.any():
        return None
    return int(order[alive[int(np.flatnonzero(both)[0])]])


def straight_distances(grid: NavGrid, points: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Straight-line distances from ``point`` to ``points`` ``(K, 3)``: on the ground plane, or
    in 3D on a multi-storey grid (a goal upstairs is not beside a point below it)."""
    if getattr(grid, "sloped", False):
        return np.linalg.norm(points - point, axis=1)
    return np.hypot(points[:, 0] - point[0], points[:, 2] - point[2])


def geodesic_graph(grid: NavGrid) -> GeodesicGraph:
    """The grid's geodesic graph, built once and cached on the grid."""
    if grid._graph is None:
        grid._graph = GeodesicGraph(grid)
    return grid._graph


def geodesic_distance(grid: NavGrid, start: np.ndarray, goals: np.ndarray) -> float:
    """Geodesic distance (metres) from ``start`` to the nearest of ``goals`` (``inf`` if none
    is reachable), any-angle (see :meth:`GeodesicField.exact_distance`) -- habitat's
    ``pathfinder.geodesic_distance`` for one start."""
    return geodesic_graph(grid).field(goals).exact_distance(start)
