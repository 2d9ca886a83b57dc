"""Rewards as named, weighted terms (pixelrl.rl.rewards) in both domains: the totals are the
floats the rewards were written to give before they were terms."""

from __future__ import annotations

import itertools
import math

import numpy as np

from pixelrl.rl.rewards import Reward, RewardTerm, weighted_sum


def test_weighted_sum_in_order_with_each_terms_value():
    terms = (RewardTerm("a", lambda x: x, 1.0), RewardTerm("b", lambda x: 2 * x, -0.5))
    total, values = weighted_sum(terms, 3.0)
    assert total == 3.0 - 0.5 * 6.0 and values == {"a": 3.0, "b": 6.0}
    assert Reward(terms)(3.0) == total
    arrays = weighted_sum(terms, np.array([1.0, 2.0]))[0]
    np.testing.assert_array_equal(arrays, [0.0, 0.0])


def written_out(rewards, before, info, steps, parsed, done, unused):
    """The navigation turn reward as one expression (its form before the terms)."""
    reward = rewards["slack"] * steps - rewards["format"] * (not parsed)
    after = info["distance_to_goal"]
    if np.isfinite(before) and np.isfinite(after):
        reward += rewards["progress"] * (before - after)
    if done:
        reward += rewards.get("early_stop", 0.0) * rewards["slack"] * max(0, unused)
        reward += rewards["success"] * info["success"]
        reward += rewards["spl"] * info["spl"]
    return float(reward)


def test_navigation_turn_reward_is_the_same_float():
    from pixelrl.embodied.rewards import measure_reward
    from pixelrl.embodied.vlm_train import DEFAULTS

    weights = [
        dict(DEFAULTS["grpo"]["rewards"]),
        {"progress": 0.7, "slack": -0.013, "success": 2.5, "spl": 0.3, "format": 0.5,
         "early_stop": 0.3},
    ]  # fmt: skip
    infos = [
        {"distance_to_goal": 1.37, "success": 0.0, "spl": 0.0},
        {"distance_to_goal": 0.11, "success": 1.0, "spl": 0.7193},
        {"distance_to_goal": math.inf, "success": 0.0, "spl": 0.0},
    ]
    for w, info, before, steps, parsed, done, unused in itertools.product(
        weights, infos, (2.31, math.inf), (1, 3), (True, False), (True, False), (0, 7)
    ):
        args = (w, before, info, steps, parsed, done, unused)
        assert measure_reward(*args) == written_out(*args), args


def test_time_decayed_terms():
    from pixelrl.embodied.rewards import TurnOutcome, nav_reward_terms

    w = {"progress": 1.0, "slack": -0.01, "success": 2.5, "spl": 1.0, "format": 0.1,
         "early_stop": 1.0}  # fmt: skip
    info = {"distance_to_goal": 3.0, "success": 0.0, "spl": 0.0}
    turn = TurnOutcome(4.0, info, 2, True, True, unused=5, agreement=0.75)
    total, values = weighted_sum(nav_reward_terms(w, "time_decayed"), turn)
    assert total == 0.75 + 1.0 * -0.01 * 5 + 0.0
    assert values == {"agreement": 0.75, "early_stop": 5, "success": 0.0}


def test_grounding_click_gaussian_is_the_same_array():
    from pixelrl.envs.gui_action import Action, to_uitars
    from pixelrl.gui_agent.grounding_rewards import GROUNDING_REWARDS, click_gaussian_reward
    from pixelrl.vision import rewards as vr

    screen = (160, 120)
    clicks = [Action.click(30, 40), Action.click(90, 100), Action.click(49, 59)]
    texts = [to_uitars(a, screen) for a in clicks] + ["nonsense", to_uitars(Action.wait(), screen)]
    boxes = [[20, 30, 50, 60]] * len(texts)
    points = vr.parse_points(texts, screen)
    assert np.isfinite(points[:3]).all()  # the clicks parse
    expected = (
        vr.point_in_box(points, boxes)
        + vr.gaussian_point_reward(points, boxes, 0.7)
        + 0.5 * vr.format_reward(texts, screen)
    )
    np.testing.assert_array_equal(click_gaussian_reward(texts, boxes, screen, 0.7), expected)
    terms = GROUNDING_REWARDS["click_gaussian"].terms
    assert [(t.name, t.weight) for t in terms] == [("in_box", 1.0), ("gaussian", 1.0),
                                                   ("format", 0.5)]  # fmt: skip
    for name in ("ui_r1", "gui_r1", "se_gui", "gui_g2"):
        got = GROUNDING_REWARDS[name](texts, boxes, screen, 0.5)
        extra = {"sigma_scale": 0.5} if name == "gui_g2" else {}
        want = getattr(vr, f"{name}_reward")(texts, boxes, screen_size=screen, **extra)
        np.testing.assert_array_equal(got, want)
