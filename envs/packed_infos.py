"""A worker's vector infos packed for the trip to the driver: one bytes buffer and lists.

A Ray env worker answers a step with its envs' infos in gymnasium's vector layout: a dict of
arrays (one row an env, a ``_key`` mask beside each key), nested for ``final_info`` and the like.
On the emulated desktop that is ~80 small arrays a worker a step; pickled as they are, each costs
numpy's reduce in the worker and a Python-level rebuild in the driver, and the driver then copies
each into the merged infos (~1 ms a worker a step: docs/results/ray_envs.md). Packed, the tree
keeps its dicts, every numeric array becomes ``(offset, dtype, shape)`` into one bytes buffer and
every object array the list of its items: pickle takes its C path for all of it, and ``merge``
writes each slice straight into the merged array, as ``VectorEnv._add_info`` would have built it
env by env.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Packed = tuple[dict[str, Any], bytes]  # the tree, and the numeric arrays' bytes one after another


def pack(infos: dict[str, Any]) -> Packed:
    """``infos`` (vector layout: dicts of arrays) packed for pickling (module doc)."""
    chunks: list[bytes] = []
    size = 0

    def walk(tree: dict[str, Any]) -> dict[str, Any]:
        nonlocal size
        out: dict[str, Any] = {}
        for key, value in tree.items():
            if isinstance(value, dict):
                out[key] = walk(value)
            elif value.dtype != object:
                data = value.tobytes()
                out[key] = (size, value.dtype.str, value.shape)
                chunks.append(data)
                size += len(data)
            elif value.ndim == 1:
                out[key] = list(value)  # the items themselves (a list in a row stays a list)
            else:  # gymnasium never builds these; they travel as they are
                out[key] = value
        return out

    tree = walk(infos)
    return tree, b"".join(chunks)


def unpack(packed: Packed, n: int) -> dict[str, Any]:
    """The infos ``pack`` was given (``n`` rows)."""
    return merge([(0, packed)], n)


def merge(parts: Sequence[tuple[int, Packed]], n: int) -> dict[str, Any]:
    """Packed infos of consecutive row blocks (``(first row, packed)``) as the infos of one
    ``n``-env vector: what ``VectorEnv._add_info`` would have built env by env (the first block
    holding a key sets its dtype; rows without it stay zero / None and unmasked)."""
    out: dict[str, Any] = {}
    for first, (tree, buffer) in parts:
        _merge_into(out, tree, buffer, first, n)
    return out


def _merge_into(
    out: dict[str, Any], tree: dict[str, Any], buffer: bytes, first: int, n: int
) -> None:
    for key, value in tree.items():
        if isinstance(value, dict):  # final_info and other nested infos: one level down
            _merge_into(out.setdefault(key, {}), value, buffer, first, n)
            continue
        target = out.get(key)
        if isinstance(value, list):  # object items
            if target is None:
                target = out[key] = np.empty(n, dtype=object)  # all None
            # one by one: the items as they are (numpy 1.x may read a row of arrays as rows)
            for row, item in enumerate(value, first):
                target[row] = item
            continue
        if isinstance(value, tuple):  # numeric: its slice of the buffer, not copied yet
            offset, dtype, shape = value
            value = np.frombuffer(buffer, dtype, math.prod(shape), offset)
            if len(shape) > 1:
                value = value.reshape(shape)
        if target is None:  # zeros, or None for objects (what np.empty fills them with)
            make = np.empty if value.dtype == object else np.zeros
            target = out[key] = make((n, *value.shape[1:]), dtype=value.dtype)
        target[first : first + len(value)] = value
