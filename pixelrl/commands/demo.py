"""``pixelrl demo``: the scripted expert on every emulated-desktop task family.

Runs a few seeded episodes per family, prints a success table, and saves a contact sheet: one
row per family (its first episode): the whole first screen, then a 2× zoom on each screen the
expert saw before an action, with that action marked (a ring at a click, a line for a drag, the
text typed, the key pressed).
"""

from __future__ import annotations

import argparse
from pathlib import Path

TILE_WIDTH = 400  # pixels of one screenshot in the contact sheet
MAX_STEPS_SHOWN = 4  # zoomed screens per family (the first steps and the last one)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo", help="run the desktop experts on every task family; table + contact sheet"
    )
    p.add_argument("--seeds", type=int, default=5, help="episodes per family (default 5)")
    p.add_argument("--size", default="1280x800", help="screen size WxH (default 1280x800)")
    p.add_argument(
        "--out", default="outputs/demo", help="folder for the contact sheet (default outputs/demo)"
    )
    p.set_defaults(func=run)


def _parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--size must look like 1280x800, got {text!r}") from None
    return w, h


def run(args: argparse.Namespace) -> int:
    from PIL import Image
    from tqdm import tqdm

    from envs.desktop import FAMILIES
    from envs.desktop.env import DesktopEnv

    if args.seeds < 1:
        raise SystemExit("--seeds must be at least 1")
    size = _parse_size(args.size)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, strips = [], []
    with tqdm(total=len(FAMILIES) * args.seeds, desc="expert episodes", unit="ep") as bar:
        for family in FAMILIES:
            env = DesktopEnv(family, screen_size=size)
            wins, lengths = 0, []
            for seed in range(args.seeds):
                obs, info = env.reset(seed=seed)
                shots, done, steps = [], False, 0
                instruction = obs["instruction"]
                while not done:
                    action = env.expert_action()
                    if seed == 0:
                        focus = action.point or _center(info["target_bbox"], size)
                        shots.append((_marked(obs["screenshot"], action), focus))
                    obs, _, terminated, truncated, info = env.step(action)
                    done, steps = terminated or truncated, steps + 1
                wins += bool(info["success"])
                lengths.append(steps)
                if seed == 0:
                    strips.append((family, instruction, shots))
                bar.update()
            rows.append((family, wins, args.seeds, sum(lengths) / len(lengths)))
    print(f"\n{'family':<22} {'success':>9} {'steps/episode':>14}")
    for family, wins, n, mean_len in rows:
        print(f"{family:<22} {wins:>4}/{n:<4} {mean_len:>14.1f}")
    total = sum(r[1] for r in rows)
    print(f"{'all':<22} {total:>4}/{sum(r[2] for r in rows):<4}")
    sheet: Image.Image = _contact_sheet(strips, size)
    path = out / "desktop_experts.png"
    sheet.save(path)
    print(f"contact sheet: {path}")
    return 0 if total == sum(r[2] for r in rows) else 1


def _center(bbox, size):
    if bbox is None:
        return size[0] // 2, size[1] // 2
    return (bbox[0] + bbox[2]) // 2, (bbox[1] + bbox[3]) // 2


def _marked(screenshot, action):
    """The screenshot as a PIL image with ``action`` drawn on it."""
    from PIL import Image, ImageDraw

    from envs.desktop.render import font

    img = Image.fromarray(screenshot)
    d = ImageDraw.Draw(img)
    s = max(6, img.width // 90)
    red, yellow = (230, 30, 30), (255, 220, 0)
    f = font(max(12, img.width // 60), bold=True)
    if action.point is not None:
        x, y = action.point
        for r, c in ((s + 2, yellow), (s, red)):
            d.ellipse((x - r, y - r, x + r, y + r), outline=c, width=3)
        d.line((x - s // 2, y, x + s // 2, y), fill=red, width=2)
        d.line((x, y - s // 2, x, y + s // 2), fill=red, width=2)
        if action.kind == "drag":
            d.line((x, y, action.x2, action.y2), fill=red, width=4)
            d.ellipse((action.x2 - s, action.y2 - s, action.x2 + s, action.y2 + s), fill=red)
        label = {
            "double_click": "double",
            "right_click": "right",
            "scroll": f"scroll {action.dy:+d}",
        }.get(action.kind)
        if label:
            d.text(
                (x + s + 4, y - s),
                label,
                fill=red,
                font=f,
                stroke_width=2,
                stroke_fill=(255, 255, 255),
            )
    else:
        if action.kind == "type":
            text = f"type {action.text!r}"
        elif action.kind in ("key", "hotkey"):
            text = f"{action.kind} {'+'.join(action.keys)}"
        else:
            text = action.kind
        d.rectangle((0, 0, img.width, f.size + 12), fill=(20, 20, 20))
        d.text((8, 4), text, fill=yellow, font=f)
    return img


def _contact_sheet(strips, size):
    """One row per family: a caption, the whole first screen, then zooms on each step."""
    from PIL import Image, ImageDraw

    from envs.desktop.render import font

    w, h = size
    tw, th = TILE_WIDTH, round(TILE_WIDTH * h / w)
    caption_h, gap = 22, 6
    cols = 1 + MAX_STEPS_SHOWN
    sheet = Image.new(
        "RGB",
        (cols * (tw + gap) + gap, len(strips) * (th + caption_h + gap) + gap),
        (250, 250, 250),
    )
    d = ImageDraw.Draw(sheet)
    f = font(13, bold=True)
    for row, (family, instruction, shots) in enumerate(strips):
        y = gap + row * (th + caption_h + gap)
        d.text((gap, y + 3), f"{family}: {instruction}"[:200], fill=(20, 20, 20), font=f)
        if len(shots) > MAX_STEPS_SHOWN:
            shots = shots[: MAX_STEPS_SHOWN - 1] + shots[-1:]
        tiles = [shots[0][0]] + [_zoom(img, focus) for img, focus in shots]
        for col, tile in enumerate(tiles):
            x = gap + col * (tw + gap)
            sheet.paste(tile.resize((tw, th), Image.Resampling.LANCZOS), (x, y + caption_h))
            if col:
                d.text(
                    (x + 4, y + caption_h + th - 18),
                    f"step {col} (2x)",
                    fill=(255, 255, 255),
                    font=f,
                    stroke_width=2,
                    stroke_fill=(0, 0, 0),
                )
    return sheet


def _zoom(img, focus):
    """The half-size region of ``img`` around ``focus`` (inside the screen)."""
    zw, zh = img.width // 2, img.height // 2
    x0 = min(max(focus[0] - zw // 2, 0), img.width - zw)
    y0 = min(max(focus[1] - zh // 2, 0), img.height - zh)
    return img.crop((x0, y0, x0 + zw, y0 + zh))
