"""The on-disk format of recorded episodes: one folder, whatever recorded it.

Layout (LeRobot-like, schema version :data:`SCHEMA_VERSION`)::

    DIR/
      meta/info.json               schema version, env id + kwargs, fps, features, path templates
      meta/episodes.jsonl          the manifest: one line per *finished* episode (updated last)
      data/chunk-000/episode_000000.parquet   one row per step (see below)
      frames/episode_000000/frame_000000.png  lossless frames of the first image key (GUI)
      frames/episode_000000/<key>/frame_000000.png   further image keys
      videos/<key>/episode_000000.mp4         image keys stored as video (navigation)
      arrays/<key>/episode_000000.npz         other large arrays (depth), exact

Rows: row ``t`` of an episode holds the observation *before* step ``t`` (its frame is
``frame_index = t``), the action taken, and what the step returned: ``reward``, ``terminated``,
``truncated``, ``success`` and the other JSON-able ``info`` entries. ``target_bbox`` belongs to
the observation of the row (the box the action should hit). An episode of ``T`` steps has
``T`` rows and ``T + 1`` frames: the last frame is the observation after the last step.

Columns: ``episode_index``, ``frame_index``, ``timestamp`` (frame_index / fps), ``seed`` (the
episode's reset seed), ``action`` (pyautogui text for GUI actions via
:func:`pixelrl.envs.gui_action.to_pyautogui`, an int for ``Discrete``, JSON text otherwise), ``reward``,
``terminated``, ``truncated``, ``instruction`` (GUI), ``observation.<key>`` for small vectors
(the navigation goal), ``target_bbox``, ``success``, ``info`` (JSON).

Crash safety: every file is written to a temporary name and moved into place with
:func:`os.replace`; an episode's frames and parquet file are complete before the manifest
names it, so a process killed at any moment leaves every listed episode readable.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
FORMAT_NAME = "pixelrl-episodes"
CHUNK_SIZE = 1000  # episodes per data/chunk-XXX folder, as in LeRobot

INFO_PATH = "meta/info.json"
MANIFEST_PATH = "meta/episodes.jsonl"
DATA_PATH = "data/chunk-{chunk:03d}/episode_{episode:06d}.parquet"
FIRST_FRAME_PATH = "frames/episode_{episode:06d}/frame_{frame:06d}.png"
FRAME_PATH = "frames/episode_{episode:06d}/{key}/frame_{frame:06d}.png"
VIDEO_PATH = "videos/{key}/episode_{episode:06d}.mp4"
ARRAY_PATH = "arrays/{key}/episode_{episode:06d}.npz"
# Parquet key-value metadata every data file carries, so a stray file says what it is.
PARQUET_SCHEMA_KEY = b"pixelrl.schema_version"

# Observation keys a GUI env calls its instruction; stored in the `instruction` column.
INSTRUCTION_KEY = "instruction"
# Vectors up to this many numbers go into a parquet column; larger arrays into arrays/*.npz.
MAX_COLUMN_SIZE = 64

# Limits a folder's own description must keep, checked before anything is read or decoded: a
# recording is data from anyone, and a few bytes of JSON must not claim gigabytes.
MAX_FRAME_SIDE = 8192  # pixels, either side of an image
MAX_FRAME_PIXELS = 4096 * 4096  # one frame (a 4K screen fits)
MAX_EPISODE_STEPS = 100_000  # rows of one episode
MAX_EPISODE_BYTES = 2 << 30  # decoded frames of one key of one episode, read at once
MAX_FPS = 1000.0
MAX_INFO_BYTES = 1 << 20  # meta/info.json
MAX_MANIFEST_BYTES = 256 << 20  # meta/episodes.jsonl (~1 M episodes)
ACTION_FORMATS = ("pyautogui", "discrete", "json")
STORAGES = ("png", "mp4", "npz", "column", "text")
# Observation keys name folders: the shape infer_features writes (letters, digits, _ and -).
KEY_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
# The only path templates a feature may carry, by storage: ours, so that filling one in with
# ints and a checked key can only name a file inside the folder.
PATH_TEMPLATES = {
    "png": (FIRST_FRAME_PATH, FRAME_PATH),
    "mp4": (VIDEO_PATH,),
    "npz": (ARRAY_PATH,),
    "column": ("",),
    "text": ("",),
}
ARRAY_DTYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "int64", "uint64",
                "float16", "float32", "float64", "bool")  # fmt: skip


class DatasetError(ValueError):
    """A dataset folder that cannot be read at all (no or bad ``meta/info.json``)."""


@dataclass(frozen=True)
class EpisodeProblem:
    """Why one episode was left out when loading: the file and episode it concerns."""

    episode_index: int | None
    path: str
    message: str

    def __str__(self) -> str:
        which = "" if self.episode_index is None else f"episode {self.episode_index}: "
        return f"{which}{self.path}: {self.message}"


@dataclass
class Feature:
    """How one observation key is stored.

    ``storage`` is ``"png"`` / ``"mp4"`` (uint8 images, one frame per row plus the last),
    ``"npz"`` (other arrays, stacked per episode), ``"column"`` (small vectors and numbers,
    in the row; the last observation is not kept) or ``"text"`` (strings, in the row).
    """

    key: str
    storage: str
    dtype: str
    shape: list[int]
    path: str = ""  # the path template for png/mp4/npz
    column: str = ""  # the parquet column for column/text

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", None) and k != "key"}

    @property
    def decoded_bytes(self) -> int:
        """Bytes of one decoded frame (or row value) of this key."""
        itemsize = 1 if self.storage == "text" else _dtype(self.dtype).itemsize
        return math.prod(self.shape) * itemsize

    def check(self) -> None:
        """Raise ValueError unless this feature has a shape our writer makes: a safe key, a
        known storage and dtype, a bounded shape and our own path template."""
        if not isinstance(self.key, str) or not KEY_PATTERN.fullmatch(self.key):
            raise ValueError("key: only 1-64 letters, digits, '_' and '-'")
        if self.storage not in STORAGES:
            raise ValueError(f"storage {self.storage!r} is not one of {', '.join(STORAGES)}")
        if self.path not in PATH_TEMPLATES[self.storage]:
            raise ValueError(
                f"path {self.path!r} is not the {self.storage} template "
                f"{' or '.join(repr(t) for t in PATH_TEMPLATES[self.storage])}"
            )
        if not isinstance(self.column, str) or len(self.column) > 100:
            raise ValueError("column: expected a name of at most 100 characters")
        if (self.storage in ("column", "text")) != bool(self.column):
            raise ValueError(
                f"a {self.storage} feature {'needs' if self.column else 'has'} a column"
            )
        if self.storage == "text":
            if self.dtype != "string" or self.shape != []:
                raise ValueError("a text feature has dtype 'string' and shape []")
            return
        if self.dtype not in ARRAY_DTYPES:
            raise ValueError(f"dtype {self.dtype!r} is not one of {', '.join(ARRAY_DTYPES)}")
        shape = self.shape
        if not isinstance(shape, list) or len(shape) > 4:
            raise ValueError(f"shape {shape!r}: expected a list of at most 4 sizes")
        if not all(type(n) is int and 1 <= n <= MAX_FRAME_SIDE for n in shape):
            raise ValueError(f"shape {shape}: each size an integer in 1..{MAX_FRAME_SIDE}")
        if self.storage in ("png", "mp4"):
            if self.dtype != "uint8" or not (
                len(shape) == 2 or (len(shape) == 3 and shape[2] in (1, 3))
            ):
                raise ValueError(
                    f"a {self.storage} image is uint8 HxW, HxWx1 or HxWx3, got {shape}"
                )
        pixels = math.prod(shape[:2]) if len(shape) >= 2 else math.prod(shape)
        if pixels > MAX_FRAME_PIXELS or math.prod(shape) > 4 * MAX_FRAME_PIXELS:
            raise ValueError(
                f"shape {shape} is larger than a frame may be ({MAX_FRAME_PIXELS} pixels)"
            )
        if self.storage == "column" and math.prod(shape) > MAX_COLUMN_SIZE:
            raise ValueError(f"a column holds at most {MAX_COLUMN_SIZE} numbers, shape {shape}")


def _dtype(name: str):
    import numpy as np

    return np.dtype(name)


@dataclass
class DatasetInfo:
    """What ``meta/info.json`` holds."""

    env_id: str | None
    env_kwargs: dict[str, Any]
    fps: float
    features: dict[str, Feature]
    action_format: str  # "pyautogui" (GUI Action), "discrete" (int) or "json"
    max_episode_steps: int | None = None
    codebase_version: str = "pixelrl-0.1"
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def frame_keys(self) -> list[str]:
        """Observation keys stored as one image per frame (png or mp4)."""
        return [k for k, f in self.features.items() if f.storage in ("png", "mp4")]

    @property
    def is_gui(self) -> bool:
        return self.action_format == "pyautogui"

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "schema_version": self.schema_version,
            "codebase_version": self.codebase_version,
            "env_id": self.env_id,
            "env_kwargs": self.env_kwargs,
            "max_episode_steps": self.max_episode_steps,
            "fps": self.fps,
            "action_format": self.action_format,
            "chunks_size": CHUNK_SIZE,
            "data_path": DATA_PATH,
            "features": {k: f.to_json() for k, f in self.features.items()},
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, raw: Any, where: str) -> DatasetInfo:
        """Parse and check ``info.json``; a :class:`DatasetError` names the file and field."""
        if not isinstance(raw, dict):
            raise DatasetError(f"{where}: expected a JSON object, got {type(raw).__name__}")
        if raw.get("format") != FORMAT_NAME:
            raise DatasetError(f"{where}: 'format' is {raw.get('format')!r}, not {FORMAT_NAME!r}")
        version = raw.get("schema_version")
        if version != SCHEMA_VERSION:
            raise DatasetError(
                f"{where}: schema_version is {version!r}; this pixelrl reads version "
                f"{SCHEMA_VERSION}"
            )
        for name, kind, what in (
            ("fps", (int, float), "a number"),
            ("features", (dict,), "an object"),
            ("action_format", (str,), "a string"),
            ("env_id", (str, type(None)), "a string or null"),
            ("env_kwargs", (dict, type(None)), "an object or null"),
            ("extra", (dict, type(None)), "an object or null"),
            ("max_episode_steps", (int, type(None)), "an integer or null"),
        ):
            if not _is(raw.get(name), kind):
                raise DatasetError(f"{where}: field {name!r} is missing or not {what}")
        fps = raw["fps"]
        if not (math.isfinite(fps) and 0 < fps <= MAX_FPS):
            raise DatasetError(f"{where}: fps must be in (0, {MAX_FPS:g}], got {fps!r}")
        if raw["action_format"] not in ACTION_FORMATS:
            raise DatasetError(
                f"{where}: action_format {raw['action_format']!r} is not one of "
                f"{', '.join(ACTION_FORMATS)}"
            )
        steps = raw.get("max_episode_steps")
        if steps is not None and steps < 1:
            raise DatasetError(f"{where}: max_episode_steps must be >= 1, got {steps}")
        features = {}
        for key, f in raw["features"].items():
            try:
                if not isinstance(f, dict):
                    raise TypeError(f"expected an object, got {type(f).__name__}")
                features[key] = Feature(key=key, **f)
                features[key].check()
            except (TypeError, ValueError) as e:
                raise DatasetError(f"{where}: feature {key[:64]!r}: {e}") from None
        return cls(
            env_id=raw.get("env_id"),
            env_kwargs=dict(raw.get("env_kwargs") or {}),
            fps=float(fps),
            features=features,
            action_format=raw["action_format"],
            max_episode_steps=steps,
            codebase_version=str(raw.get("codebase_version", "")),
            schema_version=version,
            extra=dict(raw.get("extra") or {}),
        )


@dataclass
class EpisodeEntry:
    """One manifest line: a finished episode."""

    episode_index: int
    length: int  # steps (= parquet rows); frames = length + 1
    seed: int | None
    options: dict[str, Any] | None
    data_path: str
    total_reward: float
    success: bool | None
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: Any) -> EpisodeEntry:
        """A manifest line, checked: a ValueError says which field is wrong."""
        if not isinstance(raw, dict):
            raise ValueError(f"expected an object, got {type(raw).__name__}")
        entry = cls(**raw)  # TypeError: a missing or unknown field
        kinds = {
            "episode_index": (int,),
            "length": (int,),
            "seed": (int, type(None)),
            "options": (dict, type(None)),
            "data_path": (str,),
            "total_reward": (int, float),
            "success": (bool, type(None)),
            "schema_version": (int,),
            "extra": (dict,),
        }
        for name, kind in kinds.items():
            if not _is(getattr(entry, name), kind):
                raise ValueError(f"field {name!r} is {getattr(entry, name)!r}")
        if not 0 <= entry.episode_index < 10**9:
            raise ValueError(f"episode_index {entry.episode_index} out of range")
        if not 0 <= entry.length <= MAX_EPISODE_STEPS:
            raise ValueError(f"length {entry.length} is not in 0..{MAX_EPISODE_STEPS}")
        if entry.data_path != data_path(entry.episode_index):
            # our own template only: an absolute or ../ path would read outside the folder
            raise ValueError(
                f"data_path {entry.data_path!r} is not {data_path(entry.episode_index)!r}"
            )
        return entry


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    """isinstance, where JSON's true/false is no number."""
    if isinstance(value, bool) and bool not in kinds:
        return False
    return isinstance(value, kinds)


