"""Our verifiable rewards as TRL reward functions (issue 55 item 3): the values TRL's
GRPOTrainer logs are ours on the same completions."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("trl")

from pixelrl.trl_env import environment_factory, tiny_tool_model, train_dataset  # noqa: E402
from pixelrl.trl_rewards import (  # noqa: E402
    REWARD_WEIGHTS,
    click_in_box_reward,
    completion_action,
    format_reward,
    gaussian_reward,
    iou_reward,
    reward_funcs_and_weights,
    type_f1_reward,
)
from pixelrl.vision import rewards  # noqa: E402

CLICK = "pixelrl/Desktop-ClickButton-v0"
GUI_KW = {"screen_size": (320, 240)}


def _call(name: str, arguments) -> list[dict]:
    """A completion as TRL holds it after parsing one tool call."""
    call = {"type": "function", "function": {"name": name, "arguments": arguments}}
    return [{"role": "assistant", "content": "", "tool_calls": [call]}]


def test_each_function_scores_the_first_action_as_vision_rewards_does():
    box = [100, 50, 140, 70]
    completions = [
        _call("click", {"x": 120, "y": 60}),  # the centre
        _call("click", '{"x": 139, "y": 69}'),  # JSON text arguments, the last pixel in
        "pyautogui.click(140, 60)",  # a plain-text completion, just outside (x1 is exclusive)
        [{"role": "assistant", "content": [{"type": "text", "text": "[100, 50, 130, 70]"}]}],
        _call("type", {"text": "Hello big world"}),
    ]
    points = [(120, 60), (139, 69), (140, 60), None, None]
    kw = {"target_bbox": [box] * 4 + [None], "target_text": [None] * 4 + ["hello world"]}
    boxes = [box] * 5
    assert click_in_box_reward(None, completions, **kw) == [
        *rewards.point_in_box(points, boxes)[:4].tolist(), None]  # fmt: skip
    assert click_in_box_reward(None, completions, **kw)[:3] == [1.0, 1.0, 0.0]
    assert gaussian_reward(None, completions, **kw)[:4] == pytest.approx(
        rewards.gaussian_point_reward(points, boxes)[:4].tolist())  # fmt: skip
    assert iou_reward(None, completions, **kw) == [0.0, 0.0, 0.0, pytest.approx(0.75), None]
    assert format_reward(None, completions, **kw) == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert type_f1_reward(None, completions, **kw) == [None] * 4 + [pytest.approx(0.8)]


@pytest.mark.parametrize(
    "completion",
    [
        _call("reset", {"seed": 1}),  # not a tool
        _call("get_reward", {}),
        _call("__init__", {}),
        _call("click", {"x": "1", "y": 2}),  # a string coordinate
        _call("click", {"x": float("nan"), "y": 2}),
        _call("click", {"x": 10**400, "y": 2}),
        _call("click", {"x": 1}),  # a missing argument
        _call("click", "{not json"),
        _call("click", ["x", 1]),
        _call("scroll", {"x": 1, "y": 2, "clicks": 2.5}),
        _call("hotkey", {"keys": "ctrl++"}),
        [{"role": "assistant", "tool_calls": "click"}],
        [{"role": "assistant", "tool_calls": [None]}],
        [{"role": "user", "content": "pyautogui.click(1, 2)"}],  # no assistant turn
        "__import__('os').system('true')",
        None,
        7,
    ],
)
def test_hostile_or_malformed_answers_score_zero_and_never_raise(completion):
    kw = {"target_bbox": [[0, 0, 320, 240]], "target_text": ["x"]}
    assert completion_action(completion) is None
    for f in (click_in_box_reward, gaussian_reward, format_reward, type_f1_reward, iou_reward):
        assert f(None, [completion], **kw) == [0.0]


def test_an_off_screen_action_is_unplayable_where_the_row_gives_the_screen():
    completions = [_call("click", {"x": 400, "y": 10}), "pyautogui.click(400, 10)"]
    assert format_reward(None, completions) == [1.0, 1.0]
    assert format_reward(None, completions, screen_size=[[320, 240]] * 2) == [0.0, 0.0]


def test_weights_default_to_ours_and_an_unknown_name_is_one_clear_error():
    funcs, weights = reward_funcs_and_weights(["click_in_box", "format"])
    assert funcs == [click_in_box_reward, format_reward]
    assert weights == [REWARD_WEIGHTS["click_in_box"], REWARD_WEIGHTS["format"]]
    assert reward_funcs_and_weights(["format"], {"format": 2.0})[1] == [2.0]
    with pytest.raises(ValueError, match="unknown reward 'clik_in_box'; known: click_in_box"):
        reward_funcs_and_weights(["clik_in_box"])
    with pytest.raises(ValueError, match="unknown reward 'iuo'"):
        reward_funcs_and_weights(weights={"iuo": 1.0})


def test_trl_logs_our_rewards_and_weights_on_the_same_completions(tmp_path):
    """One GRPO step of TRL's trainer on the desktop env with a tiny model forced to call
    ``click(x=1, y=1)``; TRL's logged per-function means and weighted reward are ours."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    from tests.pixelrl.test_trl_env import SMALL, _forced_call

    rows = train_dataset(CLICK, [2, 3], **GUI_KW)
    boxes = [[0, 0, 4, 4], [2, 2, 12, 12]]  # (1, 1) inside the first, outside the second
    rows = rows.add_column("target_bbox", boxes).add_column("target_text", ["hi", None])
    rows = rows.add_column("screen_size", [[320, 240]] * 2)
    funcs, weights = reward_funcs_and_weights()
    model, processor = tiny_tool_model(CLICK, text_size=SMALL, **GUI_KW)
    call = json.dumps({"name": "click", "arguments": {"x": 1, "y": 1}})
    args = GRPOConfig(output_dir=str(tmp_path), num_generations=4, logging_steps=1, report_to=[],
                      use_cpu=True, save_strategy="no", gradient_checkpointing=False, seed=0,
                      generation_kwargs=_forced_call(processor, f"<tool_call>\n{call}\n</tool_call>"),
                      max_steps=1, per_device_train_batch_size=8, max_completion_length=300,
                      max_tool_calling_iterations=1, reward_weights=weights)  # fmt: skip
    trainer = GRPOTrainer(model=model, args=args, train_dataset=rows, processing_class=processor,
                          reward_funcs=funcs, environment_factory=environment_factory(CLICK, **GUI_KW))  # fmt: skip
    trainer.train()
    row = next(r for r in trainer.state.log_history if "reward" in r)

    # ours, from the vision rewards on the point the forced call names, both rows (4 rollouts each)
    point = [(1, 1)] * 2
    ours = {
        "click_in_box": rewards.point_in_box(point, boxes),
        "gaussian": rewards.gaussian_point_reward(point, boxes),
        "iou": np.zeros(2),  # a click writes no box
        "format": np.ones(2),
        "type_f1": np.array([0.0, np.nan]),  # a click types nothing; row 2 has no target text
    }
    assert ours["click_in_box"].tolist() == [1.0, 0.0]
    for name, values in ours.items():
        assert row[f"rewards/{name}_reward/mean"] == pytest.approx(np.nanmean(values), abs=1e-6)
    env_reward = row["rewards/GUIEnvironment/mean"]  # TRL adds the env's own, weight 1
    weighted = [
        sum(REWARD_WEIGHTS[n] * np.nan_to_num(v[i]) for n, v in ours.items()) for i in (0, 1)
    ]
    assert row["reward"] == pytest.approx(np.mean(weighted) + env_reward, abs=1e-5)
