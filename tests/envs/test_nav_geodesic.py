"""Navigation geometry: geodesics against analytic answers, collisions, wall sliding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pixelrl.envs.nav.apartment import generate_apartment
from pixelrl.envs.nav.geodesic import geodesic_distance
from pixelrl.envs.nav.geometry import forward_vector
from pixelrl.envs.nav.navgrid import AgentSpec, NavGrid
from pixelrl.envs.nav.scene import SceneBuilder

T = 0.1  # wall thickness
H = 2.5  # wall height
R = 0.1  # agent radius
FINE = AgentSpec(radius=R, cell_size=0.025)
# Geodesics must match the continuous answer within 1 cm (the obstacle raster is 5 mm).
TOL = 0.01


def _walls(builder: SceneBuilder, segments):
    """Walls of thickness T centred on axis-aligned segments ((x0, z0), (x1, z1))."""
    for (x0, z0), (x1, z1) in segments:
        lo = (min(x0, x1) - T / 2, 0, min(z0, z1) - T / 2)
        hi = (max(x0, x1) + T / 2, H, max(z0, z1) + T / 2)
        builder.add_box(lo, hi, (200, 200, 200))


def corridor_scene():
    b = SceneBuilder("corridor")
    b.add_box((0, 0, 0), (10, 0, 2), (150, 150, 150), faces="Y")
    _walls(b, [((0, 0), (10, 0)), ((0, 2), (10, 2)), ((0, 0), (0, 2)), ((10, 0), (10, 2))])
    return b.build(floor_height=0.0)


def l_scene():
    """An L: arm A is x in [0, 6], z in [0, 2]; arm B is x in [4, 6], z in [0, 8]."""
    b = SceneBuilder("L")
    b.add_box((0, 0, 0), (6, 0, 2), (150, 150, 150), faces="Y")
    b.add_box((4, 0, 2), (6, 0, 8), (150, 150, 150), faces="Y")
    _walls(
        b,
        [
            ((0, 0), (6, 0)),
            ((6, 0), (6, 8)),
            ((4, 8), (6, 8)),
            ((4, 2), (4, 8)),
            ((0, 2), (4, 2)),
            ((0, 0), (0, 2)),
        ],
    )
    return b.build(floor_height=0.0)


@pytest.fixture(scope="module")
def corridor():
    return NavGrid(corridor_scene(), FINE)


@pytest.fixture(scope="module")
def lgrid():
    return NavGrid(l_scene(), FINE)


@pytest.mark.parametrize(
    "start, goal",
    [((1, 1), (9, 1)), ((1, 0.5), (9, 1.5)), ((2, 1.7), (3, 0.3)), ((8.5, 1.2), (1.5, 0.8))],
)
def test_corridor_geodesic_is_the_straight_line(corridor, start, goal):
    s = np.array([start[0], 0, start[1]])
    g = np.array([goal[0], 0, goal[1]])
    expected = math.dist(start, goal)  # nothing in between: the euclidean distance
    assert geodesic_distance(corridor, s, g[None]) == pytest.approx(expected, abs=1e-6)


def _segment_clear(a: np.ndarray, pts: np.ndarray, k: np.ndarray, r: float) -> np.ndarray:
    """Whether each segment a -> pts[i] keeps at least r (less a hair) from k."""
    ab = pts - a
    t = np.clip(((k - a) * ab).sum(1) / np.maximum((ab * ab).sum(1), 1e-12), 0, 1)
    closest = a + t[:, None] * ab
    return np.linalg.norm(closest - k, axis=1) >= r * (1 - 1e-3)


def _around_corner(s, g, k, r):
    """Independent answer: the shortest path from s to g around a disc of radius r at k: a
    tangent leg, an arc, a tangent leg, minimised by brute force over the two arc end points
    (legs may not cut into the disc)."""
    # The obstacle is the quarter plane x < k_x, z > k_z; inflated by r its corner is the
    # quarter circle facing (+x, -z), which paths from below it to its right wrap.
    theta = np.linspace(-math.pi / 2, 0.0, 2001)
    pts = np.stack([k[0] + r * np.cos(theta), k[1] + r * np.sin(theta)], 1)
    d_s = np.where(_segment_clear(s, pts, k, r), np.linalg.norm(pts - s, axis=1), np.inf)
    d_g = np.where(_segment_clear(g, pts, k, r), np.linalg.norm(pts - g, axis=1), np.inf)
    arc = r * np.abs(theta[:, None] - theta[None, :])
    return float((d_s[:, None] + arc + d_g[None, :]).min())


@pytest.mark.parametrize(
    "start, goal", [((1, 1), (5, 7)), ((0.5, 0.4), (4.5, 7.5)), ((3, 1.5), (5.5, 4))]
)
def test_l_shape_geodesic_wraps_the_inner_corner(lgrid, start, goal):
    # The walls' union has its corner at (4 + T/2, 2 - T/2) = (4.05, 1.95), facing the free
    # region toward (+x, -z); the body keeps its clearance (R plus the grid's half-cell safety
    # margin) from it, so paths wrap a disc of that radius.
    k = np.array([4 + T / 2, 2 - T / 2])
    expected = _around_corner(np.array(start, float), np.array(goal, float), k, lgrid.min_clearance)
    assert expected > math.dist(start, goal) + 0.05  # the corner really is in the way
    s = np.array([start[0], 0, start[1]])
    g = np.array([goal[0], 0, goal[1]])
    assert geodesic_distance(lgrid, s, g[None]) == pytest.approx(expected, abs=TOL)


def test_nearest_of_several_goals_and_unreachable(lgrid):
    s = np.array([1.0, 0, 1.0])
    goals = np.array([[5.0, 0, 7.0], [3.0, 0, 1.0]])
    assert geodesic_distance(lgrid, s, goals) == pytest.approx(2.0, abs=TOL)
    outside = np.array([[20.0, 0, 20.0]])  # nowhere near the navigable area
    assert geodesic_distance(lgrid, s, outside) == math.inf


def test_batched_lines_of_sight_agree_with_single_ones(lgrid):
    # From inside arm A, targets all over the L: those up arm B hide behind the inner corner.
    rng = np.random.default_rng(0)
    a = np.array([1.0, 0.0, 1.0])
    targets = np.stack([rng.uniform(0, 6, 60), np.zeros(60), rng.uniform(0, 8, 60)], axis=1)
    single = np.array([lgrid.line_of_sight(a, t) for t in targets])
    assert single.any() and not single.all()
    np.testing.assert_array_equal(lgrid.lines_of_sight(a, targets), single)


def test_navigable_area_keeps_the_radius_from_walls(corridor):
    # Free band across the corridor: z in (T/2 + R, 2 - T/2 - R) = (0.15, 1.85), narrowed by
    # the grid's half-cell safety margin; never wider.
    assert R < corridor.min_clearance <= R + corridor.cell
    zs = np.linspace(0.05, 1.95, 381)
    pts = np.stack([np.full_like(zs, 5.0), np.zeros_like(zs), zs], 1)
    nav = corridor.is_navigable(pts)
    assert not nav[(zs < 0.15) | (zs > 1.85)].any()
    assert nav[(zs > 0.15 + corridor.cell) & (zs < 1.85 - corridor.cell)].all()


def test_sliding_along_a_wall(corridor):
    start = np.array([5.0, 0.0, 0.5])
    yaw = math.radians(-135)  # forward = (-sin, -cos) = (+0.71, +0.71): toward +x and the far wall
    fwd = forward_vector(yaw)
    assert fwd[0] > 0 and fwd[2] > 0
    pos_slide, pos_stop = start.copy(), start.copy()
    for _ in range(12):
        pos_slide, _ = corridor.try_step(pos_slide, pos_slide + 0.25 * fwd, allow_sliding=True)
        pos_stop, _ = corridor.try_step(pos_stop, pos_stop + 0.25 * fwd, allow_sliding=False)
    # Both end against the far wall (z <= 1.85, the body touching it); sliding keeps moving +x.
    assert 1.85 - 0.05 < pos_slide[2] <= 1.85 and 1.85 - 0.05 < pos_stop[2] <= 1.85
    assert pos_stop[0] < start[0] + 1.4 + 0.05
    assert pos_slide[0] > pos_stop[0] + 0.5


def test_no_walking_through_walls_over_random_actions():
    """Random action sequences in generated apartments: every move stays navigable, never
    crosses a triangle of the mesh (checked by ray casts against the mesh itself), and the
    body (radius R) never overlaps geometry."""
    from embreex import mesh_construction, rtcore_scene

    rng = np.random.default_rng(0)
    for seed in range(3):
        scene = generate_apartment(seed)
        grid = NavGrid(scene)
        embree = rtcore_scene.EmbreeScene()
        mesh_construction.TriangleMesh(embree, scene.triangles)
        island = grid.largest_island()
        for _ in range(8):
            pos = grid.sample_navigable(rng, island)
            yaw = float(rng.uniform(-math.pi, math.pi))
            prev, moves = [], []
            for a in rng.integers(1, 4, 150):
                if a == 1:
                    new, _ = grid.try_step(
                        pos,
                        pos + 0.25 * forward_vector(yaw),
                        allow_sliding=bool(rng.random() < 0.8),
                    )
                    prev.append(pos)
                    moves.append(new)
                    pos = new
                else:
                    yaw += math.radians(10 if a == 2 else -10)
            a, b = np.array(prev), np.array(moves)
            assert grid.is_navigable(b).all()
            seg = b - a
            length = np.linalg.norm(seg[:, [0, 2]], axis=1)
            moving = length > 1e-9
            for h in (0.3, 0.9, 1.4):  # body heights above the floor
                o = (a[moving] + [0, h, 0]).astype(np.float32)
                d = (seg[moving] / length[moving, None]).astype(np.float32)
                hit = embree.run(o, d, dists=length[moving].astype(np.float32), output=True)
                assert (hit["primID"] < 0).all(), "a move crossed a wall"
            # The body around each reached point is free of geometry.
            angles = np.linspace(0, 2 * math.pi, 16, endpoint=False)
            dirs = np.stack([np.cos(angles), np.zeros(16), np.sin(angles)], 1).astype(np.float32)
            for h in (0.3, 1.0):
                o = np.repeat((b + [0, h, 0]).astype(np.float32), 16, axis=0)
                d = np.tile(dirs, (len(b), 1))
                hit = embree.run(o, d, dists=np.full(len(o), R * 0.95, np.float32), output=True)
                assert (hit["primID"] < 0).all(), "the body overlapped geometry"


def test_fields_are_shared_and_the_cheap_bound_holds(lgrid):
    """A field is computed once per goal set (the episode start reuses the generator's), and
    exact_distance_bound, which the generator uses to reject too-straight episodes before the
    any-angle search, is never below exact_distance."""
    from pixelrl.envs.nav.geodesic import geodesic_graph

    graph = geodesic_graph(lgrid)
    goal = np.array([[5.0, 0.0, 7.0]])
    field = graph.field(goal)
    assert graph.field(goal.copy()) is field
    assert graph.field(goal, seed_radius=0.3) is not field
    rng = np.random.default_rng(3)
    island = lgrid.largest_island()
    for _ in range(8):
        start = lgrid.sample_navigable(rng, island)
        exact = field.exact_distance(start)
        assert exact <= field.exact_distance_bound(start)
    with pytest.raises(ValueError, match="single goal"):
        graph.field(np.array([[5.0, 0.0, 7.0], [1.0, 0.0, 1.0]])).exact_distance_bound(goal[0])
