"""Small deterministic envs for the recording tests (a GUI one and a navigation-like one).

Registered as ``pixelrl/RecordingToy*`` (with Gymnasium only: ``pixelrl envs`` does not list
them) so that recordings name a pixelrl id replay can make; the SIGKILL test imports this module
in a subprocess too.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from pixelrl.envs.gui import a11y_element, bbox_center, observation_space
from pixelrl.envs.gui_action import Action, ActionError, action_space, as_action

W, H = 96, 64


class ToyGUIEnv(gymnasium.Env):
    """Click the red box. Screenshot shows the box and the pointer trail; typed text is drawn as
    bars. Invalid action text costs -0.1 and changes nothing (like a format penalty)."""

    metadata = {"render_modes": [], "render_fps": 5}

    def __init__(self, box_size: int = 12) -> None:
        self.box_size = box_size
        self.observation_space = observation_space((W, H))
        self.action_space = action_space((W, H))
        self._canvas = np.zeros((H, W, 3), np.uint8)

    def _info(self, success=None):
        info = {
            "target_bbox": list(self._box),
            "a11y": [a11y_element(0, "button", "target", self._box)],
            "family": "toy",
        }
        if success is not None:
            info["success"] = success
        return info

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        x0 = int(self.np_random.integers(0, W - self.box_size))
        y0 = int(self.np_random.integers(0, H - self.box_size))
        self._box = [x0, y0, x0 + self.box_size, y0 + self.box_size]
        self._canvas[:] = self.np_random.integers(0, 40, size=3, dtype=np.uint8)
        self._canvas[y0 : y0 + self.box_size, x0 : x0 + self.box_size] = (220, 30, 30)
        self._typed = 0
        self._instruction = f"click the red box {int(self.np_random.integers(100))}"
        return self._obs(), self._info()

    def _obs(self):
        return {"screenshot": self._canvas.copy(), "instruction": self._instruction}

    def step(self, action):
        try:
            a = as_action(action, (W, H))
        except ActionError:
            return self._obs(), -0.1, False, False, self._info()
        reward, done = 0.0, False
        if a.point is not None:
            self._canvas[a.y, a.x] = (255, 255, 255)
        if a.kind == "click":
            x0, y0, x1, y1 = self._box
            done = x0 <= a.x < x1 and y0 <= a.y < y1
            reward = 1.0 if done else -0.01
        elif a.kind == "type":
            self._typed += len(a.text)
            self._canvas[H - 2, : min(self._typed, W)] = (0, 200, 0)
        elif a.kind == "done":
            done = True
        return self._obs(), reward, done, False, self._info(success=done and reward > 0)

    def expert_action(self) -> Action:
        return Action.click(*bbox_center(self._box))


class ToyNavEnv(gymnasium.Env):
    """A 1-D corridor seen as an RGB gradient with a depth image and a polar point goal."""

    metadata = {"render_modes": [], "render_fps": 10}

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self.observation_space = spaces.Dict(
            {
                "rgb": spaces.Box(0, 255, (size, size, 3), np.uint8),
                "depth": spaces.Box(0.0, 10.0, (size, size, 1), np.float32),
                "pointgoal_with_gps_compass": spaces.Box(-100.0, 100.0, (2,), np.float32),
            }
        )
        self.action_space = spaces.Discrete(4)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._pos = 0
        self._heading = 0
        self._goal = int(self.np_random.integers(3, 8))
        return self._obs(), {"distance_to_goal": float(self._goal)}

    def _obs(self):
        ramp = np.linspace(0, 1, self.size, dtype=np.float32)
        shade = (self._pos * 20 + self._heading * 7) % 200
        rgb = np.zeros((self.size, self.size, 3), np.uint8)
        rgb[..., 0] = (ramp[None, :] * 255).astype(np.uint8)
        rgb[..., 1] = shade
        rgb[: self.size // 2, :, 2] = 120
        depth = np.full((self.size, self.size, 1), self._goal - self._pos + 0.5, np.float32)
        goal = np.array([self._goal - self._pos, 0.1 * self._heading], np.float32)
        return {"rgb": rgb, "depth": depth, "pointgoal_with_gps_compass": goal}

    def step(self, action):
        action = int(action)
        if action == 1:
            self._pos += 1
        elif action in (2, 3):
            self._heading += 1 if action == 2 else -1
        dist = abs(self._goal - self._pos)
        done = action == 0
        success = done and dist == 0
        reward = (2.5 if success else 0.0) - 0.01
        return (
            self._obs(),
            reward,
            done,
            False,
            {"distance_to_goal": float(dist), "success": success},
        )

    def expert_action(self) -> int:
        return 1 if self._pos < self._goal else 0


gymnasium.register("pixelrl/RecordingToyGUI-v0", entry_point=ToyGUIEnv, max_episode_steps=20)
gymnasium.register("pixelrl/RecordingToyNav-v0", entry_point=ToyNavEnv, max_episode_steps=30)
