"""Recorded episodes as training data (SFT, behaviour cloning).

GUI datasets yield :class:`GUIStep` — ``(screenshot, instruction, action, action_text)``: the
screenshot seen before the step (uint8 H×W×3), the instruction, the :class:`pixelrl.envs.gui_action.Action`
taken and its pyautogui text. Navigation datasets yield :class:`NavEpisode` per episode —
``(frames, goal, action)``: each frame key stacked over the ``T`` steps, the point goal per step
and the ``T`` discrete actions — the sequences a recurrent (GRU) policy is cloned on.

- :class:`GUIStepDataset` / :class:`NavEpisodeDataset`: ``torch.utils.data.Dataset`` s (use
  :func:`collate_gui_steps` as the ``DataLoader``'s ``collate_fn``: Actions do not stack).
- :func:`load_hf_dataset`: the same rows through ``datasets.load_dataset("parquet", ...)`` with
  the frames and Actions decoded on access.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.utils.data import Dataset

from pixelrl.envs.gui_action import Action
from pixelrl.envs.recording import codec
from pixelrl.envs.recording.dataset import EpisodeDataset

GOAL_KEYS = ("pointgoal_with_gps_compass", "pointgoal", "objectgoal")


class GUIStep(NamedTuple):
    screenshot: np.ndarray
    instruction: str
    action: Action | None  # None where the agent's text was not a valid action
    action_text: str


class NavEpisode(NamedTuple):
    frames: dict[str, np.ndarray]
    goal: np.ndarray
    action: np.ndarray


def _open(root: str | os.PathLike | EpisodeDataset) -> EpisodeDataset:
    return root if isinstance(root, EpisodeDataset) else EpisodeDataset(root)


class GUIStepDataset(Dataset):
    """Every step of a GUI dataset's good episodes as a :class:`GUIStep`.

    ``skip_invalid`` leaves out steps whose action text was not a valid action (an agent's
    format error), which a behaviour-cloning target should not teach.
    """

    def __init__(self, root: str | os.PathLike | EpisodeDataset, skip_invalid: bool = True) -> None:
        self.dataset = _open(root)
        if not self.dataset.info.is_gui:
            raise ValueError(
                f"{self.dataset.root} is not a GUI dataset (actions are {self.dataset.info.action_format})"
            )
        self._index: list[tuple[int, int]] = []
        self._rows: dict[int, Any] = {}
        screen = self.dataset.screen_size
        for e in self.dataset.episodes:
            rows = self.dataset.steps(e)
            self._rows[e] = (
                rows[["action", "instruction"]] if "instruction" in rows else rows[["action"]]
            )
            for t, text in enumerate(rows["action"]):
                if skip_invalid and codec.action_as_gui(text, screen) is None:
                    continue
                self._index.append((e, t))

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, i: int) -> GUIStep:
        episode, t = self._index[i]
        row = self._rows[episode].iloc[t]
        text = str(row["action"])
        return GUIStep(
            screenshot=self.dataset.frame(episode, t),
            instruction=str(row.get("instruction", "")),
            action=codec.action_as_gui(text, self.dataset.screen_size),
            action_text=text,
        )


def collate_gui_steps(batch: list[GUIStep]) -> dict[str, Any]:
    """Screenshots stacked into a uint8 tensor (B, H, W, 3); the rest as lists."""
    return {
        "screenshot": torch.from_numpy(np.stack([s.screenshot for s in batch])),
        "instruction": [s.instruction for s in batch],
        "action": [s.action for s in batch],
        "action_text": [s.action_text for s in batch],
    }


class NavEpisodeDataset(Dataset):
    """Each good episode of a navigation dataset as a :class:`NavEpisode` of ``T`` steps."""

    def __init__(self, root: str | os.PathLike | EpisodeDataset) -> None:
        self.dataset = _open(root)
        if self.dataset.info.action_format != "discrete":
            raise ValueError(
                f"{self.dataset.root} has {self.dataset.info.action_format} actions, not discrete"
            )
        self.goal_feature = next(
            (self.dataset.info.features[k] for k in GOAL_KEYS if k in self.dataset.info.features),
            None,
        )
        self.episodes = list(self.dataset.episodes)

    def __len__(self) -> int:
        return len(self.episodes)

    def __getitem__(self, i: int) -> NavEpisode:
        e = self.episodes[i]
        rows = self.dataset.steps(e)
        T = len(rows)
        info = self.dataset.info
        frames = {
            k: self.dataset.frames(e, k)[:T]
            for k, f in info.features.items()
            if f.storage in ("png", "mp4", "npz")
        }
        if self.goal_feature is not None:
            goal = np.stack(
                [np.asarray(v, dtype=np.float32) for v in rows[self.goal_feature.column]]
            )
        else:
            goal = np.zeros((T, 0), np.float32)
        return NavEpisode(frames, goal, rows["action"].to_numpy(dtype=np.int64))


def load_hf_dataset(
    root: str | os.PathLike | EpisodeDataset, split: str = "train", cache_dir: str | None = None
):
    """The dataset's rows via ``datasets.load_dataset("parquet", ...)`` (good episodes only).

    GUI rows come out with ``screenshot`` (PIL image), ``instruction``, ``action``
    (:class:`Action` or None) and ``action_text``; navigation rows with one array per frame key,
    ``goal`` and ``action``. Frames are read when a row is accessed (``set_transform``).
    """
    import datasets
    from PIL import Image

    dataset = _open(root)
    files = dataset.data_files()
    if not files:
        raise ValueError(f"{dataset.root} has no loadable episode")
    hf = datasets.load_dataset(
        "parquet", data_files={split: files}, split=split, cache_dir=cache_dir
    )
    info = dataset.info
    screen = dataset.screen_size
    frame_keys = [k for k, f in info.features.items() if f.storage in ("png", "mp4", "npz")]
    goal_col = next((info.features[k].column for k in GOAL_KEYS if k in info.features), None)

    def decode(batch: dict[str, list]) -> dict[str, list]:
        pairs = list(zip(batch["episode_index"], batch["frame_index"]))
        if info.is_gui:
            return {
                "screenshot": [Image.fromarray(dataset.frame(e, t)) for e, t in pairs],
                "instruction": batch.get("instruction", [""] * len(pairs)),
                "action": [codec.action_as_gui(a, screen) for a in batch["action"]],
                "action_text": list(batch["action"]),
                "episode_index": batch["episode_index"],
                "frame_index": batch["frame_index"],
            }
        out = {k: [dataset.frame(e, t, k) for e, t in pairs] for k in frame_keys}
        out["goal"] = batch[goal_col] if goal_col else [[] for _ in pairs]
        out["action"] = batch["action"]
        out["episode_index"] = batch["episode_index"]
        out["frame_index"] = batch["frame_index"]
        return out

    hf.set_transform(decode)
    return hf
