"""Behaviour cloning of the pixel pointer policy from the scripted expert (a warm start for PPO).

:func:`expert_samples` plays the desktop expert in :class:`~gui_agent.pointer_env.PointerEnv`
and keeps each step's observation with the expert's action encoded as the policy's
``MultiDiscrete`` sample (:func:`~gui_agent.pointer_env.encode_action`; steps the spec cannot
express are skipped and the expert's action is played anyway) and the grid cells inside the
target's box. :func:`behaviour_clone` then minimises the negative log-likelihood of the expert's
kind, text and key, and of clicking anywhere in the target box
(:meth:`PointerPolicy.box_log_likelihood`): any in-box point (cell and sub-cell offset) is as
right as the expert's centre.

``pixelrl train gui/ppo policy.init=PATH`` starts PPO from a saved state dict.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def expert_samples(env, count: int, seed: int = 0, progress: bool = False) -> dict[str, np.ndarray]:
    """``count`` (observation, expert sample) pairs from a :class:`PointerEnv` (training seeds)."""
    from tqdm import tqdm

    from gui_agent.pointer_env import encode_action

    images, words, actions, masks = [], [], [], []
    obs, info = env.reset(seed=seed)
    bar = tqdm(total=count, desc="expert samples", disable=not progress)
    while len(actions) < count:
        expert = env.unwrapped.expert_action()
        sample = encode_action(expert, env.pointer_spec, env.image_map)
        if sample is not None:
            images.append(obs["image"])
            words.append(obs["instruction"])
            actions.append(sample)
            masks.append(
                box_points(info.get("target_bbox"), sample, env.pointer_spec, env.image_map)
            )
            bar.update(1)
        obs, _, terminated, truncated, info = env.step_action(expert)
        if terminated or truncated:
            obs, info = env.reset()
    bar.close()
    return {"image": np.stack(images), "instruction": np.stack(words), "action": np.stack(actions),
            "point_mask": np.stack(masks)}  # fmt: skip


def box_points(bbox, sample: np.ndarray, spec, image_map) -> np.ndarray:
    """Bool (cells, S²): the pointer's points (cell, sub-cell offset; see
    :meth:`PointerSpec.image_point`) that lie in the screen box ``bbox``, always including the
    sample's own point (a box smaller than a sub-cell still has one)."""
    cols, rows = spec.grid
    mask = np.zeros((spec.num_cells, spec.offsets**2), dtype=bool)
    if bbox is not None:
        x0, y0, x1, y1 = image_map.box_to_image(np.asarray(bbox, dtype=np.float64))
        fractions = (np.arange(spec.offsets) + 0.5) / spec.offsets
        xs = ((np.arange(cols)[:, None] + fractions[None]) * spec.cell).reshape(-1)  # col, ox
        ys = ((np.arange(rows)[:, None] + fractions[None]) * spec.cell).reshape(-1)  # row, oy
        inside = ((ys >= y0) & (ys < y1))[:, None] & ((xs >= x0) & (xs < x1))[None, :]
        # (row, oy, col, ox) -> (row, col, oy, ox): cell-major, offsets row-major inside a cell
        s = spec.offsets
        mask = inside.reshape(rows, s, cols, s).transpose(0, 2, 1, 3).reshape(spec.num_cells, -1)
    mask[int(sample[1]), int(sample[2])] = True
    return mask


def behaviour_clone(
    policy,
    data: dict[str, np.ndarray],
    steps: int = 500,
    batch_size: int = 64,
    lr: float = 1e-3,
    seed: int = 0,
    progress: bool = False,
) -> list[float]:
    """Adam on the negative log-likelihood of the expert samples; returns the loss per step.

    The learning rate follows a cosine from ``lr`` down to 0 over ``steps`` (the last steps
    settle the heatmap on the target instead of jittering around it at full rate).
    """
    import torch
    from tqdm import tqdm

    gen = np.random.default_rng(seed)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(1, steps))
    policy.train()
    losses: list[float] = []
    n = len(data["action"])
    for _ in tqdm(range(steps), desc="behaviour cloning", disable=not progress):
        idx = gen.choice(n, min(batch_size, n), replace=False)
        obs = {k: torch.as_tensor(data[k][idx]) for k in ("image", "instruction")}
        actions = torch.as_tensor(data["action"][idx])
        mask = torch.as_tensor(data["point_mask"][idx])
        loss = -policy.box_log_likelihood(obs, actions, mask).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()
        schedule.step()
        losses.append(float(loss.detach()))
    return losses


def accuracy(policy, data: dict[str, np.ndarray], batch_size: int = 64) -> dict[str, Any]:
    """Share of samples where the policy's most likely kind matches the expert's, and where
    both kind and point do (``cell``: the greedy point lies in the target box)."""
    import torch

    policy.eval()
    kind_ok, cell_ok = [], []
    with torch.no_grad():
        for s in range(0, len(data["action"]), batch_size):
            obs = {
                k: torch.as_tensor(data[k][s : s + batch_size]) for k in ("image", "instruction")
            }
            pred = policy.act(obs, {}, deterministic=True).actions.numpy()
            want = data["action"][s : s + batch_size]
            in_box = data["point_mask"][s : s + batch_size][
                np.arange(len(pred)), pred[:, 1], pred[:, 2]
            ]
            kind_ok.extend(pred[:, 0] == want[:, 0])
            cell_ok.extend((pred[:, 0] == want[:, 0]) & in_box)
    return {"kind": float(np.mean(kind_ok)), "cell": float(np.mean(cell_ok))}
