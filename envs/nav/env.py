"""``NavEnv``: habitat-style PointNav / ObjectNav / InstructNav as a ``gymnasium.Env``.

Observations (``Dict``): ``rgb`` uint8 HxWx3, ``depth`` float32 HxWx1 metres (clipped,
optionally normalised), ``semantic`` int32 HxWx1 instance ids where asked; PointNav adds
``pointgoal_with_gps_compass`` (rho, phi) -- phi positive to the left; ObjectNav adds
``objectgoal`` (index into ``OBJECTNAV_CATEGORIES``), ``gps`` ([forward, right] m from the start)
and ``compass`` (radians from the start heading); InstructNav has ``instruction`` (``Text``, the
route in words, see :mod:`pixelrl.envs.nav.instructions`) with ObjectNav's ``gps`` and
``compass``. Actions ``Discrete(4)``: 0 stop, 1 move_forward, 2 turn_left, 3 turn_right, with
``look_actions`` ``Discrete(6)``: 4 look_up, 5 look_down (``step`` also takes the name or
habitat's ``{"action": name}``, and ``"idle"``: a text policy's turn that runs nothing; an
index outside the action space is an ``ActionError``). The
episode terminates on stop, truncates after ``max_episode_steps``. ``info`` carries the measures (distance_to_goal, success, spl, soft_spl
(alias softspl), path_length, collisions, num_steps) plus episode_id, scene_id and collided.

Reset options: ``{"episode_index": k}`` (dataset episode k) or ``{"episode": NavEpisode}``.
Without options a dataset is walked in order (evaluation), or in a seeded random order with
``shuffle=True``; without a dataset an episode is generated from the seeded generator (PointNav's
default rules, ``sim.FAST_POINTNAV_RULES``: one Dijkstra per goal, kept for 4 starts across
unseeded resets, SPL's l made exact when the episode ends; ``episode_rules={"geodesic":
"exact"}`` for habitat's generator).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from pixelrl.envs.nav.config import NavConfig
from pixelrl.envs.nav.sim import NavSim
from pixelrl.envs.nav.tasks import NavEpisodeState, action_index, action_names

RESET_OPTIONS = ("episode_index", "episode")


class NavEnv(gym.Env):
    """The embedded simulator's PointNav / ObjectNav env (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode: str | None = None, **options: Any) -> None:
        env_id = options.pop("_env_id", "NavEnv")
        self.cfg = NavConfig.from_options(env_id=env_id, **options)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        self.render_mode = render_mode
        self.sim = NavSim(self.cfg)
        self.observation_space = self.sim.observation_space()
        self.action_space = gym.spaces.Discrete(len(action_names(self.cfg)))
        self.state: NavEpisodeState | None = None
        self._next_index = 0
        self._last_obs: dict[str, np.ndarray] | None = None

    @property
    def action_names(self) -> tuple[str, ...]:
        """The actions' names by index; ``step`` takes an index, a name or ``{"action": ...}``
        (habitat's ``Env.step`` forms)."""
        return action_names(self.cfg)

    @property
    def episodes(self):
        return self.sim.episodes

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        for key in options:
            if key not in RESET_OPTIONS:
                raise ValueError(f"unknown reset option {key!r}; valid: {', '.join(RESET_OPTIONS)}")
        index = options.get("episode_index")
        episode = options.get("episode")
        if index is None and episode is None and self.sim.episodes is not None:
            if self.cfg.shuffle:
                index = int(self.np_random.integers(len(self.sim.episodes)))
            else:
                index = self._next_index
                self._next_index = (self._next_index + 1) % len(self.sim.episodes)
        # A seeded reset starts afresh; an unseeded one (an autoreset) may keep the last goal.
        previous = self.state if seed is None else None
        self.state = self.sim.new_episode(
            self.np_random, index=index, episode=episode, previous=previous
        )
        obs = self._observe()
        return obs, self._info()

    def step(self, action):
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        # an index, a name, {"action": ...}, or "idle" (a text policy's turn that runs nothing)
        index = action_index(action, self.action_names, idle=True)
        reward, terminated, truncated = self.state.step(index)
        obs = self._observe()
        return obs, reward, terminated, truncated, self._info()

    def _observe(self) -> dict[str, np.ndarray]:
        batch = self.sim.render([self.state])
        self._last_obs = {k: v[0] for k, v in batch.items()}
        return self._last_obs

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = self.state.measures()
        info["collided"] = self.state.collided
        info["episode_id"] = self.state.episode.episode_id
        info["scene_id"] = self.state.episode.scene_id
        return info

    def render(self):
        if self.render_mode != "rgb_array" or self._last_obs is None:
            return None
        if "rgb" in self._last_obs:
            return self._last_obs["rgb"].copy()
        return self.topdown()

    def shortest_path_follower(self):
        """The expert for the current episode: ``follower.get_next_action(state.position,
        state.yaw)`` returns the next action (see :mod:`pixelrl.envs.nav.follower`)."""
        from pixelrl.envs.nav.follower import ShortestPathFollower

        if self.state is None:
            raise RuntimeError("call reset() before asking for the episode's follower")
        cfg = self.cfg
        follower = ShortestPathFollower(
            self.state.field,
            cfg.success_radius,
            cfg.turn_degrees,
            cfg.forward_step,
            cfg.allow_sliding,
        )
        follower.reset()
        return follower

    def topdown(self, scale: int = 4, shortest: bool = False) -> np.ndarray:
        """The top-down map of the current episode (occupancy, start, path so far, goal, agent;
        with ``shortest`` also the shortest path from the start, the one SPL's l measures)."""
        from pixelrl.envs.nav.topdown import topdown_map

        s = self.state
        best = s.field.taut_path(s.start_position) if shortest else None
        goals = np.stack([g.position for g in s.episode.goals])
        vps = s.episode.goal_points() if self.cfg.task == "objectnav" else None
        return topdown_map(
            s.grid,
            path=np.asarray(s.path),
            goals=goals,
            agent=(s.position, s.yaw),
            view_points=vps,
            scale=scale,
            start=s.start_position,
            shortest=best,
        )

    def close(self) -> None:
        self.sim.close()


