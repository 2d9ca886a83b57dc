"""The ShortestPathFollower expert: Success = 1 and SPL >= 0.95 on generated episodes."""

from __future__ import annotations

import numpy as np

from pixelrl.envs.nav.env import NavEnv


def _run(env: NavEnv, episodes: int, seed: int):
    results = []
    env.reset(seed=seed)
    for k in range(episodes):
        if k:
            env.reset()
        s = env.state
        follower = env.shortest_path_follower()
        info = {}
        for _ in range(env.cfg.max_episode_steps):
            _, _, term, trunc, info = env.step(follower.get_next_action(s.position, s.yaw))
            if term or trunc:
                break
        results.append((info["success"], info["spl"], info["softspl"]))
    return np.array(results)


def test_follower_solves_pointnav_episodes():
    env = NavEnv(
        task="pointnav", width=8, height=8, sensors=("depth",), num_scenes=4, scene_seed=100
    )
    r = _run(env, 50, seed=0)
    assert len(r) == 50
    assert r[:, 0].min() == 1.0, f"failed episodes: {np.flatnonzero(r[:, 0] < 1)}"
    assert r[:, 1].mean() >= 0.95, r[:, 1]
    assert (r[:, 2] > 0.9).all()  # SoftSPL: a successful stop is close to the goal


def test_follower_solves_objectnav_episodes():
    env = NavEnv(
        task="objectnav", width=8, height=8, sensors=("depth",), num_scenes=2, scene_seed=200
    )
    r = _run(env, 8, seed=1)
    assert r[:, 0].min() == 1.0
    assert r[:, 1].mean() >= 0.85
