"""The habitat-sim adapter against a recorded fake of habitat-sim's API (habitat_sim_fake.py):
a name the real API lacks fails; behind the names, the embedded simulator's pieces, so the
adapter must give the embedded env's poses, collisions, pictures and measures."""

from __future__ import annotations

import dataclasses

import habitat_sim_fake as fake
import numpy as np
import pytest

from pixelrl.envs.nav.apartment import generate_apartment
from pixelrl.envs.nav.dataset import generate_pointnav_episode, save_episodes
from pixelrl.envs.nav.env import NavEnv
from pixelrl.envs.nav.mesh_io import export_glb
from pixelrl.envs.nav.navgrid import NavGrid

pytest.importorskip("quaternion", reason="numpy-quaternion (the test extra) holds the rotations")


@pytest.fixture()
def dataset(tmp_path):
    scene = generate_apartment(3)
    export_glb(scene, tmp_path / "apt.glb")
    grid = NavGrid(scene)
    rng = np.random.default_rng(0)
    episodes = [
        dataclasses.replace(generate_pointnav_episode(grid, rng, "x", str(k)), scene_id="apt.glb")
        for k in range(2)
    ]
    path = tmp_path / "eps.json.gz"
    save_episodes(path, episodes)
    return path


def test_the_fake_refuses_what_habitat_sim_lacks():
    hs = fake.module()
    with pytest.raises(AttributeError, match="SimulatorConfiguration has no attribute 'scene'"):
        hs.SimulatorConfiguration().scene = "x.glb"
    # habitat-lab's HabitatSim has previous_step_collided; habitat_sim.Simulator does not (its
    # step returns "collided"): the adapter used it, and would have failed on the real one
    sim = hs.Simulator.__new__(hs.Simulator)
    with pytest.raises(AttributeError, match="'previous_step_collided'.*SimBindings.cpp"):
        getattr(sim, "previous_step_collided")  # noqa: B009


def test_adapter_on_the_fake_matches_the_embedded_env(monkeypatch, dataset):
    fake.install(monkeypatch)
    from pixelrl.envs.habitat.env import HabitatNavEnv

    options = dict(dataset_path=str(dataset), width=24, height=20, renderer="embree")
    ours = NavEnv(**options)
    options.pop("renderer")
    theirs = HabitatNavEnv(**options)
    rng = np.random.default_rng(1)
    for k in range(2):
        obs_a, info_a = ours.reset(options={"episode_index": k})
        obs_b, info_b = theirs.reset(options={"episode_index": k})
        for step in range(40):
            action = "stop" if step == 39 else int(rng.choice([1, 1, 1, 2, 3]))
            obs_a, _, term_a, _, info_a = ours.step(action)
            obs_b, _, term_b, _, info_b = theirs.step(action)
            np.testing.assert_allclose(theirs.position, ours.state.position, atol=1e-5)
            assert theirs.collided == ours.state.collided
            np.testing.assert_allclose(obs_b["depth"], obs_a["depth"], atol=1e-4)
            np.testing.assert_array_equal(obs_b["rgb"], obs_a["rgb"])
            assert term_a == term_b
        assert term_b
        for name in ("distance_to_goal", "success", "spl", "soft_spl", "path_length"):
            assert info_b[name] == pytest.approx(info_a[name], abs=1e-4), name
    theirs.close()
    ours.close()
    used = set(fake.CALLS)
    for name in ("PathFinder.find_path", "MultiGoalShortestPath.requested_ends=",
                 "Simulator.step", "Simulator.recompute_navmesh", "CameraSensorSpec.hfov="):  # fmt: skip
        assert name in used
