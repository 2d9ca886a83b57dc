"""The widget toolkit: what the a11y tree says is what the pixels show; input reaches only what
is visible; editing, scrolling, dragging, menus and dialogs behave; incremental repaint is exact."""

from __future__ import annotations

import numpy as np
import pytest

from pixelrl.envs.desktop import FAMILIES
from pixelrl.envs.desktop.env import DesktopEnv
from pixelrl.envs.desktop.render import fit_text, text_mask, text_width
from pixelrl.envs.desktop.widgets import ScrollList
from pixelrl.envs.gui import bbox_center
from pixelrl.envs.gui_action import Action

TEXT_ROLES = {
    "button",
    "checkbox",
    "radio",
    "tab",
    "menu",
    "menuitem",
    "option",
    "listitem",
    "taskbutton",
    "icon",
    "label",
}


def _ink(crop: np.ndarray) -> np.ndarray:
    """Pixels that differ clearly from the crop's most common colour (its background)."""
    flat = crop.reshape(-1, 3)
    colors, counts = np.unique(flat, axis=0, return_counts=True)
    bg = colors[counts.argmax()].astype(int)
    return np.abs(crop.astype(int) - bg).max(-1) > 60


def _shows_text(screen: np.ndarray, bbox, text: str, size: int, bold: bool = False) -> bool:
    """True when the glyph shapes of ``text`` appear somewhere inside ``bbox`` of ``screen``."""
    x0, y0, x1, y1 = bbox
    ink = _ink(screen[y0:y1, x0:x1])
    pattern = text_mask(text, size, bold) > 200
    ph, pw = pattern.shape
    ih, iw = ink.shape
    if ph > ih or pw > iw or pattern.sum() == 0:
        return False
    need = 0.9 * pattern.sum()
    for dy in range(ih - ph + 1):
        for dx in range(iw - pw + 1):
            if (ink[dy : dy + ph, dx : dx + pw] & pattern).sum() >= need:
                return True
    return False


@pytest.mark.parametrize("family", list(FAMILIES))
def test_labels_are_drawn_inside_their_a11y_bboxes(family):
    env = DesktopEnv(family, screen_size=(640, 400))
    checked = 0
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        for step in range(3):
            screen, size = obs["screenshot"], env.desktop.theme.font_size
            for e in info["a11y"]:
                if (
                    e["role"] not in TEXT_ROLES
                    or not _unobstructed(env, e)
                    or not e["name"].strip()
                ):
                    continue
                x0, _, x1, _ = e["bbox"]
                if (
                    text_width(e["name"], size, True) > x1 - x0 - 4
                    or fit_text(e["name"], size, x1 - x0) != e["name"]
                ):
                    continue  # shown cut with an ellipsis
                # headings and the selected tab are bold
                shown = _shows_text(screen, e["bbox"], e["name"], size) or _shows_text(
                    screen, e["bbox"], e["name"], size, bold=True
                )
                assert shown, (family, seed, e)
                checked += 1
            if step < 2 and not info["success"]:
                obs, _, term, trunc, info = env.step(env.expert_action())
                if term or trunc:
                    break
    assert checked >= 3, f"{family}: only {checked} labels checked"


def _unobstructed(env, element) -> bool:
    """Visible, not a popup's frame, and nothing on top of any corner of its bbox."""
    if not element["state"].get("visible") or element["state"].get("popup"):
        return False
    x0, y0, x1, y1 = element["bbox"]
    owner = env.desktop.owner_at(*bbox_center(element["bbox"]))
    return all(env.desktop.owner_at(x, y) is owner for x in (x0, x1 - 1) for y in (y0, y1 - 1))


def test_label_check_can_fail():
    env = DesktopEnv("click-button", screen_size=(640, 400))
    obs, info = env.reset(seed=0)
    size = env.desktop.theme.font_size
    button = next(e for e in info["a11y"] if e["role"] == "button" and e["name"] != "Close")
    assert _shows_text(obs["screenshot"], button["bbox"], button["name"], size)
    assert not _shows_text(obs["screenshot"], button["bbox"], "Wxq", size)
    empty_corner = [0, 0, 60, 20]  # the wallpaper corner holds no text
    assert not _shows_text(obs["screenshot"], empty_corner, button["name"][:2], size)


