"""Observation batches a Ray env worker on this machine writes straight into shared memory.

Returning a worker's screenshots through Ray's object store costs more than stepping the envs:
16 emulated desktops at 320x240 step in ~5 ms inside an actor, and handing their 3.7 MB back
took another ~7 ms a call (docs/results, "Ray's overhead on the emulated desktop"). So the driver
gives each worker a file in ``/dev/shm`` holding its batch's large arrays twice over; the worker
writes a step's observations into one copy and answers which, with the large arrays left out of
the answer. The two copies alternate, so the copy holding the last observations the driver
received is never the one an unfinished (hung, killed) step writes into: a fault's
``final_obs`` cannot be torn.

A worker on another machine does not find the file and answers through Ray as before; so does
every worker where ``/dev/shm`` is missing or too small (the space is reserved up front, so a
full tmpfs is a fallback at start, never a SIGBUS mid-run).
"""

from __future__ import annotations

import mmap
import os
import tempfile
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

SHM_DIR = "/dev/shm"
MIN_BYTES = 64 * 1024  # smaller arrays travel inline in Ray's answer, as cheaply as anything


@dataclass(frozen=True)
class Leaf:
    """One array of the observation batch that lives in shared memory."""

    keys: tuple[str, ...]  # its path in a Dict observation; () for a Box observation
    shape: tuple[int, ...]  # the worker's batch of it
    dtype: str
    offset: int  # in each of the two copies

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class SharedSpec:
    """What a worker needs to map its buffers: the file and the arrays' layout in it."""

    path: str
    leaves: tuple[Leaf, ...]
    size: int  # bytes of one block; the file holds four (module doc)


def leaves_of(space: gym.Space, count: int, min_bytes: int = MIN_BYTES) -> list[Leaf]:
    """The Box arrays of ``space`` (itself, or the values of a Dict, nested) whose batch of
    ``count`` is at least ``min_bytes``, laid out one after another (64-byte aligned)."""
    found: list[tuple[tuple[str, ...], gym.spaces.Box]] = []

    def walk(sub: gym.Space, keys: tuple[str, ...]) -> None:
        if isinstance(sub, gym.spaces.Dict):
            for key, value in sub.spaces.items():
                walk(value, (*keys, key))
        elif isinstance(sub, gym.spaces.Box):
            found.append((keys, sub))

    walk(space, ())
    leaves, offset = [], 0
    for keys, box in found:
        shape = (count, *box.shape)
        if int(np.prod(shape)) * box.dtype.itemsize < min_bytes:
            continue
        leaf = Leaf(keys, shape, box.dtype.str, offset)
        leaves.append(leaf)
        offset += -(-leaf.nbytes // 64) * 64
    return leaves


def with_leaf(tree: Any, keys: tuple[str, ...], value: Any) -> Any:
    """``tree`` with the array at ``keys`` replaced by ``value`` (dicts copied on the way
    down; the tree passed in is left as it was)."""
    if not keys:
        return value
    return {**tree, keys[0]: with_leaf(tree[keys[0]], keys[1:], value)}


class SharedBuffers:
    """The two copies of a worker's large observation arrays, mapped in this process. Each copy
    has two blocks of the same layout: the step's observations, and the last observations of
    the episodes that ended in it (``info["final_obs"]``; a row for each env)."""

    def __init__(self, spec: SharedSpec, fd: int) -> None:
        self.spec = spec
        self._linked = True
        self._map = mmap.mmap(fd, 4 * spec.size)

        def block(index: int) -> list[np.ndarray]:
            start = index * spec.size
            return [
                np.ndarray(leaf.shape, np.dtype(leaf.dtype), self._map, start + leaf.offset)
                for leaf in spec.leaves
            ]

        self.views = [block(0), block(2)]  # [copy] -> the step's observations
        self.finals = [block(1), block(3)]  # [copy] -> ended episodes' last observations

    @classmethod
    def create(cls, space: gym.Space, count: int) -> SharedBuffers | None:
        """New buffers for a worker of ``count`` envs of ``space``, or None where there is
        nothing large to share or no room for it in ``/dev/shm``."""
        leaves = leaves_of(space, count)
        if not leaves or not os.path.isdir(SHM_DIR):
            return None
        last = leaves[-1]
        size = -(-(last.offset + last.nbytes) // 64) * 64
        fd, path = tempfile.mkstemp(prefix="pixelrl-obs-", dir=SHM_DIR)
        try:
            os.posix_fallocate(fd, 0, 4 * size)  # room now, or no sharing (never a SIGBUS later)
            return cls(SharedSpec(path, tuple(leaves), size), fd)
        except OSError:
            os.unlink(path)
            return None
        finally:
            os.close(fd)

    @classmethod
    def attach(cls, spec: SharedSpec | None) -> SharedBuffers | None:
        """The worker's side: map the driver's file, or None when it is not on this machine."""
        if spec is None:
            return None
        try:
            fd = os.open(spec.path, os.O_RDWR)
        except FileNotFoundError:
            return None
        try:
            return cls(spec, fd)
        finally:
            os.close(fd)

    def unlink(self) -> None:
        """Remove the file's name (both sides keep their mapping): once the worker has mapped
        it, or it never will; nothing is left in ``/dev/shm`` when a process dies."""
        if self._linked:
            self._linked = False
            try:
                os.unlink(self.spec.path)
            except FileNotFoundError:
                pass

    def place(self, out: Any, copy: int) -> Any:
        """``out`` (an observation batch, or a worker's answer that left them out) with its
        large arrays in copy ``copy``."""
        for leaf, view in zip(self.spec.leaves, self.views[copy]):
            out = with_leaf(out, leaf.keys, view)
        return out

    def strip(self, obs: Any) -> Any:
        """``obs`` with its large arrays left out (None): the part that travels through Ray."""
        for leaf in self.spec.leaves:
            obs = with_leaf(obs, leaf.keys, None)
        return obs

    def put_final(self, obs: Any, copy: int, row: int) -> Any:
        """The worker's side for env ``row``'s ended episode: its last observation's large
        arrays into copy ``copy``, the rest (to travel through Ray) returned."""
        for leaf, view in zip(self.spec.leaves, self.finals[copy]):
            array = obs
            for key in leaf.keys:
                array = array[key]
            view[row] = array
        return self.strip(obs)

    def take_final(self, stripped: Any, copy: int, row: int) -> Any:
        """The driver's side: env ``row``'s last observation whole again, its arrays copied out
        (the caller may keep it; the block is written again two steps on)."""
        for leaf, view in zip(self.spec.leaves, self.finals[copy]):
            stripped = with_leaf(stripped, leaf.keys, view[row].copy())
        return stripped
