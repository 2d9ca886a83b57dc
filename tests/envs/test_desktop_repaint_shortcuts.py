"""The emulated desktop's drawing shortcuts show the pixels of drawing everything (issue 57 item 3).

A repaint skips what an opaque layer hides (the wallpaper under windows, icons under them,
windows below one that covers the repaint), text patches come from a blend table, and a11y
elements are built in place. Each is compared here with the plain way of doing the same, over
seeded episodes of every family (the wallpaper patches' blend is checked too: it is the other
way a cached patch is made).
"""

from __future__ import annotations

import numpy as np
import pytest

from pixelrl.envs.desktop import render
from pixelrl.envs.desktop.env import DesktopEnv
from pixelrl.envs.desktop.render import Canvas, intersect, subtract
from pixelrl.envs.desktop.screen import ICON_OVERHANG, Desktop, copy_element
from pixelrl.envs.desktop.tasks import FAMILIES
from pixelrl.envs.desktop.theme import PALETTES, make_theme
from pixelrl.envs.desktop.widgets import Icon
from pixelrl.envs.gui import a11y_element
from pixelrl.envs.gui_action import Action, ActionError


def draw_everything(desktop: Desktop) -> np.ndarray:
    """The whole screen drawn layer by layer with nothing skipped (the repaint before the
    shortcuts), into a new frame."""
    frame = np.zeros_like(desktop.frame)
    canvas = Canvas(frame)
    canvas.copy_from(desktop.wallpaper, canvas.clip)
    layers = [*desktop.icons, *desktop.windows, desktop.taskbar]
    if desktop.popup is not None:
        layers.append(desktop.popup)
    saved = desktop.canvas
    desktop.canvas = canvas  # widgets draw through the canvas they are handed
    try:
        for layer in layers:
            if intersect(layer.rect, canvas.clip):
                layer.draw(canvas)
    finally:
        desktop.canvas = saved
    return frame


def episode_steps(family: str, size: tuple[int, int], seed: int, steps: int):
    """(env, info) after every reset and step: the expert's actions mixed with seeded random ones
    (closed windows, stray drags, open menus)."""
    env = DesktopEnv(family, screen_size=size)
    _, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    yield env, info
    for t in range(steps):
        if t % 3 == 2:
            try:
                action = Action.from_sample(env.action_space.sample()).validate(size)
            except ActionError:
                continue
        else:
            action = env.expert_action()
        _, _, terminated, truncated, info = env.step(action)
        yield env, info
        if terminated or truncated:
            _, info = env.reset()
            yield env, info


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_frame_is_what_drawing_everything_shows(family):
    for size, seed, steps in (((320, 240), 0, 24), ((1280, 800), 1, 12)):
        for env, _ in episode_steps(family, size, seed, steps):
            shown = env.desktop.render()
            assert np.array_equal(shown, draw_everything(env.desktop)), (family, size)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a11y_elements_are_what_a11y_element_builds(family):
    for _, info in episode_steps(family, (640, 480), 2, steps=24):
        for e in info["a11y"]:
            rebuilt = a11y_element(
                e["id"], e["role"], e["name"], e["bbox"], e["state"], e["focused"]
            )
            assert repr(rebuilt) == repr(e)
            assert all(type(v) is int for v in e["bbox"])


def test_subtract_leaves_exactly_the_uncovered_pixels():
    rng = np.random.default_rng(0)
    for _ in range(300):
        x0, y0 = rng.integers(0, 60, size=2)
        rect = (int(x0), int(y0), int(x0 + rng.integers(1, 60)), int(y0 + rng.integers(1, 60)))
        holes = []
        for _ in range(int(rng.integers(0, 5))):
            hx, hy = rng.integers(-10, 110, size=2)
            holes.append(
                (int(hx), int(hy), int(hx + rng.integers(0, 70)), int(hy + rng.integers(0, 70)))
            )
        covered = np.zeros((130, 130), np.int32)  # offset 10: holes may start at -10
        for hx0, hy0, hx1, hy1 in holes:
            covered[max(hy0, 0) + 10 : hy1 + 10, max(hx0, 0) + 10 : hx1 + 10] = 1
        want = np.zeros_like(covered)
        want[rect[1] + 10 : rect[3] + 10, rect[0] + 10 : rect[2] + 10] = 1
        want &= 1 - covered
        got = np.zeros_like(covered)
        for px0, py0, px1, py1 in subtract(rect, holes):
            assert px0 < px1 and py0 < py1  # no empty part
            got[py0 + 10 : py1 + 10, px0 + 10 : px1 + 10] += 1
        assert np.array_equal(got, want)  # every uncovered pixel once, nothing else


