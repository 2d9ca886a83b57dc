"""Task families (pixelrl.envs.families): registered beside their env ids, one seed split each,
an unknown name refused with the nearest ones, and every family's expert plays its tasks."""

from __future__ import annotations

import shutil

import gymnasium as gym
import numpy as np
import pytest

from pixelrl.envs import FAMILIES, family_of, task_family, unknown_family_message
from pixelrl.envs.families import BASES, PARITY, expert_of, seeds_of


def test_every_backend_registers_its_family_beside_its_ids():
    assert {"desktop", "miniwob", "x11", "navigation"} <= set(FAMILIES)
    for family in FAMILIES.values():
        for task in family.tasks:
            assert family.env_id(task) in gym.registry, (family.name, task)
            assert family_of(family.env_id(task)) is family
    assert task_family("desktop").env_id("click-button") == "pixelrl/Desktop-ClickButton-v0"
    assert task_family("navigation").env_id("PointNav") == "pixelrl/PointNav-v0"
    assert family_of("pixelrl/no-such-env") is None
    assert all(f.success_key == "success" for f in FAMILIES.values())
    assert {"a11y", "target_bbox", "fields"} <= set(task_family("desktop").privileged)


def test_an_unknown_family_is_one_line_with_the_nearest_names():
    assert unknown_family_message("miniwob") is None
    with pytest.raises(ValueError, match=r"unknown task family 'miniwbo'; did you mean miniwob\?"):
        task_family("miniwbo")
    assert "families: desktop, miniwob, navigation, x11" in unknown_family_message("xyz")


def test_the_gui_split_is_the_even_odd_one_written_before():
    # gui_agent wrote these five times: SplitSeeds, task_seeds, evaluate, grounding, demo
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    drawn = PARITY.seeds("eval", 50, a)
    assert drawn == [2 * int(b.integers(0, 2**30)) + 1 for _ in range(50)]
    assert PARITY.seeds("train", 4) == [0, 2, 4, 6] and PARITY.seed("eval", 7) == 15
    train = set(PARITY.seeds("train", 500, np.random.default_rng(0)))
    assert train.isdisjoint(drawn + PARITY.seeds("eval", 500))
    with pytest.raises(ValueError, match="split must be one of train, eval, got 'val'"):
        PARITY.seed("val", 0)  # GUI families have no validation split yet
    for name in ("desktop", "miniwob", "x11"):
        assert task_family(name).seeds is PARITY
    assert seeds_of("pixelrl/Desktop-FillForm-v0") is PARITY
    assert seeds_of("pixelrl/not-registered") is PARITY  # an env of no family: the GUI split


def test_the_navigation_split_counts_from_its_bases():
    assert task_family("navigation").seeds is BASES
    assert BASES.seeds("train", 3) == [0, 1, 2]
    assert BASES.seeds("eval", 2) == [1_000_000, 1_000_001]
    assert BASES.seeds("val", 2) == [2_000_000, 2_000_001]


def _play(env, expert, seed: int, limit: int = 60) -> dict:
    env.reset(seed=seed)
    expert.reset()
    for _ in range(limit):
        _, _, terminated, truncated, info = env.step(expert.act())
        if terminated or truncated:
            return info
    raise AssertionError(f"the expert did not finish in {limit} steps")


@pytest.mark.parametrize("task", ["click-button", "fill-form"])
def test_the_desktop_expert_solves_its_tasks(task):
    family = task_family("desktop")
    env = gym.make(family.env_id(task), screen_size=(320, 240))
    try:
        info = _play(env, expert_of(env), PARITY.seed("train", 1))
        assert info[family.success_key]
    finally:
        env.close()


def test_the_navigation_expert_reaches_the_goal():
    family = task_family("navigation")
    env = gym.make(family.env_id("PointNav"), sensors=["rgb"], width=32, height=32, num_scenes=1)
    try:
        info = _play(env, expert_of(env), BASES.seed("train", 0), limit=500)
        assert info[family.success_key]
    finally:
        env.close()


@pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)
def test_the_miniwob_expert_is_the_oracle_and_plays_click_test():
    pytest.importorskip("miniwob", reason="needs the web extra: pip install 'pixelrl[web]'")
    family = task_family("miniwob")
    assert family.expert_plays("click-test") and not family.expert_plays("book-flight")
    env = gym.make(family.env_id("click-test"))
    try:
        assert _play(env, expert_of(env), PARITY.seed("train", 0))[family.success_key]
    finally:
        env.close()


@pytest.mark.skipif(
    shutil.which("Xvfb") is None, reason="needs Xvfb: scripts/install_system_deps.sh"
)
def test_the_x11_expert_plays_the_task_files_solution():
    family = task_family("x11")
    assert family.expert_plays("TkCounterThree")
    env = gym.make(family.env_id("TkCounterThree"))
    try:
        expert = expert_of(env)
        assert _play(env, expert, 0)[family.success_key]
        assert expert.solution == list(env.unwrapped.task.solution)
    finally:
        env.close()


def test_an_env_of_no_family_has_no_expert():
    from pixelrl.envs.desktop.env import DesktopEnv

    env = DesktopEnv("click-button")  # made directly: no registered id, so no family
    with pytest.raises(ValueError, match="belongs to no task family"):
        expert_of(env)
    assert task_family("desktop").expert_for(env) is not None  # the family, named, still serves
    env.close()
