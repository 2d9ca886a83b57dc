"""Multi-storey scenes: a navigability grid per floor level, joined by the stairs (issue 23 item 4)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import pixelrl.envs  # noqa: F401  (registers the env ids)
from pixelrl.envs.nav.dataset import EpisodeFileError, NavEpisode, NavGoal, save_episodes
from pixelrl.envs.nav.geodesic import geodesic_graph
from pixelrl.envs.nav.house import two_storey_house
from pixelrl.envs.nav.levels import LevelledNavGrid, estimate_floor_levels, navigation_grid
from pixelrl.envs.nav.mesh_io import export_glb
from pixelrl.envs.nav.navgrid import NavGrid
from pixelrl.envs.nav.scene import SceneBuilder

DOWNSTAIRS = np.array([6.8, 0.0, 3.0])
UPSTAIRS = np.array([6.8, 3.0, 3.0])  # straight above: reachable only up the stairs


@pytest.fixture(scope="module")
def house():
    return two_storey_house()


@pytest.fixture(scope="module")
def grid(house):
    return navigation_grid(house)


@pytest.fixture(scope="module")
def house_glb(tmp_path_factory, house):
    path = tmp_path_factory.mktemp("house") / "house.glb"
    export_glb(house, path)
    return str(path)


def run_follower(env) -> tuple[dict, list[float]]:
    follower = env.shortest_path_follower()
    heights = []
    for _ in range(env.cfg.max_episode_steps):
        action = follower.get_next_action(env.state.position, env.state.yaw)
        _, _, terminated, truncated, info = env.step(action)
        heights.append(float(env.state.position[1]))
        if terminated or truncated:
            return info, heights
    raise AssertionError("the episode did not end")


def test_each_storey_is_a_level_joined_by_the_stairs(grid):
    assert isinstance(grid, LevelledNavGrid)
    ground, upper = grid.levels
    # The ground level holds the ground floor and the foot of the stairs, the upper level the
    # upper floor and the top of the stairs; the middle of the flight is on both (portals).
    assert np.nanmin(ground.floor[ground.navigable]) == pytest.approx(0.0, abs=1e-6)
    assert np.nanmax(upper.floor[upper.navigable]) == pytest.approx(3.0, abs=1e-6)
    assert len(grid.portals) > 0
    a, b = divmod(grid.portals[:, 0], grid.cols), divmod(grid.portals[:, 1], grid.cols)
    assert np.allclose(grid.floor[a], grid.floor[b], atol=1e-4)
    assert np.all((grid.floor[a] > 1.0) & (grid.floor[a] < 2.0))
    # One island spans both floors.
    assert grid.island_of(DOWNSTAIRS) == grid.island_of(UPSTAIRS) > 0
    assert grid.level_of(DOWNSTAIRS) == 0 and grid.level_of(UPSTAIRS) == 1
    # The same ground-plane spot is a different cell on each floor.
    assert grid.to_cell(DOWNSTAIRS)[0] != grid.to_cell(UPSTAIRS)[0]
    assert grid.height_at(UPSTAIRS) == pytest.approx(3.0)
    assert not grid.line_of_sight(DOWNSTAIRS, UPSTAIRS)


def test_a_ledge_is_not_walkable(grid):
    # From the upper floor beside the stairwell straight over its edge: the stairs below are
    # more than a step down, so the body stops at the edge instead of dropping onto them.
    beside = np.array([3.5, 3.0, 1.6])
    over = np.array([3.5, 3.0, 0.6])
    reached, collided = grid.try_step(beside, over)
    assert collided
    assert reached[2] > 1.1 and reached[1] == pytest.approx(3.0)


def test_the_geodesic_between_floors_climbs_the_stairs(grid):
    field = geodesic_graph(grid).field(UPSTAIRS[None])
    exact = field.exact_distance(DOWNSTAIRS)
    assert np.isfinite(exact)
    path = field.taut_path(DOWNSTAIRS)
    assert path[0][1] == 0.0 and path[-1][1] == pytest.approx(3.0)
    # It goes by the stairs: along the z = 0 wall, up through every height in between.
    on_stairs = path[(path[:, 1] > 0.1) & (path[:, 1] < 2.9)]
    assert len(on_stairs) >= 3 and np.all(on_stairs[:, 2] < 1.2)
    assert np.all(np.diff(path[:, 1]) >= -1e-6)  # only ever up
    # The polyline length in 3D; at least the way to the foot of the stairs, up them, and back.
    assert exact == pytest.approx(np.linalg.norm(np.diff(path, axis=0), axis=1).sum())
    assert exact > np.hypot(6.8 - 1.0, 3.0 - 0.6) + np.hypot(4.2, 3.0)
    # The grid search agrees within a few percent (its edges climb the stairs step by step).
    assert field.distance(DOWNSTAIRS) == pytest.approx(exact, rel=0.05)
    assert exact <= field.exact_distance_bound(DOWNSTAIRS)


def test_the_follower_walks_an_episode_upstairs(tmp_path, house_glb):
    episode = NavEpisode(
        "up",
        house_glb,
        DOWNSTAIRS,
        np.array([0.0, 0.0, 0.0, 1.0]),
        [NavGoal(UPSTAIRS)],
    )
    data = tmp_path / "up.json.gz"
    save_episodes(data, [episode])
    env = gym.make(
        "pixelrl/PointNav-v0",
        dataset_path=str(data),
        floor_levels=[0, 3],
        width=16,
        height=16,
        max_episode_steps=400,
    ).unwrapped
    env.reset(seed=0)
    start_distance = env.state.start_distance
    info, heights = run_follower(env)
    assert info["success"] == 1.0
    assert heights[-1] == pytest.approx(3.0) and min(heights) == 0.0
    assert 0.9 < info["spl"] <= 1.0
    assert info["path_length"] >= start_distance - 1e-6  # 3D, as l is
    # The stacked top-down map draws the walk on both floors.
    assert env.topdown(scale=1).shape[0] == env.state.grid.rows
    env.close()


def test_a_storey_read_as_one_floor_is_an_error(tmp_path, house_glb):
    # The same file without floor_levels: the upstairs start is not silently put downstairs.
    episode = NavEpisode(
        "up", house_glb, UPSTAIRS, np.array([0.0, 0.0, 0.0, 1.0]), [NavGoal(DOWNSTAIRS)]
    )
    data = tmp_path / "down.json.gz"
    save_episodes(data, [episode])
    env = gym.make("pixelrl/PointNav-v0", dataset_path=str(data), width=16, height=16)
    with pytest.raises(
        EpisodeFileError, match=r"start_position is \+3.00 m .* set option floor_levels"
    ):
        env.reset(seed=0)
    env.close()


def test_generated_episodes_use_both_floors(house_glb):
    env = gym.make(
        "pixelrl/PointNav-v0",
        scenes=[house_glb],
        floor_levels="auto",
        width=16,
        height=16,
        max_episode_steps=400,
    ).unwrapped
    between = 0
    for seed in range(6):
        env.reset(seed=seed)
        s = env.state
        if abs(s.episode.start_position[1] - s.episode.goals[0].position[1]) > 2.5:
            between += 1
        info, _ = run_follower(env)
        assert info["success"] == 1.0, seed
    assert between >= 2
    # Same seed, same episode and the same walk (determinism across levels).
    env.reset(seed=3)
    first = (env.state.episode.start_position.copy(), run_follower(env)[1])
    env.reset(seed=3)
    again = (env.state.episode.start_position.copy(), run_follower(env)[1])
    assert np.array_equal(first[0], again[0]) and first[1] == again[1]
    env.close()


def test_objectnav_goals_on_either_floor(house_glb):
    env = gym.make(
        "pixelrl/ObjectNav-v0", scenes=[house_glb], floor_levels=[0, 3], width=16, height=16
    ).unwrapped
    for seed in range(3):
        env.reset(seed=seed)
        category = env.state.episode.object_category
        goal_floor = {"bed": 3.0, "sofa": 0.0, "chair": 0.0}[category]
        # View points stand on the object's own floor, not under or over it.
        assert np.allclose(env.state.episode.goal_points()[:, 1], goal_floor)
        info, heights = run_follower(env)
        assert info["success"] == 1.0
        assert heights[-1] == pytest.approx(goal_floor)
    env.close()


def test_floor_levels_found_and_checked(house, tmp_path):
    # The two floors and the flat roof (an unreachable level, as a navmesh has it too).
    assert estimate_floor_levels(house.triangles) == pytest.approx((0.0, 3.0, 6.1), abs=1e-6)
    with pytest.raises(ValueError, match="floor_levels must be 'auto' or a list"):
        gym.make("pixelrl/PointNav-v0", floor_levels="atuo")
    with pytest.raises(ValueError, match="closer than the agent's height"):
        LevelledNavGrid(house, None, (0.0, 1.0))
    # One level: the single-floor grid, as before.
    house.floor_levels = (0.0,)
    try:
        assert type(navigation_grid(house)) is NavGrid
    finally:
        house.floor_levels = (0.0, 3.0)


def test_a_ramp_joins_two_levels_too():
    # A 6 x 10 m hall; a 1.2 m wide ramp along its x = 0 wall rises from z = 1 to z = 9 onto a
    # gallery 2 m up over the far half (slope 0.25: 5 cm cells rise 1.25 cm, within max_climb).
    b = SceneBuilder("ramp")
    b.add_box((0, -0.1, 0), (6, 0, 10), (120, 100, 80))
    for lo, hi in (((-0.1, 0, 0), (0, 4, 10)), ((6, 0, 0), (6.1, 4, 10))):
        b.add_box(lo, hi, (200, 190, 170))
    for lo, hi in (((0, 0, -0.1), (6, 4, 0)), ((0, 0, 10), (6, 4, 10.1))):
        b.add_box(lo, hi, (200, 190, 170))
    b.add_box((1.2, 1.9, 9.0), (6, 2.0, 10), (180, 180, 180))  # the gallery
    quad = [(0, 0, 1), (1.2, 0, 1), (1.2, 2, 9), (0, 2, 9)]
    b.add_triangles(
        np.array([[quad[0], quad[2], quad[1]], [quad[0], quad[3], quad[2]]]), (150, 60, 50)
    )
    b.add_box((0, 1.9, 9.0), (1.2, 2.0, 10), (180, 180, 180))  # the landing
    grid = navigation_grid(b.build(floor_height=0.0, floor_levels=(0.0, 2.0)))
    below, above = np.array([3.0, 0.0, 9.5]), np.array([3.0, 2.0, 9.5])
    assert grid.island_of(below) == grid.island_of(above) > 0
    field = geodesic_graph(grid).field(above[None])
    path = field.taut_path(below)
    # Up the ramp: it starts at the ramp's foot and climbs monotonically to the gallery.
    assert np.all(np.diff(path[:, 1]) >= -1e-6) and path[-1][1] == pytest.approx(2.0)
    climb = path[(path[:, 1] > 0.05) & (path[:, 1] < 1.95)]
    assert len(climb) and np.all(climb[:, 0] < 1.2)
    ramp = np.hypot(8.0, 2.0)
    assert field.exact_distance(below) > ramp
    reached, _ = grid.try_step(np.array([0.6, 0.5, 3.0]), np.array([0.6, 0.5, 3.2]))
    assert reached[1] == pytest.approx(0.55, abs=0.02)  # the body follows the slope
