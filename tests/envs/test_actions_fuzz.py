"""Agent text is untrusted: ``parse_action`` raises only ``ActionParseError``, whatever the text,
and what it returns is a valid ``Action`` (representable in the action space)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pixelrl.envs.gui_action import Action, ActionError, ActionParseError, parse_action

SCREENS = st.sampled_from([None, (1280, 800), (320, 240)])
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FUNCTIONS = [
    "pyautogui.click", "pyautogui.moveTo", "pyautogui.dragTo", "pyautogui.doubleClick",
    "pyautogui.scroll", "pyautogui.hscroll", "pyautogui.write", "pyautogui.typewrite",
    "pyautogui.press", "pyautogui.hotkey", "click", "left_double", "right_single", "drag",
    "scroll", "type", "hotkey", "press", "wait", "finished", "call_user", "DONE", "os.system",
    "keydown", "release", "keyup", "pyautogui.keyDown", "pyautogui.keyUp", "pyperclip.copy",
]  # fmt: skip
ARGUMENTS = ["x", "y", "clicks", "button", "message", "keys", "start_box", "end_box",
             "direction", "content", "key", "interval", "point", "start_point", "end_point",
             ""]  # fmt: skip
HOSTILE_NUMBERS = [
    "1e999", "-1e999", "1e300", "123456789012345678901234567890", "-0", ".", "-.", "1.", ".5",
    "1.2.3", "1e", "0x10", "nan", "inf", "1_000", "9" * 300, "True", "None",
]  # fmt: skip


def attribute_chain(n: int) -> str:
    return "a" + ".a" * n


number = st.one_of(
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(HOSTILE_NUMBERS),
)
box = st.one_of(
    st.tuples(number, number).map(lambda p: f"'({p[0]},{p[1]})'"),
    st.tuples(number, number).map(lambda p: f"'<point>{p[0]} {p[1]}</point>'"),
    st.tuples(number, number).map(lambda p: f"'{p[0]},{p[1]}'"),
    st.tuples(number, number).map(lambda p: f"[{p[0]}, {p[1]}]"),
    st.tuples(number, number, number, number).map(lambda p: "'[" + ",".join(map(str, p)) + "]'"),
)
value = st.one_of(
    number.map(str),
    box,
    st.text(max_size=40).map(repr),
    st.integers(1, 600).map(attribute_chain),
    st.integers(1, 300).map(lambda n: "[" * n + "1" + "]" * n),
    st.sampled_from(["'Action: hi'", "'ctrl c'", "'down'", "'\\n'", "b'x'", "{1: 2}", "*x"]),
)
argument = st.tuples(st.sampled_from(ARGUMENTS), value).map(
    lambda kv: f"{kv[0]}={kv[1]}" if kv[0] else kv[1]
)
call = st.tuples(st.sampled_from(FUNCTIONS), st.lists(argument, max_size=4)).map(
    lambda c: f"{c[0]}({', '.join(c[1])})"
)
grammar_text = st.one_of(
    call,
    st.lists(call, min_size=1, max_size=3).map("; ".join),
    st.tuples(st.text(max_size=30), call).map(lambda t: f"Thought: {t[0]}\nAction: {t[1]}"),
    st.tuples(call, st.integers(0, 40)).map(lambda t: t[0][: max(1, len(t[0]) - t[1])]),
)


def check(text: str, screen) -> None:
    try:
        action = parse_action(text, screen)
    except ActionParseError:
        return
    assert isinstance(action, Action)
    if action.kind != "scroll" or action.point is not None:  # a scroll at the pointer has none
        sample = action.to_sample()  # every returned action fits the int32 action space
        assert Action.from_sample(sample).kind in (action.kind, "wait")
    if screen is not None:
        action.validate(screen)


@FUZZ
@given(st.text(max_size=300), SCREENS)
def test_arbitrary_text_raises_only_action_parse_error(text, screen):
    check(text, screen)


@FUZZ
@given(grammar_text, SCREENS)
def test_grammar_shaped_hostile_text_raises_only_action_parse_error(text, screen):
    check(text, screen)


@pytest.mark.parametrize(
    "text, message",
    [
        ("pyautogui.click(x=a" + ".a" * 400 + ", y=2)", "literal numbers or strings"),
        ("pyautogui.click(x=" + "1" * 20 + ", y=2)", "within"),
        ("click(start_box=[1e999,5])", "finite"),
        ("click(start_box='(.,5)')", "must look like"),
        ("click(start_box='(1.2.3,5)')", "must look like"),
        ("click(start_box=[True, 5])", "2 or 4 numbers"),
        ("x = a" + ".a" * 2000, "only calls"),
    ],
)
def test_issue_cases_are_parse_errors(text, message):
    for screen in (None, (1280, 800)):
        with pytest.raises(ActionParseError, match=message):
            parse_action(text, screen)


def test_huge_coordinate_without_a_screen_is_refused():
    # accepted before, then overflowed the int32 action space in to_sample()
    with pytest.raises(ActionParseError, match="within"):
        parse_action("pyautogui.click(x=1e300, y=2)")


def test_action_marker_inside_a_string_is_text():
    assert parse_action("pyautogui.typewrite('Action: hi')") == Action.type_text("Action: hi")
    ui_tars = "Thought: type it.\nAction: type(content='Action: done')"
    assert parse_action(ui_tars) == Action.type_text("Action: done")
    thought = "Thought: the 'Action:' menu.\nAction: click(start_box='(500,500)')"
    assert parse_action(thought, (1000, 1000)) == Action.click(500, 500)
    with pytest.raises(ActionParseError, match="not a call"):
        parse_action("Thought: hm\nAction: click(start_box=")


def test_malformed_action_samples_are_action_errors():
    for sample in ({"kind": 7, "key": 10**6}, {"kind": 4, "point": [1, 2]},
                   {"kind": 1, "point": [10**30, 1]}, {"kind": 1, "point": "xy"}):  # fmt: skip
        with pytest.raises(ActionError):
            Action.from_sample(sample)


@settings(max_examples=60, deadline=None)
@given(grammar_text)
def test_env_step_raises_only_action_error(desktop, text):
    try:
        _, _, terminated, truncated, _ = desktop.step(text)
    except ActionError:
        return
    if terminated or truncated:
        desktop.reset()


@pytest.fixture(scope="module")
def desktop():
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401

    env = gym.make("pixelrl/Desktop-ClickButton-v0", screen_size=(320, 240))
    env.reset(seed=0)
    yield env
    env.close()


@pytest.mark.parametrize("text", ["click(x=1if 1 else 2, y=3)", "[1for x in y]"])
def test_text_the_compiler_warns_about_is_refused_without_a_warning(text):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ActionError):
            parse_action(text)
    assert not [w for w in caught if issubclass(w.category, SyntaxWarning)], caught