def test_checkbox_and_radio_pixels_follow_their_state():
    for family, role in (("check-boxes", "checkbox"), ("choose-radio", "radio")):
        env = DesktopEnv(family, screen_size=(640, 400))
        for seed in range(6):
            obs, info = env.reset(seed=seed)
            accent = np.array(env.desktop.theme.palette.accent)
            for _step in range(4):
                for e in info["a11y"]:
                    if e["role"] != role:
                        continue
                    x0, y0, x1, y1 = e["bbox"]
                    box = obs["screenshot"][y0:y1, x0 : x0 + (y1 - y0) + 2]
                    has_accent = bool((np.abs(box.astype(int) - accent).max(-1) < 8).any())
                    assert has_accent == e["state"]["checked"], (family, seed, e)
                obs, _, term, trunc, info = env.step(env.expert_action())
                if term or trunc:
                    break


def test_slider_fill_ends_at_the_thumb():
    env = DesktopEnv("set-slider", screen_size=(640, 400))
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        accent = np.array(env.desktop.theme.palette.accent)
        for e in (e for e in info["a11y"] if e["role"] == "slider"):
            st = e["state"]
            x0, y0, x1, y1 = st["track"]
            xv = x0 + round((st["value"] - st["min"]) / (st["max"] - st["min"]) * (x1 - x0 - 1))
            row = obs["screenshot"][(y0 + y1) // 2 - 1]
            accent_x = np.flatnonzero(np.abs(row[x0:x1].astype(int) - accent).max(-1) < 8) + x0
            thumb = env.desktop.theme.row_height // 4 + 1
            if st["value"] > st["min"]:
                assert accent_x.min() == x0 and abs(accent_x.max() - xv) <= thumb, (seed, e)


def test_visible_flag_matches_hit_testing_and_covered_widgets_get_no_click():
    env = DesktopEnv("multi-window", screen_size=(640, 400))
    covered_clicks = 0
    for seed in range(20):
        _, info = env.reset(seed=seed)
        desktop = env.desktop
        for e in info["a11y"]:
            if e["role"] not in ("button", "textbox", "checkbox") or e["bbox"][2] <= e["bbox"][0]:
                continue
            hit = desktop.hit(*bbox_center(e["bbox"]))
            assert (hit is not None and hit.id == e["id"]) == e["state"]["visible"], (seed, e)
        target = next(
            e
            for e in info["a11y"]
            if e["role"] == "button"
            and e["name"] == info["task"]["button"]
            and e["state"]["window"] == info["task"]["window"]
        )
        if not target["state"]["visible"]:
            _, _, term, _, info = env.step(Action.click(*bbox_center(target["bbox"])))
            assert not info["success"]  # the click went to the window on top
            covered_clicks += 1
    assert covered_clicks >= 10


def test_modal_dialog_blocks_the_window_behind_it():
    env = DesktopEnv("close-dialog", screen_size=(640, 400))
    for seed in range(8):
        _, info = env.reset(seed=seed)
        behind = [
            e for e in info["a11y"] if e["role"] == "button" and e["name"] in ("Help", "Settings")
        ]
        assert behind and all(e["state"]["enabled"] is False for e in behind)
        for e in behind:
            if e["state"]["visible"]:
                _, _, term, _, info = env.step(Action.click(*bbox_center(e["bbox"])))
                assert not term and env.desktop.top_window().modal
                assert env.desktop.events[0][0] == "blocked"


def _field_env(seed=0):
    env = DesktopEnv("type-in-field", screen_size=(640, 400), max_steps=50)
    _, info = env.reset(seed=seed)
    field = next(
        e for e in info["a11y"] if e["role"] == "textbox" and e["name"] == info["task"]["field"]
    )
    return env, field


def _value(env, field_id):
    return next(e for e in env.desktop.a11y_tree() if e["id"] == field_id)["state"]["value"]


def test_text_field_editing_keys():
    env, field = _field_env(1)
    env.step(Action.click(*bbox_center(field["bbox"])))
    env.step(Action.hotkey("ctrl", "a"))
    env.step(Action.type_text("hello"))
    assert _value(env, field["id"]) == "hello"
    env.step(Action.key("backspace"))
    assert _value(env, field["id"]) == "hell"
    env.step(Action.key("left"))
    env.step(Action.key("left"))
    env.step(Action.key("delete"))
    assert _value(env, field["id"]) == "hel"
    env.step(Action.key("home"))
    env.step(Action.hotkey("shift", "x"))
    assert _value(env, field["id"]) == "Xhel"
    x0, y0, x1, y1 = field["bbox"]
    env.step(Action.click(x1 - 3, (y0 + y1) // 2))  # caret to the end
    env.step(Action.type_text("p me"))
    assert _value(env, field["id"]) == "Xhelp me"
    env.step(Action.hotkey("ctrl", "a"))
    env.step(Action.type_text("x"))
    assert _value(env, field["id"]) == "x"
    focused = [e for e in env.desktop.a11y_tree() if e["focused"]]
    assert [e["id"] for e in focused] == [field["id"]]


def test_typing_without_focus_does_nothing_and_enter_submits():
    env, field = _field_env(2)
    before = env.desktop.frame.copy()
    values = [e["state"].get("value") for e in env.desktop.a11y_tree()]
    env.step(Action.type_text("abc"))
    assert [e["state"].get("value") for e in env.desktop.a11y_tree()] == values
    assert np.array_equal(before, env.desktop.frame)
    env.step(Action.click(*bbox_center(field["bbox"])))
    env.step(Action.hotkey("ctrl", "a"))
    _, reward, term, _, info = env.step(Action.type_text(info_text(env) + "\n"))
    assert term and info["success"] and reward == 1.0


def info_text(env):
    return env.task.params["text"]


def test_scroll_list_scrolls_three_rows_a_notch_and_clamps():
    env = DesktopEnv("scroll-and-click", screen_size=(640, 400))
    _, info = env.reset(seed=3)
    lst = next(w for w in _widgets(env) if isinstance(w, ScrollList))
    center = bbox_center(lst.abs_rect())
    env.step(Action.scroll(*center, dy=1))
    assert lst.top == 3
    shown = [
        e["name"]
        for e in env.desktop.a11y_tree()
        if e["role"] == "listitem" and e["state"]["visible"]
    ]
    assert shown == lst.items[3 : 3 + lst.rows]
    env.step(Action.scroll(*center, dy=-5))
    assert lst.top == 0
    env.step(Action.scroll(*center, dy=50))
    assert lst.top == lst.max_top


def _widgets(env):
    out = []

    def walk(w):
        out.append(w)
        for c in w.all_children():
            walk(c)

    for w in env.desktop.windows:
        walk(w)
    return out


def test_window_title_drag_moves_it_and_close_removes_it():
    env = DesktopEnv("click-button", screen_size=(640, 400))
    _, info = env.reset(seed=4)
    win = env.desktop.top_window()
    x0, y0 = win.rect[:2]
    tx, ty = x0 + 10, y0 + 5
    dx = -5 if x0 > 20 else 5
    _, _, _, _, info = env.step(Action.drag(tx, ty, tx + dx, ty + 7))
    assert win.rect[:2] == (x0 + dx, y0 + 7)
    moved = next(e for e in info["a11y"] if e["role"] == "window" and e["name"] == win.name)
    assert moved["bbox"][:2] == [x0 + dx, y0 + 7]
    close = next(
        e for e in info["a11y"] if e["name"] == "Close" and e["state"]["window"] == win.name
    )
    _, _, term, _, info = env.step(Action.click(*bbox_center(close["bbox"])))
    assert term and not info["success"]  # closing the task's window fails it
    assert win not in env.desktop.windows
    assert not any(e["role"] == "taskbutton" and e["name"] == win.name for e in info["a11y"])


def test_dropdown_opens_lists_options_and_escape_closes():
    env = DesktopEnv("select-dropdown", screen_size=(640, 400))
    _, info = env.reset(seed=5)
    box = next(e for e in info["a11y"] if e["role"] == "combobox")
    _, _, _, _, info = env.step(Action.click(*bbox_center(box["bbox"])))
    options = [e["name"] for e in info["a11y"] if e["role"] == "option"]
    assert options and len(options) == len(set(options))
    _, _, _, _, info = env.step(Action.key("escape"))
    assert not any(e["role"] == "option" for e in info["a11y"])


def test_rename_with_f2_and_drag_to_empty_space():
    env = DesktopEnv("rename-file", screen_size=(640, 400))
    _, info = env.reset(seed=6)
    icon = next(
        e for e in info["a11y"] if e["role"] == "icon" and e["name"] == info["task"]["icon"]
    )
    env.step(Action.click(*bbox_center(icon["bbox"])))
    _, _, _, _, info = env.step(Action.key("f2"))
    editor = next(e for e in info["a11y"] if e["role"] == "textbox")
    assert editor["focused"] and editor["state"]["value"] == info["task"]["icon"]
    stem = info["task"]["name"].rsplit(".", 1)[0]
    _, reward, term, _, info = env.step(Action.type_text(stem + "\n"))
    assert term and info["success"] and reward == 1.0
    # a drag that ends on empty wallpaper moves an icon
    env.reset(seed=7)
    icon = next(i for i in env.desktop.icons if i.kind != "trash")
    x, y = bbox_center(icon.rect)
    old = icon.rect
    env.step(Action.drag(x, y, x + 3, y + 2))
    assert icon.rect == (old[0] + 3, old[1] + 2, old[2] + 3, old[3] + 2)


def test_double_click_opens_an_icon_window():
    env = DesktopEnv("open-icon", screen_size=(640, 400))
    _, info = env.reset(seed=8)
    target = info["task"]["icon"]
    _, _, term, _, info = env.step(env.expert_action())
    assert term and info["success"]
    assert any(e["role"] == "window" and e["name"] == target for e in info["a11y"])


def test_widgets_draw_only_inside_their_rect():
    """Every widget's drawing stays inside its rect (what invalidate() repaints)."""
    env = DesktopEnv("mixed", screen_size=(640, 400))
    for seed in range(30):
        env.reset(seed=seed)
        if env.desktop.icons:  # a popup too: a context menu
            icon = env.desktop.icons[0]
            env.step(Action.right_click(*bbox_center(icon.rect)))
            assert env.desktop.popup is not None
        for w in (
            _widgets(env)
            + env.desktop.icons
            + [env.desktop.taskbar]
            + [env.desktop.popup] * bool(env.desktop.popup)
        ):
            r = w.abs_rect()
            canvas = env.desktop.canvas
            before = env.desktop.frame.copy()
            canvas.set_clip((0, 0, 640, 400))
            w.draw(canvas)
            changed = np.argwhere((before != env.desktop.frame).any(-1))
            if len(changed):
                (ya, xa), (yb, xb) = changed.min(0), changed.max(0)
                assert r[0] <= xa and xb < r[2] and r[1] <= ya and yb < r[3], (
                    type(w).__name__,
                    r,
                    (xa, ya, xb, yb),
                )
            env.desktop.frame[...] = before


def test_incremental_repaint_equals_full_repaint_under_random_input():
    rng = np.random.default_rng(0)
    size = (480, 320)
    keys = ["enter", "escape", "backspace", "delete", "left", "f2", "space", "a", "down"]
    for family in FAMILIES:
        env = DesktopEnv(family, screen_size=size, max_steps=10)
        for seed in range(4):
            obs, info = env.reset(seed=seed)
            done = False
            while not done:
                els = [e for e in info["a11y"] if e["bbox"][2] > e["bbox"][0]]
                x, y = bbox_center(els[int(rng.integers(len(els)))]["bbox"])
                kind = rng.choice(
                    [
                        "click",
                        "click",
                        "double_click",
                        "right_click",
                        "drag",
                        "scroll",
                        "type",
                        "key",
                    ]
                )
                if kind == "drag":
                    action = Action.drag(
                        x, y, int(rng.integers(size[0])), int(rng.integers(size[1]))
                    )
                elif kind == "scroll":
                    action = Action.scroll(x, y, dy=int(rng.choice([-2, -1, 1, 3])))
                elif kind == "type":
                    action = Action.type_text(str(rng.choice(["ab", "x y\n"])))
                elif kind == "key":
                    action = Action.key(str(rng.choice(keys)))
                else:
                    action = Action(str(kind), x, y)
                obs, _, term, trunc, info = env.step(action)
                done = term or trunc
                desktop = env.desktop
                desktop.invalidate(desktop.rect)
                full = desktop.render()
                assert np.array_equal(obs["screenshot"], full), (family, seed, action)
