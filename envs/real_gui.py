"""The part every GUI env on real software shares (X11 desktop, MiniWoB++ in Chromium).

:class:`RealGuiEnv` owns the Gymnasium side: spaces, action validation, step counting and the
step limit, the observation dict, ``info`` (``a11y``, ``success``, ``step``), ``render`` and the
rule that a crash inside the backend tears the backend down (no browser or X server left
behind) before the exception travels on. A backend fills in four hooks:

- ``_begin(seed, options) -> (instruction, info)``: start an episode;
- ``_act(action) -> Outcome``: perform one validated :class:`~pixelrl.envs.gui_action.Action`;
- ``_screenshot() -> uint8 H×W×3`` and ``_a11y() -> list of a11y elements``;
- ``_shutdown()``: stop every process the backend started (idempotent).

Invalid actions (off-screen, unknown key, unparsable text) raise
:class:`~pixelrl.envs.gui_action.ActionError` before anything runs and leave the episode as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np

from pixelrl.envs.gui import a11y_to_text, observation_space
from pixelrl.envs.gui_action import (
    DEFAULT_MAX_TEXT_LENGTH,
    Action,
    ActionError,
    action_space,
    as_action,
)
from pixelrl.envs.gui_action.coordinates import CoordinateSpace, coordinate_space


@dataclass
class Outcome:
    """What one backend step produced besides the observation."""

    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    success: bool = False
    info: dict[str, Any] = field(default_factory=dict)


class RealGuiEnv(gymnasium.Env):
    """Base class: a GUI env whose screen belongs to a real program (see the module doc)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    # What this backend cannot do: refused at step and left out of the action space.
    BACKEND_NAME = "GUI"
    REFUSED_KINDS: tuple[str, ...] = ()
    REFUSED_KEYS: tuple[str, ...] = ()

    def __init__(
        self,
        screen_size: tuple[int, int],
        max_steps: int,
        a11y_text: bool = False,
        render_mode: str | None = None,
        coordinates: str | CoordinateSpace | None = None,
        max_text_length: int = DEFAULT_MAX_TEXT_LENGTH,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if int(max_steps) < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.screen_size = (int(screen_size[0]), int(screen_size[1]))
        self.max_steps = int(max_steps)
        self.a11y_text = bool(a11y_text)
        self.render_mode = render_mode
        # how step() reads action text (see pixelrl.envs.desktop.DesktopEnv)
        self.coordinates = None if coordinates is None else coordinate_space(coordinates)
        self.max_text_length = int(max_text_length)
        self.observation_space = observation_space(self.screen_size, self.a11y_text)
        self.action_space = action_space(self.screen_size, self.REFUSED_KINDS, self.REFUSED_KEYS)
        self._instruction: str | None = None
        self._steps = 0
        self._episode_over = False
        self._last_screenshot: np.ndarray | None = None

    # -- hooks for a backend ------------------------------------------------------------------
    def _begin(self, seed: int | None, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def _act(self, action: Action) -> Outcome:
        raise NotImplementedError

    def _check_supported(self, action: Action) -> None:
        """Raise ActionError for an action this backend cannot do (before anything happens)."""
        if action.kind in self.REFUSED_KINDS:
            raise ActionError(f"the {self.BACKEND_NAME} backend cannot do {action.kind}")
        refused = [k for k in action.keys if k in self.REFUSED_KEYS]
        if refused:
            raise ActionError(f"the {self.BACKEND_NAME} backend cannot press {', '.join(refused)}")

    def _screenshot(self) -> np.ndarray:
        raise NotImplementedError

    def _a11y(self) -> list[dict[str, Any]]:
        return []

    def _shutdown(self) -> None:
        pass

    # -- Gymnasium ----------------------------------------------------------------------------
    @property
    def instruction(self) -> str | None:
        return self._instruction

    @property
    def steps(self) -> int:
        return self._steps

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        try:
            instruction, info = self._begin(seed, dict(options or {}))
            self._instruction = instruction
            self._steps = 0
            self._episode_over = False
            obs, a11y = self._observe()
        except BaseException:
            self._instruction = None
            self._shutdown()
            raise
        return obs, {**info, "a11y": a11y, "success": False, "step": 0}

    def step(self, action: Action | dict | str):
        if self._instruction is None:
            raise RuntimeError(f"{type(self).__name__}: call reset() before step()")
        # bad input: ActionError, nothing done
        action = as_action(action, self.screen_size, self.coordinates, self.max_text_length)
        self._check_supported(action)
        if self._episode_over:
            raise RuntimeError(f"{type(self).__name__}: the episode is over; call reset()")
        self._steps += 1
        try:
            outcome = self._act(action)
            obs, a11y = self._observe()
        except BaseException:
            # A crash (or Ctrl-C) inside the backend: stop its processes, then let it travel.
            self._instruction = None
            self._shutdown()
            raise
        truncated = outcome.truncated or (not outcome.terminated and self._steps >= self.max_steps)
        terminated = bool(outcome.terminated)
        self._episode_over = terminated or truncated
        info = {**outcome.info, "a11y": a11y, "success": bool(outcome.success)}
        info["step"] = self._steps
        return obs, float(outcome.reward), terminated, bool(truncated), info

    def _observe(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        screenshot = self._screenshot()
        expected = (self.screen_size[1], self.screen_size[0], 3)
        if screenshot.shape != expected or screenshot.dtype != np.uint8:
            raise RuntimeError(
                f"{type(self).__name__}: screenshot is {screenshot.dtype}{screenshot.shape}, "
                f"expected uint8{expected}"
            )
        self._last_screenshot = screenshot
        a11y = self._a11y()
        obs: dict[str, Any] = {"screenshot": screenshot, "instruction": self._instruction or ""}
        if self.a11y_text:
            obs["a11y_text"] = a11y_to_text(a11y)
        return obs, a11y

    def screenshot(self) -> np.ndarray:
        """The screen now, H×W×3 uint8, outside the step loop (tools, benchmarks)."""
        return self._screenshot()

    def render(self) -> np.ndarray | None:
        if self.render_mode == "rgb_array" and self._last_screenshot is not None:
            return self._last_screenshot.copy()
        return None

    def close(self) -> None:
        self._instruction = None
        self._shutdown()
        super().close()
