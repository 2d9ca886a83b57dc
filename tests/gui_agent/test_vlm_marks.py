"""Mark actions through the GUI VLM's harness (issue 53): on a real emulated-desktop screen read
by the real screen reader, ``click(mark=N)`` is resolved against the marks of the prompt's own
screen parse and clicks the centre of that box; SFT targets and grounding rewards use the same
marks."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import pixelrl.envs  # noqa: F401
from pixelrl.config import Config
from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.envs.gui_action.marks import mark_of_box
from pixelrl.vision.reader import SetOfMarks

pytest.importorskip("rapidocr_onnxruntime")

SCREEN = (320, 240)


@pytest.fixture(scope="module")
def policy():
    from pixelrl.vision.vlm import load_vlm

    codec = GUIActionCodec("uitars", mark_actions=True)
    return load_vlm("tiny-qwen2_vl", codec, screen_parse=SetOfMarks(codec.point_text))


def _screen(seed: int = 1):
    env = gymnasium.make("pixelrl/Desktop-ClickButton-v0", screen_size=SCREEN)
    obs, info = env.reset(seed=seed)
    return env, obs, info


def test_the_harness_clicks_the_centre_of_the_mark_the_prompt_showed(policy):
    env, obs, info = _screen()
    shown = policy.screen_parse(obs["screenshot"])  # what the prompt holds
    boxes = policy.screen_parse.boxes(obs["screenshot"])
    number = mark_of_box(boxes, info["target_bbox"])
    label = obs["instruction"].split('"')[1]  # Click the "Stop" button.
    assert f'[{number}] "{label}"' in shown
    action, parsed, error = policy.parse(f"click(mark={number})", SCREEN, obs["screenshot"])
    assert parsed and error is None
    x0, y0, x1, y1 = boxes[number - 1]
    assert action.point == ((x0 + x1 - 1) // 2, (y0 + y1 - 1) // 2)
    _, reward, terminated, _, _ = env.step(action)
    assert terminated and reward > 0
    # another mark of the same screen is another element: not a success
    env.reset(seed=1)
    other = next(
        n
        for n in range(1, len(boxes) + 1)
        if mark_of_box([boxes[n - 1]], info["target_bbox"]) is None
    )
    action, parsed, _ = policy.parse(f"click(mark={other})", SCREEN, obs["screenshot"])
    assert parsed and not env.step(action)[2]


def test_a_mark_off_the_parse_is_refused_never_a_click(policy):
    _, obs, _ = _screen()
    count = len(policy.screen_parse.boxes(obs["screenshot"]))
    action, parsed, error = policy.parse(f"click(mark={count + 1})", SCREEN, obs["screenshot"])
    assert not parsed and action == policy.codec.noop and f"marks 1-{count}" in error
    action, parsed, error = policy.parse("click(mark=x)", SCREEN, obs["screenshot"])
    assert not parsed and "literal" in error
    # a policy without a screen parse has no marks to name
    plain = type(policy)(policy.model, policy.processor, policy.codec)
    action, parsed, error = plain.parse("click(mark=1)", SCREEN, obs["screenshot"])
    assert not parsed and "no screen parse" in error


def test_generate_resolves_each_row_against_its_own_screen(policy):
    """Two screens in one batch: each completion is parsed with its prompt's marks."""
    _, a, _ = _screen(1)
    _, b, _ = _screen(3)
    out = policy.generate([a["screenshot"], b["screenshot"]], ["x", "y"], num_samples=2,
                          max_new_tokens=4, screen_size=SCREEN)  # fmt: skip
    assert [len(row) for row in out] == [2, 2]
    for screenshot, row in zip((a["screenshot"], b["screenshot"]), out):
        for c in row:
            assert (c.action, c.parsed, c.error) == policy.parse(c.text, SCREEN, screenshot)
    assert policy.screen_parse.boxes(a["screenshot"]) != policy.screen_parse.boxes(b["screenshot"])


def test_an_sft_example_names_the_mark_and_the_reward_scores_its_click(policy, capsys):
    from pixelrl.gui_agent.grounding_rewards import click_gaussian_reward
    from pixelrl.gui_agent.vlm_grounding import grounding_examples, mark_points

    _, obs, info = _screen()
    examples = grounding_examples([("click-button", obs, info)], policy, SCREEN)
    assert "name a mark" in capsys.readouterr().out
    instruction = obs["instruction"]
    example = next(e for e in examples if e.prompt.instruction == instruction)
    assert example.target.startswith("click(mark=")
    action, parsed, _ = policy.parse(example.target, SCREEN, obs["screenshot"])
    x0, y0, x1, y1 = info["target_bbox"]
    assert parsed and x0 <= action.x < x1 and y0 <= action.y < y1
    # the reward reads the mark's point: the same as the point written out, 0 for a refused mark
    cfg = Config({"prompt": {"screen_parse": True, "screen_words": 40, "mark_actions": True}})
    texts = [example.target, policy.codec.render(action, SCREEN), "click(mark=99)"]
    scored = mark_points(cfg, policy.codec, obs["screenshot"], texts, SCREEN)
    rewards = click_gaussian_reward(scored, [info["target_bbox"]] * 3, SCREEN, 2.0)
    assert rewards[0] == rewards[1] > 2.0 and rewards[2] == 0.0
    assert np.isfinite(rewards).all()
