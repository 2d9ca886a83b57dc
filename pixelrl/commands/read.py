"""``pixelrl read IMAGE [--lines] [--json]``: the words the screen reader sees on a screenshot.

One line a word: text, box ``x0,y0,x1,y1`` in the image's pixels, score. ``--lines`` joins the
words read side by side into lines, one a line of output (``Last name:`` rather than ``Last``
and ``name:``; :func:`pixelrl.vision.reader.group_lines`: a gap wider than 1.2 text heights, as
between a label and its field, starts a new one), with the box around them and the lowest
word's score. ``--json`` prints one JSON object (``{"image", "size", "words": [{"text", "box",
"score"}]}``, and with ``--lines`` also ``"lines": [{"text", "box", "score", "words"}]``) for
scripts. An empty, single-colour or 1x1 image reads as no words (exit 0).
"""

from __future__ import annotations

import argparse

from pixelrl.cli import UsageError
from pixelrl.commands.args import add_threads_argument, positive_float, use_threads

MAX_FILE_BYTES = 64 * 1024 * 1024


def upscale_factor(text: str) -> float:
    value = positive_float(text)
    if not 0.25 <= value <= 8:
        raise argparse.ArgumentTypeError(f"must be in [0.25, 8], got {text}")
    return value


def score_threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value <= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("read", help="the words the screen reader sees on a screenshot")
    p.add_argument("image", help="a screenshot (PNG, JPEG, ...)")
    p.add_argument("--lines", action="store_true",
                   help="one line of output per line of text (words side by side joined)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    p.add_argument("--upscale", type=upscale_factor, default=None,
                   help="enlarge before the lines are read (default: 3 up to 400 px a side, else 1)")  # fmt: skip
    p.add_argument("--detect-upscale", type=upscale_factor, default=None,
                   help="enlarge before the lines are found (default: 2 up to 400 px a side, else 1)")  # fmt: skip
    p.add_argument("--min-score", type=score_threshold, default=0.3,
                   help="drop words read with a lower confidence (0..1)")  # fmt: skip
    add_threads_argument(p, "the reader")
    p.set_defaults(func=run)


def load_image(path: str):
    """The file as an RGB array; :class:`UsageError` for a missing, unreadable, non-image or
    too large file (checked from the header, before decoding)."""
    import os

    import numpy as np
    from PIL import Image, UnidentifiedImageError

    from pixelrl.vision.reader import MAX_PIXELS, MAX_SIDE

    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise UsageError(f"{path}: not a file")
    if os.path.getsize(path) > MAX_FILE_BYTES:
        raise UsageError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB; not read")
    try:
        with Image.open(path) as image:
            w, h = image.size
            if max(w, h) > MAX_SIDE or w * h > MAX_PIXELS:
                raise UsageError(
                    f"{path}: {w}x{h} is too large to read (at most {MAX_SIDE} px a side and "
                    f"{MAX_PIXELS // 1_000_000} Mpx); downscale it first"
                )
            return np.asarray(image.convert("RGB"))
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        message = " ".join(str(e).split()) or type(e).__name__
        raise UsageError(f"{path}: not a readable image ({message})") from e
    except Image.DecompressionBombError as e:
        raise UsageError(f"{path}: too large to read ({e})") from e


def run(args: argparse.Namespace) -> int:
    import json

    from pixelrl.vision.reader import ScreenReader, group_lines

    image = load_image(args.image)
    # the reader runs ONNX Runtime, no torch; stdout is the words (the count is in --json's doc)
    threads = use_threads(args, import_torch=False, say=False)
    reader = ScreenReader(upscale=args.upscale, detect_upscale=args.detect_upscale,
                          word_score=args.min_score, cache_size=0, threads=threads.count)  # fmt: skip
    words = reader.read(image)
    lines = group_lines(words) if args.lines else None
    if args.json:
        size = [int(image.shape[1]), int(image.shape[0])]
        doc = {"image": args.image, "size": size, "threads": threads.count,
               "words": [w.to_dict() for w in words]}  # fmt: skip
        if lines is not None:
            doc["lines"] = [line.to_dict() for line in lines]
        print(json.dumps(doc, ensure_ascii=False))
        return 0
    for item in lines if lines is not None else words:
        text = item.text.replace("\t", " ")
        x0, y0, x1, y1 = item.box
        print(f"{text}\t{x0},{y0},{x1},{y1}\t{item.score:.2f}")
    return 0
