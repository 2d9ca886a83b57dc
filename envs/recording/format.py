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
import os
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
        for name, kind in (("fps", (int, float)), ("features", dict), ("action_format", str)):
            if not isinstance(raw.get(name), kind):
                raise DatasetError(f"{where}: field {name!r} is missing or not a {kind}")
        features = {}
        for key, f in raw["features"].items():
            try:
                features[key] = Feature(key=key, **f)
            except TypeError as e:
                raise DatasetError(f"{where}: feature {key!r}: {e}") from None
        return cls(
            env_id=raw.get("env_id"),
            env_kwargs=dict(raw.get("env_kwargs") or {}),
            fps=float(raw["fps"]),
            features=features,
            action_format=raw["action_format"],
            max_episode_steps=raw.get("max_episode_steps"),
            codebase_version=raw.get("codebase_version", ""),
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


def data_path(episode: int) -> str:
    return DATA_PATH.format(chunk=episode // CHUNK_SIZE, episode=episode)


def frame_path(feature: Feature, episode: int, frame: int) -> str:
    return feature.path.format(episode=episode, frame=frame, key=feature.key)


def episode_file(feature: Feature, episode: int) -> str:
    """The per-episode file of an mp4 or npz feature."""
    return feature.path.format(episode=episode, key=feature.key)


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


def read_info(root: Path) -> DatasetInfo:
    where = str(Path(root) / INFO_PATH)
    try:
        raw = json.loads((Path(root) / INFO_PATH).read_text())
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
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        raw = None
        try:
            raw = json.loads(line)
            entries.append(EpisodeEntry(**raw))
        except (json.JSONDecodeError, TypeError) as e:
            index = raw.get("episode_index") if isinstance(raw, dict) else None
            problems.append(EpisodeProblem(index, f"{path}:{n}", f"bad manifest line: {e}"))
    return entries, problems
