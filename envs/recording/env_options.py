"""Which env a recording may make again, and which of its options the recording may choose.

A recording's ``meta/info.json`` names the env it was made in (``env_id``) and the options it
was made with (``env_kwargs``); replay and view make that env again. The file is data from
anyone, so it chooses only what shapes an episode, never what the host does:

- ``env_id`` must be an id registered in pixelrl's namespace (``pixelrl/...``) in Gymnasium's
  registry, as written: never ``module:Id``, which would make Gymnasium import a module.
- Each option is one of the env's **recordable options** (:data:`RECORDABLE_OPTIONS`, an
  allow-list per entry point: screen size, task family, step limit, reward shaping, sensor
  sizes, ...), or one its id's registration fixes (``task`` of an X11 id: the id decides, the
  recording's value is dropped). Anything else (a display, ``allow_existing_display``, a browser
  or Xvfb binary, sandbox limits, dataset or scene paths, timeouts) comes from the command line
  only (``pixelrl replay --env-kwargs``): a recording that carries one is refused with one line
  naming it, before any env is made. Refused rather than dropped: a replay in an env other
  than the recorded one would report a fidelity that means nothing.
- Recordable values are plain JSON of bounded size, and sizes stay within a frame's limits.

The recorder writes only recordable options (:func:`recordable_kwargs`), so what it records
replays without flags.
"""

from __future__ import annotations

import json
from typing import Any

from pixelrl.envs.recording.format import MAX_FRAME_PIXELS, MAX_FRAME_SIDE, DatasetError

NAMESPACE = "pixelrl"
_NAV_OPTIONS = frozenset(
    {
        "width", "height", "hfov", "sensor_height", "sensors", "min_depth", "max_depth",
        "normalize_depth", "forward_step", "turn_angle", "allow_sliding", "max_episode_steps",
        "success_distance", "slack_reward", "success_reward", "agent_radius", "agent_height",
        "max_climb", "cell_size", "up_axis", "floor_levels", "shuffle", "num_scenes",
        "scene_seed", "apartment", "episode_rules", "instruction_rules", "look_actions",
        "tilt_angle", "renderer",
    }
)  # fmt: skip
# Entry point -> the options a recording may carry. Not here (command line only): display,
# allow_existing_display, xvfb_path, limits, chrome_binary, chromedriver, dataset_path,
# scene_dir, scenes, preset (paths on this machine), backend, render_threads, render_mode and
# the timeouts (action_timeout_s, settle_s, settle_max_s, window_timeout_s, settle_ms).
RECORDABLE_OPTIONS: dict[str, frozenset[str]] = {
    "pixelrl.envs.desktop.env:DesktopEnv": frozenset(
        {
            "family",
            "screen_size",
            "max_steps",
            "reward",
            "a11y_text",
            "coordinates",
            "max_text_length",
        }
    ),  # fmt: skip
    "pixelrl.envs.x11.env:XDesktopEnv": frozenset(
        {"screen_size", "depth", "max_steps", "a11y_text", "check_every_step"}
    ),
    "pixelrl.envs.web.env:MiniWoBEnv": frozenset(
        {"reward_processor", "scale", "max_steps", "data_mode", "a11y_text"}
    ),
    "pixelrl.envs.nav.env:make_pointnav": _NAV_OPTIONS,
    "pixelrl.envs.nav.env:make_objectnav": _NAV_OPTIONS,
    "pixelrl.envs.nav.env:make_instructnav": _NAV_OPTIONS,
}
MAX_OPTION_JSON = 2000  # characters of one recorded option's value


