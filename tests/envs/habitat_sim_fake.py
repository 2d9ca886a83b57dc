"""A recorded fake of habitat-sim for the adapter test (habitat-sim is conda-only, not here).

Every class the adapter (``pixelrl.envs.habitat.env``) touches exposes only the names habitat-sim
itself defines -- listed in ``API`` with the file of facebookresearch/habitat-sim (commit
57ee4941d) that defines them -- and reading or setting any other name raises ``AttributeError``
naming the class, so a call the real API lacks fails the test. Every name used is recorded in
``CALLS``. Behind those names the fake runs our embedded pieces: the scene file loads with
``load_scene``, the "navmesh" is our ``NavGrid``, ``find_path`` is our exact geodesic, motion is
``NavGrid.try_step``, pictures come from ``EmbreeRenderer``. So this checks the adapter's use of
the API and its bookkeeping, not habitat-sim's navmesh or renderer.
"""

from __future__ import annotations

import math
import sys
import types

import numpy as np

HABITAT_SIM_COMMIT = "57ee4941d"
_BINDINGS = "src/esp/bindings/"
_PY = "src_python/habitat_sim/"
API: dict[str, tuple[str, set[str]]] = {
    "SimulatorConfiguration": (
        _BINDINGS + "SimBindings.cpp",
        {"scene_id", "enable_physics", "gpu_device_id", "random_seed"},
    ),
    "Configuration": (_PY + "simulator.py", {"sim_cfg", "agents"}),
    "CameraSensorSpec": (
        _BINDINGS + "SensorBindings.cpp",
        {"uuid", "sensor_type", "sensor_subtype", "position", "resolution", "hfov"},
    ),
    "AgentConfiguration": (
        _PY + "agent/agent.py",
        {"height", "radius", "sensor_specifications", "action_space", "body_type"},
    ),
    "ActionSpec": (_PY + "agent/agent.py", {"name", "actuation"}),
    "ActuationSpec": (_PY + "agent/controls/controls.py", {"amount", "constraint"}),
    "AgentState": (_PY + "agent/agent.py", {"position", "rotation", "sensor_states"}),
    "Agent": (_PY + "agent/agent.py", {"get_state", "set_state", "agent_config"}),
    "NavMeshSettings": (
        _BINDINGS + "ShortestPathBindings.cpp",
        {"set_defaults", "agent_radius", "agent_height", "agent_max_climb", "cell_size"},
    ),
    "MultiGoalShortestPath": (
        _BINDINGS + "ShortestPathBindings.cpp",
        {"requested_start", "requested_ends", "points", "geodesic_distance"},
    ),
    "PathFinder": (
        _BINDINGS + "ShortestPathBindings.cpp",
        {
            "seed",
            "get_random_navigable_point",
            "find_path",
            "island_radius",
            "is_loaded",
            "try_step",
            "try_step_no_sliding",
            "is_navigable",
        },
    ),  # fmt: skip
    "Simulator": (
        _PY + "simulator.py, " + _BINDINGS + "SimBindings.cpp",
        {
            "pathfinder",
            "reconfigure",
            "recompute_navmesh",
            "initialize_agent",
            "get_agent",
            "get_sensor_observations",
            "step",
            "close",
            "config",
        },
    ),  # fmt: skip
}
CALLS: list[str] = []


class _Strict:
    """Only the names ``API`` lists for the class; names starting with "_" are the fake's own."""

    def __init__(self, *args, **kwargs):
        fields = [n for n in getattr(self, "_positional", ())]
        for name, value in zip(fields, args):
            setattr(self, name, value)
        for name, value in kwargs.items():
            setattr(self, name, value)

    def _check(self, name: str, how: str) -> None:
        cls = type(self).__name__
        where, names = API[cls]
        if name not in names:
            raise AttributeError(
                f"habitat_sim {cls} has no attribute {name!r} (its API in habitat-sim "
                f"{HABITAT_SIM_COMMIT}: {where})"
            )
        CALLS.append(f"{cls}.{name}{how}")

    def __getattribute__(self, name):
        if not name.startswith("_"):
            object.__getattribute__(self, "_check")(name, "")
        return object.__getattribute__(self, name)

    def __setattr__(self, name, value):
        if not name.startswith("_"):
            self._check(name, "=")
        object.__setattr__(self, name, value)


