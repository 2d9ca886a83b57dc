"""The navigation tool-call dialect (issue 55): TRL's navigation tools as the JSON tool calls a
navigation VLM recipe writes and reads (``action_format: toolcall``), one source of names and
arguments for both sides."""

from __future__ import annotations

import inspect

import gymnasium
import numpy as np
import pytest

from pixelrl.embodied.trl_env import NavEnvironment
from pixelrl.embodied.vlm_agent import AgentSpec, read_spec, save_agent
from pixelrl.envs.nav.action_text import NavActionCodec
from pixelrl.envs.nav.tasks import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from pixelrl.envs.nav.toolcall import MAX_REPEAT, TOOL_PROMPT, TOOLS, NavToolCallCodec
from pixelrl.trl_env import NAV_PROMPT, ToolError, tool_schemas, tools_of

NAV = "pixelrl/PointNav-v0"
NAV_KW = {"width": 64, "height": 64, "sensors": ["rgb"]}


def call(name: str, arguments: str = "{}") -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


@pytest.fixture(scope="module")
def codec() -> NavToolCallCodec:
    return AgentSpec(action_format="toolcall").codec(0.25, 30.0)


@pytest.mark.parametrize(
    "actions",
    [(MOVE_FORWARD,), (MOVE_FORWARD,) * 4, (TURN_LEFT,) * 2, (TURN_RIGHT,), (STOP,),
     (TURN_LEFT, TURN_LEFT, MOVE_FORWARD, MOVE_FORWARD, MOVE_FORWARD, STOP)],
)  # fmt: skip
def test_answers_round_trip(codec, actions):
    text = codec.render(actions)
    assert text.startswith("<tool_call>\n{") and text.endswith("}\n</tool_call>")
    assert codec.parse(text) == (actions, None)
    assert codec.parse("I see a door. " + text) == (actions, None)  # thinking before it


def test_what_is_written_reads_as_the_text_dialect_means(codec):
    assert codec.render([MOVE_FORWARD] * 3) == call("move_forward", '{"steps": 3}')
    assert codec.render([STOP]) == call("stop")
    # a run longer than max_repeat is two calls, as the text dialect writes two items
    assert codec.render([TURN_RIGHT] * 5).count("<tool_call>") == 2
    text = NavActionCodec(0.25, 30.0)
    for actions in ([1, 1, 2], [3, 3, 3, 3, 3], [0]):
        assert codec.parse(codec.render(actions))[0] == text.parse(text.render(actions))[0]
    # an omitted count is the tool's default, 1
    assert codec.parse(call("turn_left"))[0] == (TURN_LEFT,)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("move_forward(2)", "found no <tool_call>"),
        ("<tool_call>{bad json</tool_call>", "the tool call is not JSON"),
        (call("jump"), "unknown tool 'jump'; tools: move_forward, turn_left, turn_right, stop"),
        (call("move_forward", '{"steps": 2.5}'), "must be a whole number in 1..10"),
        (call("move_forward", '{"steps": "3"}'), "must be a whole number in 1..10"),
        (call("turn_left", '{"times": true}'), "must be a whole number in 1..10"),
        (call("turn_left", '{"times": 0}'), "must be a whole number in 1..10, got 0"),
        (call("turn_left", '{"times": 11}'), "must be a whole number in 1..10, got 11"),
        (call("move_forward", '{"times": 2}'), "move_forward takes (steps=1), got (times)"),
        (call("stop", '{"now": 1}'), "stop takes no arguments, got (now)"),
        ('<tool_call>{"name": "stop"}</tool_call>', 'a tool call is {"name": ..., "arguments"'),
        ('<tool_call>{"name": "stop", "arguments": [1]}</tool_call>', "arguments are an object"),
        (call("stop") + call("move_forward"), "'move_forward' follows stop"),
        (call("move_forward", '{"steps": 9}'), "more than 8 steps"),
        (call("stop") * 9, "expected 1 to 8 tool calls, found 9"),
        (None, "action text must be a string, got NoneType"),
        ("x" * 5000, "action text too long"),
    ],
)
def test_bad_answers_are_refused_with_their_reason(codec, text, reason):
    actions, why = codec.parse(text)
    assert actions is None and reason in why


