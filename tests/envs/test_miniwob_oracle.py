"""The MiniWoB++ oracle solves click and type tasks through pixel coordinates from info["a11y"]."""

from __future__ import annotations

import shutil

import pytest

from pixelrl.envs.gui import a11y_element
from pixelrl.envs.web.oracle import MiniWoBOracle, OracleError, plan, visible_point

pytest.importorskip("miniwob", reason="needs the web extra: pip install 'pixelrl[web]'")
needs_browser = pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)


def success_rate(task: str, seeds: range) -> float:
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
                assert action.kind in ("click", "type", "done")  # pixels and text, no DOM refs
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
