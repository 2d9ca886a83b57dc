"""``NavSim``: the shared core of the single and the vector env.

It owns the scene pool (procedural apartments, mesh files, or the scenes a dataset names), one
navigability grid and geodesic graph per scene (built on first use), one renderer over all
scenes (``renderer``: the numba rasterizer, or Embree ray casting), and the episode source (a dataset walked in order, or episodes generated on the fly
with habitat's rules: for PointNav by default the cheap grid-geodesic ones, ``FAST_POINTNAV_RULES``). Agents are :class:`~pixelrl.envs.nav.tasks.NavEpisodeState` objects; rendering
all of them is one call.

Scene ids: a file path (absolute, or relative to ``scene_dir`` / the dataset's folder) or a
procedural apartment ``apartment:seed=3,rooms=2..3,clutter=0.5``: the seed and every generator
option that differs from :class:`ApartmentConfig`'s default, so the id alone rebuilds the scene,
face for face, wherever it is read (:func:`apartment_scene_id`, :func:`parse_apartment_scene_id`).
The env option ``apartment`` chooses the knobs of the scenes it generates; for ids read from a
dataset or ``scenes`` it must agree with them, or be left out. Episode files written before ids
carried their options (no ``scene_id_format`` field) are refused: their ids do not say which
apartment they mean (:func:`upgrade_scene_ids` rewrites one whose options you know).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from pixelrl.envs.nav.apartment import ApartmentConfig, generate_apartment
from pixelrl.envs.nav.config import NavConfig
from pixelrl.envs.nav.dataset import (
    SCENE_ID_FORMAT,
    EpisodeFileError,
    EpisodeRules,
    NavEpisode,
    NoEpisodeError,
    default_category_ids,
    generate_objectnav_episode,
    generate_pointnav_episode,
    load_category_ids,
    load_episodes,
    save_episodes,
    scene_id_format,
)
from pixelrl.envs.nav.instructions import (
    InstructionRules,
    dataset_success_distance,
    generate_instructnav_episode,
    instruction_space,
)
from pixelrl.envs.nav.levels import estimate_floor_levels, navigation_grid
from pixelrl.envs.nav.navgrid import AgentSpec, NavGrid
from pixelrl.envs.nav.renderer import CameraSpec, EmbreeRenderer
from pixelrl.envs.nav.scene import OBJECTNAV_CATEGORIES, Scene
from pixelrl.envs.nav.tasks import NavEpisodeState

APARTMENT_PREFIX = "apartment:"
# PointNav's rules for generated episodes when ``episode_rules`` is left empty: the training
# recipe's cheap resets (one Dijkstra per goal, the start drawn on its grid field, the goal and
# field kept for 4 starts of the same agent), with SPL's l still the exact start geodesic
# (``EpisodeRules.exact_spl``, computed when the episode ends). ``episode_rules={"geodesic":
# "exact"}`` is habitat's generator as before (any-angle geodesic tested at every draw).
FAST_POINTNAV_RULES: dict[str, Any] = {"geodesic": "grid", "starts_per_goal": 4}
_DEFAULT_APARTMENT = ApartmentConfig()


def apartment_config(options: Mapping[str, Any] | ApartmentConfig | None) -> ApartmentConfig:
    """A validated :class:`ApartmentConfig` from the ``apartment`` option (sequences as tuples)."""
    if isinstance(options, ApartmentConfig):
        options = dataclasses.asdict(options)
    try:
        cfg = ApartmentConfig(**dict(options or {}))
    except TypeError as e:
        names = ", ".join(f.name for f in dataclasses.fields(ApartmentConfig))
        raise ValueError(f"bad option 'apartment' {options!r}: {e} (options: {names})") from e
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if isinstance(value, (list, tuple)):
            setattr(cfg, f.name, tuple(value))
    cfg.validate()
    return cfg


def _non_default(cfg: ApartmentConfig) -> dict[str, Any]:
    return {
        f.name: getattr(cfg, f.name)
        for f in dataclasses.fields(cfg)
        if getattr(cfg, f.name) != getattr(_DEFAULT_APARTMENT, f.name)
    }


def apartment_scene_id(
    seed: int, apartment: Mapping[str, Any] | ApartmentConfig | None = None
) -> str:
    """``apartment:seed=3`` plus each generator option that differs from the default
    (``apartment:seed=3,rooms=2..3,clutter=0.5``): the id alone rebuilds the scene."""
    text = lambda v: str(v) if isinstance(v, int) else repr(float(v))  # noqa: E731
    parts = [f"seed={int(seed)}"] + [
        f"{k}={'..'.join(map(text, v)) if isinstance(v, tuple) else text(v)}"
        for k, v in _non_default(apartment_config(apartment)).items()
    ]
    return APARTMENT_PREFIX + ",".join(parts)


def parse_apartment_scene_id(scene_id: str) -> tuple[int, ApartmentConfig]:
    """The seed and generator options of a procedural scene id; ``ValueError`` for any id
    that does not name exactly one apartment (unknown or repeated option, bad value)."""
    defaults = {f.name: getattr(_DEFAULT_APARTMENT, f.name) for f in dataclasses.fields(ApartmentConfig)}  # fmt: skip
    expected = (
        f"expected 'apartment:seed=<int>[,<option>=<value>...]' with options of "
        f"{', '.join(defaults)} (ranges as lo..hi)"
    )
    if not scene_id.startswith(APARTMENT_PREFIX):
        raise ValueError(f"{scene_id!r} is not a procedural scene id; {expected}")
    seed, options = None, {}
    for item in scene_id[len(APARTMENT_PREFIX) :].split(","):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key in options or (key == "seed" and seed is not None):
            raise ValueError(f"bad procedural scene id {scene_id!r} at {item!r}: {expected}")
        try:
            if key == "seed":
                seed = int(raw)
            elif key in defaults:
                default = defaults[key]
                if isinstance(default, tuple):
                    values = raw.split("..")
                    if len(values) != len(default):
                        raise ValueError(f"a range lo..hi, got {raw!r}")
                    options[key] = tuple(type(d)(v) for d, v in zip(default, values))
                else:
                    options[key] = type(default)(raw)
            else:
                raise ValueError(f"unknown option {key!r}")
        except ValueError as e:
            raise ValueError(f"bad procedural scene id {scene_id!r}: {e}; {expected}") from None
    if seed is None:
        raise ValueError(f"bad procedural scene id {scene_id!r}: no seed; {expected}")
    try:
        return seed, apartment_config(options)
    except ValueError as e:
        raise ValueError(f"bad procedural scene id {scene_id!r}: {e}") from None


def scene_from_id(
    scene_id: str, cfg: NavConfig, base_dir: str | None = None, context: str = ""
) -> Scene:
    """Load the scene a scene id names; errors say which id and where it came from."""
    where = f" ({context})" if context else ""
    if scene_id.startswith(APARTMENT_PREFIX):
        try:
            seed, apartment = parse_apartment_scene_id(scene_id)
        except ValueError as e:
            raise ValueError(f"{e}{where}") from None
        if cfg.apartment and apartment_config(cfg.apartment) != apartment:
            raise ValueError(
                f"scene {scene_id!r}{where} is an apartment with options "
                f"{_non_default(apartment) or 'all default'}, but option apartment="
                f"{dict(cfg.apartment)!r} asks for others; the id carries its options: leave "
                "'apartment' out"
            )
        return generate_apartment(seed, apartment)
    from pixelrl.envs.nav.mesh_io import load_scene

    scene = load_scene(scene_path(scene_id, cfg, base_dir, context), up_axis=cfg.up_axis)
    if cfg.floor_levels == "auto":
        scene.floor_levels = estimate_floor_levels(scene.triangles)
    elif cfg.floor_levels is not None:
        scene.floor_levels = tuple(float(h) for h in cfg.floor_levels)
    return scene


# habitat's DEFAULT_SCENE_PATH_PREFIX: its datasets name scenes from the habitat-lab checkout
# (``data/scene_datasets/mp3d/X/X.glb``); with a scenes dir it strips this and joins the dir.
HABITAT_SCENE_PREFIX = "data/scene_datasets/"


def scene_path(
    scene_id: str, cfg: NavConfig, base_dir: str | None = None, context: str = ""
) -> str:
    """The file a (non-procedural) scene id names, found as habitat finds it: with
    ``scene_dir`` set, ``data/scene_datasets/`` is stripped from the id and the rest joined to
    ``scene_dir`` (habitat's ``scenes_dir``); then the id as given, relative to ``scene_dir``
    or to the dataset's folder (``base_dir``). Errors list where it looked."""
    where = f" ({context})" if context else ""
    if os.path.isabs(scene_id):
        tried = [scene_id]
    else:
        tried = []
        if cfg.scene_dir and scene_id.startswith(HABITAT_SCENE_PREFIX):
            tried.append(os.path.join(cfg.scene_dir, scene_id[len(HABITAT_SCENE_PREFIX) :]))
        tried += [os.path.join(root, scene_id) for root in (cfg.scene_dir, base_dir) if root]
        tried.append(scene_id)
    for path in tried:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        f"scene file not found: {scene_id!r}{where}; looked at {', '.join(map(repr, tried))}"
    )


