"""Training checkpoints: one ``.pt`` file holding everything needed to resume a run.

Contents (a dict): ``format`` (``"pixelrl-checkpoint"``), ``version``, ``recipe``, ``config``
(the full config as a plain dict), ``policy`` (state dict), ``ppo`` (optimizer and value
normaliser), ``reward_normalizer``, ``update`` (updates done), ``frames`` (env frames so far),
``history`` (logged rows for the learning curve) and ``rng`` (torch and numpy generator states).

Files are written to a temporary name and renamed, so a run killed mid-save never leaves a
half-written checkpoint; ``latest.pt`` always names the newest one.

Arguments that name a policy (``--policy``, ``--agent checkpoint PATH``) are local paths unless
they can only be a model hub id (:func:`is_hub_id`, from :mod:`pixelrl.vision.model_source`,
where models are loaded by the same rules).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

# Where a name is a path or a model hub id: vision's, which loads models by either (re-exported
# here, where checkpoints are read).
from pixelrl.vision.model_source import (  # noqa: F401
    CHECKPOINT_SUFFIXES,
    LOCAL_FOLDERS,
    CheckpointError,
    check_hub_model,
    hub_offline,
    is_hub_id,
    missing_path_message,
)

FORMAT = "pixelrl-checkpoint"
VERSION = 2  # 2: read as data (spaces and numpy values as plain dicts); 1: pickled objects


def save_checkpoint(payload: dict[str, Any], path: str | Path) -> Path:
    """Write ``payload`` atomically to ``path`` and point ``latest.pt`` next to it at it."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(to_plain({"format": FORMAT, "version": VERSION, **payload}), tmp)
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


