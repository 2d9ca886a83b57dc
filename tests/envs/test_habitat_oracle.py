"""habitat-lab itself as the oracle: its dataset classes read the files we write, ours read the
files it writes, and its measure classes, replaying our agents' paths with our geodesic, give
the numbers our env reports. Skipped (with the reason) where habitat-lab is not installed."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest
from habitat_oracle import habitat

from pixelrl.envs.nav.apartment import generate_apartment
from pixelrl.envs.nav.dataset import (
    generate_objectnav_episode,
    generate_pointnav_episode,
    load_episodes,
    save_episodes,
)
from pixelrl.envs.nav.env import NavEnv
from pixelrl.envs.nav.geometry import quaternion_to_yaw
from pixelrl.envs.nav.navgrid import NavGrid
from pixelrl.envs.nav.sim import apartment_scene_id

hab = habitat()  # skips the module without habitat-lab
from habitat.datasets.object_nav.object_nav_dataset import ObjectNavDatasetV1  # noqa: E402
from habitat.datasets.pointnav.pointnav_dataset import PointNavDatasetV1  # noqa: E402

SEED = 5
SCENE = apartment_scene_id(SEED)


@pytest.fixture(scope="module")
def grid():
    return NavGrid(generate_apartment(SEED))


@pytest.fixture(scope="module")
def pointnav_episodes(grid):
    rng = np.random.default_rng(0)
    return [generate_pointnav_episode(grid, rng, SCENE, str(i)) for i in range(4)]


@pytest.fixture(scope="module")
def objectnav_episodes(grid):
    rng = np.random.default_rng(1)
    return [generate_objectnav_episode(grid, rng, SCENE, str(i)) for i in range(3)]


def _habitat_load(cls, path, scenes_dir=None):
    dataset = cls()
    with gzip.open(path, "rt") as f:
        dataset.from_json(f.read(), scenes_dir=scenes_dir)
    return dataset


def _habitat_save(dataset, path):
    with gzip.open(path, "wt") as f:
        f.write(dataset.to_json())


# ----------------------------------------------------------------------------- our files, their loader
def test_pointnav_file_loads_in_habitat(tmp_path, pointnav_episodes):
    path = tmp_path / "pointnav.json.gz"
    save_episodes(path, pointnav_episodes)
    theirs = _habitat_load(PointNavDatasetV1, path).episodes
    assert len(theirs) == len(pointnav_episodes)
    for ours, t in zip(pointnav_episodes, theirs):
        assert t.episode_id == ours.episode_id and t.scene_id == ours.scene_id
        np.testing.assert_allclose(t.start_position, ours.start_position)
        np.testing.assert_allclose(t.start_rotation, ours.start_rotation)
        np.testing.assert_allclose(t.goals[0].position, ours.goals[0].position)
        assert t.info["geodesic_distance"] == pytest.approx(ours.info["geodesic_distance"])


def test_objectnav_file_loads_in_habitat(tmp_path, objectnav_episodes):
    path = tmp_path / "objectnav.json.gz"
    save_episodes(path, objectnav_episodes)
    dataset = _habitat_load(ObjectNavDatasetV1, path)
    assert len(dataset.episodes) == len(objectnav_episodes)
    categories = {e.object_category for e in objectnav_episodes}
    assert categories <= set(dataset.category_to_task_category_id)
    for ours, t in zip(objectnav_episodes, dataset.episodes):
        assert t.object_category == ours.object_category and t.scene_id == ours.scene_id
        assert len(t.goals) == len(ours.goals)
        for g_ours, g in zip(ours.goals, t.goals):
            assert g.object_category == g_ours.object_category
            assert len(g.view_points) == len(g_ours.view_points)
            assert max(vp.iou for vp in g.view_points) > 0
            for vp, p in zip(g.view_points, g_ours.view_points):
                np.testing.assert_allclose(vp.agent_state.position, p)
                assert 0 <= vp.iou <= 1
                # The rotation faces the object from the view point (habitat: -z forward).
                yaw = quaternion_to_yaw(np.asarray(vp.agent_state.rotation))
                to_object = np.asarray(g_ours.position) - p
                want = np.arctan2(-to_object[0], -to_object[2])
                assert abs(np.angle(np.exp(1j * (yaw - want)))) < 1e-6


# ----------------------------------------------------------------------------- their files, our loader
def test_habitat_written_pointnav_file_loads_in_ours(tmp_path, pointnav_episodes):
    src = tmp_path / "ours.json.gz"
    save_episodes(src, pointnav_episodes)
    dataset = _habitat_load(PointNavDatasetV1, src)
    path = tmp_path / "theirs.json.gz"
    _habitat_save(dataset, path)
    back = load_episodes(path)
    for ours, b in zip(pointnav_episodes, back):
        assert b.episode_id == ours.episode_id and b.scene_id == ours.scene_id
        np.testing.assert_allclose(b.start_position, ours.start_position)
        np.testing.assert_allclose(b.goals[0].position, ours.goals[0].position)


def _habitat_objectnav_file(tmp_path, objectnav_episodes, category_ids):
    """A file written by habitat's ObjectNavDatasetV1.to_json (goals deduplicated into
    goals_by_category), with a category map of its own."""
    from pixelrl.envs.nav.mesh_io import export_glb

    export_glb(generate_apartment(SEED), tmp_path / "apt.glb")  # a scene file, as habitat's
    src = tmp_path / "ours.json.gz"
    save_episodes(src, [dataclass_replace(e, scene_id="apt.glb") for e in objectnav_episodes])
    dataset = _habitat_load(ObjectNavDatasetV1, src)
    dataset.category_to_task_category_id = dict(category_ids)
    dataset.category_to_scene_annotation_category_id = dict(category_ids)
    path = tmp_path / "theirs.json.gz"
    _habitat_save(dataset, path)
    return dataset, path


def test_habitat_written_objectnav_file_loads_in_ours(tmp_path, objectnav_episodes):
    categories = sorted({e.object_category for e in objectnav_episodes})
    ids = {c: 40 + k for k, c in enumerate(categories)}  # none of our own indices
    dataset, path = _habitat_objectnav_file(tmp_path, objectnav_episodes, ids)
    with gzip.open(path, "rt") as f:
        assert "goals_by_category" in json.load(f)
    back = load_episodes(path)
    for ours, b in zip(objectnav_episodes, back):
        assert b.object_category == ours.object_category
        # habitat's writer rounds floats (DatasetFloatJSONEncoder)
        np.testing.assert_allclose(b.goal_points(), ours.goal_points(), atol=1e-6)
    # objectgoal is the file's task category id, as habitat's ObjectGoalSensor says.
    from habitat.tasks.nav.object_nav_task import ObjectGoalSensor
    from omegaconf import OmegaConf

    sensor = ObjectGoalSensor(
        None,
        OmegaConf.create({"goal_spec": "TASK_CATEGORY_ID", "goal_spec_max_val": 50}),
        dataset,
    )
    env = NavEnv(task="objectnav", dataset_path=str(path), width=8, height=8)
    assert env.observation_space["objectgoal"].high[0] == max(ids.values())
    for k, t in enumerate(dataset.episodes):
        obs, _ = env.reset(options={"episode_index": k})
        assert obs["objectgoal"][0] == sensor.get_observation({}, episode=t)[0]
    env.close()


def test_habitat_scene_ids_resolve_like_habitat(tmp_path, pointnav_episodes):
    from pixelrl.envs.nav.mesh_io import export_glb

    scenes = tmp_path / "scene_datasets"
    (scenes / "mine").mkdir(parents=True)
    export_glb(generate_apartment(SEED), scenes / "mine" / "apt.glb")
    episodes = [
        dataclass_replace(e, scene_id="data/scene_datasets/mine/apt.glb")
        for e in pointnav_episodes[:2]
    ]
    path = tmp_path / "eps.json.gz"
    save_episodes(path, episodes)
    theirs = _habitat_load(PointNavDatasetV1, path, scenes_dir=str(scenes)).episodes
    env = NavEnv(dataset_path=str(path), scene_dir=str(scenes), width=8, height=8)
    assert [os.path.abspath(p) for p in env.sim.scene_paths] == [
        os.path.abspath(theirs[0].scene_id)
    ]
    env.close()


def dataclass_replace(obj, **changes):
    import dataclasses

    return dataclasses.replace(obj, **changes)


# ----------------------------------------------------------------------------- measures
class _Sim:
    """What habitat's measures ask of a simulator: the agent's position and the geodesic
    distance (here: ours, the exact one)."""

    def __init__(self, field):
        self.field = field
        self.position = None

    def get_agent_state(self):
        class State:
            pass

        s = State()
        s.position = np.asarray(self.position, dtype=np.float64)
        return s

    def geodesic_distance(self, position, targets, episode=None):
        return self.field.exact_distance(np.asarray(position, dtype=np.float64))


class _Task:
    """What habitat's measures ask of a task (``EmbodiedTask`` builds a simulator)."""

    is_stop_called = False

    def add_perf_timing(self, *args, **kwargs):
        pass


