"""What real models write, read right: coordinate spaces (smart_resize for UI-TARS-1.5 and
Qwen2.5-VL), UI-TARS' newer forms, held keys, scrolls at the pointer, Unicode and long text,
off-screen numbers, and hostile text in every new form (nothing executes)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pixelrl.envs  # noqa: F401  (registers the pixelrl/ ids)
from pixelrl.envs.gui_action import (
    DEFAULT_MAX_TEXT_LENGTH,
    Action,
    ActionError,
    ActionParseError,
    parse_action,
    parse_actions,
    to_pyautogui,
    to_uitars,
)
from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.envs.gui_action.coordinates import (
    SMART_RESIZE_PRESETS,
    coordinate_space,
    coordinates_for_model,
    smart_resize,
)

S = (1280, 800)


# -- coordinate spaces -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "screen, preset, resized",
    [
        ((1920, 1080), "ui-tars-1.5", (1932, 1092)),
        ((1366, 768), "ui-tars-1.5", (1372, 756)),
        ((1280, 800), "ui-tars-1.5", (1288, 812)),
        ((1920, 1080), "qwen2.5-vl", (1932, 1092)),
        ((320, 240), "ui-tars-1.5", (336, 252)),
        ((100, 60), "ui-tars-1.5", (364, 224)),  # under min_pixels: scaled up
        ((100, 60), "qwen2.5-vl", (112, 56)),
        ((8000, 6000), "ui-tars-1.5", (4116, 3080)),  # over max_pixels: scaled down
    ],
)
def test_smart_resize_sizes(screen, preset, resized):
    assert SMART_RESIZE_PRESETS[preset].size(screen) == resized
    w, h = resized
    assert w % 28 == 0 and h % 28 == 0


def test_smart_resize_matches_the_official_function():
    official = pytest.importorskip("ui_tars.action_parser", reason="ui-tars is not installed")
    for w in range(200, 4000, 97):
        for h in (240, 333, 768, 1080, 1441):
            assert smart_resize(h, w) == official.smart_resize(h, w), (w, h)


@pytest.mark.parametrize(
    "screen, model_point, pixel",
    [
        ((1280, 800), (644, 406), (640, 400)),  # the case
        ((1920, 1080), (1932, 1092), (1919, 1079)),  # the far edge is the last pixel
        ((1920, 1080), (0, 0), (0, 0)),
        ((1366, 768), (686, 378), (683, 384)),  # the centre
        ((1366, 768), (1371, 755), (1365, 766)),
    ],
)
def test_smart_resize_coordinates_on_odd_sizes(screen, model_point, pixel):
    text = f"Action: click(start_box='({model_point[0]},{model_point[1]})')"
    assert parse_action(text, screen, "smart_resize").point == pixel
    assert parse_action(text, screen, "smart_resize:ui-tars-1.5").point == pixel


@pytest.mark.parametrize("screen", [(1920, 1080), (1366, 768), (1280, 800), (333, 241)])
def test_every_pixel_round_trips_through_smart_resize(screen):
    # exact along a side the resize does not shrink; within 1 px where it does (768 -> 756)
    space = coordinate_space("smart_resize")
    w, h = screen
    rw, rh = space.resize.size(screen)
    for x in range(w):
        bx, _ = space.to_pixels(*space.from_pixels(x, 0, screen), screen)
        assert bx == x if rw >= w else abs(bx - x) <= 1
    for y in range(h):
        _, by = space.to_pixels(*space.from_pixels(0, y, screen), screen)
        assert by == y if rh >= h else abs(by - y) <= 1


@pytest.mark.parametrize(
    "text, space",
    [
        ("click(start_box='(1001,500)')", "relative1000"),
        ("click(start_box='(-1,500)')", "relative1000"),
        ("click(start_box='(1.01,0.5)')", "unit"),
        ("click(start_box='(1289,10)')", "smart_resize"),
        ("pyautogui.click(1280, 10)", "pixels"),
        ("drag(start_box='(10,10)', end_box='(10,1500)')", "relative1000"),
    ],
)
def test_off_screen_numbers_raise_in_every_space(text, space):
    with pytest.raises(ActionParseError, match="off-screen"):
        parse_action(text, S, space)


def test_unknown_spaces_and_presets_are_value_errors():
    with pytest.raises(ValueError, match="coordinates must be one of"):
        parse_action("click(start_box='(1,1)')", S, "percent")
    with pytest.raises(ValueError, match="unknown smart_resize preset"):
        coordinate_space("smart_resize:gpt-4o")


def test_model_families_know_their_space():
    assert coordinates_for_model("ByteDance-Seed/UI-TARS-1.5-7B") == "smart_resize:ui-tars-1.5"
    assert coordinates_for_model("bytedance-research/UI-TARS-7B-SFT") == "relative1000"
    assert coordinates_for_model("Qwen/Qwen2.5-VL-7B-Instruct") == "smart_resize:qwen2.5-vl"
    assert coordinates_for_model("Qwen/Qwen2-VL-2B-Instruct") == "relative1000"
    assert coordinates_for_model("tiny-qwen2_5_vl") is None  # ours: whatever its recipe taught


def test_codec_reads_and_writes_its_space():
    assert "0-1000" in GUIActionCodec("uitars").answer_hint
    assert "0-1000" in GUIActionCodec("uitars", "relative1000").answer_hint
    codec = GUIActionCodec("uitars", "smart_resize:ui-tars-1.5")
    assert "pixels of the image you see" in codec.answer_hint
    assert codec.render(Action.click(640, 400), S) == "click(start_box='(644,406)')"
    assert codec.parse("Thought: ok\nAction: click(start_box='(644,406)')", S) == (
        Action.click(640, 400),
        None,
    )


def test_env_step_reads_text_in_the_env_space():
    env = gym.make("pixelrl/Desktop-ClickButton-v0", screen_size=S, coordinates="smart_resize")
    env.reset(seed=0)
    target = env.unwrapped.expert_action()
    text = to_uitars(target, S, "smart_resize")
    _, reward, terminated, _, info = env.step(text)
    assert terminated and info["success"] and reward == 1.0
    env.close()


# -- the forms UI-TARS writes ----------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("click(point='<point>500 500</point>')", Action.click(640, 400)),
        ("click(start_box='<point>500 500</point>')", Action.click(640, 400)),
        ("click(start_box='<bbox>400 400 600 600</bbox>')", Action.click(640, 400)),
        ("click(start_box='500,500')", Action.click(640, 400)),
        ("click(start_box='(500, 500)'", Action.click(640, 400)),  # a missing ")" is added
        (
            "drag(start_point='<point>0 0</point>', end_point='<point>500 500</point>')",
            Action.drag(0, 0, 640, 400),
        ),
        ("scroll(direction='down')", Action.scroll(None, None, dy=5)),
        ("scroll(direction='left')", Action.scroll(None, None, dx=-5)),
        ("type(content='It's done')", Action.type_text("It's done")),
        ("type(content='It's done\\n')", Action.type_text("It's done\n")),
        ("type(content='multi\nline')", Action.type_text("multi\nline")),  # a raw newline
        ("type(content='a') b')", Action.type_text("a') b")),
        ("keydown(key='shift')", Action.key_down("shift")),
        ("press(key='ctrl')", Action.key("ctrl")),
        ("release(key='shift')", Action.key_up("shift")),
        ("keyup(key='alt')", Action.key_up("alt")),
        ("hotkey(key='capslock')", Action.key("capslock")),
        ("hotkey(hotkey='printscreen')", Action.key("printscreen")),
        ("hotkey(key='ctrl shift esc')", Action.hotkey("ctrl", "shift", "escape")),
        ("pyautogui.keyDown('shift')", Action.key_down("shift")),
        ("pyautogui.keyUp('shift')", Action.key_up("shift")),
        ("pyautogui.scroll(-5)", Action.scroll(None, None, dy=5)),
        ("import pyperclip\npyperclip.copy('hi')\npyautogui.hotkey('ctrl', 'v')", None),
    ],
)
def test_new_forms(text, expected):
    expected = expected or Action.type_text("hi")
    assert parse_action(text, S) == expected


def test_official_generated_code_is_read():
    code = (
        "import pyautogui\nimport time\n'''\nObservation:\n\n\nThought:\nType it.\n'''\n\n"
        "import pyperclip\npyperclip.copy('caf\u00e9')\npyautogui.hotkey('ctrl', 'v')\n"
        "time.sleep(0.5)\n\npyautogui.press('enter')"
    )
    assert parse_action(code, S) == Action.type_text("caf\u00e9\n")
    script = "pyautogui.click(10.5, 20.0, button='left')\n\ntime.sleep(1)\n\nDONE"
    assert parse_actions(script, S) == [Action.click(10, 20), Action.wait(), Action.done()]
    with pytest.raises(ActionParseError, match="followed by pyautogui.hotkey"):
        parse_action("pyperclip.copy('x')", S)


def test_pointer_scroll_and_held_keys_round_trip_through_both_syntaxes():
    for action in (
        Action.scroll(None, None, dy=5),
        Action.scroll(None, None, dx=-5),
        Action.key_down("shift"),
        Action.key_up("ctrl"),
    ):
        assert parse_action(to_uitars(action, S), S) == action
        assert parse_action(to_pyautogui(action), S) == action
    with pytest.raises(ActionError, match="no action-space sample"):
        Action.scroll(None, None, dy=1).to_sample()
    assert Action.from_sample(Action.key_down("shift").to_sample()) == Action.key_down("shift")


# -- Unicode and long text -------------------------------------------------------------------
def test_unicode_and_long_text():
    for text in (
        "caf\u00e9 cr\u00e8me",
        "\u5317\u4eac\u5929\u6c14",
        "emoji \U0001f600",
        "tab\tend",
    ):
        assert parse_action(f"type(content={text!r})", S) == Action.type_text(text)
        assert parse_action(to_uitars(Action.type_text(text)), S) == Action.type_text(text)
    long = "x" * DEFAULT_MAX_TEXT_LENGTH
    assert parse_action(f"pyautogui.write('{long}')", S).text == long
    with pytest.raises(ActionParseError, match="max_text_length"):
        parse_action(f"pyautogui.write('{long}y')", S)
    assert parse_action("type(content='abcd')", S, max_text_length=4).text == "abcd"
    with pytest.raises(ActionParseError, match="at most 3"):
        parse_action("type(content='abcd')", S, max_text_length=3)
    with pytest.raises(ActionError, match="cannot be typed"):
        Action.type_text("bell\x07")


def test_desktop_types_unicode_holds_keys_and_scrolls_at_the_pointer():
    env = gym.make("pixelrl/Desktop-TypeInField-v0", screen_size=S, max_text_length=20)
    env.reset(seed=1)
    desktop = env.unwrapped.desktop
    field = env.unwrapped.expert_action()  # the first step clicks into the field
    env.step(field)
    env.step("type(content='\u5317\u4eac caf\u00e9')")
    assert desktop.focus.value.endswith("\u5317\u4eac caf\u00e9")
    # ctrl held by key_down + "a" selects all; typing replaces the selection
    env.step(Action.key_down("ctrl"))
    env.step(Action.key("a"))
    env.step(Action.key_up("ctrl"))
    assert desktop.held == []
    env.step(Action.type_text("x"))
    assert desktop.focus.value == "x"
    with pytest.raises(ActionError, match="at most 20"):
        env.step(Action.type_text("y" * 21))
    env.step(Action.move(5, 6))
    assert desktop.pointer == (5, 6)
    env.step("scroll(direction='down')")  # at (5, 6): nothing scrollable there, nothing breaks
    env.close()


# -- hostile text in the new forms: a clear error or a valid action, nothing executed ----------
SENTINEL = Path("/tmp/pixelrl-uitars-sentinel")
PAYLOADS = [
    f"__import__('pathlib').Path('{SENTINEL}').touch()",
    f"open('{SENTINEL}', 'w')",
    "exec('1')",
    "eval('2')",
]
hostile = st.one_of(st.text(max_size=60), st.sampled_from(PAYLOADS))
form = st.sampled_from(
    [
        "type(content='{}')",
        "Action: type(content='{}')\n\nclick(point='<point>1 1</point>')",
        "click(point='<point>{} 5</point>')",
        "click(start_box='{}')",
        "drag(start_point='<point>1 1</point>', end_point='{}')",
        "scroll(direction='{}')",
        "keydown(key='{}')",
        "release(key='{}')",
        "hotkey(key='{}')",
        "pyperclip.copy('{}')\npyautogui.hotkey('ctrl', 'v')",
        "'''{}'''\npyautogui.scroll(-5)",
        "{}",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form, hostile, st.sampled_from([None, S, (1920, 1080)]))
def test_hostile_text_in_new_forms_executes_nothing(template, payload, screen):
    SENTINEL.unlink(missing_ok=True)
    text = template.replace("{}", payload)
    for space in (None, "smart_resize"):
        try:
            actions = parse_actions(text, screen, space if screen else None)
        except ActionParseError:
            continue
        for a in actions:
            assert isinstance(a, Action)
            if screen is not None:
                a.validate(screen)
    assert not SENTINEL.exists()
