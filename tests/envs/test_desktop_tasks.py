"""Task families: every expert solves its family, wrong actions do not succeed, scenes vary."""

from __future__ import annotations

import numpy as np
import pytest

from pixelrl.envs.desktop import FAMILIES
from pixelrl.envs.desktop.env import DesktopEnv
from pixelrl.envs.gui import bbox_center
from pixelrl.envs.gui_action import Action

SMALL = (320, 240)
SEEDS = 50


def _inside(point, bbox) -> bool:
    x, y = point
    return bbox[0] <= x < bbox[2] and bbox[1] <= y < bbox[3]


def _expert_episode(env: DesktopEnv, seed: int):
    """Run the expert; check target_bbox against each pointer action. Returns (info, actions)."""
    _, info = env.reset(seed=seed)
    actions = []
    while True:
        action = env.expert_action()
        assert info["target_bbox"] is not None, f"no target_bbox before step {len(actions)}"
        if action.point is not None:
            assert _inside(action.point, info["target_bbox"]), (action, info["target_bbox"])
        actions.append(action)
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info, reward, actions


@pytest.mark.parametrize("family", list(FAMILIES))
def test_expert_solves_every_seed(family):
    env = DesktopEnv(family, screen_size=SMALL)
    lengths = []
    for seed in range(SEEDS):
        info, reward, actions = _expert_episode(env, seed)
        assert info["success"] and reward == 1.0, (family, seed, actions)
        assert len(actions) <= FAMILIES[family].max_expert_steps
        lengths.append(len(actions))
    big = DesktopEnv(family, screen_size=(1280, 800))
    for seed in range(5):
        info, _, _ = _expert_episode(big, 1000 + seed)
        assert info["success"], (family, seed)


# The fewest steps each family can take (one pointer action per step).
SHORTEST = {
    "click-button": 1,
    "open-icon": 1,
    "choose-radio": 1,
    "close-dialog": 1,
    "drag-to-target": 1,
    "set-slider": 1,
    "select-dropdown": 2,
    "menu-item": 2,
    "scroll-and-click": 2,
    "switch-tab-and-click": 2,
    "multi-window": 1,
    "rename-file": 3,
    "type-in-field": 2,
}


@pytest.mark.parametrize("family", sorted(SHORTEST))
def test_expert_takes_the_fewest_steps(family):
    env = DesktopEnv(family, screen_size=(640, 400))
    for seed in range(10):
        info, _, actions = _expert_episode(env, seed)
        if family == "type-in-field":  # one more (select all) when the field holds other text
            assert len(actions) in (2, 3)
        elif family == "multi-window":  # one more when the button is covered by another window
            assert len(actions) in (1, 2)
        else:
            assert len(actions) == SHORTEST[family], (family, seed, actions)


def test_fill_form_and_check_boxes_take_two_steps_per_field_and_one_per_wrong_box():
    env = DesktopEnv("fill-form", screen_size=(640, 400))
    for seed in range(10):
        _, info = env.reset(seed=seed)
        info, _, actions = _expert_episode(env, seed)
        assert len(actions) == 2 * len(info["task"]["fields"]) + 1
    env = DesktopEnv("check-boxes", screen_size=(640, 400))
    for seed in range(10):
        _, info = env.reset(seed=seed)
        wrong = sum(
            e["state"]["checked"] != (e["name"] in info["task"]["checked"])
            for e in info["a11y"]
            if e["role"] == "checkbox"
        )
        info, _, actions = _expert_episode(env, seed)
        assert len(actions) == wrong + 1


def _wrong_variant(action: Action, info: dict, family: str) -> list[Action] | None:
    """The expert's final action aimed at something else (another element of the same role)."""
    if family == "check-boxes":  # untick or tick one box too many, then submit
        box = next(e for e in info["a11y"] if e["role"] == "checkbox")
        return [Action.click(*bbox_center(box["bbox"])), action]
    one = _wrong_action(action, info, family)
    return None if one is None else [one]


