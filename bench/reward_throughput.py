"""Throughput of the vectorised GUI rewards (vision/rewards.py) on random batches.

    python bench/reward_throughput.py [--n 1000000]

Prints items/s for each geometric reward and for the text recipes (which parse action text).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main() -> None:
    from pixelrl.vision import rewards as R

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000, help="batch size for geometric rewards")
    parser.add_argument("--n-text", type=int, default=20_000, help="batch size for text recipes")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.n
    points = rng.uniform(0, 1000, (n, 2))
    corners = rng.uniform(0, 1000, (n, 2, 2))
    boxes = np.concatenate([corners.min(1), corners.max(1)], 1)
    other = boxes[rng.permutation(n)]
    rows = [
        ("point_in_box", n, _timed(R.point_in_box, points, boxes)),
        ("box_iou", n, _timed(R.box_iou, boxes, other)),
        ("gaussian_point_reward", n, _timed(R.gaussian_point_reward, points, boxes)),
        ("distance_reward", n, _timed(R.distance_reward, points, boxes)),
    ]
    m = args.n_text
    texts = [f"click(start_box='({x},{y})')" for x, y in rng.integers(0, 1000, (m, 2))]
    texts[::5] = ["not an action"] * len(texts[::5])
    screen = (1000, 1000)
    rows += [
        ("format_reward (text)", m, _timed(R.format_reward, texts, screen)),
        ("gui_g2_reward (text)", m, _timed(R.gui_g2_reward, texts, boxes[:m], screen)),
        ("ui_r1_reward (text)", m, _timed(R.ui_r1_reward, texts, boxes[:m], None, screen)),
    ]
    print(f"{'reward':<24} | {'items':>10} | {'items/s':>14}")
    for name, count, seconds in rows:
        print(f"{name:<24} | {count:>10,} | {count / seconds:>14,.0f}")


if __name__ == "__main__":
    main()
