"""PointNav, ObjectNav and InstructNav for one agent: its state, actions, task sensors, measures,
reward. InstructNav's goal is a point (beside the described object) with ObjectNav's gps and
compass; its goal sensor is the ``instruction`` text.

Measures: :mod:`pixelrl.envs.nav.measures` (habitat's Success, SPL, SoftSPL, DistanceToGoal,
...), computed from this state's distances: the exact geodesic (habitat's navmesh one) -- at the
episode's end: under cheap episode rules (``geodesic="grid"``) l is the grid geodesic until then
-- path length p is in 3D. Reward: -(change in the grid's geodesic distance) + slack
(-0.01) + 2.5 on success. Actions: 0 stop, 1 move_forward, 2 turn_left, 3 turn_right.
"""

from __future__ import annotations

import math

import numpy as np

from pixelrl.envs.nav.config import NavConfig
from pixelrl.envs.nav.dataset import NavEpisode
from pixelrl.envs.nav.geodesic import GeodesicField
from pixelrl.envs.nav.geometry import (
    episodic_compass,
    episodic_gps,
    forward_vector,
    polar_goal,
    quaternion_to_yaw,
)
from pixelrl.envs.nav.instructions import instruction_observation
from pixelrl.envs.nav.measures import EpisodeProgress, Success, measure_episode
from pixelrl.envs.nav.navgrid import NavGrid
from pixelrl.envs.nav.scene import OBJECTNAV_CATEGORIES

STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT = 0, 1, 2, 3
# A turn that does nothing: what a text policy's unparsable answer plays (never one of its
# actions), asked for by name, ``env.step("idle")``; it spends a step of the budget. Not in
# Discrete(4), so no policy samples it, and an index outside the action space (-1 included) is
# an ActionError, never an idle turn. Recordings store it as IDLE_INDEX.
IDLE = "idle"
IDLE_INDEX = -1
ACTION_NAMES = ("stop", "move_forward", "turn_left", "turn_right")
# habitat's ObjectNav adds these two (NavConfig.look_actions): tilt the camera by tilt_angle.
LOOK_UP, LOOK_DOWN = 4, 5
LOOK_ACTION_NAMES = ACTION_NAMES + ("look_up", "look_down")


def action_names(cfg: NavConfig) -> tuple[str, ...]:
    """The env's actions by index: habitat's four, plus look_up / look_down when asked."""
    return LOOK_ACTION_NAMES if cfg.look_actions else ACTION_NAMES


def action_index(action, names: tuple[str, ...] = ACTION_NAMES, idle: bool = False) -> int:
    """An action as habitat's ``Env.step`` takes it -- an index, a name (``"turn_left"``) or a
    dict ``{"action": index or name, ...}`` -- as the index into ``names``; with ``idle``, the
    name ``"idle"`` is :data:`IDLE_INDEX`. :class:`~pixelrl.envs.gui_action.ActionError` (one line)
    for anything else, an index outside ``names`` included."""
    from pixelrl.envs.gui_action import ActionError

    listed = ", ".join(f"{k} {n}" for k, n in enumerate(names))
    if isinstance(action, dict):
        if "action" not in action:
            raise ActionError(
                f"an action dict needs the key 'action' (habitat's {{'action': name}}), got keys "
                f"{sorted(action)}"
            )
        action = action["action"]
    if isinstance(action, str):
        if idle and action == IDLE:
            return IDLE_INDEX
        if action not in names:
            raise ActionError(f"unknown action {action!r}; the env's actions: {', '.join(names)}")
        return names.index(action)
    if isinstance(action, np.ndarray) and action.size == 1:
        action = action.reshape(()).item()
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise ActionError(
            f"an action is an index, a name ({', '.join(names)}) or {{'action': ...}}, got {action!r}"
        )
    if not 0 <= action < len(names):
        hint = " (a text policy's idle turn is step('idle'))" if idle else ""
        raise ActionError(f"action {int(action)} is not one of the env's actions: {listed}{hint}")
    return int(action)


