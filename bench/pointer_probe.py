"""Can the pointer head point at what the image shows? A probe of the head and of the map from
image tokens to screen boxes (:mod:`pixelrl.vision.pointer_head`), apart from reading text.

Each screen is black with one coloured square (40x30 px, at a random place); the instruction
names nothing: the answer is always ``click(start_box='<|pointer|>')`` and only the image says
where. A tiny model built from config (64-px image, 8x8 cells) learns by SFT through the head;
held-out screens are then clicked greedily. If the map were wrong (cells in another order than
the processor's tokens), the clicks could not follow the square: chance is the square's share
of the screen (1/64).

    python bench/pointer_probe.py [STEPS] [SEEDS]      (default 300 steps, seed 1)
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
from pixelrl.vision.vlm import load_vlm

SCREEN = (320, 240)
VISION = {"smolvlm": {"image_size": 64, "patch_size": 4, "scale_factor": 2},
          "qwen2_5_vl": {"max_pixels": 64 * 48, "patch_size": 4}}  # fmt: skip


def screen(rng) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    image = np.zeros((SCREEN[1], SCREEN[0], 3), dtype=np.uint8)
    x, y = int(rng.integers(0, SCREEN[0] - 40)), int(rng.integers(0, SCREEN[1] - 30))
    image[y : y + 30, x : x + 40] = (230, 40, 40)
    return image, (x, y, x + 40, y + 30)


def accuracy(policy, items) -> float:
    hits = 0
    for image, box in items:
        ((c,),) = policy.generate(
            [image], ["Click the square."], do_sample=False, screen_size=SCREEN
        )
        a = c.action
        hits += bool(
            c.parsed and a.x is not None and box[0] <= a.x < box[2] and box[1] <= a.y < box[3]
        )
    return hits / len(items)


def cpu_s() -> float:
    return (
        resource.getrusage(resource.RUSAGE_SELF).ru_utime
        + resource.getrusage(resource.RUSAGE_SELF).ru_stime
    )


def main(steps: int = 300, seeds: int = 1) -> None:
    torch.set_num_threads(1)
    codec = GUIActionCodec.for_model("tiny-smolvlm", "uitars", None)
    target = f"click(start_box='{POINTER_TOKEN}')"
    print(f"{'family':11s} {'seed':>4s} {'before':>7s} {'after':>7s} {'cpu s':>6s}")
    for family in VISION:
        for seed in range(1, seeds + 1):
            rng = np.random.default_rng(seed)
            torch.manual_seed(seed)
            policy = load_vlm(f"tiny-{family}", codec, seed=seed, vision_size=VISION[family],
                              pointer_head=True)  # fmt: skip
            held_out = [screen(rng) for _ in range(100)]
            before = accuracy(policy, held_out)
            start, t0 = cpu_s(), time.time()
            opt = torch.optim.AdamW(policy.trainable_parameters(), lr=3e-3)
            policy.model.train()
            for _ in range(steps):
                batch = [screen(rng) for _ in range(8)]
                sft_step(policy, opt, [Example(Prompt(i, "Click the square."), target, box=b)
                                       for i, b in batch])  # fmt: skip
            policy.model.eval()
            after = accuracy(policy, held_out)
            print(f"{family:11s} {seed:4d} {before:7.2f} {after:7.2f} {cpu_s() - start:6.0f}"
                  f"   (wall {time.time() - t0:.0f} s, shared machine)")  # fmt: skip


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