def observation_space(cfg: NavConfig, category_ids: Mapping[str, int] | None = None) -> spaces.Dict:
    """The observation space a config describes (shared with the habitat backend);
    ``category_ids``: ObjectNav's ``objectgoal`` values (default: ``OBJECTNAV_CATEGORIES``)."""
    h, w = cfg.height, cfg.width
    obs: dict[str, spaces.Space] = {}
    if "rgb" in cfg.sensors:
        obs["rgb"] = spaces.Box(0, 255, (h, w, 3), np.uint8)
    if "depth" in cfg.sensors:
        hi = 1.0 if cfg.normalize_depth else cfg.max_depth
        lo = 0.0 if cfg.normalize_depth else cfg.min_depth
        obs["depth"] = spaces.Box(lo, hi, (h, w, 1), np.float32)
    if "semantic" in cfg.sensors:
        obs["semantic"] = spaces.Box(0, np.iinfo(np.int32).max, (h, w, 1), np.int32)
    if cfg.task == "pointnav":
        obs["pointgoal_with_gps_compass"] = spaces.Box(
            np.array([0, -np.pi], np.float32),
            np.array([np.inf, np.pi], np.float32),
            dtype=np.float32,
        )
    else:
        if cfg.task == "instructnav":
            obs["instruction"] = instruction_space()
        else:
            high = max(category_ids.values()) if category_ids else len(OBJECTNAV_CATEGORIES) - 1
            obs["objectgoal"] = spaces.Box(0, high, (1,), np.int64)
        obs["gps"] = spaces.Box(-np.inf, np.inf, (2,), np.float32)
        obs["compass"] = spaces.Box(-np.pi, np.pi, (1,), np.float32)
    return spaces.Dict(obs)


