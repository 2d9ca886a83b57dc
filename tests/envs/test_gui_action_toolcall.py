"""The tool-call dialect (issue 55 item 1): GUI actions as the JSON tool calls of TRL's GUI
tools, written and read back, and untrusted text refused with its reason, never evaluated."""

from __future__ import annotations

import json

import pytest

from pixelrl.envs.gui_action import (
    Action,
    ActionError,
    ActionParseError,
    GUIActionCodec,
    parse_toolcall,
    to_toolcall,
)

SCREEN = (320, 240)

PLAYED = [
    Action.click(3, 4),
    Action.double_click(319, 239),
    Action.right_click(0, 0),
    Action.drag(1, 2, 300, 200),
    Action.scroll(5, 6, dy=-3),
    Action.scroll(5, 6, dy=50),
    Action.type_text('héllo "world"\n'),
    Action.key("enter"),
    Action.hotkey("ctrl", "s"),
    Action.done(),
]


@pytest.mark.parametrize("action", PLAYED, ids=[a.kind for a in PLAYED])
def test_every_tool_action_round_trips(action):
    codec = GUIActionCodec("toolcall")
    text = codec.render(action, SCREEN)
    assert text.startswith("<tool_call>\n{") and text.endswith("}\n</tool_call>")
    assert codec.parse(text, SCREEN) == (action, None)
    # a model's thinking before the call is allowed, as TRL's parser allows it
    assert parse_toolcall("I will act now.\n" + text, SCREEN) == action


def test_the_text_is_what_a_qwen_chat_template_writes():
    # tojson's separators and non-ASCII as it is: a model copies the template's own form
    assert to_toolcall(Action.type_text("é")) == (
        '<tool_call>\n{"name": "type", "arguments": {"text": "é"}}\n</tool_call>'
    )


REFUSED = [
    ('click(start_box="(1,2)")', "expected one tool call, found no <tool_call>"),
    ('<tool_call>{"name": "done", "arguments": {}}</tool_call>' * 2, "found 2 tool calls"),
    ("<tool_call>{nope</tool_call>", "the tool call is not JSON"),
    ("<tool_call>" + "[" * 5000 + "</tool_call>", "the tool call is not JSON"),
    ('<tool_call>["click", 1, 2]</tool_call>', 'a tool call is {"name": ..., "arguments"'),
    ('<tool_call>{"name": "click", "arguments": {"x": 1, "y": 2}, "id": 1}</tool_call>',
     'a tool call is {"name": ..., "arguments"'),
    ('<tool_call>{"name": "click", "arguments": "x=1"}</tool_call>', "arguments are an object"),
    ('<tool_call>{"name": "fly", "arguments": {}}</tool_call>', "unknown tool 'fly'; tools: click"),
    ('<tool_call>{"name": 7, "arguments": {}}</tool_call>', "unknown tool 7"),
    ('<tool_call>{"name": "click", "arguments": {"x": 1}}</tool_call>',
     "click takes the arguments (x, y), got (x)"),
    ('<tool_call>{"name": "click", "arguments": {"x": "1", "y": 2}}</tool_call>',
     "x must be a number, got '1'"),
    ('<tool_call>{"name": "click", "arguments": {"x": true, "y": 2}}</tool_call>',
     "x must be a number"),
    ('<tool_call>{"name": "click", "arguments": {"x": NaN, "y": 2}}</tool_call>', "x must be finite"),
    ('<tool_call>{"name": "click", "arguments": {"x": 320, "y": 2}}</tool_call>', "off-screen"),
    ('<tool_call>{"name": "scroll", "arguments": {"x": 1, "y": 2, "clicks": 2.5}}</tool_call>',
     "clicks must be a whole number in -50..50"),
    ('<tool_call>{"name": "type", "arguments": {"text": 5}}</tool_call>', "text must be a string"),
    ('<tool_call>{"name": "hotkey", "arguments": {"keys": "ctrl+"}}</tool_call>',
     "keys must be key names joined by '+'"),
    ('<tool_call>{"name": "hotkey", "arguments": {"keys": "nosuchkey"}}</tool_call>', "key"),
    ('<tool_call>{"name": "type", "arguments": {"text": "' + "a" * 40000 + '"}}</tool_call>',
     "action text too long"),
]  # fmt: skip


@pytest.mark.parametrize("text, reason", REFUSED, ids=[r[1][:30] for r in REFUSED])
def test_bad_tool_calls_are_refused_with_their_reason(text, reason):
    with pytest.raises(ActionParseError) as e:
        parse_toolcall(text, SCREEN)
    assert reason in str(e.value)
    action, error = GUIActionCodec("toolcall").parse(text, SCREEN)
    assert action is None and reason in error


def test_an_action_no_tool_plays_is_an_error_to_write_and_a_noop_in_history():
    for action in (
        Action("move", 1, 2),
        Action.fail(),
        Action.scroll(1, 2, dx=3),
        Action.key_down("a"),
    ):
        with pytest.raises(ActionError, match="no tool plays"):
            to_toolcall(action)
    codec = GUIActionCodec("toolcall")
    assert codec.render(codec.noop) == "(no action)"  # a refused answer's history line
    assert codec.parse(codec.render(codec.noop))[0] is None


def test_the_codec_takes_pixels_and_no_marks():
    assert GUIActionCodec("toolcall", "pixels").parse(to_toolcall(Action.click(1, 2)))[0]
    with pytest.raises(ValueError, match="takes screen pixels"):
        GUIActionCodec("toolcall", "relative1000")
    with pytest.raises(ValueError, match="no mark actions"):
        GUIActionCodec("toolcall", mark_actions=True)
    with pytest.raises(ValueError, match="one of uitars, pyautogui, toolcall, got 'json'"):
        GUIActionCodec("json")
    # the other dialects do not read a tool call, nor this one theirs
    assert GUIActionCodec("uitars").parse(to_toolcall(Action.click(1, 2)))[0] is None
    assert GUIActionCodec("toolcall").parse("click(start_box='(1,2)')")[0] is None


def test_the_corpus_holds_tool_calls_and_the_tools_schemas():
    schema = {"type": "function", "function": {"name": "click"}}
    corpus = GUIActionCodec("toolcall", tools=[schema]).corpus(seed=0, n_actions=50)
    assert any(t.startswith("<tool_call>") for t in corpus) and json.dumps(schema) in corpus
    assert not any("<tool_call>" in t for t in GUIActionCodec("uitars").corpus(0, 50))
