"""TRL environments (issue 39 item 1): pixelrl envs as ``GRPOTrainer(environment_factory=...)``
tools. The tools play the real envs (the emulated desktop, PointNav), their answers carry the
new image, the reward is the env's own (the task checker; the navigation measures the multi-turn
trainer scores turns with), and TRL's own trainer runs two steps on each on CPU."""

from __future__ import annotations

import json
import os

import gymnasium
import numpy as np
import pytest

pytest.importorskip("trl")

import pixelrl.envs  # noqa: E402,F401
from pixelrl.embodied.rewards import measure_reward, unused_steps  # noqa: E402
from pixelrl.embodied.trl_env import NavEnvironment  # noqa: E402
from pixelrl.embodied.vlm_train import DEFAULTS  # noqa: E402
from pixelrl.envs.gui_action import Action  # noqa: E402
from pixelrl.trl_env import (  # noqa: E402
    GUIEnvironment,
    ToolError,
    environment_factory,
    tiny_tool_model,
    tools_of,
    train_dataset,
)

CLICK = "pixelrl/Desktop-ClickButton-v0"
NAV = "pixelrl/PointNav-v0"
GUI_KW = {"screen_size": (320, 240)}
NAV_KW = {"width": 64, "height": 64}


def _centre(box):
    x0, y0, x1, y1 = box
    return int((x0 + x1) // 2), int((y0 + y1) // 2)


def test_every_tool_has_a_schema_trl_can_show_the_model():
    from transformers.utils import get_json_schema

    gui = GUIEnvironment(CLICK, **GUI_KW)
    nav = NavEnvironment(NAV, **NAV_KW)
    names = {
        env: [get_json_schema(t)["function"]["name"] for t in tools_of(env)] for env in (gui, nav)
    }
    assert sorted(names[gui]) == sorted(
        ["click", "double_click", "right_click", "drag", "scroll", "type", "hotkey", "done"]
    )
    assert sorted(names[nav]) == ["move_forward", "stop", "turn_left", "turn_right"]
    click = get_json_schema(gui.click)["function"]
    assert set(click["parameters"]["properties"]) == {"x", "y"}
    assert all(p.get("description") for p in click["parameters"]["properties"].values())


def test_gui_tools_play_the_env_and_the_reward_is_its_checker():
    env = GUIEnvironment(CLICK, **GUI_KW)
    task = env.reset(seed=3)
    plain = gymnasium.make(CLICK, **GUI_KW)
    obs, info = plain.reset(seed=3)
    assert task == f"\nTask: {obs['instruction']}"
    x, y = _centre(info["target_bbox"])  # privileged: the test's oracle, never the model's
    answer = env.click(x=x, y=y)
    obs2, reward, terminated, truncated, _ = plain.step(Action.click(x, y))
    image, text = answer
    assert image["type"] == "image" and np.array_equal(
        np.asarray(image["image"]), obs2["screenshot"]
    )
    assert text["type"] == "text" and obs["instruction"] in text["text"]
    assert terminated and reward > 0 and env.get_reward() == pytest.approx(float(reward))
    assert "succeeded" in text["text"]
    with pytest.raises(ToolError, match="episode is over"):
        env.click(x=x, y=y)
    env.reset(seed=3)  # a new rollout starts from nothing
    assert env.get_reward() == 0.0


def test_gui_tools_refuse_bad_calls_and_the_episode_goes_on():
    env = GUIEnvironment(CLICK, **GUI_KW)
    env.reset(seed=1)
    for call in (
        lambda: env.click(x=-5, y=10),
        lambda: env.click(x="ten", y=10),
        lambda: env.hotkey(keys="ctrl+"),
        lambda: env.hotkey(keys="nosuchkey"),
        lambda: env.drag(x=1, y=1, to_x=10_000, to_y=1),
    ):
        with pytest.raises(ToolError):
            call()
    image, _ = env.scroll(x=10, y=10, clicks=-1)  # still playing
    assert np.asarray(image["image"]).shape == (240, 320, 3)
    with pytest.raises(ToolError, match="seed"):
        env.reset(seed="3")


NOT_NUMBERS = [float("nan"), float("inf"), -float("inf"), 2.5, "3", True, 10**400, 51]


@pytest.mark.parametrize("clicks", NOT_NUMBERS, ids=[str(c)[:8] for c in NOT_NUMBERS])
def test_a_scroll_of_no_whole_number_of_clicks_is_a_tool_error(clicks):
    # issue 51: NaN raised ValueError and inf OverflowError (int(clicks) in Action.scroll), which
    # end a TRL rollout; 2.5, "3" and True were played as 2, 3 and 1 clicks
    env = GUIEnvironment(CLICK, **GUI_KW)
    env.reset(seed=1)
    with pytest.raises(ToolError, match="clicks must be a whole number in -50..50"):
        env.scroll(x=10, y=10, clicks=clicks)
    image, _ = env.scroll(x=10, y=10, clicks=-1)  # still playing
    assert np.asarray(image["image"]).shape == (240, 320, 3)


BAD_SEEDS = [-1, 2**63, 10**400, float("nan"), 3.0, "3", True]


@pytest.mark.parametrize("seed", BAD_SEEDS, ids=[str(s)[:8] for s in BAD_SEEDS])
def test_a_row_seed_outside_0_to_2_63_is_a_tool_error(seed):
    # issue 51: -1 raised gymnasium's own Error, which ends a TRL rollout
    gui, nav = GUIEnvironment(CLICK, **GUI_KW), NavEnvironment(NAV, **NAV_KW)
    for env in (gui, nav):
        with pytest.raises(ToolError, match=r"seed must be an integer in 0\.\.2\*\*63-1, got"):
            env.reset(seed=seed)
    assert gui.reset(seed=2**63 - 1).startswith("\nTask: ")  # the last seed still plays


def test_nav_tools_score_each_call_as_the_trainer_scores_a_turn():
    env = NavEnvironment(NAV, **NAV_KW)
    assert env.reset(seed=5).startswith("\nThe goal is")
    plain = gymnasium.make(NAV, **NAV_KW)
    _, info = plain.reset(seed=5)
    expected, weights = 0.0, DEFAULTS["grpo"]["rewards"]
    for name, action, times in (("move_forward", 1, 2), ("turn_left", 2, 3), ("stop", 0, 1)):
        before = info["distance_to_goal"]
        for _ in range(times):
            obs, _, terminated, truncated, info = plain.step(action)
            if terminated or truncated:
                break
        done = terminated or truncated
        unused = unused_steps(plain, info, action == 0) if done else 0
        expected += measure_reward(weights, before, info, times, True, done, unused)
        answer = getattr(env, name)() if name == "stop" else getattr(env, name)(times)
    assert np.array_equal(np.asarray(answer[0]["image"]), obs["rgb"])
    assert env.get_reward() == pytest.approx(expected) and expected != 0.0
    with pytest.raises(ToolError, match="episode is over"):
        env.move_forward(1)
    env.reset(seed=5)
    for bad in (0, 11, True, 2.5):
        with pytest.raises(ToolError, match="count"):
            env.turn_right(bad)


def test_train_dataset_rows_are_seeded_starts():
    rows = train_dataset(NAV, seeds=[4, 9], name="nav", **NAV_KW)
    assert rows["seed"] == [4, 9] and rows["environment"] == ["nav", "nav"]
    plain = gymnasium.make(NAV, **NAV_KW)
    assert np.array_equal(np.asarray(rows[1]["image"]), plain.reset(seed=9)[0]["rgb"])
    assert rows[0]["prompt"][0]["role"] == "user"
    with pytest.raises(ValueError, match="pixelrl/PointNav-v0"):
        environment_factory("PointNav-v0")
    with pytest.raises(ToolError, match="rewards"):
        NavEnvironment(NAV, rewards={"sucess": 1.0}, **NAV_KW)


def _forced_call(processor, text: str) -> dict:
    """``generation_kwargs`` that make a model built from config write ``text`` and end its turn:
    a ``sequence_bias`` on each prefix of its tokens, larger the longer the prefix (so the longest
    match wins over a shorter one that recurs inside the text), then on the end of the turn. TRL
    passes it to ``generate``. A random model never writes a tool call; with this it does, so TRL
    parses it and runs our tools."""
    tok = processor.tokenizer
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text
    bias = [[ids[: i + 1], 10.0 * (i + 1)] for i in range(len(ids))]
    bias.append([[*ids, tok.convert_tokens_to_ids("<|im_end|>")], 10.0 * (len(ids) + 2)])
    return {"sequence_bias": bias}


SMALL = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
}


