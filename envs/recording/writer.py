"""Writing episodes into a dataset folder, one finished episode at a time, crash-safely.

:class:`DatasetWriter` owns a folder (see :mod:`pixelrl.envs.recording.format`); each
:meth:`DatasetWriter.begin_episode` returns an :class:`EpisodeRecorder` that streams frames into
``.staging/<token>/`` while the episode runs. :meth:`EpisodeRecorder.finish` then, in order,
moves the frames into place, writes the parquet file (temp + ``os.replace``) and rewrites the
manifest (temp + ``os.replace``). Episode indices are handed out at finish, so they stay
contiguous even when several episodes (a vector env) run at once or a run is killed.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.envs.recording import codec
from pixelrl.envs.recording.format import (
    PARQUET_SCHEMA_KEY,
    SCHEMA_VERSION,
    DatasetError,
    DatasetInfo,
    EpisodeEntry,
    Feature,
    data_path,
    episode_file,
    frame_path,
    read_info,
    read_manifest,
    temp_path_for,
    write_info,
    write_manifest,
)

STAGING_DIR = ".staging"
LOCK_PATH = "meta/.writer.lock"


def parquet_schema(info: DatasetInfo):
    """The Arrow schema every data file of the dataset shares (so ``datasets`` can concatenate)."""
    import pyarrow as pa

    action_type = pa.int64() if info.action_format == "discrete" else pa.string()
    fields = [
        pa.field("episode_index", pa.int64()),
        pa.field("frame_index", pa.int64()),
        pa.field("timestamp", pa.float32()),
        pa.field("seed", pa.int64()),
        pa.field("action", action_type),
        pa.field("reward", pa.float64()),
        pa.field("terminated", pa.bool_()),
        pa.field("truncated", pa.bool_()),
    ]
    for f in info.features.values():
        if f.storage == "text":
            fields.append(pa.field(f.column, pa.string()))
        elif f.storage == "column":
            scalar = pa.from_numpy_dtype(np.dtype(f.dtype))
            fields.append(pa.field(f.column, pa.list_(scalar) if f.shape else scalar))
    fields += [
        pa.field("target_bbox", pa.list_(pa.int64())),
        pa.field("success", pa.bool_()),
        pa.field("info", pa.string()),
    ]
    return pa.schema(fields, metadata={PARQUET_SCHEMA_KEY: str(SCHEMA_VERSION).encode()})


class DatasetWriter:
    """Appends finished episodes to the dataset at ``root``.

    ``png_workers`` threads encode PNG frames in the background (0: encode inline).

    A new folder gets ``meta/info.json`` from ``info``. An existing dataset is appended to only
    with ``resume=True``, and only if it records the same env, kwargs and features; leftovers of
    episodes that a killed run never finished are removed.
    """

    def __init__(
        self,
        root: str | os.PathLike,
        info: DatasetInfo,
        resume: bool = False,
        png_compress_level: int = 1,
        fsync: bool = False,
        png_workers: int = 2,
    ) -> None:
        self.root = Path(root)
        self.png_compress_level = png_compress_level
        self.fsync = fsync
        self._lock = threading.Lock()
        # PNG encoding (~25 ms for 1280x800) releases the GIL: threads overlap it with stepping.
        self._pool = ThreadPoolExecutor(png_workers, "png") if png_workers > 0 else None
        self._lock_file = None
        if (self.root / "meta" / "info.json").exists():
            if not resume:
                raise DatasetError(
                    f"{self.root} already holds a dataset; pass resume=True (--resume) to append "
                    "to it, or choose another folder"
                )
            existing = read_info(self.root)
            _check_same(existing, info, self.root)
            self._take_lock()
            self.info = existing
            self.entries, problems = read_manifest(self.root)
            if problems:
                raise DatasetError(
                    "cannot resume: the manifest has bad lines: " + "; ".join(map(str, problems))
                )
        else:
            if self.root.exists() and any(self.root.iterdir()):
                raise DatasetError(f"{self.root} exists and is not an empty folder nor a dataset")
            self._take_lock()
            self.info = info
            write_info(self.root, info)
            self.entries = []
        shutil.rmtree(self.root / STAGING_DIR, ignore_errors=True)
        self.schema = parquet_schema(self.info)

    def _take_lock(self) -> None:
        """One writer per folder: a second would clear the first's staged frames and race on
        the manifest. The OS drops the lock when the process ends, even by SIGKILL."""
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            return
        path = self.root / LOCK_PATH
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(path, "a")  # noqa: SIM115  (held open while recording)
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            self._lock_file = None
            raise DatasetError(
                f"another process is recording into {self.root} ({LOCK_PATH} is locked)"
            ) from None

    def close(self) -> None:
        """Finish background frame writes and release the folder (episodes in progress are
        the caller's: finish or discard them first)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        if self._lock_file is not None:
            self._lock_file.close()  # releases the flock
            self._lock_file = None

    @property
    def next_episode_index(self) -> int:
        return max((e.episode_index for e in self.entries), default=-1) + 1

    def begin_episode(
        self,
        observation: Any,
        seed: int | None,
        options: dict | None = None,
        info: dict | None = None,
    ) -> EpisodeRecorder:
        """Start recording an episode at its first observation (what ``reset`` returned)."""
        return EpisodeRecorder(self, observation, seed, options, info or {})

    def _commit(self, recorder: EpisodeRecorder) -> EpisodeEntry:
        """Move a finished episode into place and list it in the manifest (under a lock:
        vector envs finish episodes from one thread, async users may not)."""
        with self._lock:
            index = self.next_episode_index
            recorder._place_files(index)
            relpath = data_path(index)
            _write_parquet(self.root / relpath, recorder._rows(index), self.schema, self.fsync)
            entry = EpisodeEntry(
                episode_index=index,
                length=recorder.length,
                seed=recorder.seed,
                options=recorder.options,
                data_path=relpath,
                total_reward=float(sum(recorder.rewards)),
                success=recorder.success,
                extra=recorder.extra,
            )
            self.entries.append(entry)
            write_manifest(self.root, self.entries, fsync=self.fsync)
            return entry


def _check_same(existing: DatasetInfo, new: DatasetInfo, root: Path) -> None:
    for name in ("env_id", "env_kwargs", "action_format"):
        a, b = getattr(existing, name), getattr(new, name)
        if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
            raise DatasetError(f"cannot resume {root}: it records {name}={a!r}, this run has {b!r}")
    old = {k: (f.storage, f.dtype, f.shape) for k, f in existing.features.items()}
    new_ = {k: (f.storage, f.dtype, f.shape) for k, f in new.features.items()}
    if old != new_:
        raise DatasetError(
            f"cannot resume {root}: its features {old} differ from this run's {new_}"
        )


def _write_parquet(path: Path, rows: dict[str, list], schema, fsync: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(rows, schema=schema)
    tmp = temp_path_for(path)
    try:
        pq.write_table(table, tmp)
        if fsync:
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class EpisodeRecorder:
    """One episode being recorded: frames go to a staging folder as they come, rows stay in
    memory until :meth:`finish`. Drop an episode with :meth:`discard`."""

    def __init__(self, writer: DatasetWriter, observation, seed, options, info) -> None:
        self.writer = writer
        self.info = writer.info
        self.seed = None if seed is None else int(seed)
        self.options = codec.to_builtin(options) if options else None
        self.staging = writer.root / STAGING_DIR / uuid.uuid4().hex
        self.staging.mkdir(parents=True)
        self.length = 0
        self.rewards: list[float] = []
        self.success: bool | None = None
        self.extra: dict[str, Any] = {}
        self.finished = False
        self._columns: dict[str, list] = {
            k: []
            for k in (
                "action",
                "reward",
                "terminated",
                "truncated",
                "target_bbox",
                "success",
                "info",
            )
        }
        self._obs_columns: dict[str, list] = {
            f.column: [] for f in self.info.features.values() if f.storage in ("column", "text")
        }
        self._arrays: dict[str, list[np.ndarray]] = {
            k: [] for k, f in self.info.features.items() if f.storage == "npz"
        }
        self._videos: dict[str, Any] = {}
        self._saving: list[Future] = []
        self._pending_obs = codec.split_observation(observation, self.info.features)
        self._pending_bbox = codec.target_bbox(info)
        self._save_frames(self._pending_obs, 0)

    # -- streaming ----------------------------------------------------------------------------
    def aim(self, box) -> None:
        """The box the next action aims at, where the observation's ``info`` did not say (an
        expert that knows its target, e.g. the MiniWoB++ oracle): kept with the next row."""
        if self._pending_bbox is None:
            self._pending_bbox = codec.target_bbox({"target_bbox": box})

    def add_step(
        self,
        stored_action: str | int,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
        next_observation: Any,
        info_keys: list[str] | None = None,
    ) -> None:
        """Record one ``env.step``: the action (as stored, see :func:`codec.encode_action`),
        what it returned, and the observation it led to."""
        if self.finished:
            raise RuntimeError("this episode is finished; begin a new one")
        obs = self._pending_obs
        for f in self.info.features.values():
            if f.storage in ("column", "text"):
                value = obs[f.key]
                self._obs_columns[f.column].append(
                    str(value) if f.storage == "text" else codec.to_builtin(np.asarray(value))
                )
        c = self._columns
        c["action"].append(stored_action)
        c["reward"].append(float(reward))
        c["terminated"].append(bool(terminated))
        c["truncated"].append(bool(truncated))
        c["target_bbox"].append(self._pending_bbox)
        c["success"].append(codec.success(info))
        c["info"].append(json.dumps(codec.jsonable(info, info_keys)))
        self.rewards.append(float(reward))
        self.success = codec.success(info)
        self.length += 1
        self._pending_obs = codec.split_observation(next_observation, self.info.features)
        self._pending_bbox = codec.target_bbox(info)
        self._save_frames(self._pending_obs, self.length)

    def _save_frames(self, obs: dict[str, Any], frame: int) -> None:
        from PIL import Image

        for key, f in self.info.features.items():
            if f.storage == "png":
                image = np.asarray(obs[key], dtype=np.uint8)
                if image.ndim == 3 and image.shape[-1] == 1:
                    image = image[..., 0]
                out = self.staging / key / f"frame_{frame:06d}.png"
                out.parent.mkdir(exist_ok=True)
                picture = Image.fromarray(image.copy())  # the env may reuse its buffer
                level = self.writer.png_compress_level
                if self.writer._pool is None:
                    picture.save(out, compress_level=level)
                else:
                    self._saving.append(
                        self.writer._pool.submit(picture.save, out, compress_level=level)
                    )
            elif f.storage == "mp4":
                self._video_frame(key, f, np.asarray(obs[key], dtype=np.uint8))
            elif f.storage == "npz":
                self._arrays[key].append(np.array(obs[key], dtype=f.dtype, copy=True))

    def _video_frame(self, key: str, f: Feature, image: np.ndarray) -> None:
        import cv2

        if key not in self._videos:
            height, width = image.shape[:2]
            path = self.staging / f"{key}.mp4"
            fourcc = cv2.VideoWriter_fourcc(*"mp4v")
            writer = cv2.VideoWriter(str(path), fourcc, float(self.info.fps), (width, height))
            if not writer.isOpened():
                raise RuntimeError(
                    f"OpenCV cannot write MP4 to {path}; record with frame_format='png'"
                )
            self._videos[key] = writer
        if image.ndim == 2 or image.shape[-1] == 1:
            image = np.repeat(image.reshape(image.shape[0], image.shape[1], 1), 3, axis=2)
        self._videos[key].write(cv2.cvtColor(image[..., :3], cv2.COLOR_RGB2BGR))

    # -- ending -------------------------------------------------------------------------------
    def finish(self) -> EpisodeEntry:
        """Write the episode into the dataset and list it in the manifest; returns its entry."""
        if self.finished:
            raise RuntimeError("episode already finished")
        self.finished = True
        for video in self._videos.values():
            video.release()
        try:
            for job in self._saving:
                job.result()  # every frame is on disk (or its error raised) before the commit
            return self.writer._commit(self)
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)

    def discard(self) -> None:
        """Drop an unfinished episode (its staged frames are deleted)."""
        self.finished = True
        for video in self._videos.values():
            video.release()
        for job in self._saving:
            job.exception()  # wait: a late write would recreate the folder
        shutil.rmtree(self.staging, ignore_errors=True)

    def _place_files(self, index: int) -> None:
        root = self.writer.root
        for key, f in self.info.features.items():
            if f.storage == "png":
                final = (root / frame_path(f, index, 0)).parent
                if final.exists():  # left by a run killed between placing and the manifest
                    shutil.rmtree(final)
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(self.staging / key, final)
            elif f.storage == "mp4":
                final = root / episode_file(f, index)
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(self.staging / f"{key}.mp4", final)
            elif f.storage == "npz":
                final = root / episode_file(f, index)
                tmp = temp_path_for(final)
                with open(tmp, "wb") as fh:
                    np.savez_compressed(fh, frames=np.stack(self._arrays[key]))
                os.replace(tmp, final)

    def _rows(self, index: int) -> dict[str, list]:
        n = self.length
        rows = {
            "episode_index": [index] * n,
            "frame_index": list(range(n)),
            "timestamp": [t / self.info.fps for t in range(n)],
            "seed": [self.seed] * n,
        }
        rows.update(
            {k: v for k, v in self._columns.items() if k not in ("target_bbox", "success", "info")}
        )
        rows.update(self._obs_columns)
        rows.update({k: self._columns[k] for k in ("target_bbox", "success", "info")})
        return rows
