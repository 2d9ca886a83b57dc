"""The navigation measure registry (pixelrl.envs.nav.measures): definitions, bounds, the order
``info`` lists them, and one computation read by the embedded simulator and the habitat adapter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pixelrl.envs.habitat.env import HabitatNavEnv
from pixelrl.envs.nav import measures as M
from pixelrl.envs.nav.env import NavEnv

SMALL = dict(width=16, height=16, num_scenes=1, sensors=("depth",), apartment={"rooms": (1, 1)})


def progress(**changes) -> M.EpisodeProgress:
    values = dict(distance_to_goal=0.1, start_distance=4.0, path_length=5.0, called_stop=True,
                  success_radius=0.2, collisions=3, steps=40)  # fmt: skip
    return M.EpisodeProgress(**{**values, **changes})


def test_habitat_definitions():
    info = M.measure_episode(progress())
    assert info == {
        "distance_to_goal": 0.1,
        "success": 1.0,
        "spl": 4.0 / 5.0,
        "soft_spl": (1.0 - 0.1 / 4.0) * (4.0 / 5.0),
        "softspl": (1.0 - 0.1 / 4.0) * (4.0 / 5.0),
        "path_length": 5.0,
        "collisions": 3.0,
        "num_steps": 40.0,
    }
    # the order info has always listed them in (recordings keep it)
    assert list(info) == ["distance_to_goal", "success", "spl", "soft_spl", "softspl",
                          "path_length", "collisions", "num_steps"]  # fmt: skip
    assert M.measure_episode(progress(called_stop=False))["success"] == 0.0
    assert M.measure_episode(progress(distance_to_goal=0.2))["success"] == 0.0  # < radius
    shorter = M.measure_episode(progress(path_length=3.0))
    assert shorter["spl"] == 1.0  # l / max(l, p): never above 1
    assert M.measure_episode(progress(distance_to_goal=9.0))["softspl"] == 0.0
    # l = 0 (an episode that starts on its goal): the ratio is 1, SoftSPL's progress the radius
    on_goal = M.measure_episode(progress(start_distance=0.0, called_stop=False))
    assert on_goal["spl"] == 0.0 and on_goal["softspl"] == 1.0
    unreachable = M.measure_episode(progress(distance_to_goal=math.inf, called_stop=False))
    assert unreachable["distance_to_goal"] == math.inf and unreachable["softspl"] == 0.0


def test_names_bounds_and_tables():
    assert M.HEADLINE == ("success", "spl", "softspl", "distance_to_goal")
    assert M.extra_measures() == ("path_length", "collisions", "num_steps")
    assert M.SCORES == ("success", "spl")
    assert M.habitat_keys() == ("success", "spl", "soft_spl", "distance_to_goal",
                                "path_length", "collisions", "num_steps")  # fmt: skip
    for name in ("success", "spl", "softspl", "soft_spl"):
        assert M.bounds(name) == (0.0, 1.0)
    for name in ("distance_to_goal", "num_steps", "not_a_measure"):
        assert M.bounds(name) == (0.0, math.inf)
    for cls in M.MEASURES.values():  # what a measure reads is computed before it
        names = list(M.MEASURES)
        assert all(names.index(d) < names.index(cls.name) for d in cls.depends_on)


def test_registration_checks_names_and_dependencies():
    class Twice(M.Measure):
        name = "success"

    class Early(M.Measure):
        name = "early"
        depends_on = ("not_yet_registered",)

    with pytest.raises(ValueError, match="already registered"):
        M.register_measure(Twice)
    with pytest.raises(ValueError, match="register those first"):
        M.register_measure(Early)
    assert "early" not in M.MEASURES


def test_a_new_measure_is_one_class(monkeypatch):
    monkeypatch.setattr(M, "MEASURES", dict(M.MEASURES))

    @M.register_measure
    class Oracle(M.Measure):
        """Success had the agent stopped now."""

        name = "oracle_success"
        bounds = (0.0, 1.0)
        depends_on = ("distance_to_goal",)

        @staticmethod
        def compute(episode, measured):
            return float(measured["distance_to_goal"] < episode.success_radius)

    assert M.measure_episode(progress(called_stop=False))["oracle_success"] == 1.0
    assert M.extra_measures()[-1] == "oracle_success" and M.bounds("oracle_success") == (0, 1)


def embedded_episode(seed: int, actions: list[int]) -> NavEnv:
    env = NavEnv(task="pointnav", **SMALL)
    env.reset(seed=seed)
    for action in actions:
        env.step(action)
    return env


@pytest.mark.parametrize("actions", [[1, 1, 2, 1, 0], [2, 2, 2], [0]])
def test_the_embedded_env_and_the_habitat_adapter_measure_alike(actions):
    """The same episode state -> the same info, through each simulator's own code path."""
    env = embedded_episode(3, actions)
    state = env.state
    adapter = HabitatNavEnv.__new__(HabitatNavEnv)  # its _info only: no habitat-sim here
    adapter.cfg, adapter.episode = state.cfg, state.episode
    adapter.distance, adapter.start_distance = state.measured, state.start_distance
    adapter.path_length, adapter.called_stop = state.path_length, state.called_stop
    adapter.collisions, adapter.steps = state.collisions, state.steps
    ours = state.measures()
    theirs = adapter._info()
    assert {k: theirs[k] for k in ours} == ours
    assert list(theirs)[: len(ours)] == list(ours)
    assert ours == M.measure_episode(state.progress())
    assert bool(ours["success"]) == bool(state.success)
    env.close()


def test_the_env_info_carries_every_registered_measure():
    env = embedded_episode(1, [1, 2])
    _, _, _, _, info = env.step(1)
    for cls in M.MEASURES.values():
        assert info[cls.name] == info[cls.uuid or cls.name]
        lo, hi = cls.bounds
        assert lo <= info[cls.name] <= hi
    assert np.isfinite(info["distance_to_goal"])
    env.close()
