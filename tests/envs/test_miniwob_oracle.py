"""The MiniWoB++ oracle solves click and type tasks through pixel coordinates from info["a11y"]."""

from __future__ import annotations

import shutil

import pytest

from pixelrl.envs.gui import a11y_element
from pixelrl.envs.web.oracle import (
    FIRST_SEGMENT,
    WIDER_TASKS,
    MiniWoBOracle,
    OracleError,
    plan,
    plan_steps,
    visible_point,
)

pytest.importorskip("miniwob", reason="needs the web extra: pip install 'pixelrl[web]'")
needs_browser = pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)


def success_rate(
    task: str, seeds: range, kinds: tuple[str, ...] = ("click", "type", "wait", "done")
) -> float:
    """The oracle's success over ``seeds``; every action one of ``kinds`` (never DOM refs)."""
    from pixelrl.envs.web.env import MiniWoBEnv

    env = MiniWoBEnv(task)  # one browser for every seed
    oracle = MiniWoBOracle(task)
    wins = 0
    try:
        for seed in seeds:
            obs, info = env.reset(seed=seed)
            oracle.reset(obs, info)
            if task in ("click-checkboxes", "click-option"):
                assert oracle.next_target_bbox is not None  # what cloning counts as right
            terminated = truncated = False
            while not (terminated or truncated):
                action = oracle.act(obs, info)
                # pixels, text and pauses (a section sliding open), no DOM refs
                assert action.kind in kinds
                obs, reward, terminated, truncated, info = env.step(action)
            wins += bool(info["success"])
    finally:
        env.close()
    return wins / len(seeds)


@needs_browser
@pytest.mark.parametrize("task", ["click-test-2", "click-button"])
def test_oracle_solves_click_tasks(task):
    assert success_rate(task, range(20)) >= 0.9


@needs_browser
@pytest.mark.parametrize("task", ["enter-text", "focus-text-2"])
def test_oracle_solves_type_and_focus_tasks(task):
    assert success_rate(task, range(5)) >= 0.8


@needs_browser
@pytest.mark.parametrize(
    "task",
    [
        "click-checkboxes",
        "click-option",
        "click-dialog",
        "click-tab",
        "click-widget",
        "choose-list",
    ],
)
def test_oracle_solves_the_tasks_read_from_fields(task):
    # targets from info["fields"] (not quoted in the instruction); choose-list by typing
    assert success_rate(task, range(5)) == 1.0


@needs_browser
@pytest.mark.parametrize("task", WIDER_TASKS)
def test_oracle_solves_the_wider_set(task):
    # issue 41's tasks; sections, tabs and folders are planned again from each observation.
    # One seed a task keeps the suite short: each was played on seeds 0-4 (5/5) when added.
    assert success_rate(task, range(1)) == 1.0


def test_oracle_plans_a_changing_page_again_from_each_observation():
    folder = a11y_element(1, "li", "", [2, 52, 158, 67], {"parent": 0, "classes": "expandable"})
    hit = a11y_element(
        2, "div", "", [2, 52, 18, 67], {"parent": 1, "classes": "hitarea expandable-hitarea"}
    )
    name = a11y_element(3, "text", "Enola", [18, 52, 158, 66], {"parent": 1, "classes": "folder"})
    inside = a11y_element(4, "text", "Olin", [34, 70, 158, 84], {"parent": 1, "classes": "file"})
    oracle = MiniWoBOracle("navigate-tree")
    oracle.reset(
        {"instruction": "..."}, {"a11y": [folder, hit, name], "fields": [["target", "Olin"]]}
    )
    assert oracle.next_target_bbox == [2, 52, 18, 67]  # the closed folder's hit area first
    x, y = oracle.act().point
    assert 2 <= x < 18 and 52 <= y < 67
    oracle.observe({"a11y": [folder, hit, name, inside]})  # the folder is open now
    x, y = oracle.act().point
    assert 34 <= x < 158 and 70 <= y < 84
    # a task planned once keeps its plan whatever it observes
    button = a11y_element(1, "button", "ONE", [10, 10, 50, 50], {"parent": 0})
    once = MiniWoBOracle("click-test-transfer")
    once.reset(
        {"instruction": "Click button ONE."}, {"a11y": [button], "fields": [["target", "ONE"]]}
    )
    once.observe({"a11y": []})
    assert once.next_target_bbox == [10, 10, 50, 50]


