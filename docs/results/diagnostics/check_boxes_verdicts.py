"""Why a pointer policy fails check-boxes: per-box verdicts and match-map separation.

On the first screen of held-out check-boxes seeds, a box reads as "to click" when its best cell
logit beats the submit button's; the verdict is right when that equals "named XOR checked".
Also, for each match map, how well its best value over a box's cells tells boxes the
instruction names from those it does not (AUC, and the share of screens where every named box
beats every unnamed one).

    python docs/results/diagnostics/check_boxes_verdicts.py RUN_DIR [SCREENS]
"""

from __future__ import annotations

import sys
from collections import defaultdict

import gymnasium as gym
import numpy as np
import torch

import pixelrl.envs  # noqa: F401  (registers pixelrl/Desktop-*)
from pixelrl.gui_agent.agents import PointerAgent
from pixelrl.gui_agent.pointer_bc import _grid_points_inside
from pixelrl.gui_agent.pointer_env import hash_words
from pixelrl.vision.image import resize


def main(run: str, screens: int = 300) -> None:
    torch.set_num_threads(1)
    agent = PointerAgent.from_checkpoint(run)
    policy, spec = agent.policy, agent.spec
    env = gym.make("pixelrl/Desktop-CheckBoxes-v0", screen_size=(320, 240))
    wrong_verdict: dict[tuple[str, str], list[bool]] = defaultdict(list)
    by_wanted: dict[int, list[bool]] = defaultdict(list)
    match_values: dict[bool, list[np.ndarray]] = {True: [], False: []}
    separated = []
    for k in range(screens):
        obs, info = env.reset(seed=2 * k + 1)
        task = env.unwrapped.task
        image, image_map = resize(obs["screenshot"], spec.image_size)
        words = hash_words(obs["instruction"], spec.max_words, spec.buckets)
        batch = {
            "image": torch.as_tensor(image[None]),
            "instruction": torch.as_tensor(words[None]),
        }
        with torch.no_grad():
            heads = policy.heads(batch)
        maps = heads["match"][0].flatten(1).numpy()  # (maps, cells), as the policy reads them
        logits = heads["cell"][0].numpy()

        def cells(element: dict, image_map=image_map) -> np.ndarray:
            return _grid_points_inside(element["bbox"], spec, image_map, 1)[:, 0]

        submit = next(
            e for e in info["a11y"] if e["role"] == "button" and e["name"] == task.submit.name
        )
        submit_logit = logits[cells(submit)].max()
        named_v, unnamed_v = [], []
        for e in info["a11y"]:
            if e["role"] != "checkbox":
                continue
            named, checked = e["name"] in task.wanted, e["state"]["checked"]
            wrong = (logits[cells(e)].max() > submit_logit) != (named != checked)
            key = ("named" if named else "unnamed", "checked" if checked else "unchecked")
            wrong_verdict[key].append(wrong)
            by_wanted[len(task.wanted)].append(wrong)
            value = maps[:, cells(e)].max(1)
            match_values[named].append(value)
            (named_v if named else unnamed_v).append(value)
        if named_v and unnamed_v:
            separated.append(np.min(named_v, 0) > np.max(unnamed_v, 0))
    print("per-box verdict errors (box vs submit logit):")
    for key in sorted(wrong_verdict):
        print(
            f"  {key[0]:8s} {key[1]:10s} n={len(wrong_verdict[key]):4d}  error {np.mean(wrong_verdict[key]):.3f}"
        )
    for n in sorted(by_wanted):
        print(
            f"  {n} names wanted      n={len(by_wanted[n]):4d}  error {np.mean(by_wanted[n]):.3f}"
        )
    named, unnamed = np.array(match_values[True]), np.array(match_values[False])
    print("match maps, named vs unnamed boxes:")
    for h in range(named.shape[1]):
        auc = (named[:, h][:, None] > unnamed[:, h][None, :]).mean()
        share = np.mean([s[h] for s in separated])
        print(f"  map {h}: AUC {auc:.3f}; screens fully separated {share:.3f}")
    env.close()


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
