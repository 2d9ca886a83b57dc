"""The emulated desktop as a Gymnasium env: API, options, errors, determinism, screen sizes."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from pixelrl import envs  # registers the ids
from pixelrl.envs.desktop import FAMILIES, expert_action
from pixelrl.envs.desktop.env import DesktopEnv
from pixelrl.envs.desktop.registration import env_id
from pixelrl.envs.gui import bbox_center
from pixelrl.envs.gui_action import Action, ActionError, ActionParseError

SMALL = (320, 240)
DESKTOP_IDS = [env_id(f) for f in FAMILIES] + [env_id("mixed")]


def test_every_family_and_mixed_is_registered():
    assert len(DESKTOP_IDS) == 16
    listed = dict(envs.list_envs())
    for i in DESKTOP_IDS:
        assert i in gymnasium.registry, i
        assert listed[i].strip(), f"{i} has no description"
    assert env_id("click-button") == "pixelrl/Desktop-ClickButton-v0"


@pytest.mark.parametrize("env_name", DESKTOP_IDS)
def test_check_env(env_name):
    env = gymnasium.make(env_name, screen_size=SMALL, a11y_text=True).unwrapped
    env.action_space.seed(0)
    check_env(env, skip_render_check=True)


def test_spaces_follow_the_shared_gui_interface():
    from pixelrl.envs.gui import observation_space
    from pixelrl.envs.gui_action import action_space

    env = DesktopEnv("click-button", screen_size=(640, 400), a11y_text=True)
    assert env.observation_space == observation_space((640, 400), True)
    assert env.action_space == action_space((640, 400))
    obs, info = env.reset(seed=1)
    assert obs["screenshot"].shape == (400, 640, 3) and obs["screenshot"].dtype == np.uint8
    assert info["task"]["button"] in obs["instruction"]
    assert f'button "{info["task"]["button"]}"' in obs["a11y_text"]
    assert set(info) >= {"a11y", "target_bbox", "success", "family", "task"}
    assert info["family"] == "click-button" and info["success"] is False
    assert env.observation_space.contains(obs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"family": "no-such-task"}, "unknown desktop task family"),
        ({"screen_size": (200, 100)}, "outside the supported range"),
        ({"screen_size": (2560, 1440)}, "outside the supported range"),
        ({"screen_size": "big"}, "screen_size"),
        ({"reward": "dense"}, "reward must be one of"),
        ({"max_steps": 0}, "max_steps"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_options_raise_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DesktopEnv(**kwargs)


def test_family_names_accept_camel_case_and_mixed_options():
    assert DesktopEnv("ClickButton").family == "click-button"
    env = DesktopEnv("mixed", screen_size=SMALL)
    _, info = env.reset(seed=0, options={"family": "set-slider"})
    assert info["family"] == "set-slider"
    seen = {env.reset(seed=s)[1]["family"] for s in range(40)}
    assert len(seen) >= 10  # a random family per reset
    with pytest.raises(ValueError, match="needs family='mixed'"):
        DesktopEnv("click-button").reset(options={"family": "set-slider"})


@pytest.mark.parametrize(
    "action, error",
    [
        ("pyautogui.click(x=5000, y=10)", ActionParseError),
        ("os.system('rm -rf /')", ActionParseError),
        ("click(start_box='(10,", ActionParseError),
        ("pyautogui.hotkey('ctrl', 'nosuchkey')", ActionParseError),
        (Action.click(320, 10), ActionError),  # x == width: off-screen
        (Action.drag(10, 10, 10, 240), ActionError),
        ({"kind": 99}, ActionError),
        (12345, ActionError),
    ],
)
def test_invalid_actions_raise_and_change_nothing(action, error):
    env = DesktopEnv("click-button", screen_size=SMALL)
    obs, _ = env.reset(seed=3)
    with pytest.raises(error):
        env.step(action)
    assert env.steps == 0
    # the episode goes on: the expert still solves it
    _, reward, terminated, _, info = env.step(env.expert_action())
    assert terminated and info["success"] and reward == 1.0


def test_action_text_and_dict_forms_are_accepted():
    for form in ("pyautogui", "uitars", "dict"):
        env = DesktopEnv("click-button", screen_size=(640, 400))
        _, info = env.reset(seed=7)
        x, y = bbox_center(info["target_bbox"])
        if form == "pyautogui":
            action = f"pyautogui.click(x={x}, y={y})"
        elif form == "uitars":
            from pixelrl.envs.gui_action import to_relative1000

            rx, ry = to_relative1000(x, y, (640, 400))
            action = f"click(start_box='({rx},{ry})')"
        else:
            action = Action.click(x, y).to_sample()
        _, reward, terminated, _, info = env.step(action)
        assert terminated and info["success"] and reward == 1.0, form


def _rollout(env, seed, actions=None, steps=30):
    """Frames and rewards of an episode: the expert's actions, or the ``actions`` given."""
    obs, info = env.reset(seed=seed)
    frames, rewards, taken = [obs["screenshot"]], [], []
    for i in range(steps):
        a = actions[i] if actions is not None else env.expert_action()
        taken.append(a)
        obs, r, term, trunc, info = env.step(a)
        frames.append(obs["screenshot"])
        rewards.append(r)
        if term or trunc:
            break
    return frames, rewards, taken


