"""``NavConfig``: every option of the navigation envs, with habitat's defaults.

``gymnasium.make("pixelrl/PointNav-v0", width=128, height=128, dataset_path=...)`` passes its
keyword arguments here; an unknown key is an error that lists the valid ones.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

TASKS = ("pointnav", "objectnav", "instructnav")
SENSORS = ("rgb", "depth", "semantic")
RENDERERS = ("raster", "embree")
# The largest sensor side: a 4096 x 4096 RGB-D frame is ~120 MB already; more is a typo
# (width=100000 would ask for tens of GiB before the first frame).
MAX_SENSOR_SIDE = 4096


# habitat-lab's benchmark configs (habitat/config/benchmark/nav/...), copied value for value onto
# our options (with habitat's defaults from default_structured_configs.py where a file says
# nothing: hfov 90, sensor at 1.25 m, depth 0-10 m normalised, body 1.5 m x 0.1 m, 0.25 m steps,
# 10 degree turns, sliding on). ``preset=NAME`` sets them; options given beside it win.
_HABITAT_DEFAULTS: dict[str, Any] = {
    "width": 256,
    "height": 256,
    "hfov": 90.0,
    "sensor_height": 1.25,
    "sensors": ("rgb", "depth"),
    "min_depth": 0.0,
    "max_depth": 10.0,
    "normalize_depth": True,
    "forward_step": 0.25,
    "turn_angle": 10.0,
    "allow_sliding": True,
    "max_episode_steps": 500,
    "agent_radius": 0.1,
    "agent_height": 1.5,
}
_HABITAT_OBJECTNAV = {
    **_HABITAT_DEFAULTS,
    "task": "objectnav",
    "success_distance": 0.1,
    "width": 640,
    "height": 480,
    "hfov": 79.0,
    "sensor_height": 0.88,
    "min_depth": 0.5,
    "max_depth": 5.0,
    "turn_angle": 30.0,
    "allow_sliding": False,
    "agent_radius": 0.18,
    "agent_height": 0.88,
    "look_actions": True,
    "tilt_angle": 30.0,
}
PRESETS: dict[str, dict[str, Any]] = {
    # pointnav/pointnav_gibson.yaml (also pointnav_mp3d.yaml, pointnav_hm3d.yaml: same settings)
    "habitat-pointnav-gibson": {**_HABITAT_DEFAULTS, "task": "pointnav", "success_distance": 0.2},
    "habitat-pointnav-mp3d": {**_HABITAT_DEFAULTS, "task": "pointnav", "success_distance": 0.2},
    "habitat-pointnav-hm3d": {**_HABITAT_DEFAULTS, "task": "pointnav", "success_distance": 0.2},
    # objectnav/objectnav_hm3d.yaml and objectnav_mp3d.yaml (the same settings)
    "habitat-objectnav-hm3d": _HABITAT_OBJECTNAV,
    "habitat-objectnav-mp3d": dict(_HABITAT_OBJECTNAV),
    # habitat-challenge's configs/challenge_objectnav2022.local.rgbd.yaml (HM3D v1): the same
    "habitat-challenge-objectnav2022": dict(_HABITAT_OBJECTNAV),
    # habitat-challenge's configs/benchmark/nav/objectnav/objectnav_v2_hm3d_stretch_challenge.yaml
    # (HM3D v2, 2023): the Stretch body and head camera. That challenge moves by velocity
    # control, which the embedded simulator does not have: the preset keeps ObjectNav's discrete
    # actions (0.25 m steps, 30 degree turns and tilts) and a 500-step limit for its 500 s.
    "habitat-challenge-objectnav2023": {
        **_HABITAT_OBJECTNAV,
        "width": 480,
        "height": 640,
        "hfov": 42.0,
        "sensor_height": 1.31,
        "agent_height": 1.41,
        "agent_radius": 0.17,
        "max_climb": 0.1,
    },
}


BOOLEAN_OPTIONS = ("normalize_depth", "allow_sliding", "shuffle", "look_actions")
_SIDE = MAX_SENSOR_SIDE
# Scalar options: (low, high, low included, high included, integer); None: no bound. Options
# whose default is None (turn_angle, success_distance, render_threads) may stay None.
RANGES: dict[str, tuple[float | None, float | None, bool, bool, bool]] = {
    "width": (1, _SIDE, True, True, True),
    "height": (1, _SIDE, True, True, True),
    "max_episode_steps": (1, None, True, True, True),
    "num_scenes": (1, None, True, True, True),
    "scene_seed": (None, None, True, True, True),
    "render_threads": (1, None, True, True, True),
    "hfov": (0, 180, False, False, False),
    "sensor_height": (0, None, True, True, False),
    "min_depth": (0, None, True, True, False),
    "max_depth": (0, None, False, True, False),
    "forward_step": (0, None, False, True, False),
    "turn_angle": (0, 180, False, True, False),
    "tilt_angle": (0, 90, False, True, False),
    "success_distance": (0, None, False, True, False),
    "slack_reward": (None, None, True, True, False),
    "success_reward": (None, None, True, True, False),
    "agent_radius": (0, None, False, True, False),
    "agent_height": (0, None, False, True, False),
    "max_climb": (0, None, True, True, False),
    "cell_size": (0, None, False, True, False),
}
_OPTIONAL = ("turn_angle", "success_distance", "render_threads")
_UNITS = {"width": " px", "height": " px", "hfov": " degrees", "turn_angle": " degrees",
          "tilt_angle": " degrees"}  # fmt: skip


def _finite(value: Any) -> bool:
    """A finite number (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def check_option(name: str, value: Any) -> None:
    """``ValueError`` (one line naming the option and its range) if ``value`` is no valid value
    of the scalar option ``name`` on its own: booleans must be booleans, counts integers,
    distances and angles finite numbers in their range. Other options pass (``validate`` checks
    them with the rest of the config)."""
    if name in BOOLEAN_OPTIONS:
        if not isinstance(value, bool):
            raise ValueError(f"NavConfig.{name} must be true or false, got {value!r}")
        return
    if name not in RANGES or (value is None and name in _OPTIONAL):
        return
    lo, hi, lo_in, hi_in, integer = RANGES[name]
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    ok = ok and (isinstance(value, numbers.Integral) if integer else math.isfinite(value))
    if ok:
        ok = (lo is None or value > lo or (lo_in and value == lo)) and (
            hi is None or value < hi or (hi_in and value == hi)
        )
    if not ok:
        if lo is not None and hi is not None:
            bound = f" in {'[' if lo_in else '('}{lo}, {hi}{']' if hi_in else ')'}"
        elif lo is not None:
            bound = f" {'>=' if lo_in else '>'} {lo}"
        else:
            bound = ""
        unit = _UNITS.get(name, "") if bound else ""
        kind = "an integer" if integer else "a finite number"
        raise ValueError(f"NavConfig.{name} must be {kind}{bound}{unit}, got {value!r}")


@dataclass
class NavConfig:
    """Options of ``pixelrl/PointNav-v0``, ``pixelrl/ObjectNav-v0`` and ``pixelrl/InstructNav-v0``.

        Task: ``task`` ("pointnav" | "objectnav" | "instructnav"), ``max_episode_steps`` (500),
        ``success_distance`` (None -> 0.2 m PointNav, 0.1 m ObjectNav, InstructNav: the goals'
        ``radius`` in its dataset, else 1 m), reward ``slack_reward`` and ``success_reward``.
        Sensors: ``sensors`` (subset of rgb, depth, semantic), ``width`` x ``height`` px, ``hfov``
        degrees, ``sensor_height`` m, depth ``min_depth``/``max_depth`` m and ``normalize_depth``.
        Actions: ``forward_step`` m, ``turn_angle`` degrees (None -> 10 PointNav, 30 ObjectNav),
        ``allow_sliding`` along walls. Agent body: ``agent_radius``, ``agent_height``, ``max_climb``,
        grid ``cell_size``. Episodes: ``dataset_path`` (habitat .json.gz; walked in order unless
        ``shuffle``), ``scene_dir`` (where relative scene ids live, habitat's ``scenes_dir``), ``up_axis`` (scene files'
    up: "y", "z" or a vector; default: habitat's stage / scene dataset config beside the file, else
    y), ``floor_levels`` (multi-storey scene files: a list of floor heights, one a storey, or
    "auto" to find them from the mesh's upward faces; default: one floor), or generated on the
    fly in
        ``scenes`` (mesh paths) or ``num_scenes`` procedural apartments from ``scene_seed`` with
        generator knobs ``apartment`` (rooms, room_size, clutter, ...) and ``episode_rules``
        (``dataset.EpisodeRules``: min_geodesic, max_geodesic, min_ratio, geodesic,
        starts_per_goal, exact_spl; left empty, generated PointNav takes the cheap
        ``sim.FAST_POINTNAV_RULES`` {geodesic: grid, starts_per_goal: 4} with SPL's l made exact
        at the episode's end, other tasks habitat's exact rules; given, they start from habitat's
        exact rules: ``{"geodesic": "exact"}`` is habitat's generator); InstructNav adds ``instruction_rules`` (``rooms``:
        how many rooms the described route visits, see ``instructions.InstructionRules``).
        ``backend``: "embedded" or "habitat".
        ``look_actions``: add habitat's ObjectNav ``look_up`` / ``look_down`` (actions 4, 5: tilt the
    camera by ``tilt_angle`` degrees, 30 as habitat's ObjectNav, within +-90).
    ``preset``: habitat-lab's settings for a benchmark, named after its config file
    (``habitat-pointnav-gibson``, ``habitat-objectnav-hm3d``, ... see ``PRESETS``); options given
    beside it override it.
    ``renderer`` (embedded backend): "raster" (numba z-buffer rasterizer, the fast default) or
        "embree" (one ray per pixel); both give the same pictures. ``render_threads``: its threads.
    """

    task: str = "pointnav"
    backend: str = "embedded"
    width: int = 256
    height: int = 256
    hfov: float = 90.0
    sensor_height: float = 1.25
    sensors: tuple[str, ...] = ("rgb", "depth")
    min_depth: float = 0.0
    max_depth: float = 10.0
    normalize_depth: bool = False
    forward_step: float = 0.25
    turn_angle: float | None = None
    allow_sliding: bool = True
    max_episode_steps: int = 500
    success_distance: float | None = None
    slack_reward: float = -0.01
    success_reward: float = 2.5
    agent_radius: float = 0.1
    agent_height: float = 1.5
    max_climb: float = 0.2
    cell_size: float = 0.05
    dataset_path: str | None = None
    scene_dir: str | None = None
    up_axis: str | list[float] | None = None
    floor_levels: str | list[float] | None = None
    shuffle: bool = False
    scenes: list[str] | None = None
    num_scenes: int = 4
    scene_seed: int = 0
    apartment: dict[str, Any] = field(default_factory=dict)
    episode_rules: dict[str, Any] = field(default_factory=dict)
    instruction_rules: dict[str, Any] = field(default_factory=dict)
    render_threads: int | None = None
    renderer: str = "raster"
    look_actions: bool = False
    tilt_angle: float = 30.0
    preset: str | None = None

    @classmethod
    def from_options(cls, env_id: str = "pixelrl nav env", **options: Any) -> NavConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        for key in options:
            if key not in names:
                raise ValueError(
                    f"unknown option {key!r} for {env_id}; valid options: {', '.join(sorted(names))}"
                )
        preset = options.get("preset")
        if preset is not None:
            if preset not in PRESETS:
                raise ValueError(
                    f"unknown preset {preset!r} for {env_id}; presets: {', '.join(PRESETS)}"
                )
            values = PRESETS[preset]
            if "task" in options and options["task"] != values["task"]:
                raise ValueError(
                    f"preset {preset!r} is a {values['task']} preset, but {env_id} runs "
                    f"{options['task']!r}"
                )
            options = {**values, **options}
        cfg = cls(**options)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"NavConfig.task must be one of {TASKS}, got {self.task!r}")
        if self.backend not in ("embedded", "habitat"):
            raise ValueError(
                f"NavConfig.backend must be 'embedded' or 'habitat', got {self.backend!r}"
            )
        if self.renderer not in RENDERERS:
            raise ValueError(
                f"NavConfig.renderer must be one of {RENDERERS}, got {self.renderer!r}"
            )
        self.sensors = tuple(self.sensors)
        bad = [s for s in self.sensors if s not in SENSORS]
        if bad or not self.sensors:
            raise ValueError(
                f"NavConfig.sensors must be a non-empty subset of {SENSORS}, got {self.sensors}"
            )
        self._check_values()
        if self.up_axis is not None:  # checked here too: generated scenes never read it
            from pixelrl.envs.nav.mesh_io import UP_AXES

            vector = self.up_axis
            ok = (
                vector in UP_AXES
                if isinstance(vector, str)
                else (
                    isinstance(vector, (list, tuple))
                    and len(vector) == 3
                    and all(_finite(v) for v in vector)
                    and any(v != 0 for v in vector)
                )
            )
            if not ok:
                raise ValueError(
                    f"NavConfig.up_axis must be one of {sorted(UP_AXES)} or a nonzero "
                    f"3-vector, got {vector!r}"
                )
        levels = self.floor_levels
        if (
            levels is not None
            and levels != "auto"
            and not (isinstance(levels, (list, tuple)) and all(_finite(v) for v in levels))
        ):
            raise ValueError(
                f"NavConfig.floor_levels must be 'auto' or a list of floor heights (m), got {levels!r}"
            )
        if self.instruction_rules and self.task != "instructnav":
            raise ValueError(
                f"option 'instruction_rules' is for task 'instructnav', not {self.task!r}"
            )

    def _check_values(self) -> None:
        """Types and ranges of the scalar options (:func:`check_option`), and the depth range."""
        for name in (*BOOLEAN_OPTIONS, *RANGES):
            check_option(name, getattr(self, name))
        if not self.min_depth < self.max_depth:
            raise ValueError(
                f"NavConfig needs min_depth < max_depth, got {self.min_depth} and {self.max_depth}"
            )

    @property
    def turn_degrees(self) -> float:
        return (
            self.turn_angle
            if self.turn_angle is not None
            else (10.0 if self.task == "pointnav" else 30.0)
        )

    @property
    def success_radius(self) -> float:
        if self.success_distance is not None:
            return self.success_distance
        return {"pointnav": 0.2, "objectnav": 0.1, "instructnav": 1.0}[self.task]
