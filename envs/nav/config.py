"""``NavConfig``: every option of the navigation envs, with habitat's defaults.

``gymnasium.make("pixelrl/PointNav-v0", width=128, height=128, dataset_path=...)`` passes its
keyword arguments here; an unknown key is an error that lists the valid ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

TASKS = ("pointnav", "objectnav", "instructnav")
SENSORS = ("rgb", "depth", "semantic")
RENDERERS = ("raster", "embree")


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
        if self.max_episode_steps < 1:
            raise ValueError(
                f"NavConfig.max_episode_steps must be >= 1, got {self.max_episode_steps}"
            )
        if self.up_axis is not None:  # checked here too: generated scenes never read it
            from pixelrl.envs.nav.mesh_io import UP_AXES

            vector = self.up_axis
            ok = (
                vector in UP_AXES
                if isinstance(vector, str)
                else (
                    isinstance(vector, (list, tuple))
                    and len(vector) == 3
                    and all(isinstance(v, (int, float)) for v in vector)
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
            and not (
                isinstance(levels, (list, tuple))
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in levels)
            )
        ):
            raise ValueError(
                f"NavConfig.floor_levels must be 'auto' or a list of floor heights (m), got {levels!r}"
            )
        if self.forward_step <= 0:
            raise ValueError(f"NavConfig.forward_step must be > 0, got {self.forward_step}")
        if self.turn_angle is not None and not 0 < self.turn_angle <= 180:
            raise ValueError(
                f"NavConfig.turn_angle must be in (0, 180] degrees, got {self.turn_angle}"
            )
        if self.instruction_rules and self.task != "instructnav":
            raise ValueError(
                f"option 'instruction_rules' is for task 'instructnav', not {self.task!r}"
            )
        if self.num_scenes < 1:
            raise ValueError(f"NavConfig.num_scenes must be >= 1, got {self.num_scenes}")

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
