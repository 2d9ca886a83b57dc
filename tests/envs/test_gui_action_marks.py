"""Mark actions (issue 53): ``click(mark=7)`` names a box of the prompt's Set-of-Mark screen
parse and resolves to its centre; a mark that names nothing is a refused action with a reason;
the UI-TARS and pyautogui dialects write what they wrote before."""

from __future__ import annotations

import hashlib

import pytest

from pixelrl.envs.gui_action import Action, parse_action
from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.envs.gui_action.marks import mark_centre, mark_of_box, mark_text

SCREEN = (320, 240)
MARKS = [(10, 10, 30, 20), (100, 50, 141, 70), (200, 200, 260, 230)]


@pytest.mark.parametrize("fmt", ["uitars", "pyautogui"])
def test_a_mark_action_round_trips_to_the_centre_of_its_box(fmt):
    codec = GUIActionCodec(fmt, mark_actions=True)
    for number, box in enumerate(MARKS, start=1):
        for kind in ("click", "double_click", "right_click", "move"):
            text = mark_text(Action(kind, 0, 0), number)
            action, error = codec.parse(text, SCREEN, MARKS)
            assert error is None, (text, error)
            assert (action.kind, action.point) == (kind, mark_centre(box))
    assert mark_centre((100, 50, 141, 70)) == (120, 59)
    # after a UI-TARS thought, as any action
    action, _ = codec.parse("Thought: the Stop button.\nAction: click(mark=2)", SCREEN, MARKS)
    assert action == Action.click(120, 59)


def test_an_sft_target_names_the_mark_inside_the_box_else_keeps_its_point():
    codec = GUIActionCodec("uitars", mark_actions=True)
    click = Action.click(120, 60)
    assert codec.render_target(click, SCREEN, MARKS, (90, 40, 150, 80)) == ("click(mark=2)", True)
    # a checkbox whose label is beside it: no mark's centre inside its box
    assert codec.render_target(click, SCREEN, MARKS, (40, 40, 60, 60)) == (
        codec.render(click, SCREEN), False)  # fmt: skip
    # two marks in the box: the one more of it covers
    assert mark_of_box([(0, 0, 4, 4), (5, 5, 40, 40)], (0, 0, 30, 30)) == 2
    # off: always points
    assert (
        GUIActionCodec("uitars").render_target(click, SCREEN, MARKS, (90, 40, 150, 80))[1] is False
    )


@pytest.mark.parametrize(
    "text, marks, reason",
    [
        ("click(mark=4)", MARKS, "mark 4 is not on the screen (marks 1-3)"),
        ("click(mark=0)", MARKS, "mark 0 is not on the screen"),
        ("click(mark=-1)", MARKS, "mark -1 is not on the screen"),
        ("click(mark=1)", [], "mark 1 is not on the screen (no marks)"),
        ("click(mark='2')", MARKS, "mark must be int, got '2'"),
        ("click(mark=2.0)", MARKS, "mark must be int, got 2.0"),
        ("click(mark=True)", MARKS, "mark must be int"),
        ("click(mark=[1])", MARKS, "mark must be int"),
        ("click(mark=__import__('os'))", MARKS, "arguments must be literal"),
        ("click(mark=1, start_box='(5,5)')", MARKS, "unknown argument(s) start_box"),
        ("type(mark=1)", MARKS, "unknown argument(s) mark"),
        ("click(mark=2)", None, "no marks to name (no screen parse in the prompt)"),
    ],
)
def test_a_mark_that_names_nothing_is_refused_with_its_reason(text, marks, reason):
    action, error = GUIActionCodec("uitars", mark_actions=True).parse(text, SCREEN, marks)
    assert action is None and reason in error, error
    assert "\n" not in error


def test_without_mark_actions_a_mark_is_refused_even_with_marks():
    """The opt-in is the codec's: a plain codec never reads a mark, whatever it is handed."""
    action, error = GUIActionCodec("uitars").parse("click(mark=1)", SCREEN, MARKS)
    assert action is None and "no screen parse" in error
    with pytest.raises(Exception, match="no marks to name"):
        parse_action("click(mark=1)", SCREEN)


def test_the_dialects_write_what_they_wrote_before():
    """Byte for byte the strings of the code before mark actions, with the option off and on."""
    actions = [Action.click(130, 93), Action("double_click", 5, 7), Action("right_click", 319, 239),
               Action.drag(1, 2, 30, 40), Action.type_text("hi"), Action.key("enter")]  # fmt: skip
    uitars = ["click(start_box='(407,388)')", "left_double(start_box='(16,30)')",
              "right_single(start_box='(997,996)')", "drag(start_box='(4,9)', end_box='(94,167)')",
              "type(content='hi')", "hotkey(key='enter')"]  # fmt: skip
    pyautogui = ["pyautogui.click(x=130, y=93)", "pyautogui.doubleClick(x=5, y=7)",
                 "pyautogui.rightClick(x=319, y=239)",
                 "pyautogui.moveTo(x=1, y=2); pyautogui.dragTo(x=30, y=40)",
                 "pyautogui.write('hi')", "pyautogui.press('enter')"]  # fmt: skip
    for fmt, expected in (("uitars", uitars), ("pyautogui", pyautogui)):
        for marks in (False, True):
            codec = GUIActionCodec(fmt, mark_actions=marks)
            assert [codec.render(a, SCREEN) for a in actions] == expected
            for text in expected:  # and read back the same, marks or none
                assert codec.parse(text, SCREEN, MARKS) == codec.parse(text, SCREEN)
    plain = GUIActionCodec("uitars")
    corpus = hashlib.sha256("\n".join(plain.corpus(0)).encode()).hexdigest()
    assert corpus == "44442e53d9ab8d283a9fd6c61b9e04f1224a07468437d14b5e04db15993d1f45"
    assert plain.answer_hint == GUIActionCodec.answer_hint  # trained prompts keep their line
    marked = GUIActionCodec("uitars", mark_actions=True)
    assert "click(mark=N)" in marked.answer_hint
    assert any(t.startswith("click(mark=") for t in marked.corpus(0))


def test_a_resolved_text_scores_where_it_clicks():
    """Rewards read points: a mark action is written as the point it resolves to; a point
    answer and a refused mark stay as they are."""
    codec = GUIActionCodec("uitars", mark_actions=True)
    assert codec.resolved("click(mark=2)", SCREEN, MARKS) == codec.render(
        Action.click(120, 59), SCREEN
    )
    assert codec.resolved("click(start_box='(5,5)')", SCREEN, MARKS) == "click(start_box='(5,5)')"
    assert codec.resolved("click(mark=9)", SCREEN, MARKS) == "click(mark=9)"
    assert GUIActionCodec("uitars").resolved("click(mark=2)", SCREEN, MARKS) == "click(mark=2)"