def load_checkpoint(path: str | Path, map_location: str = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint`; anything else is a clear error.

    A checkpoint is read as data (``torch.load(weights_only=True)``): a file that names any class
    or function beyond tensors and plain containers is refused, so a crafted ``.pt`` cannot run
    code. Version-1 files (gymnasium spaces and numpy generator states pickled as objects) load
    with those few data classes allowed, and nothing else (:func:`_v1_data_classes`)."""
    import pickle

    import torch

    file = resolve_checkpoint(path)
    try:
        try:
            data = torch.load(file, map_location=map_location, weights_only=True)
        except pickle.UnpicklingError as plain_error:
            with torch.serialization.safe_globals(_v1_data_classes()):
                try:
                    data = torch.load(file, map_location=map_location, weights_only=True)
                except pickle.UnpicklingError:
                    raise plain_error from None
            if not isinstance(data, dict) or data.get("version") != 1:
                raise plain_error from None  # only version 1 wrote those classes
        data = from_plain(data)
    except Exception as e:  # noqa: BLE001  (a refused class; truncated or not a torch file ...)
        refused = _refused_global(e)
        if refused:
            raise CheckpointError(
                f"{file}: refused: it holds objects other than tensors and plain data, which "
                f"loading would run as code ({refused})"
            ) from None
        raise CheckpointError(
            f"{file}: not a readable checkpoint ({type(e).__name__}: {_first_line(e)})"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{file}: not a pixelrl checkpoint (no format={FORMAT!r} field)")
    for field in ("config", "policy"):
        if field not in data:
            raise CheckpointError(f"{file}: checkpoint has no {field!r} field")
    return data


def _refused_global(error: BaseException) -> str | None:
    """What torch's weights-only reader refused ("unsupported GLOBAL posix.system ..."),
    without its advice to load with weights_only=False; None for any other error."""
    found = re.search(r"[Uu]nsupported (GLOBAL|global)[^\n]*", str(error))
    return found.group(0).rstrip(".") if found else None


def _first_line(error: BaseException) -> str:
    """The error's first line that says what is wrong (not torch's weights-only boilerplate)."""
    boilerplate = ("Weights only load failed", "Check the documentation", "Please file an issue")
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    said = [line for line in lines if not line.startswith(boilerplate)]
    return (said or [type(error).__name__])[0][:300]


# -- plain data: what a checkpoint holds besides tensors -------------------------------------
# torch.load(weights_only=True) reads tensors, numbers, strings and the plain containers. The few
# other values a run keeps (gymnasium spaces, numpy arrays and scalars) are written as tagged
# dicts of those, and rebuilt from them here: building a space or an array from numbers runs no
# code that the file chooses.
_SPACE, _ARRAY = "__gymnasium_space__", "__numpy_array__"


def to_plain(value: Any) -> Any:
    """``value`` with every gymnasium space, numpy array and numpy scalar made plain data."""
    import numpy as np
    from gymnasium import spaces

    if isinstance(value, spaces.Space):
        return {_SPACE: _space_to_plain(value)}
    if isinstance(value, np.ndarray):
        return _array_to_plain(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return type(value)((k, to_plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(to_plain(v) for v in value)
    return value


def from_plain(value: Any) -> Any:
    """The inverse of :func:`to_plain` (tagged dicts back to spaces and arrays)."""

    if isinstance(value, dict):
        if _SPACE in value:
            return _space_from_plain(value[_SPACE])
        if _ARRAY in value:
            return _array_from_plain(value)
        return type(value)((k, from_plain(v)) for k, v in value.items())
    if isinstance(value, list):
        return [from_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(from_plain(v) for v in value)
    return value


# numpy dtypes a tensor holds as they are; others (uint32: an MT19937 key) travel as lists
_TENSOR_DTYPES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
)


def _array_to_plain(array: Any) -> dict[str, Any]:
    import torch

    if array.dtype.name in _TENSOR_DTYPES:
        data = torch.from_numpy(array.copy())
    elif array.dtype.kind in "biuf":
        data = array.tolist()
    else:
        raise TypeError(f"a checkpoint cannot hold a numpy array of dtype {array.dtype}")
    return {_ARRAY: data, "dtype": array.dtype.str, "shape": list(array.shape)}


def _array_from_plain(data: dict[str, Any]) -> Any:
    import numpy as np
    import torch

    dtype = np.dtype(str(data["dtype"]))
    if dtype.kind not in "biuf":  # numbers only: never an object array
        raise ValueError(f"a numpy array of dtype {dtype} in a checkpoint")
    values = data[_ARRAY]
    array = values.numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
    return array.astype(dtype).reshape([int(n) for n in data["shape"]])


def _space_to_plain(space: Any) -> dict[str, Any]:
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return {"type": "Box", "low": _array_to_plain(space.low),
                "high": _array_to_plain(space.high), "dtype": space.dtype.str}  # fmt: skip
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": _array_to_plain(space.nvec),
                "start": _array_to_plain(space.start)}  # fmt: skip
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": to_plain(space.n)}
    if isinstance(space, spaces.Text):
        return {"type": "Text", "max_length": space.max_length, "min_length": space.min_length,
                "charset": "".join(sorted(space.character_set))}  # fmt: skip
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: _space_to_plain(v) for k, v in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [_space_to_plain(v) for v in space.spaces]}
    raise TypeError(f"a checkpoint cannot hold a {type(space).__name__} space")


def _space_from_plain(data: dict[str, Any]) -> Any:
    import numpy as np
    from gymnasium import spaces

    kind = data["type"]
    if kind == "Box":
        low, high = _array_from_plain(data["low"]), _array_from_plain(data["high"])
        return spaces.Box(low, high, dtype=np.dtype(str(data["dtype"])))
    if kind == "Discrete":
        return spaces.Discrete(int(data["n"]), start=int(data["start"]))
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(
            _array_from_plain(data["nvec"]), start=_array_from_plain(data["start"])
        )
    if kind == "MultiBinary":
        return spaces.MultiBinary(from_plain(data["n"]))
    if kind == "Text":
        return spaces.Text(int(data["max_length"]), min_length=int(data["min_length"]),
                           charset=str(data["charset"]))  # fmt: skip
    if kind == "Dict":
        return spaces.Dict({str(k): _space_from_plain(v) for k, v in data["spaces"].items()})
    if kind == "Tuple":
        return spaces.Tuple([_space_from_plain(v) for v in data["spaces"]])
    raise ValueError(f"unknown space type {kind!r} in a checkpoint")


def _v1_data_classes() -> list[Any]:
    """The classes version-1 checkpoints pickled (spaces, numpy arrays and generators): data
    classes whose unpickling stores numbers; allowed for version-1 files alone."""
    import numpy as np
    import numpy.random._pickle as np_random_pickle
    from gymnasium import spaces
    from numpy.random import bit_generator

    reconstruct = np._core.multiarray._reconstruct
    scalar = np._core.multiarray.scalar
    return [
        np.ndarray, np.dtype, *{type(np.dtype(c)) for c in "?bBhHiIlLqQefdgFDG"},
        (reconstruct, "numpy._core.multiarray._reconstruct"),
        (reconstruct, "numpy.core.multiarray._reconstruct"),
        (scalar, "numpy._core.multiarray.scalar"), (scalar, "numpy.core.multiarray.scalar"),
        (np_random_pickle.__generator_ctor, "numpy.random._pickle.__generator_ctor"),
        (np_random_pickle.__bit_generator_ctor, "numpy.random._pickle.__bit_generator_ctor"),
        np.random.PCG64, np.random.MT19937, bit_generator.SeedSequence,
        (bit_generator.__pyx_unpickle_SeedSequence,
         "numpy.random.bit_generator.__pyx_unpickle_SeedSequence"),
        spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary, spaces.Text,
        spaces.Dict, spaces.Tuple,
    ]  # fmt: skip
