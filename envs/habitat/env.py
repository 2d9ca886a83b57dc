"""``HabitatNavEnv``: the nav ids on habitat-sim, with the embedded simulator's options and spaces.

The same :class:`~pixelrl.envs.nav.config.NavConfig` builds a ``habitat_sim.Configuration``: a
``SimulatorConfiguration`` for the scene, one ``AgentConfiguration`` (height, radius, the
``CameraSensorSpec`` sensors at ``sensor_height`` with ``hfov``, and ``ActionSpec``
move_forward / turn_left / turn_right with our step and angle). Geodesics come from habitat's
navmesh (``pathfinder.find_path`` on a ``MultiGoalShortestPath``), collisions from the
``collided`` that ``Simulator.step`` returns; observations are mapped to ours (RGBA -> RGB, depth
HxW -> HxWx1 clipped like ours, semantic -> int32), the task sensors are computed with the same
conventions as the embedded env (:mod:`pixelrl.envs.nav.geometry`) and the measures by the same
code (:mod:`pixelrl.envs.nav.measures`). Episodes come from the same
habitat ``.json.gz`` files, or are sampled on the navmesh with the same rules.
"""

from __future__ import annotations

import math
import os
from typing import Any

import gymnasium as gym
import numpy as np

from pixelrl.envs.nav.config import NavConfig
from pixelrl.envs.nav.dataset import (
    EpisodeRules,
    NavEpisode,
    NavGoal,
    load_category_ids,
    load_episodes,
)
from pixelrl.envs.nav.geometry import (
    episodic_compass,
    episodic_gps,
    polar_goal,
    quaternion_to_yaw,
    yaw_to_quaternion,
)
from pixelrl.envs.nav.measures import EpisodeProgress, Success, measure_episode
from pixelrl.envs.nav.scene import OBJECTNAV_CATEGORIES

HABITAT_INSTALL_HINT = (
    "habitat-sim is not installed. It is distributed through conda only: "
    "`conda install habitat-sim -c conda-forge -c aihabitat` (add `headless` for machines "
    "without a display, e.g. `conda install habitat-sim headless -c conda-forge -c aihabitat`). "
    "The embedded simulator (backend='embedded', the default) needs no extra install."
)


class HabitatNotInstalled(ImportError):
    """habitat_sim cannot be imported; the message says how to install it."""


def import_habitat_sim():
    """Import habitat_sim or raise :class:`HabitatNotInstalled` with install instructions."""
    try:
        import habitat_sim
    except ImportError as e:
        raise HabitatNotInstalled(HABITAT_INSTALL_HINT) from e
    return habitat_sim


def build_habitat_config(habitat_sim, cfg: NavConfig, scene_path: str):
    """A ``habitat_sim.Configuration`` equivalent to the embedded simulator's ``cfg``."""
    sim_cfg = habitat_sim.SimulatorConfiguration()
    sim_cfg.scene_id = scene_path
    sim_cfg.enable_physics = False
    sim_cfg.gpu_device_id = 0
    sensor_types = {
        "rgb": habitat_sim.SensorType.COLOR,
        "depth": habitat_sim.SensorType.DEPTH,
        "semantic": habitat_sim.SensorType.SEMANTIC,
    }
    specs = []
    for name in cfg.sensors:
        spec = habitat_sim.CameraSensorSpec()
        spec.uuid = name
        spec.sensor_type = sensor_types[name]
        spec.sensor_subtype = habitat_sim.SensorSubType.PINHOLE
        spec.resolution = [cfg.height, cfg.width]
        spec.position = [0.0, cfg.sensor_height, 0.0]
        spec.hfov = cfg.hfov
        specs.append(spec)
    ActionSpec, ActuationSpec = habitat_sim.agent.ActionSpec, habitat_sim.agent.ActuationSpec
    agent_cfg = habitat_sim.agent.AgentConfiguration()
    agent_cfg.height = cfg.agent_height
    agent_cfg.radius = cfg.agent_radius
    agent_cfg.sensor_specifications = specs
    agent_cfg.action_space = {
        "move_forward": ActionSpec("move_forward", ActuationSpec(amount=cfg.forward_step)),
        "turn_left": ActionSpec("turn_left", ActuationSpec(amount=cfg.turn_degrees)),
        "turn_right": ActionSpec("turn_right", ActuationSpec(amount=cfg.turn_degrees)),
    }
    return habitat_sim.Configuration(sim_cfg, [agent_cfg])


