"""Reading a dataset folder back: validation, steps, frames.

``EpisodeDataset(root)`` reads ``meta/info.json`` (a :class:`DatasetError` if it is missing or of
another schema version: nothing can be read then) and checks every episode the manifest lists.
An episode whose parquet file is truncated or of another schema version, or whose frames are
missing, is left out and reported in :attr:`EpisodeDataset.problems` (each names the episode and
the file) and in a warning; the rest of the dataset loads.
"""

from __future__ import annotations

import os
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.envs.recording import codec
from pixelrl.envs.recording.format import (
    MAX_EPISODE_BYTES,
    PARQUET_SCHEMA_KEY,
    SCHEMA_VERSION,
    DatasetError,
    EpisodeEntry,
    EpisodeProblem,
    Feature,
    episode_file,
    frame_path,
    read_info,
    read_manifest,
)
from pixelrl.envs.recording.writer import parquet_schema

REQUIRED_COLUMNS = (
    "episode_index",
    "frame_index",
    "seed",
    "action",
    "reward",
    "terminated",
    "truncated",
)


class EpisodeDataset:
    """A validated dataset folder.

    Attributes:
        info: the :class:`DatasetInfo` of ``meta/info.json``.
        episodes: manifest entries of the episodes that passed the checks, by episode index.
        problems: an :class:`EpisodeProblem` for each episode left out.
    """

    def __init__(self, root: str | os.PathLike, strict: bool = False, warn: bool = True) -> None:
        self.root = Path(root)
        self.info = read_info(self.root)
        entries, self.problems = read_manifest(self.root)
        self.episodes: dict[int, EpisodeEntry] = {}
        for entry in sorted(entries, key=lambda e: e.episode_index):
            problem = self._check_episode(entry)
            if problem is None:
                self.episodes[entry.episode_index] = entry
            else:
                self.problems.append(problem)
        if self.problems:
            message = f"{self.root}: {len(self.problems)} episode(s) left out:\n" + "\n".join(
                f"  {p}" for p in self.problems
            )
            if strict:
                raise DatasetError(message)
            if warn:
                warnings.warn(message, stacklevel=2)
        # Per-episode caches: random access to MP4/NPZ frames would decode a file per frame.
        self._read_steps = lru_cache(maxsize=8)(self._read_steps_uncached)
        self._read_stacked = lru_cache(maxsize=4)(self._read_stacked_uncached)

    def __len__(self) -> int:
        return len(self.episodes)

    @property
    def episode_indices(self) -> list[int]:
        return list(self.episodes)

    @property
    def num_steps(self) -> int:
        return sum(e.length for e in self.episodes.values())

    @property
    def screen_size(self) -> tuple[int, int] | None:
        """(W, H) of the first image key (GUI screenshots), or None."""
        for key in self.info.frame_keys:
            h, w = self.info.features[key].shape[:2]
            return w, h
        return None

    def data_files(self) -> list[str]:
        """The parquet files of the good episodes (what ``datasets.load_dataset`` should read)."""
        return [str(self.root / e.data_path) for e in self.episodes.values()]

    # -- checks -------------------------------------------------------------------------------
    def _check_episode(self, entry: EpisodeEntry) -> EpisodeProblem | None:
        import pyarrow.parquet as pq

        index = entry.episode_index
        path = self.root / entry.data_path

        def problem(where: Path | str, message: str) -> EpisodeProblem:
            return EpisodeProblem(index, str(where), message)

        if entry.schema_version != SCHEMA_VERSION:
            return problem(
                path, f"schema_version {entry.schema_version}, expected {SCHEMA_VERSION}"
            )
        if not path.exists():
            return problem(path, "data file missing")
        if not self._inside(path):
            return problem(path, f"leads outside {self.root} (a link)")
        try:
            meta = pq.ParquetFile(path)
            schema = meta.schema_arrow
        except Exception as e:  # pyarrow raises several types for a truncated/corrupt file
            return problem(path, f"unreadable parquet (truncated or corrupt): {e}")
        version = (schema.metadata or {}).get(PARQUET_SCHEMA_KEY)
        if version != str(SCHEMA_VERSION).encode():
            shown = version.decode() if version else "none"
            return problem(path, f"schema_version {shown}, expected {SCHEMA_VERSION}")
        missing = [c for c in REQUIRED_COLUMNS if c not in schema.names]
        missing += [
            f.column
            for f in self.info.features.values()
            if f.column and f.column not in schema.names
        ]
        if missing:
            return problem(path, f"missing column(s) {missing}")
        for want in parquet_schema(self.info):
            if want.name in schema.names and not schema.field(want.name).type.equals(want.type):
                got = schema.field(want.name).type
                return problem(path, f"column {want.name!r} is {got}, expected {want.type}")
        if meta.metadata.num_rows != entry.length:
            return problem(path, f"{meta.metadata.num_rows} rows, manifest says {entry.length}")
        stored = sum(meta.metadata.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if stored > MAX_EPISODE_BYTES:  # a small compressed file may hold gigabytes of rows
            return problem(
                path, f"{stored} bytes of rows uncompressed; at most {MAX_EPISODE_BYTES}"
            )
        try:
            ids = pq.read_table(path, columns=["episode_index", "frame_index"])
        except Exception as e:
            return problem(path, f"unreadable parquet (truncated or corrupt): {e}")
        if set(ids.column("episode_index").to_pylist()) - {index}:
            return problem(path, f"episode_index column does not hold {index} only")
        if ids.column("frame_index").to_pylist() != list(range(entry.length)):
            return problem(path, "frame_index is not 0, 1, ... in order")
        for f in self.info.features.values():
            found = self._check_frames(entry, f)
            if found is not None:
                return problem(*found)
        return None

    def _check_frames(self, entry: EpisodeEntry, f: Feature) -> tuple[Path, str] | None:
        frames = entry.length + 1
        if f.storage == "png":
            for t in range(frames):
                p = self.root / frame_path(f, entry.episode_index, t)
                if not p.is_file() or p.stat().st_size == 0:
                    return p, f"frame {t} of {frames} ({f.key}) missing"
                if not self._inside(p):
                    return p, f"leads outside {self.root} (a link)"
        elif f.storage in ("mp4", "npz"):
            p = self.root / episode_file(f, entry.episode_index)
            if not p.is_file():
                return p, f"{f.storage} file of {f.key} missing"
            if not self._inside(p):
                return p, f"leads outside {self.root} (a link)"
            if f.storage == "mp4":
                import cv2

                n = int(cv2.VideoCapture(str(p)).get(cv2.CAP_PROP_FRAME_COUNT))
                if n != frames:
                    return p, f"video has {n} frames, expected {frames}"
        return None

    def _inside(self, path: Path) -> bool:
        """Whether ``path`` stays in the folder once links are followed (a recording is read
        as data from anyone: a link must not make it show another file of this machine)."""
        return path.resolve().is_relative_to(self.root.resolve())

    # -- reading ------------------------------------------------------------------------------
    def _entry(self, episode: int) -> EpisodeEntry:
        try:
            return self.episodes[episode]
        except KeyError:
            bad = [str(p) for p in self.problems if p.episode_index == episode]
            why = f" (left out: {bad[0]})" if bad else ""
            raise KeyError(f"episode {episode} is not in {self.root}{why}") from None

    def _read_steps_uncached(self, episode: int):
        import pyarrow.parquet as pq

        return pq.read_table(self.root / self._entry(episode).data_path).to_pandas()

    def steps(self, episode: int):
        """The episode's rows as a pandas DataFrame (one row per step)."""
        return self._read_steps(episode)

    def to_pandas(self):
        """Every good episode's rows in one DataFrame."""
        import pandas as pd

        frames = [self.steps(i) for i in self.episodes]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def frame(self, episode: int, frame: int, key: str | None = None) -> np.ndarray:
        """Frame ``frame`` (0..length) of an image or array key (default: the first image key)."""
        f = self._feature(key)
        entry = self._entry(episode)
        if not 0 <= frame <= entry.length:
            raise IndexError(f"episode {episode} has frames 0..{entry.length}, asked for {frame}")
        if f.storage == "png":
            return _read_png(self.root / frame_path(f, episode, frame), f.shape)
        return self.frames(episode, f.key)[frame]

    def frames(self, episode: int, key: str | None = None) -> np.ndarray:
        """All ``length + 1`` frames of an image or array key, stacked (a :class:`DatasetError`,
        before anything is decoded, when they would take more than ``MAX_EPISODE_BYTES``)."""
        f = self._feature(key)
        entry = self._entry(episode)
        size = (entry.length + 1) * f.decoded_bytes
        if size > MAX_EPISODE_BYTES:
            raise DatasetError(
                f"{self.root}: episode {episode}'s {entry.length + 1} frames of {f.key} "
                f"({'x'.join(map(str, f.shape))}) would take {size / 2**30:.1f} GiB; "
                f"at most {MAX_EPISODE_BYTES / 2**30:.0f} GiB are read at once"
            )
        if f.storage == "png":
            return np.stack([self.frame(episode, t, f.key) for t in range(entry.length + 1)])
        return self._read_stacked(episode, f.key)

    def _read_stacked_uncached(self, episode: int, key: str) -> np.ndarray:
        f = self.info.features[key]
        path = self.root / episode_file(f, episode)
        frames = self._entry(episode).length + 1
        if f.storage == "npz":
            return _read_npz(path, f, frames)
        return _read_video(path, f.shape, frames)

    def _feature(self, key: str | None) -> Feature:
        if key is None:  # the first image key, else the first array (a depth-only dataset)
            keys = self.info.frame_keys or [
                k for k, f in self.info.features.items() if f.storage == "npz" and len(f.shape) >= 2
            ]
            if not keys:
                raise KeyError(f"{self.root} records no image observation")
            key = keys[0]
        f = self.info.features.get(key)
        if f is None or f.storage not in ("png", "mp4", "npz"):
            raise KeyError(f"{key!r} is not a frame key of {self.root}")
        return f

    def observation(self, episode: int, step: int) -> dict[str, Any]:
        """The observation before step ``step`` (frames and row columns)."""
        row = self.steps(episode).iloc[step]
        obs: dict[str, Any] = {}
        for key, f in self.info.features.items():
            if f.storage in ("png", "mp4", "npz"):
                obs[key] = self.frame(episode, step, key)
            elif f.storage == "text":
                obs[key] = row[f.column]
            else:
                obs[key] = np.asarray(row[f.column], dtype=f.dtype)
        return obs

    def actions(self, episode: int) -> list:
        """The episode's actions as ``env.step`` takes them (:class:`Action` for GUI)."""
        fmt, screen = self.info.action_format, self.screen_size
        return [codec.decode_action(v, fmt, screen) for v in self.steps(episode)["action"]]


def _read_png(path: Path, shape: list[int]) -> np.ndarray:
    """A PNG frame, its size and mode checked against the feature's shape before it is
    decoded (a small file may declare a huge picture); PNG only (no other decoder runs)."""
    from PIL import Image, UnidentifiedImageError

    mode = "RGB" if len(shape) == 3 and shape[2] == 3 else "L"
    try:
        with Image.open(path, formats=["PNG"]) as im:
            if im.size != (shape[1], shape[0]) or im.mode != mode:
                raise DatasetError(
                    f"{path}: a {im.size[0]}x{im.size[1]} {im.mode} picture; the dataset "
                    f"declares {shape[1]}x{shape[0]} {mode}"
                )
            image = np.asarray(im)
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError) as e:
        raise DatasetError(f"{path}: not a readable PNG frame: {e}") from None
    if len(shape) == 3 and image.ndim == 2:
        image = image[..., None]
    return image


