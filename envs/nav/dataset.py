"""Navigation episodes: generation with habitat's rules, and habitat's ``.json.gz`` files.

File format (habitat-lab ``PointNavDatasetV1`` / ``ObjectNavDatasetV1``): a gzip JSON object
``{"episodes": [...]}``; each episode has ``episode_id``, ``scene_id``, ``start_position``
``[x, y, z]``, ``start_rotation`` ``[x, y, z, w]``, ``goals`` (``[{"position", "radius"}]`` for
PointNav; ObjectNav goals add ``object_id``, ``object_category`` and ``view_points``
``[{"agent_state": {"position", "rotation"}, "iou"}]``, the rotation facing the object),
``info.geodesic_distance`` and, for ObjectNav, ``object_category``; ObjectNav files carry the
top-level ``category_to_task_category_id`` (``objectgoal``) and ``category_to_mp3d_category_id``
that habitat's loader needs. ObjectNav files that keep goals in a top-level ``goals_by_category``
(as habitat writes them) are read too. Instruction episodes (habitat-lab ``VLNDatasetV1``, VLN-CE's R2R files) add ``instruction``
``{"instruction_text", "instruction_tokens"}``, ``reference_path`` ``[[x, y, z], ...]`` and
``trajectory_id``; their files carry ``instruction_vocab.word_list``, which the tokens index.
Coordinates are y up, like habitat.

Generator rules (habitat's ``generate_pointnav_episode``): start and goal on one island,
geodesic distance within [min, max] (1-30 m), geodesic / euclidean ratio >= 1.1.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pixelrl.envs.nav.geometry import yaw_to_quaternion


class EpisodeFileError(ValueError):
    """A malformed episode file; the message names the file and the field."""


# Top-level ``scene_id_format`` of the files we write: their procedural scene ids carry every
# non-default generator option (``pixelrl.envs.nav.sim.apartment_scene_id``). Files without it
# that name procedural apartments predate that, and their ids are ambiguous.
SCENE_ID_FORMAT = "pixelrl-2"


@dataclass
class NavGoal:
    """A goal: a point (PointNav) or an object instance with its view points (ObjectNav)."""

    position: np.ndarray
    radius: float | None = None
    object_id: int | None = None
    object_category: str | None = None
    view_points: np.ndarray | None = None  # (K, 3)
    view_rotations: np.ndarray | None = None  # (K, 4) [x, y, z, w]: facing the object
    view_ious: np.ndarray | None = None  # (K,) habitat's ObjectViewLocation.iou


@dataclass
class Instruction:
    """habitat's VLN ``InstructionData``: the words, and the tokens a file gave (indices into
    its ``instruction_vocab``; written files tokenize afresh)."""

    instruction_text: str
    instruction_tokens: list | None = None


@dataclass
class NavEpisode:
    episode_id: str
    scene_id: str
    start_position: np.ndarray
    start_rotation: np.ndarray  # habitat quaternion [x, y, z, w]
    goals: list[NavGoal]
    info: dict[str, Any] = field(default_factory=dict)
    object_category: str | None = None
    instruction: Instruction | None = None  # instruction episodes (VLN) only
    reference_path: np.ndarray | None = None  # (K, 3): the route the instruction describes
    trajectory_id: int | str | None = None

    def goal_points(self) -> np.ndarray:
        """Points whose nearest is the target of DistanceToGoal: view points for ObjectNav
        goals that have them, goal positions otherwise."""
        pts = [
            g.view_points if g.view_points is not None and len(g.view_points) else g.position[None]
            for g in self.goals
        ]
        return np.concatenate(pts).astype(np.float64)


@dataclass
class EpisodeRules:
    """habitat's episode generator rules.

    ``geodesic`` says which geodesic the rules test and the episode stores as
    ``info.geodesic_distance`` (SPL's l): ``"exact"`` is the any-angle one (the grid path pulled
    taut, 10-50 ms an episode); ``"grid"`` is the 48-neighbour grid distance (at most ~1% longer)
    read off the goal's distance field, which the episode computes anyway. ``"grid"`` draws a
    PointNav episode with a single Dijkstra (goal first, then the start among every cell that
    passes the rules), for training envs whose resets would otherwise dominate the run; there
    ``starts_per_goal`` > 1 lets an agent's next episodes keep its goal (and field) with fresh
    starts, dividing that cost again (see ``NavSim.new_episode``).

    ``exact_spl`` (``geodesic="grid"`` only): the env still judges SPL / SoftSPL on the exact
    start geodesic: l starts as the stored grid one and is replaced by the any-angle one when
    the episode ends (one search then, none at reset). False keeps the grid l (~1% long, up to
    ~3%) for the whole episode: training logs that do not need exact SPL skip that search.
    Success never depends on l (it is judged on the exact DistanceToGoal at ``stop``).
    """

    min_geodesic: float = 1.0
    max_geodesic: float = 30.0
    min_ratio: float = 1.1
    max_tries: int = 2000
    geodesic: str = "exact"
    starts_per_goal: int = 1
    exact_spl: bool = True

    def validate(self) -> None:
        if not (isinstance(self.min_ratio, (int, float)) and 0 <= self.min_ratio < math.inf):
            raise ValueError(
                f"EpisodeRules.min_ratio must be a finite number >= 0, got {self.min_ratio!r}"
            )
        if (
            isinstance(self.max_tries, bool)
            or not isinstance(self.max_tries, int)
            or (self.max_tries < 1)
        ):
            raise ValueError(
                f"EpisodeRules.max_tries must be an integer >= 1, got {self.max_tries!r}"
            )
        if not 0 <= self.min_geodesic < self.max_geodesic:
            raise ValueError(f"EpisodeRules needs 0 <= min_geodesic < max_geodesic, got {self}")
        if self.geodesic not in ("exact", "grid"):
            raise ValueError(
                f"EpisodeRules.geodesic must be 'exact' or 'grid', got {self.geodesic!r}"
            )
        if not isinstance(self.exact_spl, bool):
            raise ValueError(
                f"EpisodeRules.exact_spl must be true or false, got {self.exact_spl!r}"
            )
        if self.starts_per_goal < 1 or (self.starts_per_goal > 1 and self.geodesic != "grid"):
            raise ValueError(
                f"EpisodeRules.starts_per_goal must be >= 1, and > 1 only with geodesic='grid', got {self}"
            )


# ----------------------------------------------------------------------------- generation
def _drawn_episode(
    rng: np.random.Generator,
    scene_id: str,
    episode_id: str,
    start: np.ndarray,
    goals: list[NavGoal],
    info: dict[str, Any],
    category: str | None = None,
) -> NavEpisode:
    """A generated episode: the start heading is drawn uniformly from ``rng``."""
    yaw = float(rng.uniform(-math.pi, math.pi))
    return NavEpisode(
        episode_id, scene_id, start, np.array(yaw_to_quaternion(yaw)), goals, info, category
    )


class NoEpisodeError(RuntimeError):
    """A scene where no episode satisfies the rules (too small or too cluttered for the distances
    asked, or no reachable goal): the simulator then draws the episode in another scene."""


def generate_pointnav_episode(
    grid,
    rng: np.random.Generator,
    scene_id: str,
    episode_id: str,
    rules: EpisodeRules | None = None,
    goal_field=None,
) -> NavEpisode:
    """One PointNav episode in ``grid``'s scene, drawn with ``rng`` under habitat's rules
    (``geodesic="grid"`` rules only: toward the goal of ``goal_field`` when given)."""
    from pixelrl.envs.nav.geodesic import geodesic_graph

    rules = rules or EpisodeRules()
    graph = geodesic_graph(grid)
    island = grid.largest_island()
    if rules.geodesic == "grid":
        return _pointnav_episode_from_goal(
            grid, graph, island, rng, scene_id, episode_id, rules, goal_field
        )
    if goal_field is not None:
        raise ValueError(
            "generate_pointnav_episode takes a goal_field only with geodesic='grid' rules"
        )
    for _ in range(rules.max_tries):
        goal = grid.sample_navigable(rng, island)
        start = grid.sample_navigable(rng, island)
        gap = goal - start if getattr(grid, "sloped", False) else (goal - start)[[0, 2]]
        euclid = float(np.linalg.norm(gap))  # 3D between storeys, as habitat's generator
        if not rules.min_geodesic <= euclid <= rules.max_geodesic:
            continue
        # In plain sight the geodesic is the straight line: ratio 1, rejected before any search.
        if rules.min_ratio > 1 and grid.line_of_sight(start, goal):
            continue
        field_ = graph.field(goal[None])
        if not rules.min_geodesic <= field_.distance(start) <= rules.max_geodesic + 1:
            continue  # quick reject on the grid distance before the any-angle one
        if field_.exact_distance_bound(start) < rules.min_ratio * euclid:
            continue  # even the unpulled path is too straight: the ratio rule fails for sure
        dist = field_.exact_distance(start)
        if (
            not (rules.min_geodesic <= dist <= rules.max_geodesic)
            or dist / max(euclid, 1e-9) < rules.min_ratio
        ):
            continue
        info = {"geodesic_distance": dist, "euclidean_distance": euclid}
        return _drawn_episode(rng, scene_id, episode_id, start, [NavGoal(goal)], info)
    raise NoEpisodeError(
        f"no PointNav episode satisfying {rules} found in scene {scene_id!r} after {rules.max_tries} tries"
    )


def _pointnav_episode_from_goal(
    grid, graph, island, rng, scene_id, episode_id, rules, goal_field=None
) -> NavEpisode:
    """``geodesic="grid"`` generation: draw the goal (or take ``goal_field``'s), compute its
    distance field once, then draw the start uniformly among the island's cells whose grid
    geodesic and euclidean distance pass the rules (the exact generator draws both points and
    rejects; here only a goal without any valid start is redrawn)."""
    from pixelrl.envs.nav.geodesic import straight_distances

    cells = np.flatnonzero(grid.islands.ravel() == island)
    rows, cols = np.divmod(cells, grid.cols)
    centres = grid.cell_centre(rows, cols)
    for _ in range(max(1, rules.max_tries // 100)):
        if goal_field is not None:
            field_, goal_field = goal_field, None  # a goal with no valid start is redrawn
            goal = field_.goals[0]
        else:
            goal = grid.sample_navigable(rng, island)
            field_ = graph.field(goal[None])
        geodesic = field_.values.ravel()[cells]
        euclid = straight_distances(grid, centres, goal)  # 3D between storeys, as habitat
        ok = (
            np.isfinite(geodesic)
            & (euclid >= rules.min_geodesic)
            & (geodesic >= rules.min_geodesic)
            & (geodesic <= rules.max_geodesic)
            & (geodesic >= rules.min_ratio * euclid)
        )
        candidates = np.flatnonzero(ok)
        if not len(candidates):
            continue
        start = centres[candidates[int(rng.integers(len(candidates)))]]
        dist = field_.distance(start)
        euclid = float(np.hypot(*(goal - start)[[0, 2]]))
        info = {"geodesic_distance": dist, "euclidean_distance": euclid, "geodesic": "grid"}
        return _drawn_episode(rng, scene_id, episode_id, start, [NavGoal(goal)], info)
    raise NoEpisodeError(
        f"no PointNav episode satisfying {rules} found in scene {scene_id!r} after {rules.max_tries // 100} goals"
    )


def generate_objectnav_episode(
    grid,
    rng: np.random.Generator,
    scene_id: str,
    episode_id: str,
    rules: EpisodeRules | None = None,
    category: str | None = None,
) -> NavEpisode:
    """One ObjectNav episode: a category present in the scene with view points on the start's
    island; DistanceToGoal is the geodesic to the nearest view point of any instance."""
    from pixelrl.envs.nav.geodesic import geodesic_graph
    from pixelrl.envs.nav.viewpoints import view_points

    rules = rules or EpisodeRules()
    graph = geodesic_graph(grid)
    island = grid.largest_island()
    by_category: dict[str, list[NavGoal]] = {}
    for inst in grid.scene.goal_instances(category):
        vp = view_points(grid, inst)
        if len(vp) == 0:
            continue
        r, c = grid.to_cell(vp)
        vp = vp[grid.islands[r, c] == island]
        if len(vp):
            by_category.setdefault(inst.category, []).append(
                NavGoal(inst.center, None, inst.instance_id, inst.category, vp)
            )
    if not by_category:
        raise NoEpisodeError(
            f"scene {scene_id!r} has no reachable ObjectNav goal (category {category})"
        )
    categories = sorted(by_category)
    for _ in range(max(1, rules.max_tries // 50)):
        cat = categories[int(rng.integers(len(categories)))]
        goals = by_category[cat]
        field_ = graph.field(
            np.concatenate([g.view_points for g in goals]), seed_radius=grid.cell * 0.75
        )
        for _ in range(50):
            start = grid.sample_navigable(rng, island)
            if not rules.min_geodesic <= field_.distance(start) <= rules.max_geodesic + 1:
                continue
            dist = (
                field_.exact_distance(start)
                if rules.geodesic == "exact"
                else field_.distance(start)
            )
            # Euclidean distance to the nearest view point, the same targets as the geodesic.
            targets = np.concatenate([g.view_points for g in goals])
            euclid = float(np.min(np.linalg.norm((targets - start)[:, [0, 2]], axis=1)))
            if not rules.min_geodesic <= dist <= rules.max_geodesic:
                continue
            if dist / max(euclid, 1e-9) < rules.min_ratio and euclid > 0:
                continue
            info = {"geodesic_distance": dist, "euclidean_distance": euclid}
            goals = [_with_view_details(grid, g) for g in goals]
            return _drawn_episode(rng, scene_id, episode_id, start, goals, info, cat)
    raise NoEpisodeError(f"no ObjectNav episode satisfying {rules} found in scene {scene_id!r}")


def _with_view_details(grid, goal: NavGoal) -> NavGoal:
    """The goal with its view points' rotations (facing the object) and habitat's iou."""
    from dataclasses import replace

    from pixelrl.envs.nav.viewpoints import view_ious

    cache = grid.__dict__.setdefault("_view_ious", {})
    if goal.object_id not in cache:
        inst = next(i for i in grid.scene.goal_instances() if i.instance_id == goal.object_id)
        cache[goal.object_id] = view_ious(grid, inst, goal.view_points)
    rotations = facing_rotations(goal.view_points, goal.position)
    return replace(goal, view_rotations=rotations, view_ious=cache[goal.object_id])


# ----------------------------------------------------------------------------- json.gz I/O
def episode_to_json(ep: NavEpisode) -> dict[str, Any]:
    goals = []
    for g in ep.goals:
        d: dict[str, Any] = {"position": [float(v) for v in g.position], "radius": g.radius}
        if g.object_category is not None:
            d["object_id"] = g.object_id if g.object_id is not None else f"{g.object_category}"
            d["object_category"] = g.object_category
            d["object_name"] = f"{g.object_category}_{g.object_id}"
        if g.view_points is not None:
            rotations = g.view_rotations
            if rotations is None:
                rotations = facing_rotations(g.view_points, g.position)
            ious = g.view_ious if g.view_ious is not None else [None] * len(g.view_points)
            d["view_points"] = [
                {
                    "agent_state": {
                        "position": [float(v) for v in p],
                        "rotation": [float(v) for v in q],
                    },
                    "iou": None if iou is None else float(iou),
                }
                for p, q, iou in zip(g.view_points, rotations, ious)
            ]
        goals.append(d)
    out: dict[str, Any] = {
        "episode_id": str(ep.episode_id),
        "scene_id": ep.scene_id,
        "start_position": [float(v) for v in ep.start_position],
        "start_rotation": [float(v) for v in ep.start_rotation],
        "goals": goals,
        "info": {
            k: float(v) if isinstance(v, (np.floating, float)) else v for k, v in ep.info.items()
        },
        "shortest_paths": None,
        "start_room": None,
    }
    if ep.object_category is not None:
        out["object_category"] = ep.object_category
    if ep.instruction is not None:
        out["instruction"] = {"instruction_text": ep.instruction.instruction_text}
        path = ep.reference_path if ep.reference_path is not None else np.zeros((0, 3))
        out["reference_path"] = [[float(v) for v in p] for p in path]
        out["trajectory_id"] = ep.trajectory_id if ep.trajectory_id is not None else ep.episode_id
    return out


def tokenize(text: str) -> list[str]:
    """Instruction words, by the rule of habitat's ``habitat.datasets.utils.tokenize``: lower
    case, "'s" split off, commas and question marks dropped, split at runs of non-word characters
    (which stay as tokens, like "."). (habitat passes ``keep=("'s")``, a string, so it splits off
    every "'" and "s" alone; this keeps the "'s" it means.)"""
    text = text.lower().replace("'s", " 's").replace(",", "").replace("?", "")
    return [t.strip() for t in re.split(r"([^\w-]+)", text) if t.strip()]


def facing_rotations(points: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Quaternions ``(K, 4)`` [x, y, z, w] turning the agent at each of ``points`` to face
    ``target`` (yaw only; habitat's forward is -z)."""
    d = np.asarray(target, dtype=np.float64)[None] - np.asarray(points, dtype=np.float64)
    return np.array([yaw_to_quaternion(math.atan2(-x, -z)) for x, z in d[:, [0, 2]]]).reshape(-1, 4)


def default_category_ids() -> dict[str, int]:
    """``objectgoal`` of our scenes' categories: the index in ``OBJECTNAV_CATEGORIES``."""
    from pixelrl.envs.nav.scene import OBJECTNAV_CATEGORIES

    return {c: k for k, c in enumerate(OBJECTNAV_CATEGORIES)}


def save_episodes(
    path: str | os.PathLike,
    episodes: list[NavEpisode],
    category_ids: dict[str, int] | None = None,
) -> None:
    """Write habitat's gzip JSON (``{"episodes": [...]}``); instruction episodes also get
    ``instruction_tokens`` and the file's ``instruction_vocab``, as VLN-CE's R2R files.

    Files with ObjectNav episodes carry habitat's ``category_to_task_category_id`` (what
    ``objectgoal`` says for each category: ``category_ids``, by default our
    :func:`default_category_ids`, plus any category of the episodes it lacks) and
    ``category_to_mp3d_category_id`` (the same numbers: our scenes have no separate semantic
    category annotation; habitat's loader needs both maps, with the same keys)."""
    data: dict[str, Any] = {
        "scene_id_format": SCENE_ID_FORMAT,
        "episodes": [episode_to_json(e) for e in episodes],
    }
    categories = {e["object_category"] for e in data["episodes"] if "object_category" in e}
    if categories:
        ids = dict(category_ids or default_category_ids())
        for c in sorted(categories - set(ids)):
            ids[c] = max(ids.values(), default=-1) + 1
        data["category_to_task_category_id"] = ids
        data["category_to_mp3d_category_id"] = dict(ids)
    texts = [e["instruction"]["instruction_text"] for e in data["episodes"] if "instruction" in e]
    if texts:
        words = ["<pad>", "<unk>"] + sorted({t for text in texts for t in tokenize(text)})
        index = {w: k for k, w in enumerate(words)}
        for e in data["episodes"]:
            if "instruction" in e:
                tokens = tokenize(e["instruction"]["instruction_text"])
                e["instruction"]["instruction_tokens"] = [index[t] for t in tokens]
        data["instruction_vocab"] = {"word_list": words}
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(data, f)


def episode_task(episode: NavEpisode) -> str:
    """The task an episode is for, from its fields: "instructnav" with an ``instruction``,
    "objectnav" when it names an ``object_category`` (its own or its goals') or its goals have
    ``view_points``, else "pointnav"."""
    if episode.instruction is not None:
        return "instructnav"
    if episode.object_category is not None or any(
        g.object_category is not None or g.view_points is not None for g in episode.goals
    ):
        return "objectnav"
    return "pointnav"


def dataset_task(path: str | os.PathLike, episodes: list[NavEpisode]) -> str:
    """The task of a file's episodes (:func:`episode_task`); :class:`EpisodeFileError` if they
    are for different tasks."""
    tasks: dict[str, int] = {}
    for i, e in enumerate(episodes):
        tasks.setdefault(episode_task(e), i)
    if len(tasks) > 1:
        found = ", ".join(f"{t} (episodes[{i}])" for t, i in tasks.items())
        raise EpisodeFileError(f"{os.fspath(path)}: its episodes mix tasks: {found}")
    return next(iter(tasks), "pointnav")


def scene_id_format(path: str | os.PathLike) -> str | None:
    """The file's top-level ``scene_id_format`` (see :data:`SCENE_ID_FORMAT`), or None."""
    return _read_json(os.fspath(path)).get("scene_id_format")


def load_category_ids(path: str | os.PathLike) -> dict[str, int] | None:
    """The file's ``category_to_task_category_id`` (ObjectNav's ``objectgoal`` per category),
    or None when it has none."""
    path = os.fspath(path)
    ids = _read_json(path).get("category_to_task_category_id")
    if ids is None:
        return None
    if not isinstance(ids, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in ids.values()
    ):
        raise EpisodeFileError(
            f"{path}: field 'category_to_task_category_id' must map category names to ints >= 0"
        )
    return dict(ids)


def load_episodes(path: str | os.PathLike) -> list[NavEpisode]:
    """Read habitat's gzip JSON (or plain ``.json``); errors name the file and the field."""
    path = os.fspath(path)
    data = _read_json(path)
    by_category = data.get("goals_by_category") or {}
    return [_episode_from_json(path, i, e, by_category) for i, e in enumerate(data["episodes"])]


def _read_json(path: str) -> dict[str, Any]:
    if not os.path.exists(path):
        raise FileNotFoundError(f"episode file not found: {path!r}")
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as e:  # EOF: cut gzip
        raise EpisodeFileError(f"{path}: not a gzip JSON episode file ({e})") from e
    if not isinstance(data, dict) or not isinstance(data.get("episodes"), list):
        raise EpisodeFileError(f"{path}: field 'episodes' missing or not a list")
    return data


def _vec(path: str, where: str, value: Any, n: int) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.shape != (n,) or not np.isfinite(arr).all():
        raise EpisodeFileError(f"{path}: {where} must be {n} finite numbers, got {value!r}")
    return arr


def _non_negative(value: Any) -> bool:
    """A finite number >= 0 (not a bool)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _goal_from_json(path: str, where: str, g: Any) -> NavGoal:
    if not isinstance(g, dict) or "position" not in g:
        raise EpisodeFileError(f"{path}: {where} must be an object with field 'position'")
    vps = rotations = view_ious = None
    if g.get("view_points"):
        try:
            pts = [vp["agent_state"]["position"] for vp in g["view_points"]]
        except (TypeError, KeyError) as e:
            raise EpisodeFileError(
                f"{path}: {where}.view_points[].agent_state.position missing"
            ) from e
        vps = np.stack([_vec(path, f"{where}.view_points[{k}]", p, 3) for k, p in enumerate(pts)])
        rots = [vp["agent_state"].get("rotation") for vp in g["view_points"]]
        if all(r is not None for r in rots):
            rotations = np.stack(
                [_vec(path, f"{where}.view_points[{k}].rotation", r, 4) for k, r in enumerate(rots)]
            )
        ious = [vp.get("iou") for vp in g["view_points"]]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in ious):
            view_ious = np.asarray(ious, dtype=np.float64)
    radius = g.get("radius")
    if radius is not None and not _non_negative(radius):
        raise EpisodeFileError(
            f"{path}: {where}.radius must be a finite number >= 0 (m) or null, got {radius!r}"
        )
    return NavGoal(
        position=_vec(path, f"{where}.position", g["position"], 3),
        radius=radius,
        object_id=g.get("object_id"),
        object_category=g.get("object_category"),
        view_points=vps,
        view_rotations=rotations,
        view_ious=view_ious,
    )


def _episode_from_json(path: str, i: int, e: Any, by_category: dict) -> NavEpisode:
    where = f"episodes[{i}]"
    if not isinstance(e, dict):
        raise EpisodeFileError(f"{path}: {where} must be an object")
    for key in ("scene_id", "start_position", "start_rotation"):
        if key not in e:
            raise EpisodeFileError(f"{path}: {where} lacks field '{key}'")
    if not isinstance(e["scene_id"], str) or not e["scene_id"]:
        raise EpisodeFileError(f"{path}: {where}.scene_id must be a non-empty string")
    goals_json = e.get("goals") or []
    category = e.get("object_category")
    if not goals_json and category is not None:
        key = f"{os.path.basename(e['scene_id'])}_{category}"
        goals_json = by_category.get(key, [])
    if not isinstance(goals_json, list) or not goals_json:
        raise EpisodeFileError(f"{path}: {where}.goals must be a non-empty list")
    goals = [_goal_from_json(path, f"{where}.goals[{k}]", g) for k, g in enumerate(goals_json)]
    rotation = _vec(path, f"{where}.start_rotation", e["start_rotation"], 4)
    if np.linalg.norm(rotation) < 1e-6:
        raise EpisodeFileError(f"{path}: {where}.start_rotation is a zero quaternion")
    info = e.get("info") or {}
    if not isinstance(info, dict):
        raise EpisodeFileError(f"{path}: {where}.info must be an object")
    for key in ("geodesic_distance", "euclidean_distance"):
        if info.get(key) is not None and not _non_negative(info[key]):
            raise EpisodeFileError(
                f"{path}: {where} (episode_id {e.get('episode_id', i)!r}): info.{key} must be a "
                f"finite number >= 0 (m), got {info[key]!r}"
            )
    return NavEpisode(
        episode_id=str(e.get("episode_id", i)),
        scene_id=e["scene_id"],
        start_position=_vec(path, f"{where}.start_position", e["start_position"], 3),
        start_rotation=rotation,
        goals=goals,
        info=dict(info),
        object_category=category,
        instruction=_instruction_from_json(path, where, e.get("instruction")),
        reference_path=_reference_path_from_json(path, where, e.get("reference_path")),
        trajectory_id=e.get("trajectory_id"),
    )


def _instruction_from_json(path: str, where: str, value: Any) -> Instruction | None:
    if value is None:
        return None
    text = value.get("instruction_text") if isinstance(value, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise EpisodeFileError(
            f"{path}: {where}.instruction must be an object with a non-empty 'instruction_text'"
        )
    tokens = value.get("instruction_tokens")
    if tokens is not None and not isinstance(tokens, list):
        raise EpisodeFileError(f"{path}: {where}.instruction.instruction_tokens must be a list")
    return Instruction(text, tokens)


def _reference_path_from_json(path: str, where: str, value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise EpisodeFileError(f"{path}: {where}.reference_path must be a list of [x, y, z]")
    points = [_vec(path, f"{where}.reference_path[{k}]", p, 3) for k, p in enumerate(value)]
    return np.stack(points) if points else np.zeros((0, 3))
