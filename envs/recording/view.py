"""Render a recorded episode to a GIF or MP4 with its actions drawn on the frames.

Frame ``t`` shows the observation before step ``t`` and, drawn on it, the action taken there:
a ring and cross for a click (two rings for a double click, a square for a right click), an
arrow for a drag or scroll, and a caption with the task's instruction (the dataset's
``instruction`` column: GUI tasks, InstructNav) and the typed text or keys. The last frame (after the
last step) carries the outcome. Navigation episodes show the discrete action's name and, next
to the frame, the top-down map with the path walked so far: the env's own map
(``env.unwrapped.topdown()``, as the embedded navigation env has) at each step of a replay of
the episode, or else a plain path plot when ``info`` holds the agent's position
(``agent_position`` or ``position``, y up).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pixelrl.envs.gui_action import Action
from pixelrl.envs.recording import codec
from pixelrl.envs.recording.dataset import EpisodeDataset

NAV_ACTION_NAMES = ("stop", "move_forward", "turn_left", "turn_right")
MARK = (255, 40, 200)  # magenta: visible on most UIs
POSITION_KEYS = ("agent_position", "position")


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one fixed-size default font
        return ImageFont.load_default()


def _arrow(draw, x0: float, y0: float, x1: float, y1: float, width: int) -> None:
    draw.line([(x0, y0), (x1, y1)], fill=MARK, width=width)
    angle = np.arctan2(y1 - y0, x1 - x0)
    head = 4 * width + 4
    for side in (+0.45, -0.45):
        a = angle + np.pi + side
        draw.line(
            [(x1, y1), (x1 + head * np.cos(a), y1 + head * np.sin(a))], fill=MARK, width=width
        )


def draw_gui_action(image, action: Action | None, text: str, scale: int = 1) -> str:
    """Draw ``action`` on a PIL image (in place, the image ``scale`` times the screen size);
    returns the caption describing it (in screen pixels)."""
    from PIL import ImageDraw

    draw = ImageDraw.Draw(image)
    width = max(1, min(image.size) // 150)
    r = max(4, min(image.size) // 40)
    if action is None:
        return f"invalid: {text[:60]}"
    a = _scaled(action, scale) if scale != 1 else action
    if a.kind in ("click", "double_click", "move"):
        rings = 2 if a.kind == "double_click" else 1
        for k in range(rings):
            rr = r + k * (r // 2 + 2)
            draw.ellipse([a.x - rr, a.y - rr, a.x + rr, a.y + rr], outline=MARK, width=width)
        if a.kind != "move":
            draw.line([(a.x - r, a.y), (a.x + r, a.y)], fill=MARK, width=width)
            draw.line([(a.x, a.y - r), (a.x, a.y + r)], fill=MARK, width=width)
    elif a.kind == "right_click":
        draw.rectangle([a.x - r, a.y - r, a.x + r, a.y + r], outline=MARK, width=width)
    elif a.kind == "drag":
        draw.ellipse(
            [a.x - r // 2, a.y - r // 2, a.x + r // 2, a.y + r // 2], outline=MARK, width=width
        )
        _arrow(draw, a.x, a.y, a.x2, a.y2, width)
    elif a.kind == "scroll":
        step = 3 * r
        _arrow(draw, a.x, a.y, a.x + np.sign(a.dx) * step, a.y + np.sign(a.dy) * step, width)
    a = action
    captions = {
        "type": f"type {a.text!r}",
        "key": f"key {a.keys[0] if a.keys else ''}",
        "hotkey": "hotkey " + "+".join(a.keys),
        "scroll": f"scroll dx={a.dx} dy={a.dy}",
        "drag": f"drag ({a.x},{a.y})->({a.x2},{a.y2})",
    }
    return captions.get(a.kind, f"{a.kind}" + (f" ({a.x},{a.y})" if a.point else ""))


def wrap_to_width(text: str, font, width: float) -> list[str]:
    """``text`` broken at spaces into lines no wider than ``width`` px in ``font`` (a word wider
    than that on its own is cut between characters)."""
    lines: list[str] = []
    for word in text.split():
        if lines and font.getlength(f"{lines[-1]} {word}") <= width:
            lines[-1] = f"{lines[-1]} {word}"
            continue
        while len(word) > 1 and font.getlength(word) > width:
            cut = max((i for i in range(1, len(word)) if font.getlength(word[:i]) <= width),
                      default=1)  # fmt: skip
            lines.append(word[:cut])
            word = word[cut:]
        lines.append(word)
    return lines or [""]


def add_caption(image, lines: list[str]):
    """The image with a caption band below it (lines too wide for the image are wrapped)."""
    from PIL import Image, ImageDraw

    size = max(10, image.width // 40)
    font = _font(size)
    lines = [part for line in lines for part in wrap_to_width(line, font, image.width - 8)]
    band = (size + 4) * len(lines) + 4
    out = Image.new("RGB", (image.width, image.height + band), (20, 20, 20))
    out.paste(image, (0, 0))
    draw = ImageDraw.Draw(out)
    for i, line in enumerate(lines):
        draw.text((4, image.height + 2 + i * (size + 4)), line, fill=(240, 240, 240), font=font)
    return out


AGENT_TEXT_KEY = "agent_text"  # info entry: the answer a text policy gave at this step


def _instruction(rows, t: int) -> str | None:
    """The task's instruction as the agent saw it before step ``t`` (the last step's for the
    final frame), or None when the dataset stores none (PointNav)."""
    if "instruction" not in rows or not len(rows):
        return None
    text = rows["instruction"].iloc[min(t, len(rows) - 1)]
    text = " ".join(str(text).split()) if isinstance(text, str) else ""
    return text or None


def _agent_text(row) -> str | None:
    try:
        info = json.loads(row["info"]) if row["info"] else {}
    except (KeyError, ValueError, TypeError):
        return None
    text = info.get(AGENT_TEXT_KEY) if isinstance(info, dict) else None
    return " ".join(str(text).split()) if text else None


def _positions(rows) -> list[np.ndarray] | None:
    points = []
    for text in rows["info"]:
        info = json.loads(text) if text else {}
        p = next((info[k] for k in POSITION_KEYS if k in info), None)
        if p is None:
            return None
        points.append(np.asarray(p, dtype=float).reshape(-1))
    return points


def _top_down(path: list[np.ndarray], upto: int, size: int):
    """A panel with the (x, z) path walked up to step ``upto`` (start green, now magenta)."""
    from PIL import Image, ImageDraw

    xy = np.array([[p[0], p[2] if p.size >= 3 else p[1]] for p in path])
    lo, hi = xy.min(0), xy.max(0)
    span = max(float((hi - lo).max()), 1e-6)
    pix = (xy - lo) / span * (size - 20) + 10
    panel = Image.new("RGB", (size, size), (235, 235, 235))
    draw = ImageDraw.Draw(panel)
    pts = [tuple(p) for p in pix[: upto + 1]]
    if len(pts) > 1:
        draw.line(pts, fill=(40, 90, 220), width=2)
    sx, sy = pix[0]
    draw.ellipse([sx - 3, sy - 3, sx + 3, sy + 3], fill=(30, 160, 30))
    cx, cy = pix[upto]
    draw.ellipse([cx - 4, cy - 4, cx + 4, cy + 4], fill=MARK)
    return panel


def replayed_topdown_maps(dataset: EpisodeDataset, episode: int) -> list[np.ndarray] | None:
    """The env's top-down map after reset and after each step, by replaying the episode;
    None when the env cannot be made or draws no map."""
    from pixelrl.envs.recording.format import DatasetError
    from pixelrl.envs.recording.replay import make_env

    try:
        env = make_env(dataset)
    except DatasetError as e:  # no env id, an option a recording may not choose
        warnings.warn(f"no top-down map: {e}", stacklevel=2)
        return None
    except Exception:  # backend not installed: view without the map
        return None
    try:
        draw = getattr(env.unwrapped, "topdown", None)
        if draw is None:
            return None
        entry = dataset.episodes[episode]
        env.reset(seed=entry.seed, options=entry.options)
        maps = [draw()]
        for action in dataset.actions(episode):
            env.step(action)
            maps.append(draw())
        return maps
    finally:
        env.close()


def render_episode(
    dataset: EpisodeDataset,
    episode: int,
    key: str | None = None,
    scale: int = 1,
    top_down: bool = True,
    overlay: Callable | None = None,
) -> list:
    """The episode's ``length + 1`` frames as PIL images with the actions drawn
    (navigation: with the top-down map beside them unless ``top_down`` is False).

    ``overlay(image, frame, scale)``, if given, draws on each PIL ``image`` (the frame enlarged
    ``scale`` times) before the action: ``pixelrl view --read`` draws the read words with it."""
    from PIL import Image

    check_render_size(dataset, episode, key, scale)
    rows = dataset.steps(episode)
    frames = dataset.frames(episode, key)
    T = len(rows)
    entry = dataset.episodes[episode]
    maps = path = None
    if not dataset.info.is_gui and top_down:
        maps = replayed_topdown_maps(dataset, episode)
        path = None if maps is not None else _positions(rows)
    images = []
    for t in range(T + 1):
        frame = frames[t]
        if frame.ndim == 3 and frame.shape[-1] == 1:
            frame = frame[..., 0]
        if frame.dtype != np.uint8:  # depth: scale to grey levels
            frame = (255 * (frame / max(float(frame.max()), 1e-6))).clip(0, 255).astype(np.uint8)
        image = Image.fromarray(frame).convert("RGB")
        if scale != 1:
            image = image.resize((image.width * scale, image.height * scale), Image.NEAREST)
        if overlay is not None:
            overlay(image, frame, scale)
        lines = [f"episode {episode}  step {t}/{T}"]
        task = _instruction(rows, t)
        if task is not None:  # what the agent was asked: the frame means little without it
            lines.append(f"task: {task}")
        if t < T:
            row = rows.iloc[t]
            if dataset.info.is_gui:
                action = codec.action_as_gui(row["action"], dataset.screen_size)
                lines.append(draw_gui_action(image, action, str(row["action"]), scale))
            else:
                a = row["action"]
                name = (
                    NAV_ACTION_NAMES[a]
                    if dataset.info.action_format == "discrete" and 0 <= a < 4
                    else a
                )
                lines.append(f"action {'idle (unparsed answer)' if a == -1 else name}")
            said = _agent_text(row)
            if said is not None:  # a text policy's answer (record --agent vlm)
                lines.append(f"said: {said if len(said) <= 60 else said[:57] + '...'}")
            lines.append(f"reward {row['reward']:+.3f}")
        else:
            lines.append(f"end: return {entry.total_reward:+.3f}  success {entry.success}")
        panel = None
        if maps is not None:
            panel = Image.fromarray(maps[min(t, len(maps) - 1)])
            panel = panel.resize((max(1, panel.width * image.height // panel.height), image.height))
        elif path is not None:
            panel = _top_down(path, min(t, len(path) - 1), image.height)
        if panel is not None:
            both = Image.new("RGB", (image.width + panel.width, image.height))
            both.paste(image, (0, 0))
            both.paste(panel, (image.width, 0))
            image = both
        images.append(add_caption(image, lines))
    return images


class RenderTooLarge(ValueError):
    """The episode's frames, enlarged ``scale`` times, would not fit the render budget."""