class SimulatorConfiguration(_Strict):
    pass


class Configuration(_Strict):
    _positional = ("sim_cfg", "agents")


class CameraSensorSpec(_Strict):
    pass


class AgentConfiguration(_Strict):
    pass


class ActionSpec(_Strict):
    _positional = ("name", "actuation")


class ActuationSpec(_Strict):
    _positional = ("amount", "constraint")


class AgentState(_Strict):
    def __init__(self, *args, **kwargs):
        self.position = np.zeros(3, np.float32)
        self.rotation = _quaternion(0.0)
        super().__init__(*args, **kwargs)


class NavMeshSettings(_Strict):
    def set_defaults(self):
        self.agent_radius, self.agent_height, self.agent_max_climb = 0.1, 1.5, 0.2
        self.cell_size = 0.05


class MultiGoalShortestPath(_Strict):
    def __init__(self):
        self.requested_ends = []
        self.geodesic_distance = math.inf


def _quaternion(yaw: float):
    import quaternion  # numpy-quaternion: what habitat-sim's AgentState holds

    from pixelrl.envs.nav.geometry import yaw_to_quaternion

    x, y, z, w = yaw_to_quaternion(yaw)
    return quaternion.quaternion(w, x, y, z)


def quat_from_coeffs(coeffs):
    """habitat_sim.utils.common.quat_from_coeffs: [x, y, z, w] -> numpy-quaternion."""
    import quaternion

    x, y, z, w = (float(c) for c in coeffs)
    return quaternion.quaternion(w, x, y, z)


def _yaw(q) -> float:
    from pixelrl.envs.nav.geometry import quaternion_to_yaw

    return quaternion_to_yaw([q.x, q.y, q.z, q.w])


class PathFinder(_Strict):
    def __init__(self):
        self._grid = None
        self._rng = np.random.default_rng(0)

    @property
    def is_loaded(self):
        return self._grid is not None

    def seed(self, seed):
        self._rng = np.random.default_rng(int(seed))

    def get_random_navigable_point(self, max_tries=10):
        return self._grid.sample_navigable(self._rng).astype(np.float32)

    def island_radius(self, pt):
        # habitat: the radius of the point's island; equal for points on one island, as here
        return float(self._grid.island_of(np.asarray(pt, np.float64)))

    def find_path(self, path):
        from pixelrl.envs.nav.geodesic import geodesic_distance

        ends = np.asarray([np.asarray(e, np.float64) for e in path.requested_ends]).reshape(-1, 3)
        start = np.asarray(path.requested_start, np.float64)
        path.geodesic_distance = geodesic_distance(self._grid, start, ends)
        return bool(np.isfinite(path.geodesic_distance))


class Agent(_Strict):
    def __init__(self, config):
        self.agent_config = config
        self._position = np.zeros(3)
        self._yaw = 0.0

    def get_state(self):
        return AgentState(
            position=self._position.astype(np.float32), rotation=_quaternion(self._yaw)
        )

    def set_state(self, state):
        self._position = np.asarray(state.position, np.float64)
        self._yaw = _yaw(state.rotation)


