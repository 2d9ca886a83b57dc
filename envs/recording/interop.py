"""Interop: export to a LeRobot v3-style layout; import OSWorld-style trajectories.

LeRobot v3 (``codebase_version: v3.0``) keeps many episodes per file::

    meta/info.json  meta/stats.json  meta/tasks.parquet
    meta/episodes/chunk-000/file-000.parquet          one row per episode (offsets into files)
    data/chunk-000/file-000.parquet                   every frame: index, episode_index, ...
    videos/observation.images.<key>/chunk-000/file-000.mp4   episodes back to back

GUI screenshots stay lossless: they go into the data parquet as PNG bytes (LeRobot's ``image``
dtype); camera frames go to concatenated MP4. The action becomes a float vector (LeRobot trains
on numbers): ``[kind, x, y, x2, y2, dx, dy]`` for GUI (with the pyautogui text alongside in
``action_text``), ``[a]`` for discrete actions.

OSWorld writes, per task, ``traj.jsonl`` (one line per step: ``step_num``, ``action`` —
pyautogui code or WAIT/DONE/FAIL — ``reward``, ``done``, ``screenshot_file``: the screen
*after* the step) and the screenshots. :func:`import_osworld` turns one such folder into a
pixelrl dataset episode, parsing the code with :func:`pixelrl.envs.gui_action.parse_actions` (never
executing it).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.envs.gui_action import KINDS, ActionError, parse_actions, to_pyautogui
from pixelrl.envs.recording.dataset import EpisodeDataset
from pixelrl.envs.recording.format import (
    MAX_EPISODE_BYTES,
    MAX_EPISODE_STEPS,
    MAX_FRAME_PIXELS,
    MAX_FRAME_SIDE,
    DatasetError,
    DatasetInfo,
    EpisodeEntry,
    Feature,
)
from pixelrl.envs.recording.writer import DatasetWriter

LEROBOT_VERSION = "v3.0"
GUI_ACTION_NAMES = ["kind", "x", "y", "x2", "y2", "dx", "dy"]


def _gui_vector(text: str, screen) -> list[float]:
    from pixelrl.envs.recording.codec import action_as_gui

    a = action_as_gui(text, screen)
    if a is None:
        return [-1.0] * len(GUI_ACTION_NAMES)
    return [
        float(KINDS.index(a.kind)),
        *(float(v or 0) for v in (a.x, a.y, a.x2, a.y2)),
        float(a.dx),
        float(a.dy),
    ]


def export_lerobot(
    root: str | os.PathLike, out: str | os.PathLike, task: str | None = None
) -> Path:
    """Write the good episodes of the dataset at ``root`` as a LeRobot v3-style dataset."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = EpisodeDataset(root)
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise DatasetError(f"{out} exists and is not empty")
    info = src.info
    gui = info.is_gui
    image_keys = [k for k, f in info.features.items() if f.storage == "png"]
    video_keys = [k for k, f in info.features.items() if f.storage == "mp4"]
    tasks: dict[str, int] = {}
    columns: dict[str, list] = {
        k: []
        for k in (
            "index",
            "episode_index",
            "frame_index",
            "timestamp",
            "task_index",
            "action",
            "next.reward",
            "next.done",
        )
    }
    if gui:
        columns["action_text"] = []
    for k in image_keys:
        columns[f"observation.images.{k}"] = []
    state_features = [f for f in info.features.values() if f.storage == "column"]
    for f in state_features:
        columns[f"observation.{f.key}"] = []
    episodes: dict[str, list] = {
        k: []
        for k in (
            "episode_index",
            "tasks",
            "length",
            "data/chunk_index",
            "data/file_index",
            "dataset_from_index",
            "dataset_to_index",
        )
    }
    video_writers: dict[str, Any] = {}
    video_time: dict[str, float] = {k: 0.0 for k in video_keys}
    for k in video_keys:
        episodes[f"videos/observation.images.{k}/chunk_index"] = []
        episodes[f"videos/observation.images.{k}/file_index"] = []
        episodes[f"videos/observation.images.{k}/from_timestamp"] = []
        episodes[f"videos/observation.images.{k}/to_timestamp"] = []
    index = 0
    for e in src.episodes:
        rows = src.steps(e)
        T = len(rows)
        text = task or (
            str(rows["instruction"].iloc[0])
            if "instruction" in rows and T
            else "navigate to the goal"
        )
        task_index = tasks.setdefault(text, len(tasks))
        for t in range(T):
            row = rows.iloc[t]
            columns["index"].append(index + t)
            columns["episode_index"].append(e)
            columns["frame_index"].append(t)
            columns["timestamp"].append(t / info.fps)
            columns["task_index"].append(task_index)
            columns["next.reward"].append(float(row["reward"]))
            columns["next.done"].append(bool(row["terminated"] or row["truncated"]))
            if gui:
                columns["action"].append(_gui_vector(row["action"], src.screen_size))
                columns["action_text"].append(str(row["action"]))
            else:
                columns["action"].append(
                    [float(row["action"])]
                    if info.action_format == "discrete"
                    else json.loads(row["action"])
                )
            for k in image_keys:
                buf = io.BytesIO()
                from PIL import Image

                Image.fromarray(src.frame(e, t, k).squeeze()).save(buf, format="PNG")
                columns[f"observation.images.{k}"].append({"bytes": buf.getvalue(), "path": None})
            for f in state_features:
                columns[f"observation.{f.key}"].append(
                    np.asarray(row[f.column], dtype=np.float32).reshape(-1).tolist()
                )
        for k in video_keys:
            frames = src.frames(e, k)[:T]
            video_writers.setdefault(
                k,
                _open_video(
                    out / f"videos/observation.images.{k}/chunk-000/file-000.mp4",
                    frames[0],
                    info.fps,
                ),
            )
            for frame in frames:
                video_writers[k].write(
                    np.ascontiguousarray(frame[..., :3][..., ::-1])
                    if frame.shape[-1] >= 3
                    else np.repeat(frame, 3, -1)
                )
            episodes[f"videos/observation.images.{k}/chunk_index"].append(0)
            episodes[f"videos/observation.images.{k}/file_index"].append(0)
            episodes[f"videos/observation.images.{k}/from_timestamp"].append(video_time[k])
            video_time[k] += T / info.fps
            episodes[f"videos/observation.images.{k}/to_timestamp"].append(video_time[k])
        episodes["episode_index"].append(e)
        episodes["tasks"].append([text])
        episodes["length"].append(T)
        episodes["data/chunk_index"].append(0)
        episodes["data/file_index"].append(0)
        episodes["dataset_from_index"].append(index)
        episodes["dataset_to_index"].append(index + T)
        index += T
    for w in video_writers.values():
        w.release()
    (out / "data/chunk-000").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), out / "data/chunk-000/file-000.parquet")
    (out / "meta/episodes/chunk-000").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(episodes), out / "meta/episodes/chunk-000/file-000.parquet")
    pq.write_table(
        pa.table({"task_index": list(tasks.values()), "task": list(tasks)}),
        out / "meta/tasks.parquet",
    )
    features = _lerobot_features(src, image_keys, video_keys, state_features)
    actions = (
        np.asarray(columns["action"], dtype=np.float64) if columns["action"] else np.zeros((0, 1))
    )
    stats = {"action": _stats(actions)} if len(actions) else {}
    (out / "meta/stats.json").write_text(json.dumps(stats, indent=2))
    meta = {
        "codebase_version": LEROBOT_VERSION,
        "robot_type": "gui" if gui else "navigation",
        "total_episodes": len(episodes["episode_index"]),
        "total_frames": index,
        "total_tasks": len(tasks),
        "chunks_size": 1000,
        "fps": info.fps,
        "splits": {"train": f"0:{len(episodes['episode_index'])}"},
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
        if video_keys
        else None,
        "features": features,
        "pixelrl": {"env_id": info.env_id, "env_kwargs": info.env_kwargs, "source": str(src.root)},
    }
    (out / "meta/info.json").write_text(json.dumps(meta, indent=2))
    return out


