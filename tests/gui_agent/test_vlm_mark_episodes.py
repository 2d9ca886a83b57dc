"""Recorded GUI episodes as SFT examples for mark actions (issue 53): a recorded click names the
mark of the prompt's screen parse that lands in the box the expert aimed at
(``click(mark=N)``, which resolves back to a point inside that box), the history keeps the point
as text, and a click with no such mark (or no usable box) keeps its point. A tiny model from
config, the real desktop expert and the real screen reader."""

from __future__ import annotations

import pytest

from pixelrl.envs.gui_action import Action
from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.gui_agent.vlm_episodes import mark_target, sft_examples
from pixelrl.vision.vlm import load_vlm

pytest.importorskip("rapidocr_onnxruntime", reason="mark actions read the screen: the reader extra")
SCREEN = (320, 240)


@pytest.fixture(scope="module")
def marking():
    from pixelrl.vision.reader import SetOfMarks

    codec = GUIActionCodec("uitars", None, mark_actions=True)
    parse = SetOfMarks(codec.point_text, max_words=40)
    return load_vlm("tiny-qwen2_vl", codec, seed=0, screen_parse=parse)


def test_a_recorded_click_names_the_mark_inside_its_box(recorded_click_button, marking):
    from pixelrl.envs.recording import load_episodes

    examples = sft_examples([recorded_click_button], marking)
    data = load_episodes(recorded_click_button)
    assert len(examples) == 3
    for example, e in zip(examples, data.episodes):
        assert example.target.startswith("click(mark="), example.target
        box = [int(v) for v in data.steps(e)["target_bbox"].iloc[0]]
        marks = marking.screen_parse.boxes(example.prompt.image)
        action, reason = marking.codec.parse(example.target, SCREEN, marks)
        assert reason is None and box[0] <= action.x < box[2] and box[1] <= action.y < box[3]
        assert example.box is None and example.prompt.history == ()


def test_no_mark_in_the_box_or_no_box_keeps_the_point(recorded_click_button, marking):
    from pixelrl.envs.recording import load_episodes

    data = load_episodes(recorded_click_button)
    frame = data.frame(0, 0)
    click = Action.click(3, 3)  # a corner: no word is drawn there
    target = marking.action_text(click, SCREEN)
    for bbox in ([0, 0, 6, 6], None, float("nan"), "junk", [0, 0, 2, 2]):
        assert mark_target(marking, click, target, SCREEN, bbox, frame) == target
    typing = Action.type_text("hello")
    text = marking.action_text(typing, SCREEN)
    assert mark_target(marking, typing, text, SCREEN, [0, 0, 320, 240], frame) == text
