"""The habitat-sim backend: clear install error without habitat_sim, real checks with it."""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np
import pytest

import pixelrl.envs  # noqa: F401

HAVE_HABITAT = importlib.util.find_spec("habitat_sim") is not None
needs_habitat = pytest.mark.skipif(
    not HAVE_HABITAT,
    reason="habitat_sim is not installed (conda-only: conda install habitat-sim -c conda-forge -c aihabitat)",
)


@pytest.mark.skipif(
    HAVE_HABITAT, reason="habitat_sim is installed; the missing-package error cannot occur"
)
def test_backend_without_habitat_says_how_to_install():
    from pixelrl.envs.habitat import HabitatNotInstalled

    with pytest.raises(HabitatNotInstalled, match="conda install habitat-sim"):
        gym.make("pixelrl/PointNav-v0", backend="habitat", scenes=["room.glb"])


@needs_habitat
def test_habitat_config_mirrors_our_options():
    import habitat_sim

    from pixelrl.envs.habitat.env import build_habitat_config
    from pixelrl.envs.nav.config import NavConfig

    cfg = NavConfig(
        width=64, height=48, hfov=79, sensor_height=1.3, forward_step=0.3, turn_angle=15
    )
    conf = build_habitat_config(habitat_sim, cfg, "room.glb")
    agent = conf.agents[0]
    assert agent.radius == pytest.approx(0.1) and agent.height == pytest.approx(1.5)
    assert agent.action_space["move_forward"].actuation.amount == pytest.approx(0.3)
    assert agent.action_space["turn_left"].actuation.amount == pytest.approx(15)
    spec = agent.sensor_specifications[0]
    assert list(spec.resolution) == [48, 64]


@needs_habitat
def test_habitat_env_runs_on_an_exported_apartment(tmp_path):
    from gymnasium.utils.env_checker import check_env

    from pixelrl.envs.nav.apartment import generate_apartment
    from pixelrl.envs.nav.mesh_io import export_glb

    path = tmp_path / "apt.glb"
    export_glb(generate_apartment(0), path)
    env = gym.make(
        "pixelrl/PointNav-v0", backend="habitat", scenes=[str(path)], width=32, height=32
    ).unwrapped
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs["depth"].shape == (32, 32, 1) and np.isfinite(info["distance_to_goal"])