def test_the_tools_are_navigation_environments_one_source():
    """The dialect's tools are the TRL environment's tools: the same names, the same argument
    names, and the environment's calls go through the dialect's reader (the same refusals)."""
    env = NavEnvironment(NAV, **NAV_KW)
    try:
        tools = {t.__name__: t for t in tools_of(env)}
        assert set(tools) == set(TOOLS)
        for name, (_, count) in TOOLS.items():
            assert list(inspect.signature(tools[name]).parameters) == ([count] if count else [])
        schemas = {s["function"]["name"]: s for s in tool_schemas(NavEnvironment)}
        codec = AgentSpec(action_format="toolcall").codec(0.25, 30.0)
        assert list(codec.tools) == list(schemas.values())  # the system turn shows TRL's schemas
        assert NAV_PROMPT == TOOL_PROMPT == codec.answer_hint
        env.reset(seed=3)
        for bad, reason in ((2.5, "whole number in 1..10"), (MAX_REPEAT + 1, "in 1..10, got 11")):
            _, why = codec.parse(call("turn_left", f'{{"times": {bad}}}'))
            with pytest.raises(ToolError) as e:
                env.turn_left(bad)
            assert reason in why and str(e.value) == why
    finally:
        env._close()


def test_a_parsed_answer_plays_as_the_environments_tool_calls(codec):
    """Same seed, same calls: the frames the TRL tools answer with are the frames our codec's
    parsed actions give when stepped one by one."""
    env, plain = NavEnvironment(NAV, **NAV_KW), gymnasium.make(NAV, **NAV_KW)
    try:
        env.reset(seed=11)
        plain.reset(seed=11)
        for name, args in (("turn_left", {"times": 2}), ("move_forward", {"steps": 3})):
            answer = getattr(env, name)(**args)
            actions, _ = codec.parse(call(name, str(args).replace("'", '"')))
            for a in actions:
                obs, *_ = plain.step(a)
            assert np.array_equal(np.asarray(answer[0]["image"]), obs["rgb"])
    finally:
        env._close()
        plain.close()


def test_the_agent_file_keeps_the_action_format(tmp_path):
    """A saved agent names its dialect; files saved before the key read as text."""
    import json

    from pixelrl.embodied.vlm_agent import AGENT_FILE

    class Policy:  # save_agent's policy: only its save (the weights are not this test's)
        def save(self, folder):
            tmp_path.joinpath("model").mkdir()
            return tmp_path / "model"

    folder = save_agent(Policy(), AgentSpec(action_format="toolcall"), tmp_path / "model")
    spec = read_spec(folder)
    assert spec.action_format == "toolcall"
    assert isinstance(spec.codec(0.25, 30.0), NavToolCallCodec)
    raw = json.loads((folder / AGENT_FILE).read_text())
    del raw["action_format"]
    (folder / AGENT_FILE).write_text(json.dumps(raw))
    assert type(read_spec(folder).codec(0.25, 30.0)) is NavActionCodec
    raw["action_format"] = "json"
    (folder / AGENT_FILE).write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="'action_format' must be text or toolcall"):
        read_spec(folder)


def test_the_prompt_is_trls_first_prompt_with_the_tools_in_the_system_turn(codec):
    """A tiny tool-calling model's prompt: the tools' schemas (system turn), then TRL's
    navigation words and the goal as TRL's reset appends it."""
    from pixelrl.vision.vlm import load_vlm

    policy = load_vlm("tiny-qwen2_5_vl", codec=codec, corpus=codec.corpus())
    goal = "The goal is 2.0 m away, 30 degrees to your left."
    env = NavEnvironment(NAV, **NAV_KW)
    try:
        assert env.PROMPT + env.reset(seed=0) == f"{TOOL_PROMPT}\n{env._describe()}"
    finally:
        env._close()
    chat = policy.build_prompt(goal)
    assert '"name": "move_forward"' in chat and chat.index("# Tools") < chat.index(TOOL_PROMPT)
    assert f"{TOOL_PROMPT}\n{goal}" in chat