def _open_video(path: Path, first: np.ndarray, fps: float):
    import cv2

    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = first.shape[:2]
    return cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), float(fps), (w, h))


def _stats(x: np.ndarray) -> dict[str, list[float]]:
    return {
        "min": x.min(0).tolist(),
        "max": x.max(0).tolist(),
        "mean": x.mean(0).tolist(),
        "std": x.std(0).tolist(),
    }


def _lerobot_features(src: EpisodeDataset, image_keys, video_keys, state_features) -> dict:
    info = src.info
    feats: dict[str, Any] = {
        "index": {"dtype": "int64", "shape": [1], "names": None},
        "episode_index": {"dtype": "int64", "shape": [1], "names": None},
        "frame_index": {"dtype": "int64", "shape": [1], "names": None},
        "timestamp": {"dtype": "float32", "shape": [1], "names": None},
        "task_index": {"dtype": "int64", "shape": [1], "names": None},
        "next.reward": {"dtype": "float32", "shape": [1], "names": None},
        "next.done": {"dtype": "bool", "shape": [1], "names": None},
    }
    if info.is_gui:
        feats["action"] = {
            "dtype": "float32",
            "shape": [len(GUI_ACTION_NAMES)],
            "names": GUI_ACTION_NAMES,
        }
        feats["action_text"] = {"dtype": "string", "shape": [1], "names": None}
    else:
        feats["action"] = {"dtype": "float32", "shape": [1], "names": ["action"]}
    for k in image_keys:
        feats[f"observation.images.{k}"] = {
            "dtype": "image",
            "shape": info.features[k].shape,
            "names": ["height", "width", "channel"],
        }
    for k in video_keys:
        f = info.features[k]
        feats[f"observation.images.{k}"] = {
            "dtype": "video",
            "shape": f.shape,
            "names": ["height", "width", "channel"],
            "info": {"video.fps": info.fps, "video.codec": "mpeg4", "video.pix_fmt": "yuv420p"},
        }
    for f in state_features:
        feats[f"observation.{f.key}"] = {"dtype": "float32", "shape": f.shape or [1], "names": None}
    return feats