def test_an_icon_draws_within_its_overhang():
    # the repaint skips an icon whose rectangle grown by ICON_OVERHANG lies under windows
    theme = make_theme((640, 400))
    for kind in render.ICON_KINDS:
        for name in ("a", "WWWWWWWWWWWWWWWWWWWWWWWWWWWW.txt", "report_v2.pdf"):
            for selected, renaming in ((False, False), (True, False), (True, True)):
                desktop = Desktop(theme)
                desktop.render()
                icon = desktop.add_icon(Icon(name, kind, (200, 120, 40)), 300, 100)
                if selected:
                    desktop.select_icon(icon)
                if renaming:
                    icon.start_rename()
                before = desktop.frame.copy()
                desktop.canvas.set_clip(desktop.rect)
                icon.draw(desktop.canvas)
                ys, xs = np.nonzero((desktop.frame != before).any(axis=2))
                x0, y0, x1, y1 = icon.rect
                m = ICON_OVERHANG
                assert xs.min() >= x0 - m and xs.max() < x1 + m, (kind, name)
                assert ys.min() >= y0 - m and ys.max() < y1 + m, (kind, name)


def composite_over(mask: np.ndarray, color, bg_rows: np.ndarray) -> np.ndarray:
    """The plain blend: ``color`` over a background (H×W×3 int32) through ``mask``."""
    return render._composite(mask, color, bg_rows)


def test_text_patches_are_the_plain_blend():
    for palette in PALETTES:
        for color, bg in ((palette.text, palette.field), (palette.accent_text, palette.accent)):
            for text, size, bold in (("Save As...", 13, False), ("ÄÖü 123 ~!", 9, True)):
                mask = render.text_mask(text, size, bold)
                bg_array = np.broadcast_to(np.asarray(bg, np.int32), mask.shape + (3,))
                want = composite_over(mask, color, bg_array)
                got = render.text_patch(text, size, bold, color, bg)
                assert got.dtype == np.uint8 and np.array_equal(got, want)


def test_an_icon_over_a_solid_colour_is_the_plain_blend():
    # a selected icon: its cell filled with the selection colour, the icon blended over it
    for palette in PALETTES:
        for kind in render.ICON_KINDS:
            for size, clip in ((40, (0, 0, 60, 60)), (20, (13, 12, 24, 30))):
                frames = []
                for cached in (False, True):
                    canvas = Canvas(np.zeros((60, 60, 3), np.uint8))
                    canvas.set_clip(clip)
                    canvas.fill((5, 6, 5 + size + 4, 6 + size + 4), palette.selection)
                    bg = palette.selection if cached else None
                    canvas.icon(kind, 7, 8, size, (200, 120, 40), bg=bg)
                    frames.append(canvas.frame)
                assert np.array_equal(*frames), (kind, size)


def test_wallpaper_patches_are_the_plain_blend():
    for palette in PALETTES[:3]:
        for height in (800, 240):
            wallpaper = (1280, height, *palette.wallpaper)
            for y in (-4, 0, 37, height - 20, height + 3):
                for kind, key in (("label", ("Notes ÄÖ.txt", 13, False)), ("icon", ("folder", 40))):
                    got = render.gradient_patch(kind, key, palette.icon_label, wallpaper, y)
                    if kind == "icon":
                        fg, alpha = render.icon_rgba(*key, palette.icon_label)
                    else:
                        mask = render.text_mask(*key)
                        alpha = np.zeros((mask.shape[0] + 1, mask.shape[1] + 1), np.uint16)
                        alpha[1:, 1:] = mask
                        fg = (0, 0, 0)
                    h, w = alpha.shape[:2]
                    top = max(0, y)
                    column = render.gradient(1, height, *palette.wallpaper)[top : top + h, 0]
                    bg = np.zeros((h, w, 3), np.int32)
                    bg[: len(column)] = column[:, None, :]
                    want = composite_over(alpha, fg, bg)
                    if kind == "label":
                        want[:-1, :-1] = composite_over(
                            alpha[1:, 1:], palette.icon_label, want[:-1, :-1]
                        )
                    assert np.array_equal(got, want), (kind, y)


def test_a_copied_element_equals_and_shares_nothing():
    for _, info in episode_steps("mixed", (640, 480), 5, steps=30):
        for e in info["a11y"]:
            c = copy_element(e)
            assert repr(c) == repr(e)
            assert c is not e and c["bbox"] is not e["bbox"] and c["state"] is not e["state"]
            for key, value in e["state"].items():
                if isinstance(value, list):
                    assert c["state"][key] is not value
