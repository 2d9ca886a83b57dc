"""Episode datasets: habitat json.gz round trip, generator rules, evaluation order, errors."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from pixelrl.envs.nav.apartment import generate_apartment
from pixelrl.envs.nav.dataset import (
    EpisodeFileError,
    EpisodeRules,
    dataset_task,
    generate_objectnav_episode,
    generate_pointnav_episode,
    load_episodes,
    save_episodes,
)
from pixelrl.envs.nav.env import NavEnv
from pixelrl.envs.nav.geodesic import geodesic_distance
from pixelrl.envs.nav.navgrid import NavGrid
from pixelrl.envs.nav.sim import apartment_scene_id


@pytest.fixture(scope="module")
def grid():
    return NavGrid(generate_apartment(5))


@pytest.fixture(scope="module")
def episodes(grid):
    rng = np.random.default_rng(0)
    sid = apartment_scene_id(5)
    eps = [generate_pointnav_episode(grid, rng, sid, str(i)) for i in range(6)]
    eps += [generate_objectnav_episode(grid, rng, sid, str(100 + i)) for i in range(2)]
    return eps


def test_generated_episodes_follow_habitat_rules(grid, episodes):
    rules = EpisodeRules()
    for ep in episodes[:6]:
        start, goal = ep.start_position, ep.goals[0].position
        assert grid.island_of(start) == grid.island_of(goal) > 0
        d = ep.info["geodesic_distance"]
        assert rules.min_geodesic <= d <= rules.max_geodesic
        assert d / np.linalg.norm((goal - start)[[0, 2]]) >= rules.min_ratio
        # The stored length is the geodesic distance recomputed independently of the field.
        assert geodesic_distance(grid, start, goal[None]) == pytest.approx(d, rel=1e-6)
        assert np.linalg.norm(ep.start_rotation) == pytest.approx(1.0)


def test_json_gz_round_trip(tmp_path, episodes):
    path = tmp_path / "eps.json.gz"
    save_episodes(path, episodes)
    with gzip.open(path, "rt") as f:
        raw = json.load(f)
    first = raw["episodes"][0]
    for key in ("episode_id", "scene_id", "start_position", "start_rotation", "goals", "info"):
        assert key in first
    assert set(first["goals"][0]) >= {"position", "radius"}
    assert "geodesic_distance" in first["info"]
    assert (
        "view_points" in raw["episodes"][-1]["goals"][0] and raw["episodes"][-1]["object_category"]
    )
    back = load_episodes(path)
    assert len(back) == len(episodes)
    for a, b in zip(episodes, back):
        assert (a.episode_id, a.scene_id, a.object_category) == (
            b.episode_id,
            b.scene_id,
            b.object_category,
        )
        np.testing.assert_allclose(a.start_position, b.start_position)
        np.testing.assert_allclose(a.start_rotation, b.start_rotation)
        np.testing.assert_allclose(a.goal_points(), b.goal_points())
        assert a.info["geodesic_distance"] == pytest.approx(b.info["geodesic_distance"])
    save_episodes(tmp_path / "again.json.gz", back)
    assert (
        load_episodes(tmp_path / "again.json.gz")[3].goals[0].position.tolist()
        == back[3].goals[0].position.tolist()
    )


def test_env_walks_a_dataset_in_order(tmp_path, episodes):
    path = tmp_path / "eval.json.gz"
    save_episodes(path, episodes[:4])
    env = NavEnv(width=16, height=16, dataset_path=str(path))
    seen = [env.reset(seed=0)[1]["episode_id"]] + [env.reset()[1]["episode_id"] for _ in range(4)]
    assert seen == ["0", "1", "2", "3", "0"]
    _, info = env.reset(options={"episode_index": 2})
    assert info["episode_id"] == "2"
    np.testing.assert_allclose(env.state.position, episodes[2].start_position)
    # DistanceToGoal at the start is the episode's stored geodesic distance.
    assert info["distance_to_goal"] == pytest.approx(
        episodes[2].info["geodesic_distance"], rel=0.02
    )


def test_dataset_episodes_use_their_stored_geodesic_distance(tmp_path, grid, episodes):
    """SPL's l of a dataset episode is its info.geodesic_distance, not recomputed: equal to the
    computed one for our files, and a (here: altered) stored value is what the env uses."""
    path = tmp_path / "eval.json.gz"
    save_episodes(path, episodes[:2])
    env = NavEnv(width=16, height=16, dataset_path=str(path))
    env.reset(seed=0)
    stored = episodes[0].info["geodesic_distance"]
    assert env.state.start_distance == pytest.approx(stored, rel=1e-12)
    goal = episodes[0].goals[0].position
    assert geodesic_distance(grid, episodes[0].start_position, goal[None]) == pytest.approx(
        stored, rel=1e-9
    )
    with gzip.open(path, "rt") as f:
        raw = json.load(f)
    raw["episodes"][0]["info"]["geodesic_distance"] = 0.9 * stored  # a different navmesh's l
    del raw["episodes"][1]["info"]["geodesic_distance"]
    _write(tmp_path / "altered.json.gz", raw)
    env = NavEnv(width=16, height=16, dataset_path=str(tmp_path / "altered.json.gz"))
    env.reset(seed=0)
    assert env.state.start_distance == pytest.approx(0.9 * stored, rel=1e-12)
    env.reset()  # no stored value: computed at the start, the same as the generator's
    assert env.state.start_distance == pytest.approx(
        episodes[1].info["geodesic_distance"], rel=1e-9
    )


def _write(path, payload, raw=False):
    with gzip.open(path, "wt") as f:
        f.write(payload if raw else json.dumps(payload))


GOOD = {
    "episode_id": "0",
    "scene_id": "apartment:seed=5",
    "start_position": [1.0, 0.0, 1.0],
    "start_rotation": [0.0, 0.0, 0.0, 1.0],
    "goals": [{"position": [2.0, 0.0, 2.0], "radius": None}],
    "info": {"geodesic_distance": 1.5},
}


@pytest.mark.parametrize(
    "episode, message",
    [
        (
            {k: v for k, v in GOOD.items() if k != "start_position"},
            r"episodes\[0\] lacks field 'start_position'",
        ),
        (
            {**GOOD, "start_rotation": [0, 1, 0]},
            r"episodes\[0\]\.start_rotation must be 4 finite numbers",
        ),
        ({**GOOD, "goals": []}, r"episodes\[0\]\.goals must be a non-empty list"),
        (
            {**GOOD, "goals": [{"radius": 0.2}]},
            r"episodes\[0\]\.goals\[0\] must be an object with field 'position'",
        ),
        (
            {**GOOD, "start_position": [1, "x", 2]},
            r"episodes\[0\]\.start_position must be 3 finite numbers",
        ),
        (
            {**GOOD, "goals": [{"position": [2.0, 0.0, 2.0], "radius": -0.5}]},
            r"episodes\[0\]\.goals\[0\]\.radius must be a finite number >= 0 \(m\) or null, "
            "got -0.5",
        ),
        (
            {**GOOD, "info": {"geodesic_distance": -5}},
            r"episodes\[0\] \(episode_id '0'\): info\.geodesic_distance must be a finite "
            r"number >= 0 \(m\), got -5",
        ),
        (
            {**GOOD, "info": {"geodesic_distance": "far"}},
            r"info\.geodesic_distance must be a finite number >= 0 \(m\), got 'far'",
        ),
        (
            {**GOOD, "info": {"geodesic_distance": True}},
            r"info\.geodesic_distance must be a finite number >= 0 \(m\), got True",
        ),
    ],
)
def test_malformed_episode_file_names_file_and_field(tmp_path, episode, message):
    path = tmp_path / "bad.json.gz"
    _write(path, {"episodes": [episode]})
    with pytest.raises(EpisodeFileError, match=message) as err:
        load_episodes(path)
    assert "bad.json.gz" in str(err.value)


def test_unreadable_files_are_clear_errors(tmp_path):
    path = tmp_path / "notjson.json.gz"
    _write(path, "{not json", raw=True)
    with pytest.raises(EpisodeFileError, match="notjson.json.gz"):
        load_episodes(path)
    _write(tmp_path / "noeps.json.gz", {"data": []})
    with pytest.raises(EpisodeFileError, match="field 'episodes'"):
        load_episodes(tmp_path / "noeps.json.gz")
    with pytest.raises(FileNotFoundError, match="missing.json.gz"):
        load_episodes(tmp_path / "missing.json.gz")


def test_bad_scene_path_in_dataset_names_file_and_field(tmp_path):
    path = tmp_path / "eps.json.gz"
    _write(path, {"episodes": [{**GOOD, "scene_id": "scenes/nowhere.glb"}]})
    with pytest.raises(
        FileNotFoundError,
        match=r"nowhere\.glb.*field 'scene_id' of episodes\[0\] in .*eps\.json\.gz",
    ):
        NavEnv(width=16, height=16, dataset_path=str(path))


def test_generate_dataset_then_evaluate_objectnav(tmp_path):
    from pixelrl.envs.nav.scene import OBJECTNAV_CATEGORIES
    from pixelrl.envs.nav.sim import generate_dataset

    path = tmp_path / "objnav.json.gz"
    made = generate_dataset(str(path), 3, seed=4, task="objectnav", num_scenes=1, scene_seed=9)
    env = NavEnv(task="objectnav", width=16, height=16, dataset_path=str(path))
    for ep in made:
        obs, info = env.reset()
        assert info["episode_id"] == ep.episode_id
        assert OBJECTNAV_CATEGORIES[int(obs["objectgoal"][0])] == ep.object_category
        assert info["distance_to_goal"] == pytest.approx(ep.info["geodesic_distance"], rel=0.02)
    # the file says its task: its episodes name categories and have view points
    assert dataset_task(path, load_episodes(path)) == "objectnav"


def test_a_file_says_its_task_by_its_episodes_fields(tmp_path):
    objectnav = {**GOOD, "object_category": "bed"}
    instruct = {**GOOD, "instruction": {"instruction_text": "go to the bed"}}
    for episodes, task in [
        ([GOOD, GOOD], "pointnav"),
        ([objectnav], "objectnav"),
        ([{**GOOD, "goals": [{"position": [2, 0, 2], "object_category": "bed"}]}], "objectnav"),
        ([instruct], "instructnav"),
    ]:
        path = tmp_path / f"{task}.json.gz"
        _write(path, {"episodes": episodes})
        assert dataset_task(path, load_episodes(path)) == task
    _write(tmp_path / "mixed.json.gz", {"episodes": [GOOD, objectnav]})
    with pytest.raises(EpisodeFileError, match=r"mix tasks: pointnav \(episodes\[0\]\), objectnav"):
        dataset_task(tmp_path / "mixed.json.gz", load_episodes(tmp_path / "mixed.json.gz"))


# A 1-2-room apartment (held-out seed 100013, clutter 0.5) where no object is 1 m of walking from
# any start: an env over several scenes must draw the episode elsewhere, not crash at reset.
HOSTLESS = {"task": "objectnav", "apartment": {"rooms": [1, 2], "clutter": 0.5},
            "episode_rules": {"min_geodesic": 1.0, "max_geodesic": 5.0, "min_ratio": 1.0}}  # fmt: skip


def test_a_scene_without_an_episode_is_skipped_not_a_crash():
    from pixelrl.envs.nav.config import NavConfig
    from pixelrl.envs.nav.dataset import NoEpisodeError
    from pixelrl.envs.nav.sim import NavSim

    def sim(**options):
        return NavSim(NavConfig.from_options(env_id="t", width=8, height=8, **HOSTLESS, **options))

    alone = sim(num_scenes=1, scene_seed=100013)
    with pytest.raises(NoEpisodeError, match="no ObjectNav episode"):
        alone.new_episode(np.random.default_rng(0))
    several = sim(num_scenes=3, scene_seed=100012)
    bad = apartment_scene_id(100013, HOSTLESS["apartment"])
    assert bad in several.scene_ids
    scenes = {several.new_episode(np.random.default_rng(s)).episode.scene_id for s in range(12)}
    assert bad not in scenes and len(scenes) == 2