def episode_rules(cfg: NavConfig) -> EpisodeRules:
    """The rules episodes are generated with: ``cfg.episode_rules`` over habitat's
    (:class:`EpisodeRules`' defaults) when given; left empty, PointNav without a dataset takes
    ``FAST_POINTNAV_RULES`` and the other tasks habitat's."""
    if cfg.episode_rules:
        rules = EpisodeRules(**cfg.episode_rules)
    elif cfg.task == "pointnav" and cfg.dataset_path is None:
        rules = EpisodeRules(**FAST_POINTNAV_RULES)
    else:
        rules = EpisodeRules()
    rules.validate()
    return rules


class NavSim:
    """Scenes, grids, renderer and episode source for ``num_agents`` agents."""

    def __init__(self, cfg: NavConfig) -> None:
        self.cfg = cfg
        self.episodes: list[NavEpisode] | None = None
        # ObjectNav's objectgoal per category: the dataset file's map, else ours.
        self.category_ids: dict[str, int] | None = None
        # SPL's l: the geodesic an episode carries is taken as ours only from our own files
        # (our generator stored our exact geodesic); another's (habitat's navmesh) is recomputed.
        self._trust_stored_geodesic = True
        self.rules = episode_rules(cfg)
        self.instruction_rules = InstructionRules.from_options(cfg.instruction_rules)
        if cfg.dataset_path is not None:
            self.episodes = load_episodes(cfg.dataset_path)
            if not self.episodes:
                raise EpisodeFileError(f"{cfg.dataset_path}: field 'episodes' is empty")
            check_procedural_ids(cfg.dataset_path, self.episodes)
            self._trust_stored_geodesic = scene_id_format(cfg.dataset_path) == SCENE_ID_FORMAT
            base = os.path.dirname(os.path.abspath(cfg.dataset_path))
            self.scene_ids = sorted({e.scene_id for e in self.episodes})
            self.scenes, self.scene_paths = [], []
            for sid in self.scene_ids:
                first = next(i for i, e in enumerate(self.episodes) if e.scene_id == sid)
                ctx = f"field 'scene_id' of episodes[{first}] in {cfg.dataset_path}"
                if not sid.startswith(APARTMENT_PREFIX):
                    self.scene_paths.append(scene_path(sid, cfg, base, ctx))
                self.scenes.append(scene_from_id(sid, cfg, base, ctx))
            if cfg.task == "instructnav":  # judged as the file says (R2R: 3 m) unless told
                cfg.success_distance = dataset_success_distance(
                    cfg.dataset_path, self.episodes, cfg.success_distance
                )
            if cfg.task == "objectnav":
                self.category_ids = load_category_ids(cfg.dataset_path)
                known = self.category_ids or default_category_ids()
                for i, e in enumerate(self.episodes):
                    cat = e.object_category or e.goals[0].object_category
                    if cat not in known:
                        raise EpisodeFileError(
                            f"{cfg.dataset_path}: episodes[{i}].object_category {cat!r} is not "
                            f"one of {sorted(known)} (the file's category_to_task_category_id, "
                            "or ours when it has none)"
                        )
        elif cfg.scenes:
            self.scene_ids = list(cfg.scenes)
            self.scene_paths = [
                scene_path(s, cfg, None, "option 'scenes'")
                for s in self.scene_ids
                if not s.startswith(APARTMENT_PREFIX)
            ]
            self.scenes = [scene_from_id(s, cfg, None, "option 'scenes'") for s in self.scene_ids]
        else:
            self.scene_paths = []
            self.scene_ids = [
                apartment_scene_id(cfg.scene_seed + k, cfg.apartment) for k in range(cfg.num_scenes)
            ]
            self.scenes = [scene_from_id(s, cfg) for s in self.scene_ids]
        self.scene_index = {sid: k for k, sid in enumerate(self.scene_ids)}
        self.agent = AgentSpec(cfg.agent_radius, cfg.agent_height, cfg.max_climb, cfg.cell_size)
        self.agent.validate()
        self.camera = CameraSpec(
            cfg.width,
            cfg.height,
            cfg.hfov,
            cfg.sensor_height,
            cfg.min_depth,
            cfg.max_depth,
            cfg.normalize_depth,
        )
        self.camera.validate()
        self._grids: dict[int, NavGrid] = {}
        if cfg.renderer == "raster":
            from pixelrl.envs.nav.raster import RasterRenderer  # numba: imported only when chosen

            self.renderer = RasterRenderer(self.scenes, self.camera, threads=cfg.render_threads)
        else:
            self.renderer = EmbreeRenderer(self.scenes, self.camera, threads=cfg.render_threads)

    def observation_space(self) -> spaces.Dict:
        return observation_space(self.cfg, self.category_ids)

    # ------------------------------------------------------------------ scenes
    def grid(self, scene_index: int) -> NavGrid:
        if scene_index not in self._grids:
            self._grids[scene_index] = navigation_grid(self.scenes[scene_index], self.agent)
        return self._grids[scene_index]

    def share_grids(self, other: NavSim) -> None:
        """Use ``other``'s navigation grids (with their geodesic graphs and distance fields)
        from now on, so sims made from the same options build each scene's grid once (a
        benchmark's batch of envs). A grid depends on its scene and the agent only, and no
        episode changes it."""
        if other.scene_ids != self.scene_ids or other.agent != self.agent:
            raise ValueError("share_grids: the other sim has other scenes or another agent")
        self._grids = other._grids

    # ------------------------------------------------------------------ episodes
    def new_episode(
        self,
        rng: np.random.Generator,
        index: int | None = None,
        episode: NavEpisode | None = None,
        previous: NavEpisodeState | None = None,
    ) -> NavEpisodeState:
        """Start an episode: a given one, dataset episode ``index``, or a generated one.

        ``previous``: the agent's episode that just ended; under ``episode_rules.starts_per_goal``
        > 1 a generated episode keeps its scene, goal and distance field that many times.
        """
        from pixelrl.envs.nav.geodesic import geodesic_graph

        if episode is None and index is None and self._keeps_goal(previous):
            uses = previous.episode.info["goal_uses"] + 1
            eid = str(int(rng.integers(2**31)))
            k = previous.scene_index
            episode = generate_pointnav_episode(
                previous.grid, rng, self.scene_ids[k], eid, self.rules, goal_field=previous.field
            )
            episode.info["goal_uses"] = uses
            return NavEpisodeState(
                self.cfg,
                previous.grid,
                previous.field,
                episode,
                k,
                stored_geodesic(episode),
                self.category_ids,
                exact_start_at_end=self._exact_later(episode),
            )

        trusted = True  # an episode given, or generated here: its stored l is ours
        if episode is None and index is not None:
            trusted = self._trust_stored_geodesic
            if self.episodes is None:
                raise ValueError(
                    "reset option 'episode_index' needs a dataset (option 'dataset_path')"
                )
            episode = self.episodes[index % len(self.episodes)]
        if episode is None:
            k = int(rng.integers(len(self.scenes)))
            episode = self._generated_episode(rng, k, str(int(rng.integers(2**31))))
        if episode.scene_id not in self.scene_index:
            raise ValueError(
                f"episode {episode.episode_id!r} names scene {episode.scene_id!r}, which is not loaded"
            )
        k = self.scene_index[episode.scene_id]
        grid = self.grid(k)
        if not trusted or index is not None:
            _check_on_a_floor(grid, episode, self.cfg)
        seed_radius = 0.15 if self.cfg.task == "pointnav" else grid.cell * 0.75
        field = geodesic_graph(grid).field(episode.goal_points(), seed_radius=seed_radius)
        start_distance = stored_geodesic(episode) if trusted else None
        return NavEpisodeState(
            self.cfg,
            grid,
            field,
            episode,
            k,
            start_distance=start_distance,
            category_ids=self.category_ids,
            exact_start_at_end=start_distance is not None and self._exact_later(episode),
        )

    def _exact_later(self, episode: NavEpisode) -> bool:
        """Whether the episode's stored l is a grid geodesic to replace by the exact one when
        the episode ends (``EpisodeRules.exact_spl``)."""
        return episode.info.get("geodesic") == "grid" and self.rules.exact_spl

    def _generated_episode(self, rng: np.random.Generator, k: int, eid: str) -> NavEpisode:
        """An episode of the task in scene ``k``, or, where that apartment has none the rules
        allow (a small or cluttered one: no start far enough from any goal, no route the
        instruction rules allow), in the first of the other scenes in a random order."""
        try:
            return self._episode_in(rng, k, eid)
        except NoEpisodeError as e:
            if len(self.scenes) == 1:
                raise
            error = e
        for j in rng.permutation(len(self.scenes)):
            if j != k:
                try:
                    return self._episode_in(rng, int(j), eid)
                except NoEpisodeError as e:
                    error = e
        raise NoEpisodeError(f"none of the {len(self.scenes)} scenes has an episode: {error}")

    def _episode_in(self, rng: np.random.Generator, k: int, eid: str) -> NavEpisode:
        grid, scene_id = self.grid(k), self.scene_ids[k]
        if self.cfg.task == "pointnav":
            episode = generate_pointnav_episode(grid, rng, scene_id, eid, self.rules)
            if self.rules.starts_per_goal > 1:
                episode.info["goal_uses"] = 1
            return episode
        if self.cfg.task == "instructnav":
            return generate_instructnav_episode(
                grid,
                rng,
                scene_id,
                eid,
                self.rules,
                self.instruction_rules,
                self.cfg.success_radius,
            )
        return generate_objectnav_episode(grid, rng, scene_id, eid, self.rules)

    def _keeps_goal(self, previous: NavEpisodeState | None) -> bool:
        return (
            previous is not None
            and self.episodes is None
            and self.cfg.task == "pointnav"
            and previous.episode.info.get("goal_uses", self.rules.starts_per_goal)
            < self.rules.starts_per_goal
        )

    def render(self, states: list[NavEpisodeState]) -> dict[str, np.ndarray]:
        """Sensor observations of all ``states`` (one renderer call) merged with task sensors."""
        visual = self.renderer.render(
            np.array([s.scene_index for s in states]),
            np.stack([s.position for s in states]),
            np.array([s.yaw for s in states]),
            sensors=self.cfg.sensors,
            pitches=np.array([s.pitch for s in states]) if self.cfg.look_actions else None,
        )
        task = [s.task_observations() for s in states]
        for key in task[0]:
            values = [t[key] for t in task]
            # Text (the instruction) batches as a tuple of strings, gymnasium's batch of Text.
            visual[key] = tuple(values) if isinstance(values[0], str) else np.stack(values)
        return visual

    def close(self) -> None:
        self.renderer.close()


