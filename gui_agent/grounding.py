"""A held-out grounding set from the emulated desktop: (screenshot, instruction, target bbox).

Each item is the first screen of a desktop task whose scripted expert starts with a click: the
task's instruction, and the bbox of the element the expert clicks (``info["target_bbox"]``).
Seeds are odd — the evaluation half of :class:`pixelrl.gui_agent.pointer_env.SplitSeeds` — so no item
shares a layout with a training episode. Generation is deterministic: the same ``families``,
``count``, ``screen_size`` and ``start`` give the same items, pixel for pixel.

ScreenSpot's measure on it: the share of predicted points that lie inside the target box
(:func:`pixelrl.vision.rewards.point_in_box`), per family.

Run: ``python -m pixelrl.gui_agent.grounding --count 200 --out grounding.npz``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Families whose first expert step is a click on one named element.
GROUNDING_FAMILIES = ("click-button", "check-boxes", "choose-radio", "type-in-field", "fill-form")


@dataclass(frozen=True)
class GroundingItem:
    screenshot: np.ndarray  # uint8 H×W×3
    instruction: str
    bbox: tuple[int, int, int, int]  # [x0, y0, x1, y1), screen pixels
    family: str
    seed: int


def grounding_set(
    count: int = 100,
    families: Sequence[str] = GROUNDING_FAMILIES,
    screen_size: tuple[int, int] = (320, 240),
    start: int = 0,
    split: str = "eval",
) -> list[GroundingItem]:
    """``count`` items, families taken in turn, from the desktop family's ``k``-th seed of
    ``split`` (``"eval"``: ``2k + 1``, ``"train"``: ``2k``) for k = start, start+1, ...;
    screens whose expert does not click first are skipped."""
    from pixelrl.envs import task_family
    from pixelrl.envs.desktop import DesktopEnv, expert_action

    seeds = task_family("desktop").seeds
    seeds.seed(split, start)  # an unknown split is a ValueError before any env is made
    env_of = {f: DesktopEnv(f, screen_size=tuple(screen_size)) for f in families}
    items: list[GroundingItem] = []
    k = start
    while len(items) < count:
        family = families[(k - start) % len(families)]
        seed = seeds.seed(split, k)
        k += 1
        obs, info = env_of[family].reset(seed=seed)
        if info["target_bbox"] is None or expert_action(info).kind != "click":
            continue
        items.append(
            GroundingItem(
                obs["screenshot"], obs["instruction"], tuple(info["target_bbox"]), family, seed
            )
        )
        if k - start > 20 * count + 100:
            raise RuntimeError(f"families {list(families)} yield too few click-first screens")
    for env in env_of.values():
        env.close()
    return items


def save_grounding_set(items: Sequence[GroundingItem], path: str) -> None:
    """Write items to one ``.npz`` (screenshots stacked; text and numbers alongside)."""
    np.savez_compressed(
        path,
        screenshot=np.stack([i.screenshot for i in items]),
        instruction=np.array([i.instruction for i in items]),
        bbox=np.array([i.bbox for i in items], dtype=np.int64),
        family=np.array([i.family for i in items]),
        seed=np.array([i.seed for i in items], dtype=np.int64),
    )


def load_grounding_set(path: str) -> list[GroundingItem]:
    """Read a file written by :func:`save_grounding_set`."""
    with np.load(path) as data:
        missing = {"screenshot", "instruction", "bbox", "family", "seed"} - set(data.files)
        if missing:
            raise ValueError(f"{path}: not a grounding set (missing {sorted(missing)})")
        return [
            GroundingItem(s, str(i), tuple(int(v) for v in b), str(f), int(n))
            for s, i, b, f, n in zip(
                data["screenshot"], data["instruction"], data["bbox"], data["family"], data["seed"]
            )
        ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--families", nargs="+", default=list(GROUNDING_FAMILIES))
    p.add_argument("--screen-size", type=int, nargs=2, default=(320, 240))
    p.add_argument("--out", required=True, help="output .npz")
    args = p.parse_args(argv)
    items = grounding_set(args.count, args.families, tuple(args.screen_size))
    save_grounding_set(items, args.out)
    print(f"wrote {len(items)} grounding items to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
