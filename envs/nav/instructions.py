"""InstructNav: route instructions generated from a procedural apartment's rooms, doors and objects.

An instruction describes the route the shortest path takes through the apartment (its rooms and
doors form a tree, so the route between two rooms is unique)::

    leave the room through the door on your left, go through the corridor and take the door in
    front of you, then stop next to the sofa in the living room.

- the door to leave the start room by, relative to the start heading (in front of you, on your
  left, on your right, behind you);
- each room passed through and the door to take there, relative to the heading on entering it;
- the object to stop next to, in the last room: "the sofa" when the room has one, "a chair" when
  it has several (beside any of them succeeds). That room is named by its kind when the
  apartment has one room of that kind, else "the next room"; "this room" when start and goal
  share a room.

A door is named only when no other door of its room gets the same direction word, and only when
its direction is at least ``DIRECTION_MARGIN`` from the boundary between two words, so every
instruction is unambiguous. Each described object gets a goal point beside it (of ObjectNav's
view points, navigable spots within 1 m that see it, those nearest the object; of these the one
the start reaches first); DistanceToGoal is the geodesic to the nearest goal and Success is
``stop`` within ``success_distance`` (1 m) of it, as VLN-CE judges R2R goals. The words come from
the small fixed ``VOCABULARY``, so that a tiny model with a tokenizer trained on the spot can
learn them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pixelrl.envs.gui_action import TEXT_CHARSET
from pixelrl.envs.nav.dataset import (
    EpisodeFileError,
    EpisodeRules,
    Instruction,
    NavEpisode,
    NavGoal,
    NoEpisodeError,
)
from pixelrl.envs.nav.geometry import polar_goal, yaw_to_quaternion

# The observation's instruction: the characters a GUI instruction may hold, at most this long
# (R2R's instructions run to a few hundred characters; longer ones, RxR's, are cut).
MAX_INSTRUCTION_LENGTH = 1024
# Directions are quantised into four words; a door this close to the boundary between two
# words (45 or 135 degrees off the heading) is never named.
DIRECTION_MARGIN = math.radians(10)
START_MARGIN = 0.3  # starts keep this far inside their room's walls (never in a doorway)
NEAR_OBJECT = 0.1  # goal candidates: view points within this of the nearest one to the object

ROOM_WORDS = {
    "living_room": "living room",
    "bedroom": "bedroom",
    "kitchen": "kitchen",
    "bathroom": "bathroom",
    "office": "office",
    "corridor": "corridor",
}
OBJECT_WORDS = {"tv_monitor": "tv"}  # every other category is its own word
LEAVE = ("leave", "exit")
PASS = ("go through", "walk through")
STOP = ("stop next to", "stop by")
VOCABULARY = frozenset(
    "a leave exit the room through door in front of you on your left right behind go walk and "
    "take then stop next to by this living bedroom kitchen bathroom office corridor chair bed "
    "plant toilet tv sofa table cabinet sink bathtub counter stool".split()
)


def instruction_space():
    """The ``instruction`` observation: a gymnasium ``Text``."""
    from gymnasium import spaces

    return spaces.Text(MAX_INSTRUCTION_LENGTH, min_length=0, charset=TEXT_CHARSET)


def instruction_observation(text: str) -> str:
    """``text`` as the observation carries it: characters outside ``TEXT_CHARSET`` (a file's
    curly quotes, say) dropped, cut at ``MAX_INSTRUCTION_LENGTH``."""
    return "".join(c for c in text if c in TEXT_CHARSET)[:MAX_INSTRUCTION_LENGTH]


class NoRouteError(NoEpisodeError):
    """An apartment without any route that the instruction rules allow."""


@dataclass
class InstructionRules:
    """How InstructNav episodes are drawn (NavConfig option ``instruction_rules``).

    ``rooms``: (min, max) rooms the described route visits, start and goal rooms included
    (1: both in one room). An episode draws the count uniformly among those the apartment has
    routes for. ``max_tries``: episode draws before giving up.
    """

    rooms: tuple[int, int] = (1, 3)
    max_tries: int = 200

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> InstructionRules:
        try:
            rules = cls(**options)
        except TypeError as e:
            names = ", ".join(f.name for f in dataclasses.fields(cls))
            raise ValueError(
                f"bad option 'instruction_rules' {options!r}: {e} (keys: {names})"
            ) from None
        rules.validate()
        return rules

    def validate(self) -> None:
        lo, hi = self.rooms
        if not 1 <= lo <= hi:
            raise ValueError(
                f"instruction_rules.rooms must be (min, max), 1 <= min <= max, got {self.rooms}"
            )
        if self.max_tries < 1:
            raise ValueError(f"instruction_rules.max_tries must be >= 1, got {self.max_tries}")


def direction_word(position: np.ndarray, yaw: float, target: np.ndarray) -> tuple[str, bool]:
    """Where ``target`` lies seen from ``position`` facing ``yaw``, in words, and whether it is
    clear of the boundaries between words by ``DIRECTION_MARGIN``."""
    _, phi = polar_goal(position, yaw, target)
    a = abs(phi)
    clear = min(abs(a - math.pi / 4), abs(a - 3 * math.pi / 4)) >= DIRECTION_MARGIN
    if a < math.pi / 4:
        return "in front of you", clear
    if a > 3 * math.pi / 4:
        return "behind you", clear
    return ("on your left" if phi > 0 else "on your right"), clear


def describe_route(
    rng: np.random.Generator,
    room_words: list[str],
    door_words: list[str],
    goal: str,
    final_room: str,
) -> str:
    """The instruction for a route through ``len(room_words)`` rooms: ``door_words[i]`` names
    the door out of room i, ``goal`` the object ("the sofa", "a chair"), ``final_room`` how the
    last room is called ("this room", "the next room", "the kitchen")."""
    stop = f"{STOP[rng.integers(len(STOP))]} {goal} in {final_room}"
    if not door_words:
        return stop + "."
    parts = [f"{LEAVE[rng.integers(len(LEAVE))]} the room through the door {door_words[0]}"]
    for room, door in zip(room_words[1:-1], door_words[1:]):
        parts.append(f"{PASS[rng.integers(len(PASS))]} the {room} and take the door {door}")
    return ", ".join(parts) + f", then {stop}."


@dataclass
class _Target:
    """A goal category in one room: its instances there (all of them, so the article is right)
    and, for each one reachable, the points beside it where its goal point is picked."""

    room: int
    category: str
    count: int
    instance_ids: list[int]
    near: list[np.ndarray]  # per reachable instance: its view points nearest the object


class _ScenePlan:
    """What every episode of one scene needs: rooms, start cells, routes, targets."""

    def __init__(self, grid) -> None:
        from pixelrl.envs.nav.viewpoints import view_points

        layout = grid.scene.layout
        self.layout = layout
        self.island = grid.largest_island()
        n = len(layout.rooms)
        # Start cells: navigable, on the largest island, inside a room away from its walls.
        rows, cols = np.nonzero(grid.islands == self.island)
        centres = grid.cell_centre(rows, cols)
        self.start_cells = [
            centres[room.contains(centres[:, 0], centres[:, 2], START_MARGIN)]
            for room in layout.rooms
        ]
        # Targets: per room, each category with an instance that has view points in the room.
        by_room: dict[tuple[int, str], list] = {}
        for inst in grid.scene.goal_instances():
            k = layout.room_at(float(inst.center[0]), float(inst.center[2]))
            if k is not None:
                by_room.setdefault((k, inst.category), []).append(inst)
        self.targets: dict[int, list[_Target]] = {}
        for (k, category), instances in sorted(by_room.items()):
            target = _Target(k, category, len(instances), [], [])
            for inst in instances:
                vp = view_points(grid, inst)
                if len(vp):
                    r, c = grid.to_cell(vp)
                    room = layout.rooms[k]
                    vp = vp[(grid.islands[r, c] == self.island) & room.contains(vp[:, 0], vp[:, 2])]
                if len(vp):
                    gap = _footprint_distance(inst, vp)
                    target.instance_ids.append(inst.instance_id)
                    target.near.append(vp[gap <= gap.min() + NEAR_OBJECT])
            if target.instance_ids:
                self.targets.setdefault(k, []).append(target)
        # Routes between rooms: door indices along the tree path (breadth-first from each room).
        self.neighbours: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for d, door in enumerate(layout.doors):
            a, b = door.rooms
            self.neighbours[a].append((d, b))
            self.neighbours[b].append((d, a))
        self._starts: dict[tuple, np.ndarray] = {}
        self.routes: dict[tuple[int, int], list[int]] = {}
        for s in range(n):
            paths = {s: []}
            frontier = [s]
            while frontier:
                room = frontier.pop(0)
                for d, other in self.neighbours[room]:
                    if other not in paths:
                        paths[other] = paths[room] + [d]
                        frontier.append(other)
            for t, doors in paths.items():
                self.routes[(s, t)] = doors

    def starts_for(self, room: int, target: _Target, distance: float) -> np.ndarray:
        """Start cells of ``room`` at least ``distance`` in a straight line from every point
        beside ``target`` (so at least that far geodesically), cached."""
        key = (room, target.room, target.category, distance)
        if key not in self._starts:
            cells, near = self.start_cells[room], np.concatenate(target.near)
            gap = np.full(len(cells), np.inf)
            for p in near:
                gap = np.minimum(gap, np.hypot(cells[:, 0] - p[0], cells[:, 2] - p[2]))
            self._starts[key] = cells[gap >= distance]
        return self._starts[key]

    def rooms_along(self, start_room: int, doors: list[int]) -> list[int]:
        rooms = [start_room]
        for d in doors:
            a, b = self.layout.doors[d].rooms
            rooms.append(b if rooms[-1] == a else a)
        return rooms

    def entering_words(self, doors: list[int], rooms: list[int]) -> list[str] | None:
        """The direction word of each door after the first, seen on entering its room through
        the previous door; None when one of them is ambiguous."""
        words = []
        for previous, door, room in zip(doors, doors[1:], rooms[1:]):
            here, yaw = self.entering_pose(previous, room)
            word = self.door_word(room, door, here, yaw, exclude=previous)
            if word is None:
                return None
            words.append(word)
        return words

    def entering_pose(self, door: int, room: int) -> tuple[np.ndarray, float]:
        """Standing in ``door`` facing into ``room`` (perpendicular to its wall)."""
        d, r = self.layout.doors[door], self.layout.rooms[room]
        if d.axis == "x":  # a wall at x = const: face +x into a room that starts there
            direction = (1.0, 0.0) if math.isclose(r.x0, d.x) else (-1.0, 0.0)
        else:
            direction = (0.0, 1.0) if math.isclose(r.z0, d.z) else (0.0, -1.0)
        yaw = math.atan2(-direction[0], -direction[1])  # habitat: forward is (-sin, -cos)
        return np.array([d.x, 0.0, d.z]), yaw

    def door_word(
        self, room: int, door: int, position: np.ndarray, yaw: float, exclude: int | None = None
    ) -> str | None:
        """``door``'s direction word from the pose, or None when it is near a boundary between
        words or another door of ``room`` (but ``exclude``) gets the same word."""
        word, clear = direction_word(position, yaw, self._door_point(door))
        if not clear:
            return None
        for other, _ in self.neighbours[room]:
            if other not in (door, exclude):
                if direction_word(position, yaw, self._door_point(other))[0] == word:
                    return None
        return word

    def _door_point(self, door: int) -> np.ndarray:
        d = self.layout.doors[door]
        return np.array([d.x, 0.0, d.z])

    def final_room_words(self, rooms: list[int]) -> str:
        if len(rooms) == 1:
            return "this room"
        kind = self.layout.rooms[rooms[-1]].kind
        if sum(r.kind == kind for r in self.layout.rooms) == 1:
            return f"the {ROOM_WORDS[kind]}"
        return "the next room"


def _footprint_distance(instance, points: np.ndarray) -> np.ndarray:
    lo, hi = instance.aabb_min, instance.aabb_max
    dx = np.maximum(np.maximum(lo[0] - points[:, 0], points[:, 0] - hi[0]), 0)
    dz = np.maximum(np.maximum(lo[2] - points[:, 2], points[:, 2] - hi[2]), 0)
    return np.hypot(dx, dz)


def scene_plan(grid) -> _ScenePlan:
    """The scene's plan, built once per grid (kept on it, like its view points)."""
    plan = grid.__dict__.get("_instructnav_plan")
    if plan is None:
        if getattr(grid.scene, "layout", None) is None:
            raise ValueError(
                f"scene {grid.scene.name!r} has no room layout: InstructNav generates instructions "
                "only in procedural apartments; other scenes need a dataset with instructions "
                "(option 'dataset_path')"
            )
        plan = grid.__dict__["_instructnav_plan"] = _ScenePlan(grid)
    return plan