def check_render_size(dataset: EpisodeDataset, episode: int, key: str | None, scale: int) -> None:
    """Raise :class:`RenderTooLarge` before anything is decoded when the rendered frames would
    take more than ``MAX_EPISODE_BYTES`` (the GIF writer holds them all)."""
    from pixelrl.envs.recording.format import MAX_EPISODE_BYTES

    feature = dataset._feature(key)
    frames = dataset._entry(episode).length + 1
    h, w = feature.shape[:2] if len(feature.shape) >= 2 else (1, feature.shape[0])
    size = frames * (h * scale) * (w * scale) * 3
    if size > MAX_EPISODE_BYTES:
        raise RenderTooLarge(
            f"{frames} frames of {w * scale}x{h * scale} (--scale {scale}) would take "
            f"{size / 2**30:.1f} GiB to render; at most {MAX_EPISODE_BYTES / 2**30:.0f} GiB: "
            "lower --scale"
        )


def _scaled(a: Action, s: int) -> Action:
    def m(v):
        return None if v is None else v * s + s // 2

    return Action(a.kind, m(a.x), m(a.y), m(a.x2), m(a.y2), a.dx, a.dy, a.text, a.keys)


def write_animation(images: list, out: str | os.PathLike, fps: float) -> Path:
    """Write PIL images as a GIF (Pillow) or MP4 (OpenCV), by ``out``'s suffix."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    suffix = out.suffix.lower()
    if suffix == ".gif":
        duration = int(round(1000 / fps))
        images[0].save(
            out, save_all=True, append_images=images[1:], duration=duration, loop=0, optimize=False
        )
    elif suffix == ".mp4":
        import cv2

        w, h = images[0].size
        w, h = w + w % 2, h + h % 2  # most players want even sizes
        writer = cv2.VideoWriter(str(out), cv2.VideoWriter_fourcc(*"mp4v"), float(fps), (w, h))
        if not writer.isOpened():
            raise RuntimeError(f"OpenCV cannot write {out}")
        for im in images:
            frame = np.zeros((h, w, 3), np.uint8)
            frame[: im.height, : im.width] = np.asarray(im)
            writer.write(frame[..., ::-1].copy())
        writer.release()
    else:
        raise ValueError(f"write a .gif or an .mp4, not {out.name!r}")
    return out


def view_episode(
    root: str | os.PathLike | EpisodeDataset,
    episode: int,
    out: str | os.PathLike,
    fps: float | None = None,
    scale: int = 1,
    key: str | None = None,
    top_down: bool = True,
    overlay: Callable | None = None,
) -> tuple[Path, int]:
    """Render ``episode`` to ``out`` (.gif or .mp4); returns the path and the frame count
    (``overlay``: see :func:`render_episode`)."""
    dataset = root if isinstance(root, EpisodeDataset) else EpisodeDataset(root)
    images = render_episode(
        dataset, episode, key=key, scale=scale, top_down=top_down, overlay=overlay
    )
    fps = fps or min(dataset.info.fps, 4.0)  # slow enough to read the captions
    return write_animation(images, out, fps), len(images)
