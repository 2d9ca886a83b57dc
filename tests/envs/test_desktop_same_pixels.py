"""The emulated desktop's speed-ups change no pixel, reward or info.

Each digest is ``bench/desktop_same_pixels.py``'s SHA-256 over 40 steps of
``pixelrl/Desktop-Mixed-v0`` (resets included): every screenshot, instruction, shaped reward,
terminated/truncated flag and ``repr(info)``. The expected digests were computed on main at commit
19d5042 (before the deskspeed changes), with the Pillow and FreeType of this project's
environment: a different FreeType may rasterise glyphs differently and fail this test without
any change of ours. The bench script checks many more seeds and steps (``--check``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "desktop_same_pixels.py"

# (screen size, policy, seed, digest on main @ 19d5042)
MAIN_DIGESTS = [
    ((1280, 800), "expert", 0, "e1907bacc85d8921ed32bff7815bd0062662544f9bc7635f8df8bbc4ddb713e8"),
    ((1280, 800), "random", 1, "e522fba535570e14c5885cd370a971456945c221773e1d86ace4371ea31a7a92"),
    ((320, 240), "expert", 2, "6303a82ab9a0cd488b1cc429d68ad89b54ef196e499397004976c951086f5918"),
    ((320, 240), "random", 3, "b4ece481c08651f773543298c242a416a9c57998627acac51c9b60adab7a729a"),
]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("desktop_same_pixels", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("size, policy, seed, digest", MAIN_DIGESTS)
def test_observations_rewards_and_infos_match_main(bench, size, policy, seed, digest):
    assert bench.run_digest(size, policy, seed, steps=40) == digest


def test_the_digest_sees_a_different_episode(bench):
    # a check that cannot fail checks nothing: another seed gives another digest
    assert bench.run_digest((320, 240), "expert", 3, steps=40) != MAIN_DIGESTS[2][3]


def test_a_reset_that_keeps_the_wallpaper_shows_what_a_full_repaint_shows():
    # A reset repaints only what the last episode on the new theme's wallpaper drew over it (the
    # env keeps one frame per wallpaper): after random actions (dragged windows, open menus) too.
    from pixelrl.envs.desktop.env import DesktopEnv
    from pixelrl.envs.gui_action import Action, ActionError

    size = (320, 240)
    env = DesktopEnv("mixed", screen_size=size)
    env.reset(seed=5)
    env.action_space.seed(5)
    kept = older = 0  # resets on the last episode's frame / on an older episode's kept frame
    for _ in range(150):
        for _ in range(3):
            try:
                action = Action.from_sample(env.action_space.sample()).validate(size)
            except ActionError:
                continue
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
        before = env.desktop
        obs, _ = env.reset()
        desktop = env.desktop
        kept += before.wallpaper_key == desktop.wallpaper_key
        older += desktop.frame is not before.frame
        desktop.dirty = [desktop.rect]
        assert (desktop.render() == obs["screenshot"]).all()
    assert kept >= 10 and older >= 30  # both partial repaints were exercised