def _wrong_action(action: Action, info: dict, family: str) -> Action | None:
    if action.kind == "type":
        return Action.type_text("zzz" + action.text)
    if action.kind == "key":
        return None
    target = info["target_bbox"]
    here = next(e for e in info["a11y"] if e["bbox"] == target)
    others = [
        e
        for e in info["a11y"]
        if e["role"] == here["role"]
        and e["name"] != here["name"]
        and e["state"].get("visible", True)
        and e["bbox"][2] > e["bbox"][0]
        and not (e["role"] == "button" and e["name"] == "Close" and family != "close-dialog")
    ]
    if family == "set-slider":
        x0, _, x1, _ = here["state"]["track"]
        x = action.x + (8 if action.x + 8 < x1 else -8)
        return Action.click(x, action.y)
    if family == "drag-to-target":
        drops = [
            e
            for e in info["a11y"]
            if e["role"] == "icon"
            and e["state"]["kind"] in ("folder", "trash")
            and not _inside((action.x2, action.y2), e["bbox"])
        ]
        return Action.drag(action.x, action.y, *bbox_center(drops[0]["bbox"])) if drops else None
    if family == "multi-window":  # the button of the same name in another window
        others = [
            e
            for e in info["a11y"]
            if e["role"] == "button"
            and e["name"] == here["name"]
            and e["state"].get("window") != here["state"].get("window")
            and e["state"]["visible"]
        ] or others
    if not others:
        return None
    # prefer a sibling in the same window (a click elsewhere may just be blocked by a dialog)
    others.sort(key=lambda e: e["state"].get("window") != here["state"].get("window"))
    return Action(action.kind, *bbox_center(others[0]["bbox"]))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_wrong_final_action_does_not_succeed(family):
    env = DesktopEnv(family, screen_size=(640, 400))
    tried = 0
    for seed in range(20):
        _, _, actions = _expert_episode(env, seed)
        _, info = env.reset(seed=seed)
        for a in actions[:-1]:
            _, _, term, _, info = env.step(a)
            assert not term
        wrong = _wrong_variant(actions[-1], info, family)
        if wrong is None:
            continue
        for a in wrong:
            _, reward, terminated, _, info = env.step(a)
            assert not info["success"] and reward == 0.0, (family, seed, wrong)
            if terminated:
                break
        tried += 1
    assert tried >= 10, f"{family}: only {tried} wrong variants tried"


@pytest.mark.parametrize(
    "family, expect_failure",
    [
        ("click-button", True),
        ("close-dialog", True),
        ("menu-item", True),
        ("drag-to-target", True),
        ("multi-window", True),
        ("fill-form", True),
        ("check-boxes", True),
        ("switch-tab-and-click", True),
        ("open-icon", True),
        ("choose-radio", False),
        ("set-slider", False),
        ("select-dropdown", False),
    ],
)
def test_irreversible_mistakes_end_the_episode(family, expect_failure):
    """Committing to the wrong thing terminates with success False; reversible mistakes do not."""
    env = DesktopEnv(family, screen_size=(640, 400))
    ended = 0
    for seed in range(15):
        _, _, actions = _expert_episode(env, seed)
        _, info = env.reset(seed=seed)
        for a in actions[:-1]:
            _, _, _, _, info = env.step(a)
        wrong = _wrong_variant(actions[-1], info, family)
        if wrong is None:
            continue
        for a in wrong:
            _, _, terminated, _, info = env.step(a)
        ended += terminated
        assert not info["success"]
    assert (ended > 0) == expect_failure


def test_done_right_away_never_succeeds():
    for family in FAMILIES:
        env = DesktopEnv(family, screen_size=SMALL)
        for seed in range(5):
            env.reset(seed=seed)
            _, reward, terminated, _, info = env.step(Action.done())
            assert terminated and not info["success"] and reward == 0.0, family


def test_random_clicking_rarely_succeeds():
    rng = np.random.default_rng(0)
    env = DesktopEnv("mixed", screen_size=SMALL, max_steps=5)
    wins = 0
    for seed in range(150):
        env.reset(seed=seed)
        done = False
        while not done:
            a = Action.click(int(rng.integers(SMALL[0])), int(rng.integers(SMALL[1])))
            _, _, term, trunc, info = env.step(a)
            done = term or trunc
        wins += info["success"]
    assert wins < 30


@pytest.mark.parametrize("family", list(FAMILIES))
def test_scenes_vary_with_the_seed(family):
    env = DesktopEnv(family, screen_size=(640, 400))
    instructions, targets, palettes, names = set(), set(), set(), set()
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        instructions.add(obs["instruction"])
        targets.add(tuple(info["target_bbox"]))
        palettes.add(env.desktop.theme.palette.name)
        names.add(str(sorted(info["task"].items())))
        assert 0 < len(obs["instruction"]) <= 512
    # multi-window's first target is a taskbar button: a few slots, in a random order
    min_targets = 3 if family == "multi-window" else 10
    assert (
        len(instructions) >= 10
        and len(targets) >= min_targets
        and len(palettes) >= 3
        and len(names) >= 10
    )
