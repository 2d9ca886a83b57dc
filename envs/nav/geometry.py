"""Habitat's coordinate conventions in one place.

- y is up; the ground plane is (x, z).
- An agent with yaw 0 looks along -z; turning left (counter-clockwise seen from above) increases
  yaw. Its forward vector is ``(-sin yaw, 0, -cos yaw)`` and its right vector ``(cos yaw, 0, -sin yaw)``.
- Rotations are quaternions stored ``[x, y, z, w]`` (habitat's episode files); a yaw about +y is
  ``[0, sin(yaw/2), 0, cos(yaw/2)]``.
- Polar goals ``(rho, phi)``: rho the euclidean distance in the ground plane, phi the angle from
  the agent's forward direction, positive to the left (habitat's ``pointgoal_with_gps_compass``).
"""

from __future__ import annotations

import math

import numpy as np


def wrap_angle(angle: float | np.ndarray) -> float | np.ndarray:
    """Wrap an angle (radians) into [-pi, pi)."""
    return (angle + math.pi) % (2 * math.pi) - math.pi


def yaw_to_quaternion(yaw: float) -> list[float]:
    """Rotation by ``yaw`` radians about +y as a habitat quaternion ``[x, y, z, w]``."""
    return [0.0, math.sin(yaw / 2), 0.0, math.cos(yaw / 2)]


def quaternion_to_yaw(q: list[float] | np.ndarray) -> float:
    """Yaw (radians, about +y) of a habitat quaternion ``[x, y, z, w]``.

    Takes the heading of the rotated forward vector, so quaternions with a small tilt still give
    the yaw an agent standing upright would have.
    """
    x, y, z, w = (float(v) for v in q)
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if norm == 0:
        raise ValueError("quaternion [x, y, z, w] has zero norm")
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    # Rotate (0, 0, -1) by q; the heading of the result is the yaw.
    fx = -(2 * (x * z + w * y))
    fz = -(1 - 2 * (x * x + y * y))
    return math.atan2(-fx, -fz)


def forward_vector(yaw: float) -> np.ndarray:
    """Unit forward vector in the ground plane for ``yaw`` (habitat: -z at yaw 0)."""
    return np.array([-math.sin(yaw), 0.0, -math.cos(yaw)])


def world_to_agent(yaw: float, vector: np.ndarray) -> tuple[float, float]:
    """Express a world ground-plane vector in the agent frame as ``(forward, left)``."""
    fx, fz = -math.sin(yaw), -math.cos(yaw)
    lx, lz = -math.cos(yaw), math.sin(yaw)
    return (
        float(vector[0] * fx + vector[2] * fz),
        float(vector[0] * lx + vector[2] * lz),
    )


def polar_goal(position: np.ndarray, yaw: float, goal: np.ndarray) -> tuple[float, float]:
    """habitat's ``pointgoal_with_gps_compass``: ``(rho, phi)`` of ``goal`` seen from the agent.

    rho is the ground-plane distance; phi the angle from forward, positive to the left.
    """
    fwd, left = world_to_agent(yaw, np.asarray(goal, float) - np.asarray(position, float))
    return math.hypot(fwd, left), math.atan2(left, fwd)


def episodic_gps(position: np.ndarray, start_position: np.ndarray, start_yaw: float) -> np.ndarray:
    """habitat's ``gps`` sensor: the agent's position in the episode-start frame as
    ``[forward, right]`` metres (habitat returns ``[-z, x]`` of the start-frame vector)."""
    fwd, left = world_to_agent(start_yaw, np.asarray(position, float) - np.asarray(start_position))
    return np.array([fwd, -left], dtype=np.float32)


def episodic_compass(yaw: float, start_yaw: float) -> np.ndarray:
    """habitat's ``compass`` sensor: heading relative to the start heading, positive left."""
    return np.array([wrap_angle(yaw - start_yaw)], dtype=np.float32)
