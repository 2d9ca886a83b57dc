"""The navigation measures, registered by name as habitat-lab registers its ``Measure``\\ s.

Each measure is one class: its ``name`` (the key in ``info``, logs and tables), habitat's key
``uuid`` where it differs (``info`` carries both), the ``bounds`` of its values (confidence
intervals are cut to them), the measures it reads (``depends_on``) and ``compute``, from the
:class:`EpisodeProgress` either simulator keeps. Both simulators -- the embedded one
(:mod:`pixelrl.envs.nav.tasks`) and habitat-sim (:mod:`pixelrl.envs.habitat.env`) -- call
:func:`measure_episode`, so a measure is defined once; the benchmark, the PPO trainer's logs, the
text-policy trainer and the OpenEnv server read the names from here.

Definitions (habitat's): DistanceToGoal = geodesic distance to the nearest goal (view point for
ObjectNav); Success = ``stop`` called with DistanceToGoal < success radius; SPL = S * l / max(l, p)
with l the start's geodesic distance and p the path length walked; SoftSPL = max(0, 1 - d / l) *
l / max(l, p). l = 0 (an episode that starts on its goal, which habitat's generator never makes and
whose SPL habitat would divide by zero): l / max(l, p) counts as 1 and SoftSPL's progress term as
"within the success radius"; the benchmark leaves such episodes out of its means.

A new measure: a subclass of :class:`Measure` decorated with :func:`register_measure` (after the
measures it reads). It then appears in every ``info``, in the benchmark's means and CSV and in
``pixelrl serve``'s verifiable measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class EpisodeProgress:
    """What the measures are computed from, as a simulator keeps it after a step."""

    distance_to_goal: float  # d: the geodesic distance to the nearest goal now
    start_distance: float  # l: the geodesic distance from the start
    path_length: float  # p: metres walked, in 3D
    called_stop: bool
    success_radius: float
    collisions: int
    steps: int

    @classmethod
    def of(cls, state: Any, distance_to_goal: float) -> EpisodeProgress:
        """From a simulator's episode state, which keeps these under the same names (the
        embedded ``NavEpisodeState``, ``HabitatNavEnv``); each says which distance is d."""
        return cls(
            distance_to_goal=distance_to_goal,
            start_distance=state.start_distance,
            path_length=state.path_length,
            called_stop=state.called_stop,
            success_radius=state.cfg.success_radius,
            collisions=state.collisions,
            steps=state.steps,
        )


class Measure:
    """One measure: subclasses set the class attributes and ``compute``."""

    name: ClassVar[str]
    uuid: ClassVar[str | None] = None  # habitat's key, when it is not ``name``
    bounds: ClassVar[tuple[float, float]] = (0.0, math.inf)
    depends_on: ClassVar[tuple[str, ...]] = ()

    @staticmethod
    def compute(episode: EpisodeProgress, measured: dict[str, float]) -> float:
        """The value after a step; ``measured`` holds the values of ``depends_on``."""
        raise NotImplementedError


# name -> measure, in the order they are computed and ``info`` lists them
MEASURES: dict[str, type[Measure]] = {}


def register_measure(cls: type[Measure]) -> type[Measure]:
    """Add ``cls`` to :data:`MEASURES` (a class decorator); what it reads must be registered."""
    if cls.name in MEASURES:
        raise ValueError(f"measure {cls.name!r} is already registered")
    missing = [d for d in cls.depends_on if d not in MEASURES]
    if missing:
        raise ValueError(f"measure {cls.name!r} reads {missing}: register those first")
    MEASURES[cls.name] = cls
    return cls


def path_ratio(episode: EpisodeProgress) -> float:
    """SPL's l / max(l, p): 1 on the shortest path, less for a longer walk (1 when l = 0)."""
    start = episode.start_distance
    return start / max(start, episode.path_length) if start > 0 else 1.0


class Kept(Measure):
    """A quantity the simulator keeps, reported as it is: ``EpisodeProgress.<field>``."""

    field: ClassVar[str]

    @classmethod
    def compute(cls, episode: EpisodeProgress, measured: dict[str, float]) -> float:
        return float(getattr(episode, cls.field))


class Fraction(Measure):
    """A measure in [0, 1] (a rate over episodes)."""

    bounds = (0.0, 1.0)


@register_measure
class DistanceToGoal(Kept):
    name = field = "distance_to_goal"


@register_measure
class Success(Fraction):
    name = "success"
    depends_on = ("distance_to_goal",)

    @staticmethod
    def reached(called_stop: bool, distance: float, radius: float) -> bool:
        """habitat's Success: the agent called stop within ``radius`` of the goal."""
        return called_stop and distance < radius

    @staticmethod
    def compute(episode: EpisodeProgress, measured: dict[str, float]) -> float:
        distance = measured["distance_to_goal"]
        return float(Success.reached(episode.called_stop, distance, episode.success_radius))


@register_measure
class SPL(Fraction):
    name = "spl"
    depends_on = ("success",)

    @staticmethod
    def compute(episode: EpisodeProgress, measured: dict[str, float]) -> float:
        return measured["success"] * path_ratio(episode)


@register_measure
class SoftSPL(Fraction):
    name = "softspl"
    uuid = "soft_spl"
    depends_on = ("distance_to_goal",)

    @staticmethod
    def compute(episode: EpisodeProgress, measured: dict[str, float]) -> float:
        start, distance = episode.start_distance, measured["distance_to_goal"]
        soft = (
            max(0.0, 1.0 - distance / start)
            if start > 0
            else float(distance < episode.success_radius)
        )
        return soft * path_ratio(episode)


@register_measure
class PathLength(Kept):
    name = field = "path_length"


@register_measure
class Collisions(Kept):
    name = field = "collisions"


@register_measure
class NumSteps(Kept):
    name, field = "num_steps", "steps"


# The headline measures, in the order tables, progress bars and run summaries show them; the
# others (:func:`extra_measures`) follow them in the benchmark's means and CSV.
HEADLINE = (Success.name, SPL.name, SoftSPL.name, DistanceToGoal.name)
# How well an agent does, in one or two numbers: progress bars, learning curves, a teacher's
# figures, the validation measure that picks a text policy.
SCORES = (Success.name, SPL.name)


def extra_measures() -> tuple[str, ...]:
    """The registered measures that are not :data:`HEADLINE`, in registration order."""
    return tuple(name for name in MEASURES if name not in HEADLINE)


def habitat_key(name: str) -> str:
    """habitat's key of measure ``name`` (``softspl`` -> ``soft_spl``; most are the same)."""
    return MEASURES[name].uuid or name


def habitat_keys() -> tuple[str, ...]:
    """habitat's key of every measure, headline first: what an OpenEnv client is shown."""
    return tuple(habitat_key(n) for n in HEADLINE + extra_measures())


def bounds(name: str) -> tuple[float, float]:
    """The values measure ``name`` (ours or habitat's key) can take; [0, inf) when unknown."""
    for cls in MEASURES.values():
        if name in (cls.name, cls.uuid):
            return cls.bounds
    return (0.0, math.inf)


def measure_episode(episode: EpisodeProgress) -> dict[str, float]:
    """Every registered measure, each computed once, as ``info`` carries them: habitat's key
    (``soft_spl``) and then ours (``softspl``) where they differ."""
    measured: dict[str, float] = {}
    info: dict[str, float] = {}
    for name, cls in MEASURES.items():
        value = measured[name] = cls.compute(episode, measured)
        if cls.uuid is not None:
            info[cls.uuid] = value
        info[name] = value
    return info
