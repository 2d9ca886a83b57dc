"""How many grounding targets a mark action can reach (issue 53): for the held-out grounding
items of the five desktop families (the in-run evaluation's, or ``--start 1000`` for
``grounding_paired.py``'s), the share whose target box holds the centre of a mark of the
screen's Set-of-Mark parse (what ``click(mark=N)`` clicks; the SFT targets of
``gui_agent/configs/sft_grounding_marks.yaml`` name such a mark, the others keep their point),
and the CPU the reading took. A policy that only ever names marks scores at most this.

    python bench/mark_coverage.py [--items 200] [--start 0] [--words 40]
"""

from __future__ import annotations

import argparse
import resource
import time
from collections import defaultdict


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--words", type=int, default=40, help="prompt.screen_words")
    args = parser.parse_args()

    import torch

    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.envs.gui_action.marks import mark_centre, mark_of_box
    from pixelrl.gui_agent.grounding import grounding_set
    from pixelrl.vision.reader import SetOfMarks

    torch.set_num_threads(1)
    items = grounding_set(args.items, start=args.start)
    parse = SetOfMarks(GUIActionCodec("uitars", mark_actions=True).point_text, max_words=args.words)
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # items, reachable, hits
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    for item in items:
        boxes = parse.boxes(item.screenshot)
        number = mark_of_box(boxes, item.bbox)
        row = rows[item.family]
        row[0] += 1
        if number is not None:
            x, y = mark_centre(boxes[number - 1])
            x0, y0, x1, y1 = item.bbox
            row[1] += 1
            row[2] += int(x0 <= x < x1 and y0 <= y < y1)  # the click lands in the target
    cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0
    print(f"{'family':15s} {'items':>6s} {'a mark in the box':>18s} {'its click hits':>15s}")
    total = [0, 0, 0]
    for family, (n, reach, hit) in sorted(rows.items()):
        total = [total[0] + n, total[1] + reach, total[2] + hit]
        print(f"{family:15s} {n:6d} {reach / n:18.3f} {hit / max(reach, 1):15.3f}")
    n, reach, hit = total
    print(f"{'all':15s} {n:6d} {reach / n:18.3f} {hit / max(reach, 1):15.3f}")
    print(f"reading: {cpu:.1f} CPU s ({cpu / n:.3f} a screen), {wall:.1f} s wall (shared machine)")


if __name__ == "__main__":
    main()