def generate_instructnav_episode(
    grid,
    rng: np.random.Generator,
    scene_id: str,
    episode_id: str,
    rules: EpisodeRules | None = None,
    instruction_rules: InstructionRules | None = None,
    success_distance: float = 1.0,
) -> NavEpisode:
    """One InstructNav episode in ``grid``'s procedural apartment, drawn with ``rng``: a route of
    ``instruction_rules.rooms`` rooms, a start in the first room, goals beside the objects of one
    category in the last, the instruction that describes them, and the geodesic distance under
    ``rules`` (min/max geodesic; the start is never within ``success_distance`` + 1 m of a goal).
    :class:`NoRouteError` when the apartment has no route the rules allow."""
    from pixelrl.envs.nav.geodesic import geodesic_graph

    rules = rules or EpisodeRules()
    instruction_rules = instruction_rules or InstructionRules()
    plan = scene_plan(grid)
    graph = geodesic_graph(grid)
    lo, hi = instruction_rules.rooms
    # Starts at least this far from every goal (in a straight line, so geodesically too): a
    # stop right away never succeeds.
    apart = max(rules.min_geodesic, success_distance + 1.0)
    by_length: dict[int, list[tuple[int, list[int], list[str], list]]] = {}
    for (s, t), doors in sorted(plan.routes.items()):
        if not lo <= len(doors) + 1 <= hi:
            continue
        rooms = plan.rooms_along(s, doors)
        words = plan.entering_words(doors, rooms)
        goals = [(g, plan.starts_for(s, g, apart)) for g in plan.targets.get(t, [])]
        goals = [(g, cells) for g, cells in goals if len(cells)]
        if words is not None and goals:
            by_length.setdefault(len(rooms), []).append((s, doors, words, goals))
    if not by_length:
        raise NoRouteError(
            f"scene {scene_id!r} has no unambiguous route through {lo}-{hi} rooms to an object "
            f"{apart:g} m from a start (try other instruction_rules.rooms or apartment options)"
        )
    # The route length is drawn once, so that rejections (by heading) do not skew the mix.
    lengths = sorted(by_length)
    routes = by_length[lengths[int(rng.integers(len(lengths)))]]
    for _ in range(instruction_rules.max_tries):
        s, doors, later_words, goals = routes[int(rng.integers(len(routes)))]
        target, cells = goals[int(rng.integers(len(goals)))]
        start = cells[int(rng.integers(len(cells)))]
        yaw = float(rng.uniform(-math.pi, math.pi))
        door_words = []
        if doors:
            first = plan.door_word(s, doors[0], start, yaw)
            if first is None:
                continue  # the door out is ambiguous from this heading: draw again
            door_words = [first] + later_words
        # A goal beside each instance: of its points nearest the object, the one the start
        # reaches first. DistanceToGoal is to the nearest of them.
        from_start = graph.field(start[None])
        reach = [np.array([from_start.distance(p) for p in near]) for near in target.near]
        goals = np.stack([near[int(np.argmin(d))] for near, d in zip(target.near, reach)])
        field_ = graph.field(goals, seed_radius=grid.cell * 0.75)  # NavSim's field
        rough = field_.distance(start)
        if rough > rules.max_geodesic + 1:
            continue
        dist = field_.exact_distance(start) if rules.geodesic == "exact" else rough
        if not rules.min_geodesic <= dist <= rules.max_geodesic:
            continue
        nearest = goals[int(np.argmin([d.min() for d in reach]))]
        rooms = plan.rooms_along(s, doors)
        words = [ROOM_WORDS[plan.layout.rooms[k].kind] for k in rooms]
        category = target.category
        text = describe_route(
            rng,
            words,
            door_words,
            ("the " if target.count == 1 else "a ") + OBJECT_WORDS.get(category, category),
            plan.final_room_words(rooms),
        )
        floor = float(start[1])
        doors_on_route = [plan.layout.doors[d] for d in doors]
        route = [start] + [np.array([d.x, floor, d.z]) for d in doors_on_route] + [nearest]
        info = {
            "geodesic_distance": dist,
            "euclidean_distance": float(np.hypot(*(nearest - start)[[0, 2]])),
            "rooms": len(rooms),
        }
        return NavEpisode(
            episode_id,
            scene_id,
            start.copy(),
            np.array(yaw_to_quaternion(yaw)),
            [
                NavGoal(goal.copy(), success_distance, iid, category)
                for goal, iid in zip(goals, target.instance_ids)
            ],
            info,
            instruction=Instruction(text),
            reference_path=np.stack(route),
        )
    raise RuntimeError(
        f"no InstructNav episode satisfying {rules} and {instruction_rules} found in scene "
        f"{scene_id!r} after {instruction_rules.max_tries} tries"
    )


def dataset_success_distance(
    path: str, episodes: list[NavEpisode], configured: float | None = None
) -> float | None:
    """The success distance to judge an InstructNav dataset by: ``configured`` when given, else
    its goals' common ``radius`` (VLN-CE's R2R files: 3.0, what VLN-CE judges them by), else
    None (the task default). Every episode must carry an instruction."""
    for i, e in enumerate(episodes):
        if e.instruction is None:
            raise EpisodeFileError(
                f"{path}: episodes[{i}] has no 'instruction' (InstructNav needs "
                "'instruction': {'instruction_text': ...}, as VLN-CE's R2R episodes)"
            )
    if configured is not None:
        return configured
    radii = {float(g.radius) for e in episodes for g in e.goals if g.radius is not None}
    if len(radii) > 1:
        raise EpisodeFileError(
            f"{path}: the goals' radius differs between episodes ({sorted(radii)}); "
            "pass the success distance to judge them by (option 'success_distance')"
        )
    return radii.pop() if radii else None