def check_procedural_ids(path: str | os.PathLike, episodes: list[NavEpisode]) -> None:
    """:class:`EpisodeFileError` if the file names procedural apartments but predates ids that
    carry their generator options: ``apartment:seed=3`` there may mean any knobs."""
    legacy = [e.scene_id for e in episodes if e.scene_id.startswith(APARTMENT_PREFIX)]
    if legacy and scene_id_format(path) != SCENE_ID_FORMAT:
        raise EpisodeFileError(
            f"{path}: its procedural scene ids ({legacy[0]!r}, ...) were written before scene ids "
            "carried their generator options, so which apartments they mean is unknown. "
            "Generate the file again (pixelrl.envs.nav.sim.generate_dataset), or, knowing the "
            "options it was made with, rewrite its ids: pixelrl.envs.nav.sim.upgrade_scene_ids("
            "path, apartment={...})"
        )


def upgrade_scene_ids(
    path: str | os.PathLike,
    apartment: Mapping[str, Any] | None = None,
    out: str | os.PathLike | None = None,
) -> list[NavEpisode]:
    """Rewrite an episode file whose procedural ids predate their options (``apartment:seed=N``
    meant the ``apartment`` options of the env that made it): each id gets ``apartment``'s
    options, written to ``out`` (default: in place). You vouch for the options."""
    episodes = load_episodes(path)
    for e in episodes:
        if e.scene_id.startswith(APARTMENT_PREFIX):
            seed, old = parse_apartment_scene_id(e.scene_id)
            if _non_default(old):
                raise EpisodeFileError(f"{path}: {e.scene_id!r} already names its options")
            e.scene_id = apartment_scene_id(seed, apartment)
    save_episodes(out or path, episodes)
    return episodes


