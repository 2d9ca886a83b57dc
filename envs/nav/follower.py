"""``ShortestPathFollower``: the expert that returns the next discrete action toward the goal.

Like habitat-lab's follower: ``stop`` once within ``goal_radius`` (geodesic), otherwise turn
toward the shortest path until facing it within half a turn step, then move forward. The path
is the grid shortest path of the episode's geodesic field, string-pulled: the agent aims at the
farthest path point it can walk to in a straight line, so it cuts corners like a taut string.
"""

from __future__ import annotations

import math

import numpy as np

from pixelrl.envs.nav.geodesic import GeodesicField
from pixelrl.envs.nav.geometry import wrap_angle

STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT = 0, 1, 2, 3


class ShortestPathFollower:
    """Next action toward the nearest goal of a :class:`GeodesicField`.

    When the straight step toward the path would make no geodesic progress (the turn
    quantisation points the body into a corner), it turns the way whose next forward step does
    make progress, the fewest turns first, so it never loops against a wall.
    """

    def __init__(
        self,
        field: GeodesicField,
        goal_radius: float,
        turn_angle_deg: float,
        forward_step: float = 0.25,
        allow_sliding: bool = True,
        lookahead: float = 3.0,
    ):
        self.field = field
        self.grid = field.graph.grid
        self.goal_radius = goal_radius
        self.turn_angle = math.radians(turn_angle_deg)
        self.forward_step = forward_step
        self.allow_sliding = allow_sliding
        self.lookahead = lookahead

    def reset(self) -> None:
        """Forget a pending escape plan (call at episode start)."""
        self._plan: list[int] = []

    def get_next_action(self, position: np.ndarray, yaw: float) -> int:
        position = np.asarray(position, dtype=np.float64)
        here = self.field.distance(position)
        if here <= self.goal_radius:
            self._plan = []
            return STOP
        if getattr(self, "_plan", None):
            return self._plan.pop(0)
        target = self.waypoint(position)
        delta = target - position
        heading = math.atan2(-delta[0], -delta[2])  # yaw that would face the waypoint
        error = wrap_angle(heading - yaw)
        if abs(error) > self.turn_angle / 2 + 1e-6:
            return TURN_LEFT if error > 0 else TURN_RIGHT
        if self._progress(position, yaw, here) > 0.2 * self.forward_step:
            return MOVE_FORWARD
        # Blocked while facing the path: commit to the fewest turns (either way) after which a
        # forward step makes progress, then that step, so that we never dither.
        n = int(math.ceil(math.pi / self.turn_angle))
        for k in range(1, n + 1):
            left = self._progress(position, yaw + k * self.turn_angle, here)
            right = self._progress(position, yaw - k * self.turn_angle, here)
            if max(left, right) > 0.05 * self.forward_step:
                turn = TURN_LEFT if left >= right else TURN_RIGHT
                self._plan = [turn] * (k - 1) + [MOVE_FORWARD]
                return turn
        # Pinned on a corner that no heading of the turn quantisation rounds in one step: step
        # off it the way that loses least, then plan afresh from there.
        best = max(
            (k for k in range(-n + 1, n + 1) if self._moves(position, yaw + k * self.turn_angle)),
            key=lambda k: (self._progress(position, yaw + k * self.turn_angle, here), -abs(k)),
            default=0,
        )
        if best:
            turn = TURN_LEFT if best > 0 else TURN_RIGHT
            self._plan = [turn] * (abs(best) - 1) + [MOVE_FORWARD]
            return turn
        return MOVE_FORWARD

    def _moves(self, position: np.ndarray, yaw: float) -> bool:
        """Whether a forward step facing ``yaw`` gets anywhere (half a step at least)."""
        step = self.forward_step * np.array([-math.sin(yaw), 0.0, -math.cos(yaw)])
        new, _ = self.grid.try_step(position, position + step, self.allow_sliding)
        return float(np.hypot(*(new - position)[[0, 2]])) >= 0.5 * self.forward_step

    def _progress(self, position: np.ndarray, yaw: float, here: float) -> float:
        """Geodesic progress of one forward step from ``position`` facing ``yaw``."""
        step = self.forward_step * np.array([-math.sin(yaw), 0.0, -math.cos(yaw)])
        new, _ = self.grid.try_step(position, position + step, self.allow_sliding)
        return here - self.field.distance(new)

    def waypoint(self, position: np.ndarray) -> np.ndarray:
        """Where to aim: the farthest shortest-path point (up to ``lookahead`` metres along the
        path) in straight-line reach, and never one closer than a step unless it is the goal."""
        path = self.field.path(position)
        if len(path) <= 2:
            return path[-1]
        seg = np.linalg.norm(np.diff(path[:, [0, 2]], axis=0), axis=1)
        along = np.concatenate([[0], np.cumsum(seg)])
        # The farthest visible point within the lookahead (``along`` grows, so those points are
        # a prefix), else the first visible one beyond it.
        best = None
        within = int(np.searchsorted(along, self.lookahead, side="right"))  # points 1..within-1
        if within > 1:
            visible = np.flatnonzero(self.grid.lines_of_sight(position, path[1:within]))
            best = int(visible[-1]) + 1 if len(visible) else None
        for k in range(max(within, 1), len(path)):
            if best is not None:
                break
            if self.grid.line_of_sight(position, path[k]):
                best = k
        if best is None or along[best] < self.forward_step:
            beyond = np.flatnonzero(along >= self.forward_step)
            best = int(beyond[0]) if len(beyond) else len(path) - 1
        return path[best]


class FollowerExpert:
    """The navigation family's expert: the env's shortest-path follower
    (``env.unwrapped.shortest_path_follower()``) on each episode, from the agent's true pose."""

    def __init__(self, env) -> None:
        self.env = env.unwrapped
        self.follower: ShortestPathFollower | None = None

    def reset(self) -> None:
        self.follower = self.env.shortest_path_follower()

    def act(self) -> int:
        if self.follower is None:
            self.reset()
        state = self.env.state
        return int(self.follower.get_next_action(state.position, state.yaw))
