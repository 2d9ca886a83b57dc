"""Greedy accuracy, sampled accuracy and pass@G of a VLM on fresh held-out grounding items.

GRPO can only sharpen what the model already samples. ``spread`` is the pass@G that G draws at
the family's mean sampled accuracy would give if every item were as likely to be hit as any
other: when pass@G is as high as that, the hits are spread over the items by chance and carry no
knowledge of which element the instruction names.

    python docs/results/diagnostics/grounding_pass_at_k.py MODEL_DIR [ITEMS] [G]
"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
import torch

from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.gui_agent.agents import VLMAgent
from pixelrl.gui_agent.grounding import grounding_set
from pixelrl.vision.rewards import point_in_box
from pixelrl.vision.vlm import load_vlm

NAN = (float("nan"), float("nan"))


def main(model: str, n: int = 120, G: int = 8) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    items = grounding_set(n, start=1000)  # the fresh items of docs/results (odd seeds, k >= 1000)
    policy = load_vlm(model, GUIActionCodec.for_model(model))
    agent = VLMAgent(policy, 20)
    greedy, sampled, passed = defaultdict(list), defaultdict(list), defaultdict(list)
    for s in range(0, n, 8):
        batch = items[s : s + 8]
        screens, texts = [i.screenshot for i in batch], [i.instruction for i in batch]
        actions = agent.act_batch(screens, texts, [[] for _ in batch])
        groups = policy.generate(
            screens, texts, [[] for _ in batch], num_samples=G, temperature=1.0,
            max_new_tokens=20, screen_size=(320, 240),
        )  # fmt: skip
        for item, action, group in zip(batch, actions, groups):
            greedy[item.family].append(point_in_box([action.point], [item.bbox])[0])
            points = [c.action.point if c.parsed and c.action.point else NAN for c in group]
            hits = point_in_box(points, [item.bbox] * G)
            sampled[item.family].append(hits.mean())
            passed[item.family].append(hits.max())
    print(f"{'family':15s} {'greedy':>7s} {'sampled':>8s} {'pass@' + str(G):>7s} {'spread':>7s}")
    for family in [*greedy, "all"]:

        def pick(d, family=family):
            return sum(d.values(), []) if family == "all" else d[family]

        p = np.asarray(pick(sampled))
        spread = 1 - (1 - p.mean()) ** G
        print(f"{family:15s} {np.mean(pick(greedy)):7.3f} {p.mean():8.3f} "
              f"{np.mean(pick(passed)):7.3f} {spread:7.3f}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