def test_determinism_same_seed_same_actions_same_pixels_and_rewards():
    env_a = DesktopEnv("mixed", screen_size=(640, 400), reward="shaped")
    env_b = DesktopEnv("mixed", screen_size=(640, 400), reward="shaped")
    for seed in (0, 1, 2, 3, 11):
        frames_a, rewards_a, actions = _rollout(env_a, seed)
        frames_b, rewards_b, _ = _rollout(env_b, seed, actions)
        assert rewards_a == rewards_b
        assert len(frames_a) == len(frames_b)
        assert all(np.array_equal(a, b) for a, b in zip(frames_a, frames_b))
    # different seeds give different scenes
    a = env_a.reset(seed=100)[0]["screenshot"]
    b = env_a.reset(seed=101)[0]["screenshot"]
    assert not np.array_equal(a, b)


def test_observations_are_copies():
    env = DesktopEnv("check-boxes", screen_size=SMALL)
    obs0, _ = env.reset(seed=0)
    before = obs0["screenshot"].copy()
    obs1, *_ = env.step(env.expert_action())
    assert np.array_equal(obs0["screenshot"], before)
    assert not np.shares_memory(obs0["screenshot"], obs1["screenshot"])


@pytest.mark.parametrize(
    "size",
    [
        (320, 240),
        (480, 320),
        (800, 600),
        (1024, 768),
        (1280, 800),
        (1920, 1080),
        (1920, 240),
        (320, 1080),
    ],
)
def test_screen_sizes_render_and_solve(size):
    env = DesktopEnv("mixed", screen_size=size)
    for seed in range(8):
        obs, info = env.reset(seed=seed)
        assert obs["screenshot"].shape == (size[1], size[0], 3)
        for e in info["a11y"]:
            x0, y0, x1, y1 = e["bbox"]
            assert 0 <= x0 <= x1 <= size[0] and 0 <= y0 <= y1 <= size[1], e
        done = False
        while not done:
            obs, _, term, trunc, info = env.step(env.expert_action())
            done = term or trunc
        assert info["success"], (size, seed, info["family"])