# -- OSWorld ------------------------------------------------------------------------------------
def _find_initial(folder: Path) -> Path | None:
    for pattern in ("initial_state*.png", "step_0_*.png", "step_0.png"):
        found = sorted(folder.glob(pattern))
        if found:
            return found[0]
    return None


def import_osworld(
    traj_dir: str | os.PathLike,
    out: str | os.PathLike,
    instruction: str = "",
    initial_screenshot: str | os.PathLike | None = None,
    resume: bool = True,
) -> EpisodeEntry:
    """Append one OSWorld-style trajectory folder to the pixelrl dataset at ``out``.

    Each step's pyautogui code may hold several actions; each becomes a row with the
    screenshot seen before that step. Text that does not parse is kept verbatim (loaders yield
    ``action=None`` for it). The screen before the first step is ``initial_screenshot`` or a
    ``initial_state*.png`` / ``step_0_*.png`` in the folder; without one the import fails.
    """
    from PIL import Image

    folder = Path(traj_dir)
    traj = folder / "traj.jsonl"
    if not traj.is_file():
        raise DatasetError(f"{traj}: not found (an OSWorld result folder has traj.jsonl)")
    steps = []
    for n, line in enumerate(traj.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            steps.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise DatasetError(f"{traj}:{n}: not JSON: {e}") from None
    if len(steps) > MAX_EPISODE_STEPS:
        raise DatasetError(f"{traj}: {len(steps)} steps; at most {MAX_EPISODE_STEPS}")
    for n, s in enumerate(steps, start=1):
        if not isinstance(s, dict):
            raise DatasetError(f"{traj}: step {n} is not a JSON object")
        for key in ("action", "screenshot_file"):
            if key not in s:
                raise DatasetError(f"{traj}: step {n} lacks {key!r}")
        if not isinstance(s["screenshot_file"], str):
            raise DatasetError(f"{traj}: step {n}'s screenshot_file is not a file name")
    first = Path(initial_screenshot) if initial_screenshot else _find_initial(folder)
    if first is None or not first.is_file():
        raise DatasetError(
            f"{folder}: no screenshot of the screen before the first step; pass initial_screenshot "
            "(OSWorld saves only screens after each step)"
        )
    # The trajectory is data from anyone: its screenshots are files of its folder, PNG or
    # JPEG of one bounded size, checked before any is decoded.
    paths = [first] + [_inside(folder, s["screenshot_file"], traj) for s in steps]
    w, h = _screen_size(paths[0])
    for path in paths[1:]:
        if _screen_size(path) != (w, h):
            raise DatasetError(f"{path}: a {_screen_size(path)} screenshot; the first is {(w, h)}")
    if len(paths) * w * h * 3 > MAX_EPISODE_BYTES:
        raise DatasetError(
            f"{traj}: {len(paths)} screenshots of {w}x{h} would take more than "
            f"{MAX_EPISODE_BYTES / 2**30:.0f} GiB"
        )

    def load(path: Path) -> np.ndarray:
        with Image.open(path, formats=SCREENSHOT_FORMATS) as im:
            return np.asarray(im.convert("RGB"))

    screens = [load(path) for path in paths]
    info = DatasetInfo(
        env_id=None,
        env_kwargs={},
        fps=1.0,
        features={
            "instruction": Feature("instruction", "text", "string", [], column="instruction"),
            "screenshot": Feature(
                "screenshot",
                "png",
                "uint8",
                [h, w, 3],
                path="frames/episode_{episode:06d}/frame_{frame:06d}.png",
            ),
        },
        action_format="pyautogui",
        extra={"source": "osworld"},
    )
    writer = DatasetWriter(out, info, resume=resume)
    try:
        return _write_osworld_episode(writer, steps, screens, instruction, w, h, traj)
    finally:
        writer.close()


SCREENSHOT_FORMATS = ["PNG", "JPEG"]


def _inside(folder: Path, name: str, traj: Path) -> Path:
    """``folder / name``, an existing file that stays inside ``folder`` (links followed)."""
    path = folder / name
    if not path.resolve().is_relative_to(folder.resolve()):
        raise DatasetError(f"{traj}: screenshot_file {name[:100]!r} is outside {folder}")
    if not path.is_file():
        raise DatasetError(f"{path}: screenshot missing")
    return path


def _screen_size(path: Path) -> tuple[int, int]:
    """(W, H) of a PNG or JPEG screenshot from its header; a :class:`DatasetError` for another
    format or a picture larger than a frame may be."""
    import warnings

    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():  # Pillow's bomb warning: the check below says more
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path, formats=SCREENSHOT_FORMATS) as im:
                w, h = im.size
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError) as e:
        raise DatasetError(f"{path}: not a PNG or JPEG screenshot: {e}") from None
    if max(w, h) > MAX_FRAME_SIDE or w * h > MAX_FRAME_PIXELS:
        raise DatasetError(
            f"{path}: {w}x{h} is larger than a frame may be ({MAX_FRAME_SIDE} px a side, "
            f"{MAX_FRAME_PIXELS} pixels)"
        )
    return w, h