def data_path(episode: int) -> str:
    return DATA_PATH.format(chunk=episode // CHUNK_SIZE, episode=episode)


def frame_path(feature: Feature, episode: int, frame: int) -> str:
    return _fill(feature, episode=int(episode), frame=int(frame))


def episode_file(feature: Feature, episode: int) -> str:
    """The per-episode file of an mp4 or npz feature."""
    return _fill(feature, episode=int(episode))


def _fill(feature: Feature, **numbers: int) -> str:
    # Only our own templates are filled in (a template is code for str.format: a field such as
    # {frame:>1500000000} or {key.__class__} would allocate or reach attributes).
    if feature.path not in PATH_TEMPLATES.get(feature.storage, ()) or not KEY_PATTERN.fullmatch(
        feature.key
    ):
        raise DatasetError(f"feature {feature.key[:64]!r}: not a path template of ours")
    return feature.path.format(key=feature.key, **numbers)


def atomic_write_bytes(path: Path, data: bytes, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def temp_path_for(path: Path) -> Path:
    """A temporary sibling of ``path`` for writers that need a file name (video, parquet)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    return Path(tmp)


def write_info(root: Path, info: DatasetInfo) -> None:
    atomic_write_bytes(root / INFO_PATH, json.dumps(info.to_json(), indent=2).encode())


def _read_small(path: Path, limit: int) -> str:
    """A meta file's text; a :class:`DatasetError` past ``limit`` bytes (never read then)."""
    size = path.stat().st_size
    if size > limit:
        raise DatasetError(f"{path}: {size} bytes; a pixelrl meta file is at most {limit}")
    return path.read_text()


def read_info(root: Path) -> DatasetInfo:
    where = str(Path(root) / INFO_PATH)
    try:
        raw = json.loads(_read_small(Path(root) / INFO_PATH, MAX_INFO_BYTES))
    except FileNotFoundError:
        raise DatasetError(f"{where}: not found; is {root} a pixelrl episode folder?") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DatasetError(f"{where}: not valid JSON: {e}") from None
    return DatasetInfo.from_json(raw, where)


def write_manifest(root: Path, entries: list[EpisodeEntry], fsync: bool = False) -> None:
    text = "".join(json.dumps(e.to_json()) + "\n" for e in entries)
    atomic_write_bytes(root / MANIFEST_PATH, text.encode(), fsync=fsync)


def read_manifest(root: Path) -> tuple[list[EpisodeEntry], list[EpisodeProblem]]:
    """The manifest's episodes, and a problem for each line that does not parse."""
    path = Path(root) / MANIFEST_PATH
    entries: list[EpisodeEntry] = []
    problems: list[EpisodeProblem] = []
    if not path.exists():
        return entries, problems
    for n, line in enumerate(_read_small(path, MAX_MANIFEST_BYTES).splitlines(), start=1):
        if not line.strip():
            continue
        raw = None
        try:
            raw = json.loads(line)
            entries.append(EpisodeEntry.from_json(raw))
        except (json.JSONDecodeError, TypeError, ValueError) as e:
            index = raw.get("episode_index") if isinstance(raw, dict) else None
            problems.append(EpisodeProblem(index, f"{path}:{n}", f"bad manifest line: {e}"))
    return entries, problems