def test_sparse_and_shaped_rewards():
    sparse = DesktopEnv("fill-form", screen_size=(640, 400))
    shaped = DesktopEnv("fill-form", screen_size=(640, 400), reward="shaped")
    _, r_sparse, actions = _rollout(sparse, 5)
    _, r_shaped, _ = _rollout(shaped, 5, actions)
    assert r_sparse[-1] == 1.0 and sum(r_sparse) == 1.0
    assert sum(r_shaped) == pytest.approx(1.0)
    assert sum(1 for r in r_shaped[:-1] if r > 0) >= 2  # progress while filling the fields
    # a wrong irreversible action (Cancel) fails the task: the shaped returns then sum to 0
    _, info = shaped.reset(seed=5)
    total = shaped.step(shaped.expert_action())[1] + shaped.step(shaped.expert_action())[1]
    cancel = next(
        e
        for e in info["a11y"]
        if e["role"] == "button" and e["name"] not in (info["task"]["submit"], "Close")
    )
    _, r, term, _, info = shaped.step(Action.click(*bbox_center(cancel["bbox"])))
    assert total > 0 and term and not info["success"]
    assert total + r == pytest.approx(0.0)
    # so does running out of steps with the fields filled: waiting must not pay
    limited = DesktopEnv("fill-form", screen_size=(640, 400), reward="shaped", max_steps=3)
    limited.reset(seed=5)
    rewards = [limited.step(limited.expert_action())[1] for _ in range(2)]
    _, r, term, trunc, info = limited.step(Action.wait())
    assert sum(rewards) > 0 and trunc and not term and not info["success"]
    assert sum(rewards) + r == pytest.approx(0.0)


def test_done_and_fail_terminate_with_the_checker_verdict():
    env = DesktopEnv("set-slider", screen_size=SMALL)
    env.reset(seed=2)
    _, r, term, trunc, info = env.step(Action.done())
    assert term and not trunc and not info["success"] and r == 0.0
    env.reset(seed=2)
    _, r, term, _, info = env.step("FAIL")
    assert term and not info["success"]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(Action.wait())


def test_truncation_at_max_steps():
    env = DesktopEnv("click-button", screen_size=SMALL, max_steps=3)
    env.reset(seed=0)
    outs = [env.step(Action.wait()) for _ in range(3)]
    assert [o[3] for o in outs] == [False, False, True]
    assert not any(o[2] for o in outs)
    default = DesktopEnv("fill-form", screen_size=SMALL)
    default.reset(seed=0)
    assert default.step_limit == 2 * FAMILIES["fill-form"].max_expert_steps + 5


def test_vocabulary_and_families_attributes():
    env = gymnasium.make("pixelrl/Desktop-TypeInField-v0", screen_size=SMALL)
    u = env.unwrapped
    assert u.families is FAMILIES
    assert "apple" in u.vocabulary
    for seed in range(10):
        _, info = env.reset(seed=seed)
        assert info["task"]["text"] in u.vocabulary
    rename = DesktopEnv("rename-file", screen_size=SMALL)
    for seed in range(10):
        _, info = rename.reset(seed=seed)
        assert info["task"]["name"] in rename.vocabulary
    assert set(DesktopEnv("mixed").vocabulary) >= set(u.vocabulary)


def test_expert_action_is_a_pure_function_of_info():
    env = DesktopEnv("rename-file", screen_size=(640, 400))
    _, info = env.reset(seed=4)
    assert expert_action(info) == env.expert_action() == expert_action(info)
    with pytest.raises(ValueError, match="family"):
        expert_action({**info, "family": "nope"})


def test_alternative_targets_are_as_good_as_the_experts_pick():
    # check-boxes: the expert ticks the first wrong box; clicking any other wrong box instead
    # makes the same progress (so a learner scored on any of them is scored fairly)
    env = DesktopEnv(family="check-boxes", reward="shaped")
    checked = 0
    for seed in range(30):
        _, info = env.reset(seed=seed)
        for bbox in info.get("alternative_bboxes", []):
            env.reset(seed=seed)
            _, expert_reward, *_ = env.step(Action.click(*bbox_center(info["target_bbox"])))
            env.reset(seed=seed)
            _, reward, terminated, _, after = env.step(Action.click(*bbox_center(bbox)))
            assert not terminated and reward == pytest.approx(expert_reward) and reward > 0
            assert after["target_bbox"] is not None
            checked += 1
    assert checked > 10
    env.close()
