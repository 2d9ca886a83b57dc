"""Checkpoint folders of the text trainer, read as data.

``torch.distributed.checkpoint`` (DCP) reads a folder's ``.metadata`` with plain
``pickle.load`` and its non-tensor values (the optimizer's ``param_groups``) with
``torch.load(weights_only=False)``: a crafted ``train.resume`` folder would run code. Here the
metadata is unpickled with an allow-list of DCP's own metadata dataclasses (and ``torch.Size``,
dtypes, layouts, paths), and non-tensor values with ``weights_only=True``; anything else is a
:class:`ResumeError`. A rank's generator file is read with ``weights_only=True`` too.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import json
import pickle
import re
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import metadata as dcp_metadata
from torch.distributed.checkpoint._traverse import set_element
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
from torch.distributed.checkpoint.filesystem import FileSystemReader

from pixelrl.config import ConfigError


class ResumeError(ConfigError):
    """A ``train.resume`` folder that is not a checkpoint of ours, or not plain data."""


# meta.json's fields and their types (rank 0 writes it; see Parallel.save_checkpoint)
_META_FIELDS = {"step": int, "world_size": int, "shard": str, "history": list, "evals": list}


def read_meta(run_dir: Path) -> dict[str, Any]:
    """The latest checkpoint's ``meta.json`` of run folder ``run_dir``, and its ``folder``:
    ``checkpoints/latest`` must name a ``step_N`` folder beside it (never a path elsewhere)."""
    checkpoints = Path(run_dir) / "checkpoints"
    try:
        name = (checkpoints / "latest").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        raise ResumeError(
            f"train.resume: {run_dir} has no checkpoints/latest (not the run folder of a text "
            "recipe that wrote checkpoints: train.checkpoint_interval)"
        ) from None
    if not re.fullmatch(r"step_\d{1,12}", name):
        raise ResumeError(f"train.resume: {checkpoints / 'latest'} names {name[:80]!r}, not step_N")
    folder = checkpoints / name
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ResumeError(f"train.resume: {folder}/meta.json is not readable ({e})") from None
    wrong = [
        k
        for k, kind in _META_FIELDS.items()
        if not isinstance(meta.get(k) if isinstance(meta, dict) else None, kind)
    ]
    if wrong:
        raise ResumeError(f"train.resume: {folder}/meta.json lacks or mistypes {', '.join(wrong)}")
    return {**meta, "folder": str(folder)}


# (module, name) of the few non-DCP globals a ``.metadata`` file names
_OTHER_GLOBALS = {
    ("torch", "Size"),
    ("torch.serialization", "_get_layout"),  # a layout from its name, looked up in a table
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
    ("pathlib", "PosixPath"),
    ("pathlib", "PurePosixPath"),
    ("pathlib", "WindowsPath"),
    ("pathlib", "PureWindowsPath"),
    ("collections", "OrderedDict"),
}


class _MetadataUnpickler(pickle.Unpickler):
    """Unpickles DCP metadata: its dataclasses and enums, and the globals above; no others."""

    def find_class(self, module: str, name: str) -> Any:
        if module == dcp_metadata.__name__:
            found = getattr(dcp_metadata, name, None)
            is_data = dataclasses.is_dataclass(found) or (
                isinstance(found, type) and issubclass(found, enum.Enum)
            )
            if is_data and getattr(found, "__module__", None) == module:
                return found
        elif module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        elif (module, name) in _OTHER_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not checkpoint metadata")


class DataReader(FileSystemReader):
    """DCP's file reader, with ``.metadata`` read through :class:`_MetadataUnpickler`."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> dcp_metadata.Metadata:
        path = self._get_metadata_path(kwargs.get("rank"))
        with self.fs.create_stream(path, "rb") as file:
            metadata = _MetadataUnpickler(file).load()
        if not isinstance(metadata, dcp_metadata.Metadata):
            raise pickle.UnpicklingError(f"{path} holds no checkpoint metadata")
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = dcp_metadata.StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


class DataLoadPlanner(DefaultLoadPlanner):
    """DCP's load planner, with non-tensor values (floats, tuples, ...) read as data."""

    def load_bytes(self, read_item: Any, value: io.BytesIO) -> None:
        # DefaultLoadPlanner.load_bytes, with weights_only=True where it has False
        data = torch.load(value, weights_only=True)
        if self.flatten_state_dict:
            set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], data)
        else:
            self.state_dict[read_item.dest_index.fqn] = data


def load_folder(state: dict[str, Any], folder: Path) -> None:
    """``dcp.load(state, folder)``, read as data: a folder that needs more is a ResumeError."""
    from torch.distributed.checkpoint.api import CheckpointException  # a BaseException

    reader = DataReader(str(folder))
    try:
        reader.read_metadata()  # refused here, before DCP wraps the reason in its own report
        dcp.load(state, storage_reader=reader, planner=DataLoadPlanner())
    except (Exception, CheckpointException) as e:
        raise ResumeError(
            f"train.resume: {folder} is not a readable checkpoint ({_why(e)})"
        ) from None


def load_rank_file(path: Path) -> dict[str, Any]:
    """A rank's generators and extras' states (``rank{N}.pt``), read as data."""
    try:
        data = torch.load(path, weights_only=True)
    except Exception as e:  # noqa: BLE001
        raise ResumeError(
            f"train.resume: {path} is not a readable checkpoint ({_why(e)})"
        ) from None
    if not isinstance(data, dict) or "numpy" not in data or "torch" not in data:
        raise ResumeError(f"train.resume: {path} holds no generator states")
    return data


def _why(error: BaseException) -> str:
    """What was refused, whichever layer raised it (DCP reports a rank's error as its
    traceback's text)."""
    text = str(error)
    refused = re.search(r"(\S+ is not checkpoint metadata|unsupported GLOBAL \S+)", text)
    if refused:
        return refused.group(1)
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return f"{type(error).__name__}: {first[:300]}"
