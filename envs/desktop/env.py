"""``DesktopEnv``: the emulated desktop as a Gymnasium environment (``pixelrl/Desktop-*-v0``)."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from pixelrl.envs.desktop.screen import Desktop, copy_element, wallpaper_key
from pixelrl.envs.desktop.tasks import FAMILIES, Plan, Task, expert_plan
from pixelrl.envs.desktop.theme import PALETTES, Theme, check_screen_size, make_theme
from pixelrl.envs.gui import a11y_to_text, observation_space
from pixelrl.envs.gui_action import (
    DEFAULT_MAX_TEXT_LENGTH,
    Action,
    ActionError,
    action_space,
    as_action,
)
from pixelrl.envs.gui_action.coordinates import CoordinateSpace, coordinate_space

REWARDS = ("sparse", "shaped")
FRAMES_KEPT = len(PALETTES)  # frames an env keeps between episodes: one per wallpaper


class DesktopEnv(gymnasium.Env):
    """A Pillow-rendered desktop (windows, icons, widgets) with checkable tasks.

    Args:
        family: a task family of :data:`FAMILIES` (``"click-button"``, ...; CamelCase works too)
            or ``"mixed"``: a random family each reset (``reset(options={"family": ...})``
            picks one for that episode).
        screen_size: (width, height), from 320×240 to 1920×1080; layouts scale with it.
        max_steps: steps before truncation; default per family, ``2 × expert length + 5``.
        reward: ``"sparse"`` — 1.0 on the step that succeeds, else 0; ``"shaped"`` —
            potential-based: r_t = Φ_t − Φ_{t−1} with Φ the task's progress in [0, 1) (fields
            filled right, boxes set right, the right tab or menu open, ...), Φ = 1 on success and
            0 on failure or when the steps run out, so a successful episode returns exactly 1
            and a failed one 0.
        a11y_text: add the accessibility tree as text (``obs["a11y_text"]``).
        render_mode: None or ``"rgb_array"`` (the screenshot).
        coordinates: how ``step`` reads the numbers in action text (a space of
            :mod:`pixelrl.envs.gui_action.coordinates`: ``"pixels"``, ``"relative1000"``, ``"unit"``,
            ``"smart_resize:ui-tars-1.5"``, ...); default: pixels for pyautogui calls, 0-1000 for
            UI-TARS calls.
        max_text_length: the longest text a ``type`` action may hold (default 8192 characters;
            any printable Unicode types).

    Observation: ``screenshot`` (H×W×3 uint8), ``instruction`` (and ``a11y_text``).
    Action: an :class:`~pixelrl.envs.gui_action.Action`, an element of ``action_space`` (a dict) or action
    text (pyautogui or UI-TARS syntax). An invalid action (off-screen point, unparseable text,
    unknown key) raises :class:`~pixelrl.envs.gui_action.ActionError` and changes nothing: the episode goes
    on, so a caller can score the format error and retry. (We chose raising over ignoring it
    silently: a silent no-op would hide bugs in policies and parsers.)

    Episodes terminate on success, on a wrong irreversible action (pressing a wrong button,
    submitting wrong text, dropping or renaming the wrong file: ``success`` False), and on
    ``done`` (success judged by the task's checker) or ``fail``; they truncate at ``max_steps``.

    ``info`` on reset and every step: ``a11y`` (elements with id, role, name, bbox, state incl.
    ``visible``/``enabled``/``window``, focused; treat as read-only), ``target_bbox`` (the bbox of
    the element the expert's next action targets, or None), ``alternative_bboxes`` (only where
    another element is as good a target: the other wrong checkboxes), ``success``, ``family``, ``task``
    (the parameters an expert needs). :meth:`expert_action` (or
    ``pixelrl.envs.desktop.expert_action(info)``) gives the scripted expert's next action.

    Determinism: everything random comes from the env's seeded ``np_random``; the same seed and
    actions give identical frames and rewards.

    Memory: between episodes the env keeps one frame per wallpaper (``FRAMES_KEPT``, 5: ~15 MB at
    1280×800, ~31 MB at 1920×1080), so that a reset repaints only what changed; every
    observation is the caller's own copy.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 5}

    def __init__(
        self,
        family: str = "mixed",
        screen_size: tuple[int, int] = (1280, 800),
        max_steps: int | None = None,
        reward: str = "sparse",
        a11y_text: bool = False,
        render_mode: str | None = None,
        coordinates: str | CoordinateSpace | None = None,
        max_text_length: int = DEFAULT_MAX_TEXT_LENGTH,
    ) -> None:
        self.families = FAMILIES
        self.family = family if family == "mixed" else _family_name(family)
        self.screen_size = check_screen_size(screen_size)
        if max_steps is not None and (
            not isinstance(max_steps, (int, np.integer)) or max_steps < 1
        ):
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.max_steps = max_steps
        # how step() reads action text: the coordinate space and the longest text it types
        self.coordinates = None if coordinates is None else coordinate_space(coordinates)
        if not isinstance(max_text_length, (int, np.integer)) or max_text_length < 1:
            raise ValueError(f"max_text_length must be a positive int, got {max_text_length!r}")
        self.max_text_length = int(max_text_length)
        self.reward_kind = reward
        self.a11y_text = bool(a11y_text)
        self.render_mode = render_mode
        self.observation_space = observation_space(self.screen_size, self.a11y_text)
        self.action_space = action_space(self.screen_size)
        chosen = list(FAMILIES) if self.family == "mixed" else [self.family]
        self.vocabulary: list[str] = sorted({v for f in chosen for v in FAMILIES[f].vocabulary})
        self.desktop: Desktop | None = None
        self._frames: dict[tuple, Desktop] = {}  # the last desktop on each wallpaper, oldest first
        self.task: Task | None = None
        self._info: dict[str, Any] = {}
        self._plan: Plan | None = None  # the expert's plan _make_info computed for this state
        self._last_tree: list[dict] | None = None
        self._over = True

    # -- Gymnasium API ----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        family = options.get("family", self.family)
        if family == "mixed":
            names = list(FAMILIES)
            family = names[int(self.np_random.integers(len(names)))]
        else:
            family = _family_name(family)
            if self.family != "mixed" and family != self.family:
                raise ValueError(
                    f"this env runs {self.family!r}; options['family']={family!r} needs family='mixed'"
                )
        theme = make_theme(self.screen_size, self.np_random)
        self.desktop = Desktop(theme, previous=self._desktop_to_reuse(theme))
        self._frames[self.desktop.wallpaper_key] = self.desktop
        task_cls = FAMILIES[family]
        self.task = task_cls(self.desktop, self.np_random)
        self.current_family = family
        self.step_limit = self.max_steps or 2 * task_cls.max_expert_steps + 5
        self.steps = 0
        self._over = False
        self._potential = self.task.progress()
        self._success = False
        return self._observation(), self._make_info()

    def step(self, action: Action | dict | str):
        if self.task is None:
            raise RuntimeError("call reset() before step()")
        if self._over:
            raise RuntimeError("the episode is over (terminated or truncated): call reset()")
        # ActionError: nothing changes
        act = as_action(action, self.screen_size, self.coordinates, self.max_text_length)
        desktop, task = self.desktop, self.task
        self.steps += 1
        desktop.events.clear()
        if act.kind == "done":
            outcome = task.outcome if task.outcome is not None else task.satisfied()
        elif act.kind == "fail":
            outcome = False
        else:
            desktop.dispatch(act)
            outcome = task.judge(desktop.events)
        terminated = outcome is not None
        self._success = outcome is True
        truncated = not terminated and self.steps >= self.step_limit
        self._over = terminated or truncated
        # The episode's last step sets Φ to 1 or 0, so that running out of steps with the form
        # nearly filled returns 0 like any failure (else waiting beats a risky final click).
        potential = 1.0 if self._success else 0.0 if self._over else task.progress()
        if self.reward_kind == "sparse":
            reward = 1.0 if self._success else 0.0
        else:
            reward = potential - self._potential
        self._potential = potential
        return self._observation(), float(reward), terminated, truncated, self._make_info()

    def render(self) -> np.ndarray | None:
        if self.render_mode == "rgb_array" and self.desktop is not None:
            return self.desktop.render().copy()
        return None

    # -- pixelrl extras -----------------------------------------------------------------------
    def expert_action(self) -> Action:
        """The scripted expert's next action for the current state."""
        if not self._info:
            raise RuntimeError("call reset() before expert_action()")
        if self._plan is not None:  # _make_info planned this state already (a pure function)
            return self._plan.action
        return expert_plan(self._info).action

    @property
    def instruction(self) -> str:
        return self.task.instruction if self.task is not None else ""

    # -- internals -----------------------------------------------------------------------------
    def _desktop_to_reuse(self, theme: Theme) -> Desktop | None:
        """The last desktop drawn on ``theme``'s wallpaper, whose frame a reset takes over.

        One frame is kept per wallpaper (at most one per palette: ~3 MB each at 1280×800), so
        that a reset repaints only what that desktop drew over its wallpaper instead of
        rewriting the whole frame (memory-bound: the costliest part of a reset). When more
        wallpapers than ``FRAMES_KEPT`` appear, the oldest frame is taken over and fully repainted.
        """
        key = wallpaper_key(theme)
        if key in self._frames:
            return self._frames.pop(key)  # popped, then stored again: the dict runs oldest first
        if len(self._frames) >= FRAMES_KEPT:
            return self._frames.pop(next(iter(self._frames)))
        return None

    def _observation(self) -> dict[str, Any]:
        obs = {"screenshot": self.desktop.render().copy(), "instruction": self.task.instruction}
        if self.a11y_text:
            obs["a11y_text"] = a11y_to_text(self.desktop.a11y_tree())
        return obs

    def _make_info(self) -> dict[str, Any]:
        # Fresh containers every call: callers keep infos (rollout buffers). The desktop rebuilds
        # its tree after any change; only a tree handed out before is copied.
        tree = self.desktop.a11y_tree()
        if tree is self._last_tree:
            tree = list(map(copy_element, tree))
        else:
            self._last_tree = tree
        info = {
            "a11y": tree,
            "target_bbox": None,
            "success": self._success,
            "family": self.current_family,
            "task": _fresh(self.task.params),
        }
        plan = None
        if not self._over:
            try:
                plan = expert_plan(info)
            except (LookupError, ActionError):
                pass  # the agent has left the expert's path (e.g. closed the window)
            if plan is not None and plan.target is not None:
                info["target_bbox"] = list(plan.target["bbox"])
                if plan.alternatives:
                    info["alternative_bboxes"] = [list(e["bbox"]) for e in plan.alternatives]
        self._info, self._plan = info, plan
        return info


def _fresh(value: Any) -> Any:
    """A copy of nested dicts and lists (the leaves are immutable)."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


def _family_name(name: str) -> str:
    """A family's kebab-case name from kebab or CamelCase, or ValueError listing the families."""
    if name in FAMILIES:
        return name
    for family in FAMILIES:
        if family.replace("-", "") == str(name).replace("-", "").replace("_", "").lower():
            return family
    raise ValueError(
        f"unknown desktop task family {name!r}; families: mixed, {', '.join(FAMILIES)}"
    )
