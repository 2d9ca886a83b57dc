"""Task families: what a group of registered envs shares, written down once.

A *task family* is a set of tasks played through one kind of env: the emulated desktop's task
kinds (``click-button``, ``fill-form``...), MiniWoB++'s tasks, the X11/OSWorld task files, the
navigation tasks. Each backend registers its family next to its Gymnasium ids (in its
``registration`` module, as habitat-lab registers tasks beside sensors and measures); callers
read the family instead of knowing the backend:

- ``env_id(task)``: the registered id that plays a task (MiniWoB++: ``pixelrl/MiniWoB-<task>-v0``);
- ``seeds``: the seed split, so no training episode shares a layout with a held-out one;
- ``expert(env)``: the family's scripted expert for an env of the family;
- ``success_key`` and ``privileged``: which ``info`` keys say the episode succeeded and which
  hold privileged facts (for experts, rewards and grounding; never a policy's input).

Importing this module imports nothing heavy; experts are built on first use.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

SPLITS = ("train", "val", "eval")  # training, validation (choosing a model), held-out test


@dataclass(frozen=True)
class SeedSplit:
    """Episode seeds of each split: the ``n``-th seed of ``split`` is ``stride * n + offset``.

    GUI families interleave (stride 2: even seeds train, odd ones are held out); navigation
    counts from a base a split (the held-out scenes differ too, through the env's options).
    """

    stride: int
    offsets: Mapping[str, int]

    def seed(self, split: str, n: int) -> int:
        """The ``n``-th seed (``n >= 0``) of ``split``."""
        if split not in self.offsets:
            known = ", ".join(self.offsets)
            raise ValueError(f"split must be one of {known}, got {split!r}")
        return self.stride * int(n) + self.offsets[split]

    def draw(self, split: str, rng: np.random.Generator) -> int:
        """A random seed of ``split`` (one ``rng.integers(0, 2**30)`` draw)."""
        return self.seed(split, int(rng.integers(0, 2**30)))

    def seeds(self, split: str, count: int, rng: np.random.Generator | None = None) -> list[int]:
        """``count`` seeds of ``split``: drawn from ``rng``, else the first ``count`` in order."""
        if rng is None:
            return [self.seed(split, n) for n in range(count)]
        return [self.draw(split, rng) for _ in range(count)]


PARITY = SeedSplit(stride=2, offsets={"train": 0, "eval": 1})
"""The GUI split: even seeds train, odd seeds are held out (no validation split yet)."""

BASES = SeedSplit(stride=1, offsets={"train": 0, "eval": 1_000_000, "val": 2_000_000})
"""The navigation split: training starts count from 0, held-out ones from 1,000,000 and
validation ones from 2,000,000 (each split's scenes differ too, by ``eval_kwargs`` / ``val_kwargs``)."""


class Expert(Protocol):
    """A family's scripted expert, bound to one env: ``act()`` after every reset and step."""

    def reset(self) -> None:
        """Forget the last episode (call after the env's reset)."""

    def act(self) -> Any:
        """The next action for the env's current state (an ``Action``, an action text or index)."""


class ExpertActionMethod:
    """The expert of an env that plans its own next action (``env.unwrapped.expert_action()``:
    the emulated desktop's scripted expert, MiniWoB++'s oracle)."""

    def __init__(self, env: Any) -> None:
        self.act = env.unwrapped.expert_action
        # whether act() is right on any state, also one another actor left (DAgger's labels)
        self.relabels = bool(getattr(env.unwrapped, "expert_relabels", False))
        self._played = getattr(env.unwrapped, "expert_played", None)

    def reset(self) -> None:
        pass  # the env replans from its own state at every call

    def played(self, action: Any) -> None:
        """``action`` was played instead of (or as) the last ``act()``: the env's expert reads
        its history from what was played (MiniWoB++'s oracle)."""
        if self._played is not None:
            self._played(action)


@dataclass(frozen=True)
class TaskFamily:
    """One family: its tasks and ids, seed split, expert, success key and privileged info."""

    name: str
    description: str
    env_id: Callable[[str], str]  # task name -> registered env id
    tasks: Sequence[str]  # the task names registered now
    seeds: SeedSplit = PARITY
    expert: Callable[[Any], Expert] | None = None  # env -> its expert; None: no expert
    expert_plays: Callable[[str], bool] = lambda task: True  # the tasks the expert can play
    success_key: str = "success"
    # info key -> what it holds: privileged facts an expert, a reward or a grounding set reads
    privileged: Mapping[str, str] = field(default_factory=dict)

    def expert_for(self, env: Any) -> Expert:
        """The expert of ``env`` (an env of this family, wrapped or not)."""
        if self.expert is None:
            raise ValueError(f"task family {self.name!r} has no scripted expert")
        return self.expert(env)


# The privileged facts GUI envs put in ``info`` (envs/gui.py), named once for every GUI family.
GUI_PRIVILEGED = {
    "a11y": "accessibility elements (id, role, name, bbox, state), read-only",
    "target_bbox": "the box the expert's next action aims at, or None",
    "fields": "the task's field values (names, passwords, numbers) in order",
}

FAMILIES: dict[str, TaskFamily] = {}
_BY_ENV_ID: dict[str, str] = {}


def register_family(family: TaskFamily) -> None:
    """Register ``family`` (its registration module calls this after registering its ids)."""
    FAMILIES[family.name] = family
    for task in family.tasks:
        _BY_ENV_ID[family.env_id(task)] = family.name


def unknown_family_message(name: str) -> str | None:
    """None if ``name`` is a registered family; else one line naming the nearest ones."""
    if name in FAMILIES:
        return None
    near = difflib.get_close_matches(name, list(FAMILIES), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    return f"unknown task family {name!r}{hint} (families: {', '.join(sorted(FAMILIES))})"


def task_family(name: str) -> TaskFamily:
    """The registered family ``name`` (``import pixelrl.envs`` first); ``ValueError`` in one
    line, with the nearest names, for an unknown one."""
    problem = unknown_family_message(name)
    if problem:
        raise ValueError(problem)
    return FAMILIES[name]


def family_of(env_id: str) -> TaskFamily | None:
    """The family whose tasks include ``env_id``, or None."""
    name = _BY_ENV_ID.get(env_id)
    return FAMILIES[name] if name else None


def expert_of(env: Any) -> Expert:
    """The expert of the family ``env`` (made by ``gymnasium.make``, wrapped or not) belongs to;
    ``ValueError`` for an env of no family, or of a family without an expert."""
    spec = env.unwrapped.spec  # gymnasium.make sets it; wrappers' own specs are copies
    env_id = spec.id if spec is not None else type(env.unwrapped).__name__
    family = family_of(env_id)
    if family is None:
        raise ValueError(f"{env_id} belongs to no task family, so it has no scripted expert")
    return family.expert_for(env)


def seeds_of(env_id: str) -> SeedSplit:
    """The seed split of ``env_id``'s family; :data:`PARITY` for an env of no family."""
    family = family_of(env_id)
    return family.seeds if family is not None else PARITY