def replay_in_habitat(episode, positions, stopped, field, task_name, success_distance):
    """habitat's DistanceToGoal/Success/SPL/SoftSPL over the agent's positions."""
    from habitat.core.embodied_task import Measurements
    from habitat.tasks.nav.nav import SPL, DistanceToGoal, SoftSPL, Success
    from omegaconf import OmegaConf

    sim = _Sim(field)
    to = "VIEW_POINTS" if task_name == "objectnav" else "POINT"
    config = OmegaConf.create({"distance_to": to, "success_distance": success_distance})
    task = _Task()
    task.measurements = Measurements(
        [
            DistanceToGoal(sim, config),
            Success(sim, config),
            SPL(sim, config),
            SoftSPL(sim, config),
        ]
    )
    sim.position = positions[0]
    task.measurements.reset_measures(episode=episode, task=task)
    for k, p in enumerate(positions[1:]):
        sim.position = p
        task.is_stop_called = stopped and k == len(positions) - 2
        task.measurements.update_measures(episode=episode, task=task, action=None)
    return task.measurements.get_metrics()


def _play_expert(env, k):
    obs, info = env.reset(options={"episode_index": k})
    state = env.unwrapped.state
    follower = env.unwrapped.shortest_path_follower()
    positions = [state.position.copy()]
    done = False
    while not done:
        action = follower.get_next_action(state.position, state.yaw)
        obs, _, terminated, truncated, info = env.step(action)
        positions.append(state.position.copy())
        done = terminated or truncated
    return positions, state.called_stop, info


