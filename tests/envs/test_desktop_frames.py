"""The emulated desktop keeps one frame per wallpaper between episodes (issue 57 item 3).

A reset takes over the frame last drawn on its wallpaper and repaints only what that episode drew
over it (that it shows what a full repaint shows: tests/envs/test_desktop_same_pixels.py). Here:
the frames stay few, and a caller's observation never shares memory with them.
"""

from __future__ import annotations

import numpy as np

from pixelrl.envs.desktop.env import FRAMES_KEPT, DesktopEnv

SIZE = (320, 240)


def test_an_env_keeps_at_most_one_frame_per_wallpaper():
    env = DesktopEnv("mixed", screen_size=SIZE)
    frames = {}
    for seed in range(40):
        env.reset(seed=seed)
        frames[id(env.desktop.frame)] = env.desktop.frame
        assert all(key == d.wallpaper_key for key, d in env._frames.items())
        assert len(env._frames) <= FRAMES_KEPT
    assert len(frames) <= FRAMES_KEPT  # no frame allocated beyond the kept ones


def test_an_observation_is_the_callers_own_copy():
    # a caller that writes into its observation changes no later frame
    env = DesktopEnv("mixed", screen_size=SIZE)
    obs, _ = env.reset(seed=3)
    kept = [d.frame for d in env._frames.values()]
    assert not any(np.shares_memory(obs["screenshot"], f) for f in kept)
    reference = DesktopEnv("mixed", screen_size=SIZE)
    ref_obs, _ = reference.reset(seed=3)
    for _ in range(6):
        obs["screenshot"][...] = 0
        obs, _, terminated, truncated, _ = env.step(env.expert_action())
        ref_obs, *_ = reference.step(reference.expert_action())
        assert np.array_equal(obs["screenshot"], ref_obs["screenshot"])
        if terminated or truncated:
            obs, _ = env.reset()
            ref_obs, _ = reference.reset()
            assert np.array_equal(obs["screenshot"], ref_obs["screenshot"])