def test_visible_point_avoids_elements_painted_on_top():
    one = a11y_element(1, "button", "ONE", [10, 10, 50, 50], {"parent": 0})
    label = a11y_element(2, "text", "ONE", [20, 20, 40, 40], {"parent": 1, "tag": "t"})
    two = a11y_element(
        3, "button", "TWO", [10, 30, 50, 70], {"parent": 0}
    )  # covers ONE's lower half
    x, y = visible_point(one, [one, label, two])
    assert 10 <= x < 50 and 10 <= y < 30
    assert visible_point(two, [one, label, two]) == (29, 49)  # nothing on top: its centre
    with pytest.raises(OracleError, match="fully covered"):
        visible_point(one, [one, a11y_element(4, "div", "", [0, 0, 60, 60], {"parent": 0})])


def test_oracle_refuses_unknown_tasks_and_pages():
    with pytest.raises(OracleError, match="does not know 'book-flight'"):
        MiniWoBOracle("book-flight")
    with pytest.raises(OracleError, match="no element"):
        plan("click-button", 'Click on the "Yes" button.', [])


def test_a_date_input_is_clicked_and_scored_on_its_first_segment():
    # Chrome's date input selects the segment under a click; typed from the year it fails
    # (issue 41's wide run: the policy clicked anywhere in the field's box and reached 0.12)
    date = a11y_element(1, "textbox", "", [7, 62, 132, 84], {"parent": 0, "tag": "input_date"})
    submit = a11y_element(2, "button", "Submit", [7, 90, 100, 118], {"parent": 0})
    steps = plan_steps(
        "enter-date", "Enter 03/11/2010 as the date and hit submit.", [date, submit],
        [["target", "03/11/2010"]],
    )  # fmt: skip
    click, typed, _ = steps
    assert click.target_bbox == [7, 62, 7 + FIRST_SEGMENT, 84]  # mm, not the whole field
    x, y = click.action.point
    assert 7 <= x < 7 + FIRST_SEGMENT and 62 <= y < 84
    assert typed.action.text == "03/11/2010"


def _tick_page() -> list[dict]:
    """click-checkboxes' page: three labelled boxes and Submit."""
    page = []
    for i, name in enumerate(["pcGs7", "AR", "oJV"]):
        y = 60 + 20 * i
        page.append(a11y_element(2 * i + 1, "label", "", [2, y, 60, y + 11], {"parent": 0}))
        page.append(
            a11y_element(2 * i + 2, "text", name, [20, y, 60, y + 11], {"parent": 2 * i + 1})
        )
    page.append(a11y_element(9, "button", "Submit", [2, 150, 98, 180], {"parent": 0}))
    return page


def test_the_boxes_to_tick_are_as_right_in_any_order():
    # cloning counts a click on any box still to tick as right (issue 54: click-checkboxes-large
    # 0.30, where the oracle's own order was the only target)
    oracle = MiniWoBOracle("click-checkboxes")
    fields = [["target 0", "oJV"], ["target 1", "pcGs7"]]
    oracle.reset({"instruction": "Select oJV, pcGs7 and click Submit."},
                 {"a11y": _tick_page(), "fields": fields})  # fmt: skip
    assert oracle.next_target_bbox == [2, 100, 60, 111]  # oJV first, as the sentence lists it
    assert oracle.next_alternative_bboxes == [[2, 60, 60, 71]]  # pcGs7 is as right
    assert oracle.next_closes_run == 0
    oracle.act()
    assert oracle.next_target_bbox == [2, 60, 60, 71]
    assert oracle.next_alternative_bboxes == []  # the last box to tick
    assert oracle.next_closes_run == 0
    oracle.act()
    assert oracle.next_target_bbox == [2, 150, 98, 180]  # Submit: ordered, after the ticks
    assert oracle.next_alternative_bboxes == []
    assert oracle.next_closes_run == 2  # it closes both ticks (cloning's bc_weigh_stops)
    oracle.act()
    assert oracle.next_closes_run == 0  # the plan is spent
    # a task whose steps keep their order has none
    once = MiniWoBOracle("login-user")
    assert once.next_alternative_bboxes == [] and once.next_closes_run == 0