class HabitatNavEnv(gym.Env):
    """PointNav / ObjectNav on habitat-sim with the embedded env's spaces and measures."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}
    _ACTIONS = (None, "move_forward", "turn_left", "turn_right")

    def __init__(self, render_mode: str | None = None, **options: Any) -> None:
        options.pop("backend", None)
        self.cfg = NavConfig.from_options(env_id="HabitatNavEnv", backend="habitat", **options)
        if self.cfg.look_actions:
            raise ValueError(
                "option look_actions (look_up / look_down) runs on the embedded simulator only; "
                "backend='habitat' has the four move and turn actions"
            )
        self.habitat_sim = import_habitat_sim()
        self.render_mode = render_mode
        cfg = self.cfg
        self.category_ids = None  # objectgoal per category: the dataset file's map, else ours
        if cfg.dataset_path is not None:
            self.episodes = load_episodes(cfg.dataset_path)
            self.category_ids = load_category_ids(cfg.dataset_path)
            base = os.path.dirname(os.path.abspath(cfg.dataset_path))
        elif cfg.scenes:
            self.episodes, base = None, None
        else:
            raise ValueError(
                "backend='habitat' needs scene files: option 'scenes' or 'dataset_path'"
            )
        self._base = base
        self.sim = None
        self._scene_path: str | None = None
        self._next_index = 0
        self.rules = EpisodeRules(**cfg.episode_rules) if cfg.episode_rules else EpisodeRules()
        from pixelrl.envs.nav.sim import observation_space

        # Spaces are exactly the embedded env's (no simulator needed to describe them).
        self.observation_space = observation_space(cfg, self.category_ids)
        self.action_space = gym.spaces.Discrete(4)
        self._last_obs = None

    # -------------------------------------------------------------- scene and episodes
    def _resolve(self, scene_id: str) -> str:
        from pixelrl.envs.nav.sim import scene_path  # habitat's rule: the embedded env's

        return scene_path(scene_id, self.cfg, self._base)

    def _load_scene(self, scene_id: str) -> None:
        path = self._resolve(scene_id)
        if path == self._scene_path:
            return
        config = build_habitat_config(self.habitat_sim, self.cfg, path)
        if self.sim is None:
            self.sim = self.habitat_sim.Simulator(config)
        else:
            self.sim.reconfigure(config)
        if not self.sim.pathfinder.is_loaded:
            settings = self.habitat_sim.NavMeshSettings()
            settings.set_defaults()
            settings.agent_radius = self.cfg.agent_radius
            settings.agent_height = self.cfg.agent_height
            settings.agent_max_climb = self.cfg.max_climb
            self.sim.recompute_navmesh(self.sim.pathfinder, settings)
        self._scene_path = path

    def geodesic_distance(self, start: np.ndarray, goals: np.ndarray) -> float:
        path = self.habitat_sim.MultiGoalShortestPath()
        path.requested_start = np.asarray(start, np.float32)
        path.requested_ends = [np.asarray(g, np.float32) for g in goals]
        found = self.sim.pathfinder.find_path(path)
        return float(path.geodesic_distance) if found else float("inf")

    def _sample_pointnav(self, scene_id: str) -> NavEpisode:
        pf = self.sim.pathfinder
        pf.seed(int(self.np_random.integers(2**31)))
        for _ in range(self.rules.max_tries):
            start, goal = pf.get_random_navigable_point(), pf.get_random_navigable_point()
            if pf.island_radius(start) != pf.island_radius(goal):
                continue
            euclid = float(np.linalg.norm((np.asarray(goal) - start)[[0, 2]]))
            dist = self.geodesic_distance(start, [goal])
            if (
                self.rules.min_geodesic <= dist <= self.rules.max_geodesic
                and dist / max(euclid, 1e-9) >= self.rules.min_ratio
            ):
                yaw = float(self.np_random.uniform(-math.pi, math.pi))
                return NavEpisode(
                    "0",
                    scene_id,
                    np.asarray(start, float),
                    np.array(yaw_to_quaternion(yaw)),
                    [NavGoal(np.asarray(goal, float))],
                    {"geodesic_distance": dist},
                )
        raise RuntimeError(
            f"no episode satisfying {self.rules} found on the navmesh of {scene_id!r}"
        )

    # -------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        if self.episodes is not None:
            index = options.pop("episode_index", None)
            if index is None:
                index = (
                    int(self.np_random.integers(len(self.episodes)))
                    if self.cfg.shuffle
                    else self._next_index
                )
                self._next_index = (self._next_index + 1) % len(self.episodes)
            episode = self.episodes[index % len(self.episodes)]
            self._load_scene(episode.scene_id)
        else:
            scene_id = self.cfg.scenes[int(self.np_random.integers(len(self.cfg.scenes)))]
            self._load_scene(scene_id)
            if self.cfg.task != "pointnav":
                raise ValueError("ObjectNav on habitat-sim needs a dataset (option 'dataset_path')")
            episode = self._sample_pointnav(scene_id)
        if options:
            raise ValueError(f"unknown reset option(s) {sorted(options)}")
        self.episode = episode
        self.goal_points = episode.goal_points()
        state = self.habitat_sim.AgentState()
        state.position = np.asarray(episode.start_position, np.float32)
        from habitat_sim.utils.common import quat_from_coeffs  # [x, y, z, w], like our files

        state.rotation = quat_from_coeffs(np.asarray(episode.start_rotation))
        self.sim.initialize_agent(0, state)
        self.start_position = np.asarray(episode.start_position, float)
        self.start_yaw = quaternion_to_yaw(episode.start_rotation)
        self.steps, self.path_length, self.collisions = 0, 0.0, 0
        self.called_stop = False
        raw = self.sim.get_sensor_observations()
        self._pose()
        self.start_distance = self.distance = self.geodesic_distance(
            self.position, self.goal_points
        )
        return self._observe(raw), self._info()

    def _pose(self) -> None:
        st = self.sim.get_agent(0).get_state()
        self.position = np.asarray(st.position, float)
        q = st.rotation  # numpy-quaternion (w, x, y, z)
        self.yaw = quaternion_to_yaw([q.x, q.y, q.z, q.w])

    def step(self, action):
        from pixelrl.envs.nav.tasks import ACTION_NAMES, action_index

        action = action_index(action, ACTION_NAMES)  # habitat's forms: index, name, {"action"}
        if not 0 <= action < len(ACTION_NAMES):
            raise ValueError(f"action must be one of 0-3 ({', '.join(ACTION_NAMES)}), got {action}")
        self.steps += 1
        before = self.position.copy()
        if action == 0:
            self.called_stop = True
            raw = self.sim.get_sensor_observations()
        else:
            raw = self.sim.step(self._ACTIONS[action])
        self._pose()
        # habitat_sim.Simulator.step puts "collided" in its observations (previous_step_collided
        # is habitat-lab's HabitatSim wrapper, not habitat-sim)
        self.collided = bool(raw.get("collided", False)) if action == 1 else False
        self.collisions += int(self.collided)
        self.path_length += float(np.linalg.norm(self.position - before))  # 3D, as habitat
        previous = self.distance
        self.distance = self.geodesic_distance(self.position, self.goal_points)
        success = Success.reached(self.called_stop, self.distance, self.cfg.success_radius)
        reward = (
            self.cfg.slack_reward
            + (previous - self.distance)
            + (self.cfg.success_reward if success else 0.0)
        )
        terminated = self.called_stop
        truncated = not terminated and self.steps >= self.cfg.max_episode_steps
        return self._observe(raw), float(reward), terminated, truncated, self._info()

    def _observe(self, raw: dict) -> dict[str, np.ndarray]:
        cfg = self.cfg
        obs: dict[str, np.ndarray] = {}
        if "rgb" in raw:
            obs["rgb"] = np.asarray(raw["rgb"])[..., :3].astype(np.uint8)
        if "depth" in raw:
            depth = np.clip(np.asarray(raw["depth"], np.float32), cfg.min_depth, cfg.max_depth)
            if cfg.normalize_depth:
                depth = (depth - cfg.min_depth) / (cfg.max_depth - cfg.min_depth)
            obs["depth"] = depth[..., None]
        if "semantic" in raw:
            obs["semantic"] = np.asarray(raw["semantic"]).astype(np.int32)[..., None]
        if cfg.task == "pointnav":
            rho, phi = polar_goal(self.position, self.yaw, self.episode.goals[0].position)
            obs["pointgoal_with_gps_compass"] = np.array([rho, phi], np.float32)
        else:
            cat = self.episode.object_category or self.episode.goals[0].object_category
            ids = self.category_ids
            index = ids[cat] if ids is not None else OBJECTNAV_CATEGORIES.index(cat)
            obs["objectgoal"] = np.array([index], np.int64)
            obs["gps"] = episodic_gps(self.position, self.start_position, self.start_yaw)
            obs["compass"] = episodic_compass(self.yaw, self.start_yaw)
        self._last_obs = obs
        return obs

    def _info(self) -> dict[str, Any]:
        return {
            **measure_episode(EpisodeProgress.of(self, self.distance)),  # the embedded env's code
            "episode_id": self.episode.episode_id,
            "scene_id": self.episode.scene_id,
        }

    def render(self):
        if (
            self.render_mode == "rgb_array"
            and self._last_obs is not None
            and "rgb" in self._last_obs
        ):
            return self._last_obs["rgb"].copy()
        return None

    def close(self) -> None:
        if self.sim is not None:
            self.sim.close()
            self.sim = None
