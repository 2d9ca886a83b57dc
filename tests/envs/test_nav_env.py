"""pixelrl/PointNav-v0 and pixelrl/ObjectNav-v0: Gymnasium contract, determinism, measures."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import pixelrl.envs  # noqa: F401  (registers the ids)
from pixelrl.envs.nav.env import NavEnv
from pixelrl.envs.nav.vector_env import NavVectorEnv

SMALL = dict(width=32, height=32, num_scenes=2, apartment={"rooms": (2, 4)})


@pytest.mark.parametrize("env_id", ["pixelrl/PointNav-v0", "pixelrl/ObjectNav-v0"])
def test_check_env(env_id):
    env = gym.make(env_id, **SMALL).unwrapped
    check_env(env, skip_render_check=True)
    env.close()


def test_observations_follow_habitat_conventions():
    env = NavEnv(task="pointnav", sensors=("rgb", "depth", "semantic"), **SMALL)
    obs, info = env.reset(seed=1)
    assert obs["rgb"].shape == (32, 32, 3) and obs["rgb"].dtype == np.uint8
    assert obs["depth"].shape == (32, 32, 1) and obs["depth"].dtype == np.float32
    assert obs["semantic"].shape == (32, 32, 1) and obs["semantic"].dtype == np.int32
    assert 0.0 <= obs["depth"].min() and obs["depth"].max() <= 10.0
    # The polar goal matches the episode's goal seen from the start pose.
    s = env.state
    rho, phi = obs["pointgoal_with_gps_compass"]
    goal = s.episode.goals[0].position
    assert rho == pytest.approx(np.hypot(*(goal - s.position)[[0, 2]]), abs=1e-4)
    # Turning left by phi must face the goal: forward vector at yaw+phi points at it.
    yaw = s.yaw + phi
    fwd = np.array([-math.sin(yaw), -math.cos(yaw)])
    to_goal = (goal - s.position)[[0, 2]] / rho
    assert fwd @ to_goal == pytest.approx(1.0, abs=1e-4)
    assert info["distance_to_goal"] >= rho - 1e-6  # geodesic >= euclidean
    # Turning left changes phi by -turn angle (the goal moves to the right).
    obs2, *_ = env.step(2)
    assert math.remainder(
        obs2["pointgoal_with_gps_compass"][1] - phi + math.radians(10), 2 * math.pi
    ) == pytest.approx(0, abs=1e-4)
    env.close()


def test_objectnav_gps_compass():
    env = NavEnv(task="objectnav", **SMALL)
    obs, _ = env.reset(seed=2)
    np.testing.assert_allclose(obs["gps"], [0, 0], atol=1e-6)
    np.testing.assert_allclose(obs["compass"], [0], atol=1e-6)
    obs, *_ = env.step(2)  # turn left 30 degrees
    assert obs["compass"][0] == pytest.approx(math.radians(30), abs=1e-5)
    before = env.state.position.copy()
    obs, *_ = env.step(1)  # forward along the new heading
    moved = env.state.position - before
    # gps is [forward, right] in the start frame; moving at +30 degrees (left) gives right < 0.
    dist = np.hypot(*moved[[0, 2]])
    if dist > 0.2:
        assert obs["gps"][0] == pytest.approx(dist * math.cos(math.radians(30)), abs=1e-4)
        assert obs["gps"][1] == pytest.approx(-dist * math.sin(math.radians(30)), abs=1e-4)
    env.close()


def _rollout(env, seed, actions):
    obs, _ = env.reset(seed=seed)
    frames, rewards = [obs], []
    for a in actions:
        obs, r, term, trunc, _ = env.step(a)
        frames.append(obs)
        rewards.append(r)
        if term or trunc:
            obs, _ = env.reset()
    return frames, rewards


@pytest.mark.parametrize("task", ["pointnav", "objectnav"])
def test_same_seed_same_actions_same_everything(task):
    actions = np.random.default_rng(0).integers(1, 4, 40).tolist() + [0, 1, 2]
    a = _rollout(NavEnv(task=task, **SMALL), 7, actions)
    b = _rollout(NavEnv(task=task, **SMALL), 7, actions)
    assert a[1] == b[1]
    for fa, fb in zip(a[0], b[0]):
        for key in fa:
            np.testing.assert_array_equal(fa[key], fb[key])
    c = _rollout(NavEnv(task=task, **SMALL), 8, actions[:3])
    assert any(not np.array_equal(x["rgb"], y["rgb"]) for x, y in zip(a[0], c[0]))


def test_reward_and_measures_follow_habitat():
    env = NavEnv(task="pointnav", **SMALL)
    env.reset(seed=3)
    s = env.state
    d0 = s.distance
    _, r, term, trunc, info = env.step(1)
    # the reward follows the grid's geodesic (the search); the measures report the exact one
    assert r == pytest.approx(-(s.distance - d0) - 0.01)
    assert not term and not trunc
    _, r, term, _, info = env.step(0)  # stop far from the goal: terminated, no success
    assert term and info["success"] == 0.0 and info["spl"] == 0.0
    start = s.start_distance  # l: the any-angle geodesic from the start
    assert d0 * 0.99 <= start <= d0
    soft = max(0, 1 - info["distance_to_goal"] / start) * start / max(start, info["path_length"])
    assert info["softspl"] == pytest.approx(soft)
    env.close()


def test_max_episode_steps_truncates():
    env = NavEnv(task="pointnav", max_episode_steps=5, **SMALL)
    env.reset(seed=0)
    flags = [env.step(2)[2:4] for _ in range(5)]
    assert flags[-1] == (False, True) and all(f == (False, False) for f in flags[:-1])


def test_bad_options_are_clear_errors():
    with pytest.raises(ValueError, match="unknown option 'widht'.*pixelrl/PointNav-v0"):
        gym.make("pixelrl/PointNav-v0", widht=64)
    with pytest.raises(ValueError, match="sensors"):
        NavEnv(sensors=("rgb", "lidar"), **SMALL)
    env = NavEnv(**SMALL)
    with pytest.raises(ValueError, match="unknown reset option 'episode_idx'"):
        env.reset(options={"episode_idx": 1})
    with pytest.raises(FileNotFoundError, match="no_such_scene.glb"):
        NavEnv(width=16, height=16, scenes=["/nonexistent/no_such_scene.glb"])


@pytest.mark.parametrize(
    "option, message",
    [
        ({"forward_step": math.inf}, "forward_step must be a finite number > 0, got inf"),
        ({"width": 100000}, "width must be an integer in [1, 4096] px, got 100000"),
        ({"height": 0}, "height must be an integer in [1, 4096] px, got 0"),
        ({"look_actions": "yes"}, "look_actions must be true or false, got 'yes'"),
        ({"normalize_depth": 1}, "normalize_depth must be true or false"),
        ({"tilt_angle": -400}, "tilt_angle must be a finite number in (0, 90] degrees"),
        ({"turn_angle": math.nan}, "turn_angle must be a finite number in (0, 180]"),
        ({"success_distance": -1}, "success_distance must be a finite number > 0, got -1"),
        ({"success_distance": math.nan}, "success_distance must be a finite number > 0, got nan"),
        ({"max_episode_steps": 2.5}, "max_episode_steps must be an integer >= 1, got 2.5"),
        ({"hfov": True}, "hfov must be a finite number in (0, 180) degrees, got True"),
        ({"agent_radius": -0.1}, "agent_radius must be a finite number > 0"),
        ({"min_depth": 5.0, "max_depth": 1.0}, "min_depth < max_depth, got 5.0 and 1.0"),
        ({"up_axis": [0, math.nan, 1]}, "up_axis must be one of"),
        ({"floor_levels": [0.0, math.inf]}, "floor_levels must be 'auto' or a list"),
    ],
)
def test_nonsense_option_values_are_refused_before_anything_is_built(option, message):
    from pixelrl.envs.nav.config import NavConfig

    with pytest.raises(ValueError) as e:
        NavConfig.from_options(**option)
    assert message in str(e.value)


def test_nonsense_episode_rules_are_refused():
    from pixelrl.envs.nav.dataset import EpisodeRules

    with pytest.raises(ValueError, match="min_ratio must be a finite number >= 0, got nan"):
        EpisodeRules(min_ratio=math.nan).validate()
    with pytest.raises(ValueError, match="max_tries must be an integer >= 1, got 0"):
        EpisodeRules(max_tries=0).validate()


def test_vector_env_matches_single_envs_and_autoresets():
    n = 3
    venv = NavVectorEnv(n, max_episode_steps=4, **SMALL)
    single = NavEnv(max_episode_steps=4, **SMALL)
    obs, _ = venv.reset(seed=11)
    ref, _ = single.reset(seed=12)  # sub-env 1 is seeded with seed + 1
    for key in ref:
        np.testing.assert_array_equal(obs[key][1], ref[key])
    assert obs["rgb"].shape == (n, 32, 32, 3) and venv.observation_space.contains(obs)
    for _ in range(4):
        obs, rew, term, trunc, infos = venv.step(np.array([1, 2, 3]))
        ref, r, *_ = single.step(2)
        np.testing.assert_array_equal(obs["rgb"][1], ref["rgb"])
        assert rew[1] == pytest.approx(r)
    assert trunc.all() and "spl" in infos and infos["_spl"].all()
    obs, rew, term, trunc, _ = venv.step(np.array([1, 1, 1]))  # autoreset step
    assert (rew == 0).all() and not (term | trunc).any()
    assert (infos["num_steps"] == 4).all()
    venv.close()


def test_same_step_autoreset_returns_the_next_episode_at_once():
    """SAME_STEP gives the same transitions as NEXT_STEP without the reset step: the last
    observation and measures move to ``final_obs`` / ``final_info``."""
    nxt = NavVectorEnv(2, max_episode_steps=3, **SMALL)
    same = NavVectorEnv(2, autoreset_mode="SameStep", max_episode_steps=3, **SMALL)
    nxt.reset(seed=4)
    same.reset(seed=4)
    for _ in range(3):
        a, *_, info_a = nxt.step(np.array([1, 2]))
        b, rew, term, trunc, info_b = same.step(np.array([1, 2]))
    assert trunc.all() and info_b["_final_obs"].all() and "final_obs" not in info_a
    for key in a:
        np.testing.assert_array_equal(np.stack([o[key] for o in info_b["final_obs"]]), a[key])
    np.testing.assert_array_equal(info_b["final_info"]["spl"], info_a["spl"])
    assert (info_b["num_steps"] == 0).all()  # already in the next episode
    reset_obs, *_ = nxt.step(np.array([1, 2]))  # NEXT_STEP spends a step to get there
    for key in reset_obs:
        np.testing.assert_array_equal(b[key], reset_obs[key])
    with pytest.raises(ValueError, match="autoreset_mode"):
        NavVectorEnv(1, autoreset_mode="Disabled", **SMALL)
    nxt.close()
    same.close()


def test_grid_geodesic_rules_draw_valid_episodes_with_one_field():
    from pixelrl.envs.nav.dataset import EpisodeRules, generate_pointnav_episode
    from pixelrl.envs.nav.geodesic import geodesic_graph

    env = NavEnv(**SMALL)
    grid = env.sim.grid(0)
    rules = EpisodeRules(geodesic="grid")
    rng = np.random.default_rng(0)
    for i in range(20):
        ep = generate_pointnav_episode(grid, rng, "s", str(i), rules)
        field = geodesic_graph(grid).field(ep.goals[0].position[None])
        d, e = ep.info["geodesic_distance"], ep.info["euclidean_distance"]
        assert d == pytest.approx(field.distance(ep.start_position))
        assert 1.0 <= d <= 30.0 and d >= 1.1 * e - 1e-9 and ep.info["geodesic"] == "grid"
        # the grid geodesic is the exact one plus the grid's small directional error
        assert field.exact_distance(ep.start_position) <= d * (1 + 1e-6) + 1e-6
    with pytest.raises(ValueError, match="geodesic"):
        EpisodeRules(geodesic="euclid").validate()
    with pytest.raises(ValueError, match="starts_per_goal"):
        EpisodeRules(starts_per_goal=2).validate()  # needs geodesic="grid"
    env.close()


def test_starts_per_goal_keeps_an_agents_goal_for_that_many_episodes():
    rules = {"geodesic": "grid", "starts_per_goal": 3}
    venv = NavVectorEnv(2, max_episode_steps=1, episode_rules=rules, **SMALL)
    venv.reset(seed=0)
    goals, starts = [], []
    for _ in range(7):  # NEXT_STEP: an episode every other step
        goals.append([tuple(s.episode.goals[0].position) for s in venv.states])
        starts.append([tuple(s.start_position) for s in venv.states])
        venv.step(np.array([1, 1]))
    per_episode = goals[::2]
    assert per_episode[0] == per_episode[1] == per_episode[2] != per_episode[3]
    assert len({s[0] for s in starts[::2][:3]}) == 3  # fresh starts
    venv.reset(seed=0)  # a seeded reset starts afresh: the same first goals
    assert [tuple(s.episode.goals[0].position) for s in venv.states] == per_episode[0]
    venv.close()


def test_depth_clipping_and_normalisation():
    raw = NavEnv(min_depth=0.5, max_depth=3.0, **SMALL)
    norm = NavEnv(min_depth=0.5, max_depth=3.0, normalize_depth=True, **SMALL)
    d_raw = raw.reset(seed=5)[0]["depth"]
    d_norm = norm.reset(seed=5)[0]["depth"]
    assert d_raw.min() >= 0.5 and d_raw.max() <= 3.0
    np.testing.assert_allclose(d_norm, (d_raw - 0.5) / 2.5, atol=1e-6)
    assert norm.observation_space["depth"].high.max() == 1.0


def test_make_vec_uses_the_native_batched_env():
    venv = gym.make_vec(
        "pixelrl/ObjectNav-v0", num_envs=2, vectorization_mode="vector_entry_point", **SMALL
    )
    assert isinstance(venv, NavVectorEnv) and venv.cfg.task == "objectnav"
    obs, _ = venv.reset(seed=0)
    assert obs["objectgoal"].shape == (2, 1) and obs["depth"].shape == (2, 32, 32, 1)
    venv.close()


def test_distance_to_goal_is_exact_on_open_floor():
    """Walking straight at a goal in plain sight, DistanceToGoal is the straight line within
    1 mm at every step (the grid's geodesic is centimetres longer there)."""
    from pixelrl.envs.nav.dataset import NavEpisode, NavGoal
    from pixelrl.envs.nav.geometry import yaw_to_quaternion

    env = NavEnv(task="pointnav", **SMALL)
    env.reset(seed=0)
    grid = env.state.grid
    rng = np.random.default_rng(1)
    while True:  # a start and goal 2-4 m apart in plain sight
        a, b = grid.sample_navigable(rng), grid.sample_navigable(rng)
        if 2 < np.linalg.norm((b - a)[[0, 2]]) < 4 and grid.line_of_sight(a, b):
            break
    d = b - a
    yaw = math.atan2(-d[0], -d[2])
    ep = NavEpisode(
        "x", env.state.episode.scene_id, a, np.array(yaw_to_quaternion(yaw)), [NavGoal(b)]
    )
    _, info = env.reset(options={"episode": ep})
    gaps = []
    for _ in range(6):
        straight = float(np.linalg.norm((b - env.state.position)[[0, 2]]))
        assert info["distance_to_goal"] == pytest.approx(straight, abs=1e-3)
        gaps.append(env.state.distance - straight)
        _, _, _, _, info = env.step(1)
    assert max(gaps) > 1e-3  # what the grid alone would have reported
    env.close()


def test_default_pointnav_rules_are_cheap_and_episodes_valid_with_exact_measures():
    from pixelrl.envs.nav.dataset import EpisodeRules
    from pixelrl.envs.nav.sim import FAST_POINTNAV_RULES

    env = gym.make("pixelrl/PointNav-v0", **SMALL).unwrapped
    rules = env.sim.rules
    assert rules == EpisodeRules(**FAST_POINTNAV_RULES)
    assert rules.geodesic == "grid" and rules.starts_per_goal == 4 and rules.exact_spl
    goals = []
    for k in range(6):
        env.reset(seed=0 if k == 0 else None)  # then autoreset-style unseeded resets
        s = env.state
        goals.append(tuple(s.episode.goals[0].position))
        start, goal = s.start_position, s.episode.goals[0].position
        grid_l = s.episode.info["geodesic_distance"]
        euclid = float(np.hypot(*(goal - start)[[0, 2]]))
        assert s.episode.info["geodesic"] == "grid"
        assert np.isfinite(s.distance) and env.sim.grid(s.scene_index).is_navigable(start)
        assert rules.min_geodesic <= grid_l <= rules.max_geodesic
        assert grid_l >= rules.min_ratio * euclid - 1e-9 and euclid >= rules.min_geodesic
        assert s.start_distance == grid_l  # stands in during the episode (no search at reset)
        exact = s.field.exact_distance(start)
        # the exact geodesic: never below the straight line (so >= the rules' minimum), never
        # above the grid one
        assert euclid - 1e-9 <= exact <= grid_l * (1 + 1e-6) + 1e-6
        _, _, _, _, info = env.step(1 if k % 2 else 0)  # end some at the start, some one step on
        if k % 2:
            _, _, terminated, _, info = env.step(0)
            assert terminated
        # at the end: l is the exact start geodesic, DistanceToGoal the exact one
        assert env.state.start_distance == exact
        assert info["distance_to_goal"] == s.field.exact_distance(env.state.position)
        p = env.state.path_length
        ratio = exact / max(exact, p)
        assert info["spl"] == info["success"] * ratio
        assert info["soft_spl"] == pytest.approx(
            max(0.0, 1 - info["distance_to_goal"] / exact) * ratio
        )
    assert goals[0] == goals[1] == goals[2] == goals[3] != goals[4]  # 4 starts per goal
    env.close()


def test_default_pointnav_env_is_deterministic_per_seed():
    def run():
        env = gym.make("pixelrl/PointNav-v0", **SMALL)
        out = []
        obs, info = env.reset(seed=5)
        rng = np.random.default_rng(0)
        for _ in range(40):
            out.append((obs, info))
            obs, r, term, trunc, info = env.step(int(rng.choice([0, 1, 1, 2, 3])))
            out.append(r)
            if term or trunc:
                out.append(info)
                obs, info = env.reset()
        env.close()
        return out

    a, b = run(), run()
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, tuple):
            for k in x[0]:
                np.testing.assert_array_equal(x[0][k], y[0][k])
            assert x[1] == y[1]
        else:
            assert x == y