def check_env_id(env_id: Any, where: str) -> str:
    """``env_id`` if it is a registered pixelrl id; else a :class:`DatasetError`."""
    import gymnasium

    import pixelrl.envs  # noqa: F401  (registers the pixelrl ids)
    from pixelrl.envs.registry import unknown_env_message

    if not isinstance(env_id, str) or not env_id:
        raise DatasetError(
            f"{where} names no env_id (recorded from an env not made with gymnasium.make, or "
            "by a human): pass env_factory to replay it"
        )
    shown = repr(env_id[:100])
    if ":" in env_id or not env_id.startswith(NAMESPACE + "/"):
        raise DatasetError(f"{where}: env_id {shown} is not a pixelrl env id (pixelrl/...)")
    problem = unknown_env_message(env_id)
    if problem or env_id not in gymnasium.registry:
        raise DatasetError(f"{where}: {problem or f'unknown env id {shown}'}")
    return env_id


def _entry_point(env_id: str) -> str:
    import gymnasium

    entry = gymnasium.spec(env_id).entry_point
    if isinstance(entry, str):
        return entry
    return f"{getattr(entry, '__module__', '?')}:{getattr(entry, '__qualname__', '?')}"


def recordable_options(env_id: str) -> frozenset[str]:
    """The options of ``env_id`` a recording may carry (none for an env not listed)."""
    return RECORDABLE_OPTIONS.get(_entry_point(env_id), frozenset())


def recordable_kwargs(env_id: str | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """What the recorder writes of the env's kwargs: the recordable ones and those the id's
    registration fixes (the host's options, such as a display, stay out of the file)."""
    if env_id is None:
        return dict(kwargs)
    import gymnasium

    fixed = gymnasium.spec(env_id).kwargs or {}
    allowed = recordable_options(env_id)
    return {k: v for k, v in kwargs.items() if k in allowed or (k in fixed and fixed[k] == v)}


def replay_kwargs(
    env_id: str,
    recorded: dict[str, Any],
    command_line: dict[str, Any] | None,
    where: str,
    source: str = "a recording",
) -> dict[str, Any]:
    """The kwargs to make ``env_id`` with: the recording's recordable options (checked),
    overridden by the command line's. A recorded option outside the allow-list that the
    command line does not give is a :class:`DatasetError` naming it. ``source`` names the
    file in that message: the same rule holds for a checkpoint's or an agent file's options."""
    import gymnasium

    command_line = dict(command_line or {})
    fixed = gymnasium.spec(env_id).kwargs or {}
    allowed = recordable_options(env_id)
    refused = sorted(k for k in recorded if k not in allowed and k not in fixed)
    refused = [k for k in refused if k not in command_line]
    if refused:
        names = ", ".join(repr(str(k)[:40]) for k in refused[:5])
        raise DatasetError(
            f"{where}: env_kwargs {names} may come from the command line only, not from "
            f"{source} (it chooses only {', '.join(sorted(allowed)) or 'no options'} of "
            f"{env_id}); give them yourself with --env-kwargs"
        )
    kwargs = {}
    for key, value in recorded.items():
        if key in allowed:
            _check_value(key, value, where)
            kwargs[key] = value
        # a key the id's registration fixes: the id decides (its registered value is used)
    kwargs.update(command_line)
    return kwargs


def _check_value(key: str, value: Any, where: str) -> None:
    text = json.dumps(value)
    if len(text) > MAX_OPTION_JSON:
        raise DatasetError(f"{where}: env_kwargs {key!r} is {len(text)} characters of JSON")
    sizes = None
    if key == "screen_size":
        sizes = value
    elif key in ("width", "height"):
        sizes = [value, 1]
    if sizes is not None:
        ok = (
            isinstance(sizes, list)
            and len(sizes) == 2
            and all(type(n) is int and 1 <= n <= MAX_FRAME_SIDE for n in sizes)
            and sizes[0] * sizes[1] <= MAX_FRAME_PIXELS
        )
        if not ok:
            raise DatasetError(
                f"{where}: env_kwargs {key!r}={text[:60]} is not a size up to "
                f"{MAX_FRAME_SIDE} a side and {MAX_FRAME_PIXELS} pixels"
            )
