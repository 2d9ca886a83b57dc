"""Registers the navigation ids. Imports nothing heavy: entry points resolve on ``make``.

``gymnasium.make(id, ...)`` builds a single env (``backend="habitat"`` for habitat-sim);
``gymnasium.make_vec(id, num_envs, vectorization_mode="vector_entry_point", ...)`` builds the
native batched :class:`~pixelrl.envs.nav.vector_env.NavVectorEnv` (one renderer call per step).
The ``navigation`` task family names the three tasks, their seed bases and the follower expert.
"""

from pixelrl.envs.families import BASES, TaskFamily, register_family
from pixelrl.envs.registry import register

register(
    "pixelrl/PointNav-v0",
    "pixelrl.envs.nav.env:make_pointnav",
    "PointNav (habitat-style): RGB-D + pointgoal_with_gps_compass, embedded simulator (raster renderer; renderer='embree': ray casting) or backend='habitat'",
    vector_entry_point="pixelrl.envs.nav.vector_env:make_pointnav_vector",
)
register(
    "pixelrl/ObjectNav-v0",
    "pixelrl.envs.nav.env:make_objectnav",
    "ObjectNav (habitat-style): RGB-D + objectgoal/gps/compass, embedded simulator (raster renderer; renderer='embree': ray casting) or backend='habitat'",
    vector_entry_point="pixelrl.envs.nav.vector_env:make_objectnav_vector",
)
register(
    "pixelrl/InstructNav-v0",
    "pixelrl.envs.nav.env:make_instructnav",
    "InstructNav (VLN-CE-style): RGB-D + instruction text + gps/compass, route instructions from procedural apartments",
    vector_entry_point="pixelrl.envs.nav.vector_env:make_instructnav_vector",
)


def _follower(env):
    from pixelrl.envs.nav.follower import FollowerExpert

    return FollowerExpert(env)


register_family(
    TaskFamily(
        name="navigation",
        description="PointNav, ObjectNav and InstructNav in the embedded simulator (or habitat-sim)",
        env_id=lambda task: f"pixelrl/{task}-v0",
        tasks=("PointNav", "ObjectNav", "InstructNav"),
        seeds=BASES,
        expert=_follower,
        privileged={
            "distance_to_goal": "the geodesic distance to the goal (a measure, as spl, soft_spl)",
        },
    )
)