def stored_geodesic(episode: NavEpisode) -> float | None:
    """SPL's l as the episode carries it (``info.geodesic_distance``: our generator's any-angle
    geodesic, or habitat's navmesh geodesic), or None when it is missing or unusable, in which
    case the episode start computes it."""
    value = episode.info.get("geodesic_distance")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        return None
    value = float(value)
    return value if np.isfinite(value) and value >= 0 else None


def _check_on_a_floor(grid, episode: NavEpisode, cfg: NavConfig) -> None:
    """A dataset episode whose start (or PointNav goal) is a storey away from every floor the
    grid knows there was made on a multi-storey scene read as one floor: an error, not a walk
    on the wrong floor. (Centimetres of difference are a navmesh's heights: fine.)"""
    points = [("start_position", episode.start_position)]
    if cfg.task == "pointnav":
        points += [(f"goals[{i}].position", g.position) for i, g in enumerate(episode.goals)]
    for name, point in points:
        gap = float(point[1]) - grid.height_at(point)
        if abs(gap) > 1.0:
            hint = (
                "the scene has more storeys than its floor_levels name"
                if hasattr(grid, "levels")
                else "a multi-storey scene? set option floor_levels ('auto' or the storey heights)"
            )
            where = f"{cfg.dataset_path}: " if cfg.dataset_path else ""
            raise EpisodeFileError(
                f"{where}episode {episode.episode_id!r}: {name} is {gap:+.2f} m from the floor the "
                f"navigability grid has under it in scene {episode.scene_id!r}: {hint}"
            )


def generate_dataset(path: str, num_episodes: int, seed: int = 0, **options) -> list[NavEpisode]:
    """Generate ``num_episodes`` episodes with habitat's rules over the scenes the options name
    (``task``, ``scenes`` / ``num_scenes`` / ``scene_seed`` / ``apartment``, ``episode_rules``)
    and write them to ``path`` as habitat ``.json.gz``; returns them."""
    from pixelrl.envs.nav.dataset import save_episodes

    # Datasets are generated with habitat's rules (exact geodesic) unless rules are given:
    # the env's cheap PointNav default is for resets, not for held-out files.
    if not options.get("episode_rules"):
        options["episode_rules"] = {"geodesic": "exact"}
    cfg = NavConfig.from_options(env_id="generate_dataset", **{"width": 1, "height": 1, **options})
    sim = NavSim(cfg)
    rng = np.random.default_rng(seed)
    episodes = []
    for k in range(num_episodes):
        ep = sim.new_episode(rng).episode
        ep.episode_id = str(k)
        episodes.append(ep)
    save_episodes(path, episodes)
    sim.close()
    return episodes