def _read_npz(path: Path, f: Feature, frames: int) -> np.ndarray:
    """The stacked arrays of an npz feature, their header checked before anything is
    decompressed (shape and dtype as declared; no pickled objects)."""
    import zipfile

    want = (frames, *f.shape)
    try:
        with zipfile.ZipFile(path) as z, z.open("frames.npy") as member:
            major, _ = np.lib.format.read_magic(member)
            read_header = (
                np.lib.format.read_array_header_1_0
                if major == 1
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(member)
        if tuple(shape) != want or dtype != np.dtype(f.dtype):
            raise DatasetError(
                f"{path}: holds {dtype} {shape}; the dataset declares {f.dtype} {want}"
            )
        with np.load(path, allow_pickle=False) as z:
            return z["frames"]
    except DatasetError:
        raise
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
        raise DatasetError(f"{path}: not a readable npz of frames: {e}") from None


def _read_video(path: Path, shape: list[int], frames: int) -> np.ndarray:
    """The video's frames; its picture size checked before decoding, and no more frames
    read than the episode has."""
    import cv2

    capture = cv2.VideoCapture(str(path))
    try:
        size = (
            int(capture.get(cv2.CAP_PROP_FRAME_WIDTH)),
            int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT)),
        )
        if size != (shape[1], shape[0]):
            raise DatasetError(
                f"{path}: a {size[0]}x{size[1]} video; the dataset declares {shape[1]}x{shape[0]}"
            )
        out = []
        while len(out) < frames:
            ok, bgr = capture.read()
            if not ok:
                break
            rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
            if len(shape) == 2 or shape[-1] == 1:
                rgb = rgb[..., :1] if len(shape) == 3 else rgb[..., 0]
            out.append(rgb)
    finally:
        capture.release()
    if len(out) != frames:
        raise DatasetError(f"{path}: {len(out)} frames, expected {frames}")
    return np.stack(out)


def load_episodes(root: str | os.PathLike, strict: bool = False) -> EpisodeDataset:
    """Open and validate a dataset folder (see :class:`EpisodeDataset`)."""
    return EpisodeDataset(root, strict=strict)
