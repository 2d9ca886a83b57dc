"""``pixelrl view DIR --episode K --out FILE.gif|mp4``: an episode with its actions drawn."""

from __future__ import annotations

import argparse

from pixelrl.cli import UsageError
from pixelrl.commands.args import non_negative_int, positive_float, positive_int


def animation_path(text: str) -> str:
    if not text.lower().endswith((".gif", ".mp4")):
        raise argparse.ArgumentTypeError(f"write a .gif or an .mp4, got {text!r}")
    return text


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("view", help="render a recorded episode to GIF/MP4")
    p.add_argument("dir", help="dataset folder")
    p.add_argument("--episode", type=non_negative_int, default=0)
    p.add_argument("--out", type=animation_path, required=True, help="output .gif or .mp4")
    p.add_argument("--fps", type=positive_float, default=None,
                   help="default: the dataset's, at most 4")  # fmt: skip
    p.add_argument("--scale", type=positive_int, default=1, help="enlarge small frames (nearest)")
    p.add_argument("--key", default=None, help="frame key to show (default: the first image)")
    p.add_argument("--no-map", action="store_true", help="navigation: no top-down map (no replay)")
    p.add_argument("--read", action="store_true",
                   help="draw the words the screen reader reads on each frame (pixelrl read)")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pixelrl.envs.recording.view import RenderTooLarge, view_episode

    try:
        path, frames = view_episode(
            args.dir,
            args.episode,
            args.out,
            args.fps,
            args.scale,
            args.key,
            top_down=not args.no_map,
            overlay=read_words_overlay() if args.read else None,
        )
    except KeyError as e:  # no such episode or frame key (DatasetError passes through)
        raise UsageError(e.args[0] if e.args else str(e)) from e
    except RenderTooLarge as e:
        raise UsageError(str(e)) from e
    print(f"wrote {path} ({frames} frames)")
    return 0


def read_words_overlay():
    """An overlay for :func:`pixelrl.envs.recording.view.render_episode`: each word the screen
    reader reads on the frame, boxed and labelled (unchanged frames are read once). A label is
    white on a dark tag above its box (below it at the top edge), in a font that grows with the
    frame (12 px on small screens, 16 px at 1280x800), so it stays readable over any UI."""
    from PIL import ImageDraw

    from pixelrl.envs.recording.view import _font
    from pixelrl.vision.reader import ScreenReader

    reader = ScreenReader().warm_up()  # a missing extra: one error line before any frame
    colour = (0, 170, 255)

    def draw(image, frame, scale: int) -> None:
        if frame.ndim != 3:  # depth or grey frames: nothing to read
            return
        pen = ImageDraw.Draw(image)
        font = _font(label_size(image.width))
        for word in reader.read(frame):
            x0, y0, x1, y1 = (v * scale for v in word.box)
            pen.rectangle([x0, y0, x1 - 1, y1 - 1], outline=colour, width=max(1, scale))
            left, top, right, bottom = pen.textbbox((0, 0), word.text, font=font)
            h = bottom - top + 2
            ty = y0 - h if y0 >= h else y1  # above the box, else below it
            pen.rectangle([x0, ty, x0 + right - left + 3, ty + h], fill=(0, 40, 70))
            pen.text((x0 + 2 - left, ty + 1 - top), word.text, fill=(255, 255, 255), font=font)

    return draw


def label_size(width: int) -> int:
    """The font size (px) of ``--read``'s labels on a frame ``width`` px wide."""
    return min(18, max(12, width // 80))
