"""Where a pointer-head VLM's grounding misses land: for each family, of its misses on fresh
held-out items, how many chose an image cell that overlaps the target box (the right place, the
wrong point inside the cell: what an in-cell offset fixes), and how many chose a cell elsewhere
(the wrong element: reading or instruction following), and what was clicked instead (the
smallest accessibility element under the click).

    python docs/results/diagnostics/grounding_misses.py MODEL [ITEMS] [START] [--family F]

Items as grounding_paired.py's (odd seeds, ``k >= START``, default 1000).
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict

import torch

from pixelrl.envs.desktop import DesktopEnv
from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.gui_agent.grounding import grounding_set
from pixelrl.vision.pointer_head import image_cells
from pixelrl.vision.vlm import load_vlm


def _overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _under(a11y: list[dict], x: int, y: int) -> str:
    """The smallest element whose box holds the point: ``role "name"``, or ``background``."""
    holding = [
        e for e in a11y if e["bbox"][0] <= x < e["bbox"][2] and e["bbox"][1] <= y < e["bbox"][3]
    ]
    if not holding:
        return "background"
    e = min(holding, key=lambda e: (e["bbox"][2] - e["bbox"][0]) * (e["bbox"][3] - e["bbox"][1]))
    return f'{e["role"]} "{e["name"]}"'


def main(model: str, n: int = 200, start: int = 1000, family: str | None = None) -> None:
    torch.set_num_threads(1)
    policy = load_vlm(model, GUIActionCodec.for_model(model))
    policy.model.eval()
    if policy.pointer is None:
        sys.exit(f"{model}: no pointer head (pointer_head.safetensors)")
    items = grounding_set(n, start=start)
    if family:
        items = [i for i in items if i.family == family]
    rows = defaultdict(Counter)
    clicked = defaultdict(Counter)
    envs: dict[str, DesktopEnv] = {}
    for s in range(0, len(items), 16):
        batch = items[s : s + 16]
        shots, words = [i.screenshot for i in batch], [i.instruction for i in batch]
        out = policy.generate(
            shots, words, do_sample=False, max_new_tokens=20, screen_size=(320, 240)
        )
        encoded = policy.encode_prompts(shots, words)
        for row, (item, (c,)) in enumerate(zip(batch, out)):
            counts = rows[item.family]
            counts["n"] += 1
            point = getattr(c.action, "point", None)
            x0, y0, x1, y1 = item.bbox
            if point is not None and x0 <= point[0] < x1 and y0 <= point[1] < y1:
                counts["hit"] += 1
                continue
            if c.patch is None or point is None:
                counts["no point"] += 1
                continue
            cells = image_cells(policy.family, encoded, row, (320, 240), policy.processor,
                                int(policy.model.config.image_token_id))  # fmt: skip
            right_cell = _overlaps(cells.boxes[c.patch], item.bbox)
            counts["right cell, point outside" if right_cell else "another cell"] += 1
            if not right_cell:
                env = envs.setdefault(item.family, DesktopEnv(item.family, screen_size=(320, 240)))
                _, info = env.reset(seed=item.seed)
                clicked[item.family][_under(info["a11y"], *point)] += 1
    print(
        f"{'family':15s} {'n':>4s} {'hit':>5s} {'right cell':>11s} {'other cell':>11s} {'no point':>9s}"
    )
    for fam, counts in rows.items():
        print(f"{fam:15s} {counts['n']:4d} {counts['hit']:5d} {counts['right cell, point outside']:11d} "
              f"{counts['another cell']:11d} {counts['no point']:9d}")  # fmt: skip
    for fam, what in clicked.items():
        roles = Counter(w.split(" ")[0] for w in what.elements())
        print(f"{fam}: other-cell clicks land on {dict(roles.most_common(6))}")
    for env in envs.values():
        env.close()


if __name__ == "__main__":
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    fam = None
    if "--family" in sys.argv:
        fam = sys.argv[sys.argv.index("--family") + 1]
        args.remove(fam)
    main(args[0], *(int(x) for x in args[1:3]), family=fam)
