"""Procedural scene ids rebuild the same scene everywhere (issue 27): an id carries every
non-default generator option, a reader refuses an id it cannot rebuild exactly, and a dataset
made with non-default options benchmarks right from the file alone."""

from __future__ import annotations

import gzip
import json

import gymnasium
import numpy as np
import pytest

import pixelrl.envs  # noqa: F401
from pixelrl.envs.nav.apartment import ApartmentConfig, generate_apartment
from pixelrl.envs.nav.dataset import SCENE_ID_FORMAT, EpisodeFileError, load_episodes
from pixelrl.envs.nav.sim import (
    apartment_scene_id,
    generate_dataset,
    parse_apartment_scene_id,
    upgrade_scene_ids,
)

SMALL = {"rooms": [2, 3], "clutter": 0.5}


@pytest.mark.parametrize(
    "options, scene_id",
    [
        (None, "apartment:seed=7"),
        ({}, "apartment:seed=7"),
        ({"rooms": [3, 6]}, "apartment:seed=7"),  # the default, written as such
        (SMALL, "apartment:seed=7,rooms=2..3,clutter=0.5"),
        ({"room_size": [2.0, 4.25], "door_width": 1.2}, "apartment:seed=7,room_size=2.0..4.25,door_width=1.2"),
    ],
)  # fmt: skip
def test_an_id_names_every_non_default_option_and_parses_back(options, scene_id):
    assert apartment_scene_id(7, options) == scene_id
    seed, config = parse_apartment_scene_id(scene_id)
    assert seed == 7 and apartment_scene_id(seed, config) == scene_id


def test_the_id_rebuilds_the_scene_face_for_face():
    scene_id = apartment_scene_id(11, SMALL)
    seed, config = parse_apartment_scene_id(scene_id)
    a = generate_apartment(11, ApartmentConfig(**SMALL))
    b = generate_apartment(seed, config)
    np.testing.assert_array_equal(a.triangles, b.triangles)
    assert a.num_faces != generate_apartment(11).num_faces  # the default is another apartment


@pytest.mark.parametrize(
    "scene_id, message",
    [
        ("apartment:seed=x", "invalid literal"),
        ("apartment:rooms=2..3", "no seed"),
        ("apartment:seed=1,roms=2..3", "unknown option 'roms'"),
        ("apartment:seed=1,rooms=2", "a range lo..hi"),
        ("apartment:seed=1,rooms=9..9", "1 <= min <= max <= 8"),
        ("apartment:seed=1,clutter=0.5,clutter=1", "at 'clutter=1'"),
        ("apartment:seed=1,", "at ''"),
    ],
)
def test_an_id_that_names_no_single_apartment_is_refused(scene_id, message):
    with pytest.raises(ValueError, match=message):
        parse_apartment_scene_id(scene_id)


def test_files_written_now_carry_the_format_and_full_ids(tmp_path):
    path = tmp_path / "eps.json.gz"
    generate_dataset(str(path), 3, num_scenes=2, scene_seed=40, apartment=SMALL)
    with gzip.open(path, "rt") as f:
        raw = json.load(f)
    assert raw["scene_id_format"] == SCENE_ID_FORMAT
    assert {e["scene_id"] for e in raw["episodes"]} <= {
        "apartment:seed=40,rooms=2..3,clutter=0.5",
        "apartment:seed=41,rooms=2..3,clutter=0.5",
    }


def test_a_file_from_before_ids_carried_options_is_refused_until_upgraded(tmp_path):
    path = tmp_path / "eps.json.gz"
    episodes = generate_dataset(str(path), 3, num_scenes=1, scene_seed=40, apartment=SMALL)
    with gzip.open(path, "rt") as f:
        raw = json.load(f)
    del raw["scene_id_format"]
    for e in raw["episodes"]:
        e["scene_id"] = "apartment:seed=40"  # what the old writer wrote for these episodes
    with gzip.open(path, "wt") as f:
        json.dump(raw, f)
    with pytest.raises(EpisodeFileError, match="written before scene ids carried"):
        gymnasium.make("pixelrl/PointNav-v0", dataset_path=str(path), width=16, height=16)
    upgrade_scene_ids(path, apartment=SMALL)
    assert [e.scene_id for e in load_episodes(path)] == [e.scene_id for e in episodes]
    env = gymnasium.make("pixelrl/PointNav-v0", dataset_path=str(path), width=16, height=16)
    env.close()


def test_an_apartment_option_that_contradicts_the_ids_is_refused(tmp_path):
    path = tmp_path / "eps.json.gz"
    generate_dataset(str(path), 2, num_scenes=1, scene_seed=40, apartment=SMALL)
    make = lambda **kw: gymnasium.make(  # noqa: E731
        "pixelrl/PointNav-v0", dataset_path=str(path), width=16, height=16, **kw
    )
    with pytest.raises(ValueError, match="asks for others"):
        make(apartment={"rooms": [1, 2]})
    make(apartment=SMALL).close()  # agreeing is fine, and so is leaving it out
    make().close()


def test_the_expert_scores_success_1_from_the_file_alone(tmp_path):
    """The issue's case: non-default generator options, benchmarked with no env option."""
    from pixelrl.embodied.benchmark import make_agent

    path = tmp_path / "eps.json.gz"
    generate_dataset(str(path), 4, num_scenes=2, scene_seed=1000, apartment={"rooms": [2, 3]})
    bench, agent = make_agent("expert", path)
    try:
        means = bench.evaluate(agent, progress=False)
    finally:
        bench.close()
    assert all(r["valid"] for r in bench.rows)
    assert means["success"] == 1.0 and means["distance_to_goal"] < 0.2