def test_exact_rules_are_one_option_away_and_other_sources_keep_them(tmp_path):
    from pixelrl.envs.nav.dataset import EpisodeRules, load_episodes
    from pixelrl.envs.nav.sim import generate_dataset

    env = NavEnv(episode_rules={"geodesic": "exact"}, **SMALL)
    assert env.sim.rules == EpisodeRules()  # habitat's generator, as before
    env.reset(seed=0)
    s = env.state
    assert "geodesic" not in s.episode.info and not s._start_pending
    assert s.start_distance == s.field.exact_distance(s.start_position)
    env.close()
    # any rules given start from the exact ones
    assert NavEnv(episode_rules={"min_geodesic": 2.0}, **SMALL).sim.rules.geodesic == "exact"
    assert NavEnv(task="objectnav", **SMALL).sim.rules == EpisodeRules()
    # exact_spl=False keeps the grid l to the end (training logs)
    env = NavEnv(episode_rules={"geodesic": "grid", "exact_spl": False}, **SMALL)
    env.reset(seed=0)
    grid_l = env.state.episode.info["geodesic_distance"]
    env.step(0)
    assert env.state.start_distance == grid_l
    env.close()
    with pytest.raises(ValueError, match="exact_spl"):
        EpisodeRules(geodesic="grid", exact_spl="yes").validate()
    # datasets are generated with the exact rules unless told
    path = tmp_path / "d.json.gz"
    generate_dataset(str(path), 2, seed=0, num_scenes=1, apartment={"rooms": (2, 4)})
    assert all("geodesic" not in e.info for e in load_episodes(str(path)))