def make_nav_env(
    task: str, render_mode: str | None = None, backend: str = "embedded", **options: Any
) -> gym.Env:
    """Entry point behind both ids: the embedded simulator, or habitat-sim with
    ``backend="habitat"`` (same options)."""
    if backend == "habitat":
        from pixelrl.envs.habitat.env import HabitatNavEnv

        options.pop("_env_id", None)
        return HabitatNavEnv(render_mode=render_mode, task=task, **options)
    if backend != "embedded":
        raise ValueError(f"backend must be 'embedded' or 'habitat', got {backend!r}")
    return NavEnv(render_mode=render_mode, task=task, **options)


def make_pointnav(render_mode: str | None = None, **options: Any) -> gym.Env:
    """``pixelrl/PointNav-v0``."""
    if "task" in options:
        raise ValueError("option 'task' is fixed by the env id (pixelrl/PointNav-v0)")
    return make_nav_env(
        "pointnav", render_mode=render_mode, _env_id="pixelrl/PointNav-v0", **options
    )


def make_objectnav(render_mode: str | None = None, **options: Any) -> gym.Env:
    """``pixelrl/ObjectNav-v0``."""
    if "task" in options:
        raise ValueError("option 'task' is fixed by the env id (pixelrl/ObjectNav-v0)")
    return make_nav_env(
        "objectnav", render_mode=render_mode, _env_id="pixelrl/ObjectNav-v0", **options
    )


def make_instructnav(render_mode: str | None = None, **options: Any) -> gym.Env:
    """``pixelrl/InstructNav-v0`` (embedded simulator only)."""
    if "task" in options:
        raise ValueError("option 'task' is fixed by the env id (pixelrl/InstructNav-v0)")
    if options.get("backend", "embedded") != "embedded":
        raise ValueError("pixelrl/InstructNav-v0 runs on the embedded simulator only")
    return make_nav_env(
        "instructnav", render_mode=render_mode, _env_id="pixelrl/InstructNav-v0", **options
    )