class NavEpisodeState:
    """One agent inside one episode: pose, step counter and the running measures."""

    def __init__(
        self,
        cfg: NavConfig,
        grid: NavGrid,
        field: GeodesicField,
        episode: NavEpisode,
        scene_index: int,
        start_distance: float | None = None,
        category_ids: dict[str, int] | None = None,
        exact_start_at_end: bool = False,
    ):
        """``start_distance``: l of SPL when already known (generated episodes and dataset
        episodes carry it in ``info.geodesic_distance``); otherwise it is computed here (the
        any-angle search, ~10-30 ms). ``category_ids``: ObjectNav's ``objectgoal`` for each
        category (a dataset file's ``category_to_task_category_id``; default: the index in
        ``OBJECTNAV_CATEGORIES``). ``exact_start_at_end``: ``start_distance`` is a grid
        geodesic (``EpisodeRules(geodesic="grid")``), replaced by the exact one when the episode
        ends, so the final SPL / SoftSPL are exact without a search at reset."""
        self.cfg = cfg
        self.grid = grid
        self.field = field
        self.episode = episode
        self.scene_index = scene_index
        self.start_position = np.asarray(episode.start_position, dtype=np.float64).copy()
        self.start_yaw = quaternion_to_yaw(episode.start_rotation)
        self.position = self.start_position.copy()
        self.yaw = self.start_yaw
        self.pitch = 0.0  # camera tilt, radians up (look_up / look_down)
        self.steps = 0
        self.path_length = 0.0
        self.collisions = 0
        self.collided = False
        self.called_stop = False
        self.done = False
        # Two distances. ``distance``: the grid field's (the search; ~1 %, up to ~3 %, above the
        # exact one), read every step for the reward, -(change in distance), and the expert.
        # ``measured``: DistanceToGoal as habitat reports it, the exact geodesic -- the straight
        # line when the nearest goal is in plain sight (open floor: free), the grid's otherwise
        # during the episode, and the exact any-angle one when the episode ends, so Success,
        # SPL and SoftSPL are judged on the exact distance. l (SPL) is the exact geodesic from
        # the start: the one the episode carries (``start_distance``), else computed here; a
        # stored grid one (cheap rules) stands in during the episode and is replaced by the
        # exact one when the episode ends (``exact_start_at_end``).
        self.distance = field.distance(self.position)
        if start_distance is None:
            start_distance = field.exact_distance(self.position)
        self.start_distance = float(start_distance)
        self._start_pending = bool(exact_start_at_end)
        self.measured = self.start_distance if np.isfinite(self.distance) else math.inf
        self.category_ids = category_ids
        self.path = [self.position.copy()]

    @property
    def start_pending(self) -> bool:
        """Whether l is still a stored grid geodesic, made exact when the episode ends."""
        return self._start_pending

    def replace_start_distance(self, value: float) -> None:
        """Take ``value`` as l (SPL's start geodesic) instead of the one the episode carried
        (a benchmark that found the file's ``info.geodesic_distance`` wrong); before the first
        step DistanceToGoal is l too."""
        if self.steps == 0 and self.measured == self.start_distance:
            self.measured = float(value)
        self.start_distance = float(value)
        self._start_pending = False

    def step(self, action: int) -> tuple[float, bool, bool]:
        """Apply ``action``; returns (reward, terminated, truncated)."""
        cfg = self.cfg
        if self.done:
            raise RuntimeError("step() called on a finished episode; call reset()")
        action = int(action)
        if action == IDLE_INDEX:
            return self.idle()
        action_index(action, action_names(cfg))  # in range, else an ActionError
        self.steps += 1
        self.collided = False
        if action == STOP:
            self.called_stop = True
        elif action == MOVE_FORWARD:
            target = self.position + cfg.forward_step * forward_vector(self.yaw)
            new, self.collided = self.grid.try_step(self.position, target, cfg.allow_sliding)
            self.path_length += float(np.linalg.norm(new - self.position))  # 3D, as habitat
            self.position = new
            self.collisions += int(self.collided)
            self.path.append(new.copy())
        elif action in (LOOK_UP, LOOK_DOWN):
            # habitat's look_up / look_down: the camera tilts, the body stays (kept within +-90)
            sign = 1.0 if action == LOOK_UP else -1.0
            limit = math.pi / 2
            self.pitch = min(limit, max(-limit, self.pitch + sign * math.radians(cfg.tilt_angle)))
        else:
            sign = 1.0 if action == TURN_LEFT else -1.0
            self.yaw = (self.yaw + sign * math.radians(cfg.turn_degrees) + math.pi) % (
                2 * math.pi
            ) - math.pi
        previous = self.distance
        self.distance = self.field.distance(self.position)
        terminated = self.called_stop
        truncated = not terminated and self.steps >= cfg.max_episode_steps
        self.done = terminated or truncated
        self._measure()
        reward = cfg.slack_reward
        if np.isfinite(previous) and np.isfinite(self.distance):
            reward += previous - self.distance
        if self.success:
            reward += cfg.success_reward
        return float(reward), terminated, truncated

    def idle(self) -> tuple[float, bool, bool]:
        """``step(IDLE_INDEX)`` (the env's ``step("idle")``): a turn in which the agent does nothing -- a text policy's unparsable
        answer, which is never executed. Not one of habitat's actions: the pose stays, but the
        turn costs what time costs (a step of the episode's budget and the slack reward), so an
        agent that keeps answering nonsense still reaches the step limit."""
        if self.done:
            raise RuntimeError("idle() called on a finished episode; call reset()")
        self.steps += 1
        self.collided = False
        truncated = self.steps >= self.cfg.max_episode_steps
        self.done = truncated
        if truncated:
            self._measure()
        return float(self.cfg.slack_reward), False, truncated

    def _measure(self) -> None:
        """DistanceToGoal after a step (see ``__init__``): exact at the end of the episode."""
        searched_start = False
        if self.done and self._start_pending:  # cheap rules: l becomes the exact geodesic
            self._start_pending = False
            self.start_distance = float(self.field.exact_distance(self.start_position))
            searched_start = True
        if not np.isfinite(self.distance):
            self.measured = math.inf
        elif self.done:
            if searched_start and np.array_equal(self.position, self.start_position):
                self.measured = self.start_distance  # ended where it started: the same search
            else:
                self.measured = self.field.exact_distance(self.position)
        else:
            visible = self.field.visible_distance(self.position)
            self.measured = self.distance if visible is None else visible

    @property
    def success(self) -> bool:
        return Success.reached(self.called_stop, self.measured, self.cfg.success_radius)

    def progress(self) -> EpisodeProgress:
        """The episode so far, as the measures read it (DistanceToGoal: ``measured``)."""
        return EpisodeProgress.of(self, self.measured)

    def measures(self) -> dict[str, float]:
        """habitat's measures under its names (:mod:`pixelrl.envs.nav.measures`)."""
        return measure_episode(self.progress())

    def task_observations(self) -> dict[str, np.ndarray | str]:
        if self.cfg.task == "pointnav":
            rho, phi = polar_goal(self.position, self.yaw, self.episode.goals[0].position)
            return {"pointgoal_with_gps_compass": np.array([rho, phi], dtype=np.float32)}
        if self.cfg.task == "instructnav":
            text = instruction_observation(self.episode.instruction.instruction_text)
            goal: dict[str, np.ndarray | str] = {"instruction": text}
        else:
            category = self.episode.object_category or self.episode.goals[0].object_category
            ids = self.category_ids
            index = ids[category] if ids is not None else OBJECTNAV_CATEGORIES.index(category)
            goal = {"objectgoal": np.array([index], dtype=np.int64)}
        return {
            **goal,
            "gps": episodic_gps(self.position, self.start_position, self.start_yaw),
            "compass": episodic_compass(self.yaw, self.start_yaw),
        }