def _trainer(tmp_path, env_id, kwargs, rows, factory, call: str, **config):
    """TRL's GRPOTrainer on CPU with a tiny tool model that writes ``call`` (``_forced_call``)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    model, processor = tiny_tool_model(env_id, text_size=SMALL, **kwargs)
    forced = _forced_call(processor, f"<tool_call>\n{call}\n</tool_call>")
    args = GRPOConfig(output_dir=str(tmp_path), num_generations=4, logging_steps=1, report_to=[],
                      use_cpu=True, save_strategy="no", gradient_checkpointing=False, seed=0,
                      generation_kwargs=forced, **config)  # fmt: skip
    return GRPOTrainer(model=model, args=args, train_dataset=rows, processing_class=processor,
                       environment_factory=factory)  # fmt: skip


@pytest.mark.parametrize(
    "env_id, kwargs, call",
    [
        (NAV, NAV_KW, '{"name": "move_forward", "arguments": {"steps": 2}}'),
        (CLICK, GUI_KW, '{"name": "click", "arguments": {"x": 160, "y": 120}}'),
    ],
)
def test_trl_grpo_trainer_trains_two_steps_on_our_env(env_id, kwargs, call, tmp_path):
    seeds = [2, 7]
    factory = environment_factory(env_id, **kwargs)
    rows = train_dataset(env_id, seeds, **kwargs)
    trainer = _trainer(tmp_path, env_id, kwargs, rows, factory, call, max_steps=2,
                       per_device_train_batch_size=4, max_completion_length=400,
                       max_tool_calling_iterations=2)  # fmt: skip
    trainer.train()
    logs = [row for row in trainer.state.log_history if "reward" in row]
    assert len(logs) == 2
    column = f"rewards/{type(factory()).__name__}/mean"
    # What the same calls score on our env, from each row's seed: TRL's logged reward is one of
    # them (a step's four rollouts share one prompt and, forced, one answer).
    expected = []
    for seed in seeds:
        env = factory()
        env.reset(seed=seed)
        parsed = json.loads(call)
        for _ in range(2):  # max_tool_calling_iterations
            try:
                getattr(env, parsed["name"])(**parsed["arguments"])
            except ToolError:
                break
        expected.append(env.get_reward())
    for row in logs:
        assert row["tools/call_frequency"] > 0 and row["tools/failure_frequency"] == 0
        assert any(row[column] == pytest.approx(e, abs=1e-5) for e in expected), (
            row[column],
            expected,
        )
    if env_id == NAV:
        assert any(abs(e) > 0 for e in expected)


def test_a_dict_of_factories_trains_two_tasks_in_one_run(tmp_path):
    """Each row names its environment; TRL shows each rollout its own env's tools and logs one
    reward column per env class."""
    from datasets import concatenate_datasets

    rows = concatenate_datasets([train_dataset(NAV, [3], name="nav", **NAV_KW),
                                 train_dataset(CLICK, [3], name="click", **GUI_KW)])  # fmt: skip
    factories = {
        "nav": environment_factory(NAV, **NAV_KW),
        "click": environment_factory(CLICK, **GUI_KW),
    }
    trainer = _trainer(tmp_path, NAV, NAV_KW, rows, factories, '{"name": "stop", "arguments": {}}',
                       max_steps=1, per_device_train_batch_size=8, max_completion_length=200,
                       max_tool_calling_iterations=1, shuffle_dataset=False)  # fmt: skip
    trainer.train()
    row = next(r for r in trainer.state.log_history if "reward" in r)
    nav = factories["nav"]()
    nav.reset(seed=3)
    nav.stop()
    assert row["rewards/NavEnvironment/mean"] == pytest.approx(nav.get_reward(), abs=1e-5)
    assert row["rewards/GUIEnvironment/mean"] == 0.0  # `stop` is not a desktop tool: an error
    assert row["tools/failure_frequency"] > 0