@pytest.mark.parametrize("task_name", ["pointnav", "objectnav"])
def test_measures_equal_habitats_on_expert_paths(
    tmp_path, task_name, pointnav_episodes, objectnav_episodes
):
    episodes = pointnav_episodes if task_name == "pointnav" else objectnav_episodes
    path = tmp_path / "eps.json.gz"
    save_episodes(path, episodes)
    cls = PointNavDatasetV1 if task_name == "pointnav" else ObjectNavDatasetV1
    theirs = _habitat_load(cls, path).episodes
    env = NavEnv(task=task_name, dataset_path=str(path), width=8, height=8)
    for k, t in enumerate(theirs):
        positions, stopped, info = _play_expert(env, k)
        metrics = replay_in_habitat(
            t, positions, stopped, env.state.field, task_name, env.cfg.success_radius
        )
        assert metrics["success"] == info["success"]
        assert metrics["distance_to_goal"] == pytest.approx(info["distance_to_goal"], abs=1e-6)
        assert metrics["spl"] == pytest.approx(info["spl"], abs=1e-6)
        assert metrics["soft_spl"] == pytest.approx(info["soft_spl"], abs=1e-6)
    env.close()


def test_measures_equal_habitats_on_a_wandering_path(tmp_path, pointnav_episodes):
    """A path that stops away from the goal (failure, partial SoftSPL) and bumps into walls."""
    path = tmp_path / "eps.json.gz"
    save_episodes(path, pointnav_episodes[:2])
    theirs = _habitat_load(PointNavDatasetV1, path).episodes
    env = NavEnv(dataset_path=str(path), width=8, height=8)
    rng = np.random.default_rng(3)
    for k, t in enumerate(theirs):
        env.reset(options={"episode_index": k})
        positions = [env.state.position.copy()]
        for _ in range(60):
            env.step(int(rng.choice([1, 1, 1, 2, 3])))
            positions.append(env.state.position.copy())
        _, _, _, _, info = env.step(0)
        positions.append(env.state.position.copy())
        metrics = replay_in_habitat(t, positions, True, env.state.field, "pointnav", 0.2)
        for name in ("success", "distance_to_goal", "spl", "soft_spl"):
            assert metrics[name] == pytest.approx(info[name], abs=1e-6), name
    env.close()
