"""Scene files in habitat's frame: up / front / scale from its stage and scene dataset configs,
the ``up_axis`` option, and a warning for a scene that lies on its side."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

from pixelrl.envs.nav.apartment import generate_apartment
from pixelrl.envs.nav.mesh_io import SceneFileError, export_glb, load_scene

# z up, y front (habitat-sim's test scenes, e.g. simple_room's stage config): (x, y, z) -> (x, -z, y)
Z_UP = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])


@pytest.fixture(scope="module")
def apartment():
    return generate_apartment(2)


@pytest.fixture()
def z_up_file(tmp_path, apartment):
    scene = dataclasses.replace(apartment, triangles=apartment.triangles @ Z_UP.T)
    path = tmp_path / "room.glb"
    export_glb(scene, path)
    return path


def _same(scene, apartment):
    np.testing.assert_allclose(
        np.sort(scene.triangles.reshape(-1, 3), 0),
        np.sort(apartment.triangles.reshape(-1, 3), 0),
        atol=1e-4,
    )


def test_z_up_scene_without_config_warns(z_up_file):
    with pytest.warns(UserWarning, match="looks sideways.*up_axis='z'"):
        load_scene(z_up_file)


def test_stage_config_up_and_front_turn_it_upright(z_up_file, apartment):
    cfg = z_up_file.parent / "room.stage_config.json"
    cfg.write_text(json.dumps({"render_asset": "room.glb", "up": [0, 0, 1], "front": [0, 1, 0]}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene = load_scene(z_up_file)
    _same(scene, apartment)
    # the chairs, tables ... keep their boxes in the new frame
    boxes = lambda s: sorted(  # noqa: E731  (ids are renumbered on load)
        (i.category, *np.round(i.aabb_min, 3), *np.round(i.aabb_max, 3))
        for i in s.instances.values()
    )
    assert boxes(scene) == boxes(apartment)


def test_scene_dataset_config_and_scale(tmp_path, apartment):
    sub = tmp_path / "stages"
    sub.mkdir()
    scene = dataclasses.replace(apartment, triangles=apartment.triangles @ Z_UP.T / 2)
    export_glb(scene, sub / "room.glb")
    (tmp_path / "mine.scene_dataset_config.json").write_text(
        json.dumps({"stages": {"default_attributes": {"up": [0, 0, 1], "scale": [2, 2, 2]}}})
    )
    _same(load_scene(sub / "room.glb"), apartment)


def test_up_axis_option_overrides(z_up_file, apartment):
    _same(load_scene(z_up_file, up_axis="z"), apartment)
    with pytest.raises(SceneFileError, match="up must be one of"):
        load_scene(z_up_file, up_axis="w")


def test_env_option_up_axis(z_up_file):
    from pixelrl.envs.nav.env import NavEnv

    env = NavEnv(scenes=[str(z_up_file)], up_axis="z", width=8, height=8)
    _, info = env.reset(seed=0)
    assert np.isfinite(info["distance_to_goal"])
    env.close()


@pytest.mark.parametrize("bad", ["w", "up", [0, 0, 0], [1, 2], ["a", 0, 1]])
def test_a_wrong_up_axis_is_refused_even_for_generated_scenes(bad):
    # procedural apartments never read up_axis: without the check a typo would pass silently
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401  (registers the ids)

    with pytest.raises(ValueError, match="up_axis must be one of"):
        gym.make("pixelrl/PointNav-v0", up_axis=bad)
