"""Recorded GUI episodes as SFT examples for a pointer head (issue 53): a click's point becomes the
pointer token and the recorded ``target_bbox`` the head's target (the pixels around the click when
a recording has none or a box that misses the click); the history keeps the point as text; other
actions and a policy without a head are unchanged. Tiny models from config, the real desktop
expert."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
import torch

from pixelrl.envs.gui_action import Action
from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.gui_agent.vlm_episodes import POINT_BOX_RADIUS, pointer_target, sft_examples
from pixelrl.vision.pointer_head import POINTER_TOKEN
from pixelrl.vision.vlm import load_vlm

SCREEN = (320, 240)


@pytest.fixture(scope="module")
def pointing():
    torch.manual_seed(0)
    codec = GUIActionCodec.for_model("tiny-smolvlm", "uitars", None)
    return load_vlm("tiny-smolvlm", codec, seed=0, pointer_head=True, pointer_offset=True,
                    vision_size={"image_size": 64, "patch_size": 4, "scale_factor": 2})  # fmt: skip


def test_a_recorded_click_points_through_the_head_at_its_recorded_box(
    recorded_click_button, pointing
):
    from pixelrl.envs.recording import load_episodes
    from pixelrl.rl.sft import sft_step

    examples = sft_examples([recorded_click_button], pointing)
    data = load_episodes(recorded_click_button)
    boxes = [tuple(int(v) for v in data.steps(e)["target_bbox"].iloc[0]) for e in data.episodes]
    assert len(examples) == 3
    for example, box in zip(examples, boxes):
        assert example.target == f"click(start_box='{POINTER_TOKEN}')"
        assert example.box == box and box[2] - box[0] > 2 * POINT_BOX_RADIUS + 1
    opt = torch.optim.AdamW(pointing.trainable_parameters(), lr=1e-3)
    assert math.isfinite(sft_step(pointing, opt, examples))


def test_without_a_head_the_examples_keep_their_points(recorded_click_button):
    plain = load_vlm("tiny-qwen2_vl", GUIActionCodec(), seed=0)
    examples = sft_examples([recorded_click_button], plain)
    assert all(e.box is None and e.target.startswith("click(start_box='(") for e in examples)


@pytest.mark.parametrize("bbox", [None, float("nan"), [1, 2, 3], [0, 0, 10, 10], "junk"])
def test_a_missing_or_wrong_box_gives_the_pixels_around_the_click(pointing, bbox):
    click = Action.click(100, 50)
    target = pointing.action_text(click, SCREEN)
    pointed, box = pointer_target(pointing, click, target, SCREEN, bbox)
    r = POINT_BOX_RADIUS
    assert POINTER_TOKEN in pointed and box == (100 - r, 50 - r, 101 + r, 51 + r)


def test_the_history_keeps_the_point_as_text_and_typing_is_unchanged(pointing):
    typing = Action.type_text("hello")
    target = pointing.action_text(typing, SCREEN)
    assert pointer_target(pointing, typing, target, SCREEN, [0, 0, 10, 10]) == (target, None)
    click = Action.click(10, 20)
    text = pointing.action_text(click, SCREEN)
    pointed, box = pointer_target(pointing, click, text, SCREEN, np.array([0, 0, 40, 40]))
    assert box == (0, 0, 40, 40) and POINTER_TOKEN not in text


@pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)
def test_the_miniwob_oracle_s_aim_is_recorded_with_its_clicks(tmp_path, pointing):
    """MiniWoB++ has no target box in ``info``: the oracle's own aim is recorded instead, so a
    pointer head learns from the box it clicked (here a check-box with its label)."""
    pytest.importorskip("miniwob", reason="needs the web extra")
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.families import expert_of
    from pixelrl.envs.recording import RecordEpisodes, load_episodes
    from pixelrl.envs.recording.codec import action_as_gui
    from pixelrl.rl.text.demos import record_expert

    env = RecordEpisodes(gym.make("pixelrl/MiniWoB-click-checkboxes-v0"), tmp_path / "d")
    record_expert(env, [2], lambda env: expert_of(env).act, "expert", False)
    rows = load_episodes(tmp_path / "d").steps(0)
    assert len(rows) >= 2
    for text, box in zip(rows["action"], rows["target_bbox"]):
        click = action_as_gui(text, (160, 210))
        assert click.kind == "click" and box is not None
        assert box[0] <= click.x < box[2] and box[1] <= click.y < box[3]
    examples = sft_examples([tmp_path / "d"], pointing)
    assert [e.box for e in examples] == [tuple(int(v) for v in b) for b in rows["target_bbox"]]


def test_aim_before_reset_is_an_error(tmp_path):
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.recording import RecordEpisodes

    env = RecordEpisodes(gym.make("pixelrl/Desktop-ClickButton-v0"), tmp_path / "d")
    with pytest.raises(gym.error.ResetNeeded, match="before aim"):
        env.aim([0, 0, 10, 10])
    env.close()
