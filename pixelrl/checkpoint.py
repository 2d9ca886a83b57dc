"""Training checkpoints: one ``.pt`` file holding everything needed to resume a run.

Contents (a dict): ``format`` (``"pixelrl-checkpoint"``), ``version``, ``recipe``, ``config``
(the full config as a plain dict), ``policy`` (state dict), ``ppo`` (optimizer and value
normaliser), ``reward_normalizer``, ``update`` (updates done), ``frames`` (env frames so far),
``history`` (logged rows for the learning curve) and ``rng`` (torch and numpy generator states).

Files are written to a temporary name and renamed, so a run killed mid-save never leaves a
half-written checkpoint; ``latest.pt`` always names the newest one.

Arguments that name a policy (``--policy``, ``--agent checkpoint PATH``) are local paths unless
they can only be a model hub id (:func:`is_hub_id`): a mistyped run folder is "no such
checkpoint" at once, never a minutes-long hub lookup, and the hub is never asked when
``HF_HUB_OFFLINE`` is set (:func:`check_hub_model`).
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

# ``org/name``: the only form sent to the model hub.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
# Folders pixelrl writes into: a name under one of them is a path even where it does not exist.
LOCAL_FOLDERS = ("runs", "outputs", "checkpoints")
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors", ".bin", ".yaml")

FORMAT = "pixelrl-checkpoint"
VERSION = 1


class CheckpointError(FileNotFoundError):
    """A checkpoint that is missing or is not a pixelrl checkpoint."""


def save_checkpoint(payload: dict[str, Any], path: str | Path) -> Path:
    """Write ``payload`` atomically to ``path`` and point ``latest.pt`` next to it at it."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save({"format": FORMAT, "version": VERSION, **payload}, tmp)
    os.replace(tmp, path)
    latest = path.parent / "latest.pt"
    if path.name != latest.name:
        tmp_latest = latest.with_suffix(".pt.tmp")
        try:
            os.link(path, tmp_latest)
        except OSError:  # no hard links here: copy
            import shutil

            shutil.copyfile(path, tmp_latest)
        os.replace(tmp_latest, latest)
    return path


def resolve_checkpoint(path: str | Path) -> Path:
    """A checkpoint file from a file path, a ``checkpoints/`` folder or a run folder."""
    path = Path(path)
    for candidate in (path, path / "latest.pt", path / "checkpoints" / "latest.pt"):
        if candidate.is_file():
            return candidate
    if path.is_dir():
        raise CheckpointError(
            f"no checkpoint in {path} (looked for latest.pt and checkpoints/latest.pt)"
        )
    raise CheckpointError(missing_path_message(path))


def missing_path_message(path: str | Path, what: str = "checkpoint") -> str:
    """ "no such checkpoint: PATH", with the nearest names in its folder when there are some."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    near: list[str] = []
    if parent.is_dir():
        names = [p.name for p in parent.iterdir() if not p.name.startswith(".")]
        near = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(str(parent / n) for n in near)}?" if near else ""
    return f"no such {what}: {path}{hint}"


def is_hub_id(text: str) -> bool:
    """Whether ``text`` can only mean a model on the hub: ``org/name``, nothing on disk by that
    name, not under a folder that exists here or that pixelrl writes (``runs/``, ...), and not a
    checkpoint file name. Anything else is a local path."""
    if not _HUB_ID.match(text) or Path(text).exists() or text.endswith(CHECKPOINT_SUFFIXES):
        return False
    first = text.split("/", 1)[0]
    return first not in LOCAL_FOLDERS and not Path(first).exists()


def hub_offline() -> bool:
    return any(
        os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE")
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def check_hub_model(repo_id: str) -> None:
    """Offline, a hub id must already be in the local cache: else a :class:`CheckpointError`
    now, instead of transformers' connection error (or retries) later."""
    if not hub_offline():
        return
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(repo_id, "config.json")
    if not isinstance(cached, str):
        raise CheckpointError(
            f"no such checkpoint or model: {repo_id} is no local path, and it is not in the "
            "model hub cache (HF_HUB_OFFLINE is set, so the hub is not asked)"
        )


def load_checkpoint(path: str | Path, map_location: str = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint`; anything else is a clear error."""
    import torch

    from pixelrl import legacy

    file = resolve_checkpoint(path)
    try:
        # legacy.pickle_module: classes pickled by the old top-level layout (``envs.*``) still load.
        data = torch.load(
            file, map_location=map_location, weights_only=False, pickle_module=legacy.pickle_module
        )
    except Exception as e:  # truncated, not a torch file, ...
        raise CheckpointError(
            f"{file}: not a readable checkpoint ({type(e).__name__}: {e})"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{file}: not a pixelrl checkpoint (no format={FORMAT!r} field)")
    for field in ("config", "policy"):
        if field not in data:
            raise CheckpointError(f"{file}: checkpoint has no {field!r} field")
    return data
