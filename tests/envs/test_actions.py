"""The GUI Action type and its codecs: text both ways, coordinates, the Gymnasium space."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pixelrl.envs.gui_action import (
    DEFAULT_MAX_TEXT_LENGTH,
    KEY_NAMES,
    KINDS,
    MODIFIER_KEYS,
    TEXT_CHARSET,
    Action,
    ActionError,
    ActionParseError,
    action_space,
    as_action,
    from_relative1000,
    from_unit,
    parse_action,
    parse_actions,
    to_pyautogui,
    to_relative1000,
    to_uitars,
    to_unit,
)

SCREEN = (1280, 800)


# -- strategies -------------------------------------------------------------------------------
def _points(screen=SCREEN):
    return st.tuples(st.integers(0, screen[0] - 1), st.integers(0, screen[1] - 1))


_texts = st.text(alphabet=TEXT_CHARSET, min_size=1, max_size=40)
_keys = st.sampled_from(KEY_NAMES)


@st.composite
def actions(draw, screen=SCREEN, scroll_steps=None, pointer_scroll=True):
    kind = draw(st.sampled_from(KINDS))
    if kind in ("move", "click", "double_click", "right_click"):
        return Action(kind, *draw(_points(screen)))
    if kind == "drag":
        return Action.drag(*draw(_points(screen)), *draw(_points(screen)))
    if kind == "scroll":
        x, y = draw(_points(screen))
        if scroll_steps is not None:  # UI-TARS keeps only a direction of fixed size
            dx, dy = draw(
                st.sampled_from(
                    [(0, scroll_steps), (0, -scroll_steps), (scroll_steps, 0), (-scroll_steps, 0)]
                )
            )
        else:
            dx, dy = draw(st.tuples(st.integers(-10, 10), st.integers(-10, 10)).filter(any))
        if pointer_scroll and draw(st.booleans()):
            x = y = None  # at the current pointer
        return Action.scroll(x, y, dx, dy)
    if kind in ("key_down", "key_up"):
        return Action(kind, keys=(draw(_keys),))
    if kind == "type":
        return Action.type_text(draw(_texts))
    if kind == "key":
        return Action.key(draw(_keys))
    if kind == "hotkey":
        mods = draw(st.lists(st.sampled_from(MODIFIER_KEYS), min_size=1, max_size=3, unique=True))
        return Action.hotkey(
            *mods, draw(st.sampled_from([k for k in KEY_NAMES if k not in MODIFIER_KEYS]))
        )
    return Action(kind)


# -- round trips ------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(actions())
def test_pyautogui_text_round_trip(action):
    text = to_pyautogui(action)
    assert parse_action(text, SCREEN) == action


@pytest.mark.parametrize("screen", [(1000, 1000), (800, 600), (320, 240)])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_uitars_text_round_trip_exact_up_to_1000px(screen, data):
    # Up to 1000 px a pixel spans at least one relative unit, so the 0-1000 round trip is exact.
    action = data.draw(actions(screen=screen, scroll_steps=5))
    assert parse_action(to_uitars(action, screen), screen) == action


@settings(max_examples=200, deadline=None)
@given(actions(scroll_steps=5))
def test_uitars_text_round_trip_in_pixels(action):
    text = to_uitars(action, coordinates="pixels")
    assert parse_action(text, SCREEN, coordinates="pixels") == action


@settings(max_examples=300, deadline=None)
@given(_points())
def test_relative1000_round_trip_within_one_unit(point):
    rx, ry = to_relative1000(*point, SCREEN)
    assert 0 <= rx <= 1000 and 0 <= ry <= 1000
    x, y = from_relative1000(rx, ry, SCREEN)
    # One relative unit spans width/1000 pixels: the round trip lands within that.
    assert abs(x - point[0]) <= np.ceil(SCREEN[0] / 1000) - 1
    assert abs(y - point[1]) <= np.ceil(SCREEN[1] / 1000) - 1


@settings(max_examples=300, deadline=None)
@given(_points())
def test_unit_round_trip_exact(point):
    assert from_unit(*to_unit(*point, SCREEN), SCREEN) == point


@settings(max_examples=300, deadline=None)
@given(actions(pointer_scroll=False))
def test_action_space_round_trip(action):
    sample = action.to_sample()
    assert action_space(SCREEN).contains(sample)
    assert Action.from_sample(sample) == action


def test_action_space_samples_decode():
    space = action_space(SCREEN)
    space.seed(0)
    for _ in range(500):
        Action.from_sample(space.sample()).validate(SCREEN)


def test_space_with_refusals_neither_samples_nor_contains_them():
    refused_keys = ("capslock", "printscreen")
    space = action_space(SCREEN, refused_kinds=("key_down", "key_up"), refused_keys=refused_keys)
    space.seed(0)
    seen = set()
    for _ in range(2000):
        sample = space.sample()
        assert space.contains(sample)
        action = Action.from_sample(sample)
        seen.add(action.kind)
        assert action.kind not in ("key_down", "key_up")
        assert not set(action.keys) & set(refused_keys)
    assert {"key", "hotkey", "click", "type"} <= seen  # the rest is still drawn
    assert not space.contains(Action.key_down("shift").to_sample())
    assert not space.contains(Action.key("capslock").to_sample())
    assert not space.contains(Action.hotkey("ctrl", "printscreen").to_sample())
    assert space.contains(Action.key("enter").to_sample())
    assert space != action_space(SCREEN)


@pytest.mark.parametrize(
    "patch",
    [
        {"kind": KINDS.index("scroll"), "scroll": np.zeros(2, np.int32)},
        {"kind": KINDS.index("type"), "text": ""},
        {"kind": KINDS.index("hotkey"), "hotkey": np.zeros(len(KEY_NAMES), np.int8)},
    ],
)
def test_degenerate_samples_mean_wait(patch):
    sample = {**Action.wait().to_sample(), **patch}
    assert action_space(SCREEN).contains(sample)
    assert Action.from_sample(sample) == Action.wait()


# -- reading the forms agents write -----------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("pyautogui.click(x=120, y=45)", Action.click(120, 45)),
        ("pyautogui.click(120, 45)", Action.click(120, 45)),
        ("import pyautogui\npyautogui.click(120, 45, button='right')", Action.right_click(120, 45)),
        ("pyautogui.click(10, 20, clicks=2)", Action.double_click(10, 20)),
        ("pyautogui.doubleClick(10.4, 19.6)", Action.double_click(10, 20)),
        ("pyautogui.moveTo(5, 6)", Action.move(5, 6)),
        ("pyautogui.moveTo(1, 2); pyautogui.dragTo(30, 40)", Action.drag(1, 2, 30, 40)),
        ("pyautogui.scroll(-3, x=100, y=100)", Action.scroll(100, 100, dy=3)),
        ("pyautogui.hscroll(2, x=100, y=100)", Action.scroll(100, 100, dx=2)),
        ("pyautogui.write('hello world')", Action.type_text("hello world")),
        ("pyautogui.typewrite(message='hi\\n')", Action.type_text("hi\n")),
        ("pyautogui.press('Return')", Action.key("enter")),
        ("pyautogui.hotkey('s', 'ctrl')", Action.hotkey("ctrl", "s")),
        ("pyautogui.hotkey(['ctrl', 'shift', 'n'])", Action.hotkey("ctrl", "shift", "n")),
        ("WAIT", Action.wait()),
        ("DONE", Action.done()),
        ("FAIL", Action.fail()),
        ("click(start_box='(500,500)')", Action.click(640, 400)),
        ("click(start_box='<|box_start|>(0,0)<|box_end|>')", Action.click(0, 0)),
        ("click(start_box='(100,100,300,300)')", Action.click(256, 160)),
        ("left_double(start_box='(500,500)')", Action.double_click(640, 400)),
        ("right_single(start_box='(500,500)')", Action.right_click(640, 400)),
        ("drag(start_box='(0,0)', end_box='(500,500)')", Action.drag(0, 0, 640, 400)),
        ("scroll(start_box='(500,500)', direction='up')", Action.scroll(640, 400, dy=-5)),
        ("type(content='abc\\n')", Action.type_text("abc\n")),
        ("hotkey(key='ctrl c')", Action.hotkey("ctrl", "c")),
        ("hotkey(key='Enter')", Action.key("enter")),
        ("wait()", Action.wait()),
        ("finished()", Action.done()),
        ("finished(content='ok')", Action.done()),
        (
            "Thought: the button is there.\nAction: click(start_box='(500,500)')",
            Action.click(640, 400),
        ),
        ("```python\npyautogui.click(1, 2)\n```", Action.click(1, 2)),
    ],
)
def test_parse_known_forms(text, expected):
    assert parse_action(text, SCREEN) == expected


def test_coordinate_spaces_override():
    assert parse_action("pyautogui.click(0.5, 0.5)", SCREEN, coordinates="unit") == Action.click(
        640, 400
    )
    assert parse_action(
        "click(start_box='(640,400)')", SCREEN, coordinates="pixels"
    ) == Action.click(640, 400)
    with pytest.raises(ValueError, match="coordinates must be one of"):
        parse_action("pyautogui.click(1, 1)", SCREEN, coordinates="inches")


def test_parse_actions_reads_a_script():
    script = (
        "import pyautogui\npyautogui.click(10, 10)\npyautogui.write('x')\npyautogui.press('enter')"
    )
    assert parse_actions(script, SCREEN) == [
        Action.click(10, 10),
        Action.type_text("x"),
        Action.key("enter"),
    ]
    with pytest.raises(ActionParseError, match="expected one action, found 3"):
        parse_action(script, SCREEN)


# -- untrusted text gets clear errors, never evaluation ----------------------------------------
@pytest.mark.parametrize(
    "text, message",
    [
        ("os.system('rm -rf /')", "unknown function 'os.system'"),
        ("__import__('os').system('ls')", "unknown function"),
        ("eval('1')", "unknown function 'eval'"),
        ("pyautogui.click(x=a, y=1)", "literal numbers or strings"),
        ("pyautogui.click(x=1+1, y=1)", "literal numbers or strings"),
        ("pyautogui.click(*[1, 2])", "not allowed"),
        ("x = 1", "only calls are allowed"),
        ("pyautogui.click(x=5000, y=1)", "off-screen"),
        ("pyautogui.click(x=-1, y=1)", "off-screen"),
        ("pyautogui.click(x=1)", "missing its argument 'y'"),
        ("pyautogui.click(x='1', y=2)", "x must be int or float"),
        ("pyautogui.click(1, 2, foo=3)", "unknown argument"),
        ("pyautogui.click(1, 2, button='side')", "unknown button"),
        ("pyautogui.press('notakey')", "unknown key"),
        ("pyautogui.write('" + "a" * (DEFAULT_MAX_TEXT_LENGTH + 1) + "')", "text too long"),
        ("pyautogui.write('')", "non-empty text"),
        ("pyautogui.dragTo(3, 4)", "must follow pyautogui.moveTo"),
        ("pyautogui.scroll(3, x=4)", "both x and y, or neither"),
        ("click(start_box='here')", "must look like"),
        ("scroll(start_box='(1,1)', direction='sideways')", "direction must be"),
        ("click(start_box='(1,1)', button='left')", "unknown argument"),
        ("", "empty action text"),
        ("click(", "missing its argument 'start_box'"),  # ")" added, as ui-tars does
        ("click(start_box=", "not a call"),
        ("(" * 500 + ")" * 500, "not a call"),
        ("a" * 40000, "action text too long"),
        ("pyautogui.click(nan, 1)", "literal"),
        ("pyautogui.click(float('nan'), 1)", "literal"),
        ("pyautogui.click(1e400, 1)", "finite"),
    ],
)
def test_malformed_text_raises_clear_error(text, message):
    with pytest.raises(ActionParseError, match=message):
        parse_action(text, SCREEN)


def test_non_string_input_is_rejected():
    with pytest.raises(ActionParseError, match="must be a string"):
        parse_action(b"pyautogui.click(1, 1)", SCREEN)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Action("teleport"), "unknown action kind"),
        (lambda: Action("click"), "needs x and y"),
        (lambda: Action("drag", 1, 2), "needs x2 and y2"),
        (lambda: Action.scroll(1, 1), "non-zero"),
        (lambda: Action.key("ctrl+c"), "unknown key"),
        (lambda: Action.hotkey(), "at least one key"),
        (lambda: Action.type_text("a\x00b"), "cannot be typed"),
        (lambda: Action.type_text("a\rb"), "cannot be typed"),
        (lambda: Action.click(True, 1), "must be a number"),
        (
            lambda: Action.click(1, 1).validate((1, 1)) and Action.click(1, 1).validate((1, 1)),
            "off-screen",
        ),
        (lambda: as_action(42, SCREEN), "GUI action is an Action"),
        (lambda: Action.from_sample({"kind": 99}), "needs 'kind'"),
    ],
)
def test_invalid_actions_raise_action_error(make, message):
    with pytest.raises(ActionError, match=message):
        make()


def test_as_action_accepts_every_form():
    expected = Action.click(10, 20)
    assert as_action(expected, SCREEN) == expected
    assert as_action(expected.to_sample(), SCREEN) == expected
    assert as_action("pyautogui.click(10, 20)", SCREEN) == expected
    with pytest.raises(ActionError, match="off-screen"):
        as_action(Action.click(2000, 20), SCREEN)
