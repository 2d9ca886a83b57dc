"""Reward formulas against hand-worked values, and the edge cases the docstrings promise."""

import math

import numpy as np
import pytest

from pixelrl.envs.gui import bbox_center
from pixelrl.vision import rewards as R

BOX = [10, 20, 30, 40]  # 20×20 pixels: x in 10..29, y in 20..39; centre (20, 30)


def test_point_in_box_edges_follow_the_exclusive_convention():
    points = [(10, 20), (29, 39), (30, 25), (15, 40), (9, 25), (29.75, 39.9), (20, 30)]
    assert R.point_in_box(points, [BOX] * len(points)).tolist() == [1, 1, 0, 0, 0, 1, 1]


def test_point_in_box_agrees_with_envs_gui_bbox_center():
    boxes = [[0, 0, 1, 1], [5, 5, 8, 9], [100, 3, 101, 50]]
    centres = [bbox_center(b) for b in boxes]
    assert R.point_in_box(centres, boxes).tolist() == [1, 1, 1]


def test_zero_area_and_inverted_boxes_hold_nothing():
    boxes = [[10, 20, 10, 40], [10, 20, 30, 20], [30, 40, 10, 20]]
    points = [(10, 25), (15, 20), (20, 30)]
    assert R.point_in_box(points, boxes).tolist() == [0, 0, 0]
    assert R.gaussian_point_reward(points, boxes).tolist() == [0, 0, 0]
    assert R.distance_reward(points, boxes).tolist() == [0, 0, 0]
    assert R.box_iou(boxes, boxes).tolist() == [0, 0, 0]


def test_nan_and_missing_points_score_zero_everywhere():
    points = [(np.nan, 25), None, (15, np.inf)]
    boxes = [BOX, BOX, [np.nan, 0, 5, 5]]
    for fn in (R.point_in_box, R.gaussian_point_reward, R.distance_reward):
        out = fn(points, boxes)
        assert out.tolist() == [0, 0, 0], fn.__name__
    assert R.box_iou([BOX, [0, 0, np.nan, 1]], [[np.nan] * 4, [0, 0, 1, 1]]).tolist() == [0, 0]


def test_box_iou_hand_worked():
    a = [[0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 4, 4]]
    b = [[5, 0, 15, 10], [10, 0, 20, 10], [0, 0, 10, 10], [1, 1, 3, 3]]
    # 50 / 150; touching edges share no pixel; identical; nested 4 / 16
    np.testing.assert_allclose(R.box_iou(a, b), [1 / 3, 0, 1, 0.25])


def test_gaussian_point_reward_hand_worked():
    # centre of BOX is (20, 30); sigma = (10, 10). Pixel (19, 29) has centre (19.5, 29.5).
    points = [(19, 29), (29, 29), (19, 39), (39, 29)]
    got = R.gaussian_point_reward(points, [BOX] * 4)
    expect = [
        math.exp(-0.5 * (0.05**2 + 0.05**2)),
        math.exp(-0.5 * (0.95**2 + 0.05**2)),
        math.exp(-0.5 * (0.05**2 + 0.95**2)),
        math.exp(-0.5 * (1.95**2 + 0.05**2)),  # outside the box: still a (small) reward
    ]
    np.testing.assert_allclose(got, expect)
    # sigma scales with the box: a 4x wider box is 4x more tolerant in x
    wide = R.gaussian_point_reward([(59, 29)], [[-20, 20, 60, 40]])
    np.testing.assert_allclose(wide, [math.exp(-0.5 * ((59.5 - 20) ** 2 / 40**2 + 0.05**2))])


def test_distance_reward_hand_worked():
    # box [0,0,4,4]: centre (2,2), d_max² = (16+16)/4 = 8. Pixel (1,1) -> (1.5,1.5): d² = 0.5
    got = R.distance_reward([(1, 1), (3, 0), (10, 10)], [[0, 0, 4, 4]] * 3)
    np.testing.assert_allclose(got, [1 - 0.5 / 8, 1 - (1.5**2 + 1.5**2) / 8, 0])


def test_box_size_reward_hand_worked():
    got = R.box_size_reward([[0, 0, 10, 10], [0, 0, 20, 5], [0, 0, 0, 5]], [[5, 5, 15, 15]] * 3)
    np.testing.assert_allclose(got, [1, 0.5 * 0.5, 0])


