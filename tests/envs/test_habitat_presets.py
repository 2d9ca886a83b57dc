"""habitat's ObjectNav camera tilt (look_up / look_down) and the presets copied from habitat-lab's
benchmark configs (checked against the installed habitat-lab's own YAML files)."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
import yaml

from pixelrl.envs.nav.config import PRESETS, NavConfig
from pixelrl.envs.nav.env import NavEnv, make_pointnav


def test_look_actions_tilt_the_camera():
    env = NavEnv(
        task="objectnav", look_actions=True, width=33, height=33, num_scenes=1, sensors=["depth"]
    )
    assert env.action_space.n == 6 and env.action_names[4:] == ("look_up", "look_down")
    obs, _ = env.reset(seed=0)
    level = obs["depth"].copy()
    for action in ("look_down", {"action": "look_down"}, 5, 5):  # the last one stays at -90
        obs, *_ = env.step(action)
    assert env.state.pitch == pytest.approx(-np.pi / 2)
    # straight down: the floor is the sensor height away along the optical axis
    assert obs["depth"][16, 16, 0] == pytest.approx(env.cfg.sensor_height, abs=1e-3)
    assert not np.allclose(obs["depth"], level)
    for _ in range(3):
        obs, *_ = env.step("look_up")
    assert env.state.pitch == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(obs["depth"], level, atol=1e-5)  # level again: the same view
    env.close()


@pytest.mark.parametrize("pitch", [-0.5, 0.4])
def test_tilted_raster_and_embree_agree(pitch):
    from pixelrl.envs.nav.apartment import generate_apartment
    from pixelrl.envs.nav.navgrid import AgentSpec, NavGrid
    from pixelrl.envs.nav.raster import RasterRenderer
    from pixelrl.envs.nav.renderer import CameraSpec, EmbreeRenderer

    scene = generate_apartment(1)
    grid = NavGrid(scene, AgentSpec())
    rng = np.random.default_rng(0)
    pos = np.stack([grid.sample_navigable(rng) for _ in range(4)])
    yaws = rng.uniform(-np.pi, np.pi, 4)
    cam = CameraSpec(48, 40, 79, 0.88, 0.5, 5.0, False)
    pitches = np.full(4, pitch)
    a = RasterRenderer([scene], cam).render(np.zeros(4, int), pos, yaws, ("depth",), pitches)
    b = EmbreeRenderer([scene], cam).render(np.zeros(4, int), pos, yaws, ("depth",), pitches)
    close = np.isclose(a["depth"], b["depth"], atol=1e-3)
    assert close.mean() > 0.99  # silhouette pixels may differ (see raster's docstring)


def test_default_actions_stay_habitats_four():
    env = NavEnv(task="objectnav", width=8, height=8, num_scenes=1)
    assert env.action_space.n == 4
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action 4 is not one of the env.s actions: 0 stop"):
        env.step(4)
    env.close()


def test_preset_and_overrides():
    cfg = NavConfig.from_options(preset="habitat-objectnav-hm3d", width=64)
    assert cfg.task == "objectnav" and cfg.width == 64 and cfg.height == 480
    assert cfg.hfov == 79 and cfg.sensor_height == 0.88 and cfg.agent_radius == 0.18
    assert cfg.look_actions and cfg.turn_degrees == 30 and not cfg.allow_sliding
    with pytest.raises(ValueError, match="is a objectnav preset, but pixelrl/PointNav-v0"):
        make_pointnav(preset="habitat-objectnav-hm3d")
    with pytest.raises(
        ValueError, match="unknown preset 'habitat-pointnav' for .*; presets: habitat-"
    ):
        NavConfig.from_options(preset="habitat-pointnav")


HABITAT = importlib.util.find_spec("habitat")


def _habitat_yaml(*parts):
    return yaml.safe_load(
        open(os.path.join(os.path.dirname(HABITAT.origin), "config", *parts), encoding="utf-8")
    )


@pytest.mark.skipif(HABITAT is None, reason="habitat-lab is not installed (make setup does)")
@pytest.mark.parametrize(
    "preset, path",
    [
        ("habitat-objectnav-hm3d", "objectnav/objectnav_hm3d.yaml"),
        ("habitat-objectnav-mp3d", "objectnav/objectnav_mp3d.yaml"),
        ("habitat-pointnav-gibson", "pointnav/pointnav_gibson.yaml"),
    ],
)
def test_presets_copy_habitats_config_files(preset, path):
    """Every value the benchmark file sets is the preset's (the rest are habitat's defaults)."""
    conf = _habitat_yaml("benchmark", "nav", *path.split("/"))["habitat"]
    values = PRESETS[preset]
    assert conf["environment"]["max_episode_steps"] == values["max_episode_steps"]
    sim = conf["simulator"]
    assert sim.get("turn_angle", 10) == values["turn_angle"]
    assert sim.get("habitat_sim_v0", {}).get("allow_sliding", True) == values["allow_sliding"]
    agent = sim["agents"]["main_agent"]
    assert agent.get("height", 1.5) == values["agent_height"]
    assert agent.get("radius", 0.1) == values["agent_radius"]
    rgb, depth = agent["sim_sensors"]["rgb_sensor"], agent["sim_sensors"]["depth_sensor"]
    for sensor in (rgb, depth):
        assert (sensor["width"], sensor["height"]) == (values["width"], values["height"])
        assert sensor.get("hfov", 90) == values["hfov"]
        assert sensor.get("position", [0, 1.25, 0])[1] == values["sensor_height"]
    assert depth.get("min_depth", 0.0) == values["min_depth"]
    assert depth.get("max_depth", 10.0) == values["max_depth"]
    task = _habitat_yaml("habitat", "task", values["task"] + ".yaml")
    actions = [a for d in task["defaults"] if isinstance(d, dict) for a in d.get("actions", [])]
    assert ("look_up" in actions) == values.get("look_actions", False)
    if "look_up" in actions:
        assert task["actions"]["look_up"]["tilt_angle"] == values["tilt_angle"]
    success = task.get("measurements", {}).get("success", {}).get("success_distance", 0.2)
    assert success == values["success_distance"]


def test_challenge_presets():
    """habitat-challenge's ObjectNav settings (its files are not installed here: the values)."""
    v1 = NavConfig.from_options(preset="habitat-challenge-objectnav2022")
    assert (v1.width, v1.height, v1.hfov, v1.sensor_height) == (640, 480, 79, 0.88)
    v2 = NavConfig.from_options(preset="habitat-challenge-objectnav2023")
    assert (v2.width, v2.height, v2.hfov, v2.sensor_height) == (480, 640, 42, 1.31)
    assert (v2.agent_height, v2.agent_radius, v2.max_climb) == (1.41, 0.17, 0.1)
    assert v2.min_depth == 0.5 and v2.max_depth == 5.0 and not v2.allow_sliding