class Simulator(_Strict):
    def __init__(self, config):
        self.pathfinder = PathFinder()
        self._agent = None
        self.reconfigure(config)

    def reconfigure(self, config):
        from pixelrl.envs.nav.mesh_io import load_scene
        from pixelrl.envs.nav.renderer import CameraSpec, EmbreeRenderer

        self.config = config
        self._scene = load_scene(config.sim_cfg.scene_id)
        agent_cfg = config.agents[0]
        self._agent = Agent(agent_cfg)
        specs = agent_cfg.sensor_specifications
        height, width = specs[0].resolution
        camera = CameraSpec(width, height, specs[0].hfov, specs[0].position[1], 0.0, 10.0, False)
        self._renderer = EmbreeRenderer([self._scene], camera)
        self._sensors = [s.uuid for s in specs]
        self.pathfinder._grid = None  # a new scene has no navmesh until one is computed

    def recompute_navmesh(self, pathfinder, navmesh_settings):
        from pixelrl.envs.nav.navgrid import AgentSpec, NavGrid

        s = navmesh_settings
        spec = AgentSpec(s.agent_radius, s.agent_height, s.agent_max_climb)
        pathfinder._grid = NavGrid(self._scene, spec)
        return True

    def initialize_agent(self, agent_id, initial_state=None):
        self._agent.set_state(initial_state)
        return self._agent

    def get_agent(self, agent_id):
        return self._agent

    def get_sensor_observations(self, agent_ids=0):
        a = self._agent
        out = self._renderer.render([0], a._position[None], [a._yaw], tuple(self._sensors))
        obs = {}
        if "rgb" in out:
            rgb = out["rgb"][0]
            obs["rgb"] = np.concatenate([rgb, np.full(rgb.shape[:2] + (1,), 255, np.uint8)], -1)
        if "depth" in out:
            obs["depth"] = out["depth"][0, ..., 0]
        if "semantic" in out:
            obs["semantic"] = out["semantic"][0, ..., 0].astype(np.uint32)
        return obs

    def step(self, action, dt=1.0 / 60.0):
        from pixelrl.envs.nav.geometry import forward_vector

        a = self._agent
        spec = a.agent_config.action_space[action]
        collided = False
        if spec.name == "move_forward":
            target = a._position + spec.actuation.amount * forward_vector(a._yaw)
            a._position, collided = self.pathfinder._grid.try_step(a._position, target, True)
        elif spec.name in ("turn_left", "turn_right"):
            sign = 1.0 if spec.name == "turn_left" else -1.0
            a._yaw = (a._yaw + sign * math.radians(spec.actuation.amount) + math.pi) % (
                2 * math.pi
            ) - math.pi
        else:
            raise ValueError(f"unknown action {spec.name!r}")
        obs = self.get_sensor_observations()
        obs["collided"] = bool(collided)
        return obs

    def close(self, destroy=True):
        self._renderer.close()


def module() -> types.ModuleType:
    """The fake as a ``habitat_sim`` package (with ``habitat_sim.agent`` and
    ``habitat_sim.utils.common``); module-level names beyond these raise ``AttributeError``."""
    hs = types.ModuleType("habitat_sim")
    hs.__path__ = []
    agent = types.ModuleType("habitat_sim.agent")
    for cls in (AgentConfiguration, ActionSpec, ActuationSpec, AgentState, Agent):
        setattr(agent, cls.__name__, cls)
    utils = types.ModuleType("habitat_sim.utils")
    utils.__path__ = []
    common = types.ModuleType("habitat_sim.utils.common")
    common.quat_from_coeffs = quat_from_coeffs
    utils.common = common
    for cls in (
        SimulatorConfiguration, Configuration, CameraSensorSpec, AgentState, NavMeshSettings,
        MultiGoalShortestPath, Simulator,
    ):  # fmt: skip
        setattr(hs, cls.__name__, cls)
    hs.SensorType = types.SimpleNamespace(COLOR="COLOR", DEPTH="DEPTH", SEMANTIC="SEMANTIC")
    hs.SensorSubType = types.SimpleNamespace(PINHOLE="PINHOLE")
    hs.agent, hs.utils = agent, utils
    return hs


def install(monkeypatch) -> types.ModuleType:
    """Put the fake in ``sys.modules`` for one test (pytest's ``monkeypatch`` undoes it)."""
    hs = module()
    CALLS.clear()
    for name, mod in {
        "habitat_sim": hs,
        "habitat_sim.agent": hs.agent,
        "habitat_sim.utils": hs.utils,
        "habitat_sim.utils.common": hs.utils.common,
    }.items():
        monkeypatch.setitem(sys.modules, name, mod)
    return hs