def test_format_reward_and_safe_parse_never_raise():
    texts = [
        "click(start_box='(100,200)')",
        "pyautogui.click(x=5, y=6)",
        "I think I should click",
        "",
        "__import__('os').system('ls')",
        "pyautogui.click(x=5000, y=6)",  # off a 640×480 screen
        None,
        "x" * 100_000,
    ]
    np.testing.assert_array_equal(
        R.format_reward(texts, screen_size=(640, 480)), [1, 1, 0, 0, 0, 0, 0, 0]
    )
    action, error = R.safe_parse(12345)
    assert action is None and "string" in error


def test_parse_points_and_boxes():
    pts = R.parse_points(["pyautogui.click(x=5, y=6)", "pyautogui.write('hi')", "nonsense"])
    assert pts[0].tolist() == [5, 6] and np.isnan(pts[1:]).all()
    boxes = R.parse_boxes(["the box is [10, 20, 30, 40]", "(500,500,1000,1000)", "none"])
    assert boxes[0].tolist() == [10, 20, 30, 40] and np.isnan(boxes[2]).all()
    rel = R.parse_boxes(["(500,500,1000,1000)"], screen_size=(200, 100), coordinates="relative1000")
    assert rel[0].tolist() == [100, 50, 200, 100]


def test_action_kind_match_and_token_f1():
    from pixelrl.envs.gui_action import Action

    pred = [Action.click(1, 1), Action.double_click(1, 1), None, "type"]
    assert R.action_kind_match(pred, ["click", "click", "click", "type"]).tolist() == [1, 0, 0, 1]
    # "the red cat" vs "the cat sat": overlap 2, P = R = 2/3 -> F1 = 2/3
    f1 = R.token_f1(
        ["The red cat", "", "hello", "a a b", None], ["the cat sat", "", "", "a b b", "x"]
    )
    np.testing.assert_allclose(f1, [2 / 3, 1, 0, 2 / 3, 0])


def test_task_success():
    got = R.task_success([True, False, {"success": True}, {}, None, float("nan"), 1])
    assert got.tolist() == [1, 0, 1, 0, 0, 0, 1]


SCREEN = (1000, 1000)  # 0-1000 UI-TARS coordinates map one-to-one onto pixels here


def test_ui_r1_reward():
    texts = [
        "click(start_box='(20,30)')",  # kind, in box, format: 3
        "click(start_box='(500,500)')",  # kind, miss, format: 2
        "left_double(start_box='(20,30)')",  # wrong kind, in box, format: 2
        "garbage",  # 0
    ]
    got = R.ui_r1_reward(texts, [BOX] * 4, screen_size=SCREEN)
    assert got.tolist() == [3, 2, 2, 0]


def test_gui_r1_reward():
    texts = [
        "click(start_box='(20,30)')",
        "click(start_box='(500,500)')",
        "type(content='hello big world')",
        "type(content='goodbye')",
        "hotkey(key='c ctrl')",
        "finished()",
        "nonsense",
    ]
    kinds = ["click", "click", "type", "type", "hotkey", "done", "click"]
    got = R.gui_r1_reward(
        texts,
        target_boxes=[BOX] * 7,
        target_kinds=kinds,
        target_texts=["", "", "hello world", "hello", "", "", ""],
        target_keys=[None, None, None, None, ["control", "c"], None, None],
        screen_size=SCREEN,
    )
    np.testing.assert_allclose(got, [1, 0.2, 1, 0.2, 1, 1, 0])


def test_gui_g1_reward():
    texts = ["[10, 20, 30, 40]", "[0, 0, 40, 60]", "click(start_box='(20,30)')"]
    got = R.gui_g1_reward(texts, [BOX] * 3)
    # exact box: 1 + 0.25 + 0.125; a 2x/3x box centred at (20,30): hit, IoU 400/2400, size 1/2·1/3
    np.testing.assert_allclose(got, [1.375, 1 + 0.25 / 6 + 0.125 / 6, 0])


def test_se_gui_and_gui_g2_rewards():
    texts = ["click(start_box='(19,29)')", "click(start_box='(300,300)')", "oops"]
    se = R.se_gui_reward(texts, [BOX] * 3, screen_size=SCREEN)
    np.testing.assert_allclose(se, [1 + 1 - 0.5 / 200, 0, 0])
    g2 = R.gui_g2_reward(texts, [BOX] * 3, screen_size=SCREEN)
    np.testing.assert_allclose(g2, [math.exp(-0.5 * 2 * 0.05**2), 0, 0], atol=1e-12)


def test_batch_size_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="same batch size"):
        R.point_in_box([(1, 1)], [BOX, BOX])
