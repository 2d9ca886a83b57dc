"""Training checkpoints: one ``.pt`` file holding everything needed to resume a run.

Contents (a dict): ``format`` (``"pixelrl-checkpoint"``), ``version``, ``recipe``, ``config``
(the full config as a plain dict), ``policy`` (state dict), ``ppo`` (optimizer and value
normaliser), ``reward_normalizer``, ``update`` (updates done), ``frames`` (env frames so far),
``history`` (logged rows for the learning curve) and ``rng`` (torch and numpy generator states).

Files are written to a temporary name and renamed, so a run killed mid-save never leaves a
half-written checkpoint; ``latest.pt`` always names the newest one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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
    raise CheckpointError(f"checkpoint not found: {path}")


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
