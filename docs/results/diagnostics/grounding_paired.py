"""Two VLMs on the same fresh held-out grounding items: greedy click accuracy per family and the
paired difference (B - A) with its 95% interval and McNemar's exact p.

    python docs/results/diagnostics/grounding_paired.py SFT_MODEL GRPO_MODEL [ITEMS] [START]
        [--marks-a] [--marks-b]

Items are :func:`pixelrl.gui_agent.grounding.grounding_set` from odd seeds, ``k >= START`` (default 1000:
no overlap with the recipes' in-run evaluation, which starts at 0). ``--marks-a`` / ``--marks-b``:
that model was trained with ``prompt.mark_actions`` (a Set-of-Mark parse in its prompt, answers
that may name a mark); it is evaluated the same way.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict

import numpy as np
import torch

from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.gui_agent.agents import VLMAgent
from pixelrl.gui_agent.grounding import grounding_set
from pixelrl.stats import mcnemar_exact
from pixelrl.vision.reader import SetOfMarks
from pixelrl.vision.rewards import point_in_box
from pixelrl.vision.vlm import load_vlm


def hits(model: str, items, marks: bool = False) -> np.ndarray:
    codec = GUIActionCodec.for_model(model, mark_actions=marks)
    parse = SetOfMarks(codec.point_text) if marks else None
    agent = VLMAgent(load_vlm(model, codec, screen_parse=parse), 20)
    out = []
    for s in range(0, len(items), 16):
        batch = items[s : s + 16]
        actions = agent.act_batch([i.screenshot for i in batch], [i.instruction for i in batch],
                                  [[] for _ in batch])  # fmt: skip
        out.extend(point_in_box([a.point for a in actions], [i.bbox for i in batch]))
    return np.asarray(out, dtype=float)


def main(model_a: str, model_b: str, n: int = 400, start: int = 1000, marks_a: bool = False,
         marks_b: bool = False) -> None:  # fmt: skip
    torch.set_num_threads(1)
    items = grounding_set(n, start=start)
    a, b = hits(model_a, items, marks_a), hits(model_b, items, marks_b)
    by_family = defaultdict(list)
    for i, item in enumerate(items):
        by_family[item.family].append(i)
    print(f"{'family':15s} {'n':>4s} {'A':>7s} {'B':>7s} {'B - A':>7s}")
    for family, idx in [*by_family.items(), ("all", list(range(len(items))))]:
        print(f"{family:15s} {len(idx):4d} {a[idx].mean():7.3f} {b[idx].mean():7.3f} "
              f"{b[idx].mean() - a[idx].mean():+7.3f}")  # fmt: skip
    d = b - a
    half = 1.96 * d.std(ddof=1) / math.sqrt(len(d))
    b_only, a_only = int(((b == 1) & (a == 0)).sum()), int(((a == 1) & (b == 0)).sum())
    print(f"paired B - A: {d.mean():+.3f}  95% CI [{d.mean() - half:+.3f}, {d.mean() + half:+.3f}]"
          f"  only B: {b_only}  only A: {a_only}  McNemar exact p = {mcnemar_exact(b_only, a_only):.3g}")  # fmt: skip


if __name__ == "__main__":
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    unknown = set(flags) - {"--marks-a", "--marks-b"}
    if unknown:
        sys.exit(f"grounding_paired.py: unknown option(s) {', '.join(sorted(unknown))}")
    main(args[0], args[1], *(int(x) for x in args[2:4]), marks_a="--marks-a" in flags,
         marks_b="--marks-b" in flags)  # fmt: skip