def _write_osworld_episode(writer, steps, screens, instruction, w, h, traj) -> EpisodeEntry:
    """One row per parsed action; all actions of an OSWorld step see the screen before it."""
    rows: list[tuple[str, int]] = []  # (stored action text, index of the screen before it)
    for k, s in enumerate(steps):
        code = s["action"] if isinstance(s["action"], str) else json.dumps(s["action"])
        try:
            for a in parse_actions(code, (w, h)):
                rows.append((to_pyautogui(a), k))
        except ActionError:
            rows.append((code, k))
    if not rows:
        raise DatasetError(f"{traj}: no step")
    last_reward = float(steps[-1].get("reward", 0.0) or 0.0)
    episode = writer.begin_episode(
        {"screenshot": screens[0], "instruction": instruction}, None, None, {}
    )
    for i, (text, k) in enumerate(rows):
        last = i == len(rows) - 1
        after = screens[rows[i + 1][1]] if not last else screens[-1]
        reward = last_reward if last else 0.0
        info_after = (
            {"success": last_reward > 0, "osworld_step": k + 1} if last else {"osworld_step": k + 1}
        )
        episode.add_step(
            text,
            reward,
            last and bool(steps[-1].get("done", True)),
            False,
            info_after,
            {"screenshot": after, "instruction": instruction},
        )
    return episode.finish()
