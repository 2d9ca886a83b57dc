"""Where a policy or model name points: a local path or a model hub id, never a guess.

Arguments that name a policy (``--policy``, ``--agent checkpoint PATH``, a model to load) are
local paths unless they can only be a model hub id (:func:`is_hub_id`): a mistyped run folder is
"no such checkpoint" at once, never a minutes-long hub lookup, and the hub is never asked when
``HF_HUB_OFFLINE`` is set (:func:`check_hub_model`). :mod:`pixelrl.vision.vlm` loads models by
these rules and :mod:`pixelrl.checkpoint` reads checkpoints by them (it re-exports them).
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

# ``org/name``: the only form sent to the model hub.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
# Folders pixelrl writes into: a name under one of them is a path even where it does not exist.
LOCAL_FOLDERS = ("runs", "outputs", "checkpoints")
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors", ".bin", ".yaml")


class CheckpointError(FileNotFoundError):
    """A checkpoint that is missing or is not a pixelrl checkpoint."""


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
