"""Can the pointer head point at what the image shows? A probe of the head and of the map from
image tokens to screen boxes (:mod:`pixelrl.vision.pointer_head`), apart from reading text.

Each screen is black with one coloured square (40x30 px, at a random place); the instruction
names nothing: the answer is always ``click(start_box='<|pointer|>')`` and only the image says
where. A tiny model built from config (64-px image, 8x8 cells) learns by SFT through the head;
held-out screens are then clicked greedily. If the map were wrong (cells in another order than
the processor's tokens), the clicks could not follow the square: chance is the square's share
of the screen (1/64).

    python bench/pointer_probe.py [STEPS] [SEEDS] [TASK] [--read] [--family F]
    (default 300 steps, seed 1, square, both families)

TASK ``colour`` and ``word`` ask whether the head points at what the *instruction* names: two
things on the screen, the instruction names one (chance: 1/2 of the clicks that land on either).
``colour``: two 40x30 squares of different colours, "Click the green square." (the instruction
must condition the pointer; no reading). ``word``: two white words in a 40-px font (8 px tall
in the 64-px image), "Click STOP." (the model must also read). The columns ``named`` and
``other``: held-out clicks inside the named thing's box and inside the other's.

``--read`` gives the head the screen reader's cells (``reader_cells``,
:mod:`pixelrl.vision.read_cells`: where a read word matches the instruction, where any text is,
pooled to each image token's screen box). ``cpu s`` then includes the reading (every screen of
this probe is new: ~0.1 s each); ``reads`` is the screens read.
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np
import torch

from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.rl.sft import sft_step
from pixelrl.rl.text.rows import Example, Prompt
from pixelrl.vision.pointer_head import POINTER_TOKEN
from pixelrl.vision.vlm import load_vlm, tiny_corpus

SCREEN = (320, 240)
VISION = {"smolvlm": {"image_size": 64, "patch_size": 4, "scale_factor": 2},
          "qwen2_5_vl": {"max_pixels": 64 * 48, "patch_size": 4}}  # fmt: skip


def screen(rng) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    image = np.zeros((SCREEN[1], SCREEN[0], 3), dtype=np.uint8)
    x, y = int(rng.integers(0, SCREEN[0] - 40)), int(rng.integers(0, SCREEN[1] - 30))
    image[y : y + 30, x : x + 40] = (230, 40, 40)
    return image, (x, y, x + 40, y + 30)


COLOURS = {"red": (230, 40, 40), "green": (40, 220, 40), "blue": (40, 80, 240),
           "yellow": (230, 220, 40)}  # fmt: skip
WORDS = ("OK", "NO", "STOP", "HELP")


def square(rng):
    """One red square; the instruction names nothing. ``(image, instruction, box, other)``."""
    image, box = screen(rng)
    return image, "Click the square.", box, None


def _two_places(rng, w: int, h: int) -> list[tuple[int, int, int, int]]:
    """Two non-overlapping ``w`` x ``h`` boxes: one in the left half, one in the right, in a
    random order (so neither side is the answer's)."""
    half = SCREEN[0] // 2
    boxes = []
    for x0 in (0, half):
        x, y = x0 + int(rng.integers(0, half - w)), int(rng.integers(0, SCREEN[1] - h))
        boxes.append((x, y, x + w, y + h))
    return boxes if rng.random() < 0.5 else boxes[::-1]


def colour(rng):
    """Two squares of two colours; the instruction names one."""
    names = rng.choice(list(COLOURS), 2, replace=False)
    image = np.zeros((SCREEN[1], SCREEN[0], 3), dtype=np.uint8)
    boxes = _two_places(rng, 40, 30)
    for name, (x0, y0, x1, y1) in zip(names, boxes):
        image[y0:y1, x0:x1] = COLOURS[name]
    return image, f"Click the {names[0]} square.", boxes[0], boxes[1]


def word(rng):
    """Two white words (40-px font); the instruction names one."""
    from PIL import Image, ImageDraw, ImageFont

    names = rng.choice(WORDS, 2, replace=False)
    font = ImageFont.load_default(size=40)
    picture = Image.new("RGB", SCREEN)
    draw = ImageDraw.Draw(picture)
    sizes = [draw.textbbox((0, 0), str(n), font=font) for n in names]
    width, height = max(b[2] for b in sizes), max(b[3] for b in sizes)
    boxes = _two_places(rng, width, height)
    for name, box in zip(names, boxes):
        draw.text(box[:2], str(name), fill=(255, 255, 255), font=font)
    return np.asarray(picture), f"Click {names[0]}.", boxes[0], boxes[1]


TASKS = {"square": square, "colour": colour, "word": word}


def _inside(a, box) -> bool:
    return box is not None and box[0] <= a.x < box[2] and box[1] <= a.y < box[3]


def accuracy(policy, items) -> tuple[float, float]:
    """The share of greedy clicks inside the named box, and inside the other one."""
    named = other = 0
    for image, instruction, box, second in items:
        ((c,),) = policy.generate([image], [instruction], do_sample=False, screen_size=SCREEN)
        if c.parsed and c.action.x is not None:
            named += _inside(c.action, box)
            other += _inside(c.action, second)
    return named / len(items), other / len(items)


def cpu_s() -> float:
    return (
        resource.getrusage(resource.RUSAGE_SELF).ru_utime
        + resource.getrusage(resource.RUSAGE_SELF).ru_stime
    )


def main(steps: int = 300, seeds: int = 1, task: str = "square", read: bool = False,
         families: tuple[str, ...] = tuple(VISION)) -> None:  # fmt: skip
    torch.set_num_threads(1)
    codec = GUIActionCodec.for_model("tiny-smolvlm", "uitars", None)
    target = f"click(start_box='{POINTER_TOKEN}')"
    draw = TASKS[task]
    # the instructions' words in the tiny tokenizer (the square's default corpus as it was)
    extra = {} if task == "square" else {
        "corpus": tiny_corpus(codec) + [f"Click the {c} square. Click {w}."
                                        for c in COLOURS for w in WORDS] * 5}  # fmt: skip
    print(f"task {task}: {steps} SFT steps of 8, lr 3e-3, 100 held-out screens, "
          f"reader cells {'on' if read else 'off'}")  # fmt: skip
    print(f"{'family':11s} {'seed':>4s} {'before':>7s} {'named':>7s} {'other':>7s} {'cpu s':>6s}"
          f" {'reads':>6s}")  # fmt: skip
    for family in families:
        for seed in range(1, seeds + 1):
            rng = np.random.default_rng(seed)
            torch.manual_seed(seed)
            policy = load_vlm(f"tiny-{family}", codec, seed=seed, vision_size=VISION[family],
                              pointer_head=True, reader_cells=read, **extra)  # fmt: skip
            held_out = [draw(rng) for _ in range(100)]
            start, t0 = cpu_s(), time.time()  # the reading of the held-out screens counts too
            before = accuracy(policy, held_out)[0]
            opt = torch.optim.AdamW(policy.trainable_parameters(), lr=3e-3)
            policy.model.train()
            for _ in range(steps):
                batch = [draw(rng) for _ in range(8)]
                sft_step(policy, opt, [Example(Prompt(i, text), target, box=b)
                                       for i, text, b, _ in batch])  # fmt: skip
            policy.model.eval()
            named, other = accuracy(policy, held_out)
            reads = policy.reader_cells.reads if policy.reader_cells is not None else 0
            print(
                f"{family:11s} {seed:4d} {before:7.2f} {named:7.2f} {other:7.2f} "
                f"{cpu_s() - start:6.0f} {reads:6d}   (wall {time.time() - t0:.0f} s, shared machine)"
            )


if __name__ == "__main__":
    args = sys.argv[1:]
    read = "--read" in args
    families = tuple(VISION)
    if "--family" in args:
        families = (args[args.index("--family") + 1],)
        args.remove(families[0])
    args = [a for a in args if not a.startswith("--")]
    main(*(int(a) for a in args[:2]), *args[2:3], read=read, families=families)
