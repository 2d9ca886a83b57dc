"""A tiny stand-in for the navigation env, for testing the RL core without the simulator.

One empty square room; habitat's actions (0 stop, 1 forward 0.25 m, 2 left, 3 right 10 deg... here
30 deg so episodes stay short), observations ``depth`` (distance to the walls along each image
column, repeated over the rows) and ``pointgoal_with_gps_compass`` (rho, phi), habitat's reward
(-delta distance - 0.01, +2.5 on success) and measures (success, spl) in the final info.
"""

from __future__ import annotations

import math
import time

import gymnasium as gym
import numpy as np


class ToyPointNav(gym.Env):
    metadata = {"render_modes": []}

    def __init__(
        self,
        size: float = 3.0,
        image: int = 16,
        goal_distance: tuple[float, float] = (0.75, 1.5),
        max_episode_steps: int = 40,
        turn_degrees: float = 30.0,
        step_delay: float = 0.0,  # seconds of sleep per step: a deliberately slow worker
    ):
        self.step_delay = step_delay
        self.size, self.image, self.goal_distance = size, image, goal_distance
        self.max_steps, self.turn = max_episode_steps, math.radians(turn_degrees)
        self.action_space = gym.spaces.Discrete(4)
        self.observation_space = gym.spaces.Dict(
            {
                "depth": gym.spaces.Box(0.0, 1.0, (image, image, 1), np.float32),
                "pointgoal_with_gps_compass": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
            }
        )

    def _obs(self) -> dict[str, np.ndarray]:
        angles = self.heading + np.linspace(math.pi / 4, -math.pi / 4, self.image)
        dx, dy = np.cos(angles), np.sin(angles)
        with np.errstate(divide="ignore"):
            tx = np.where(
                dx > 0, (self.size - self.pos[0]) / dx, np.where(dx < 0, -self.pos[0] / dx, np.inf)
            )
            ty = np.where(
                dy > 0, (self.size - self.pos[1]) / dy, np.where(dy < 0, -self.pos[1] / dy, np.inf)
            )
        depth = np.clip(np.minimum(tx, ty) / (self.size * 1.5), 0, 1).astype(np.float32)
        goal = self.goal - self.pos
        rho = float(np.hypot(*goal))
        phi = math.atan2(goal[1], goal[0]) - self.heading
        phi = (phi + math.pi) % (2 * math.pi) - math.pi
        return {
            "depth": np.repeat(depth[None, :, None], self.image, axis=0),
            "pointgoal_with_gps_compass": np.array([rho, phi], np.float32),
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        rng = self.np_random
        self.pos = rng.uniform(0.5, self.size - 0.5, 2)
        while True:
            angle = rng.uniform(-math.pi, math.pi)
            dist = rng.uniform(*self.goal_distance)
            goal = self.pos + dist * np.array([math.cos(angle), math.sin(angle)])
            if np.all((goal > 0.3) & (goal < self.size - 0.3)):
                break
        self.goal = goal
        self.heading = rng.uniform(-math.pi, math.pi)
        self.start_distance = float(np.hypot(*(self.goal - self.pos)))
        self.path_length, self.steps = 0.0, 0
        return self._obs(), {}

    def step(self, action):
        if self.step_delay:
            time.sleep(self.step_delay)
        before = float(np.hypot(*(self.goal - self.pos)))
        self.steps += 1
        if action == 1:
            new = self.pos + 0.25 * np.array([math.cos(self.heading), math.sin(self.heading)])
            new = np.clip(new, 0.1, self.size - 0.1)
            self.path_length += float(np.hypot(*(new - self.pos)))
            self.pos = new
        elif action == 2:
            self.heading += self.turn
        elif action == 3:
            self.heading -= self.turn
        after = float(np.hypot(*(self.goal - self.pos)))
        terminated = action == 0
        truncated = not terminated and self.steps >= self.max_steps
        success = terminated and after < 0.2
        reward = before - after - 0.01 + (2.5 if success else 0.0)
        info = {}
        if terminated or truncated:
            spl = success * self.start_distance / max(self.start_distance, self.path_length)
            info = {"success": float(success), "spl": float(spl), "distance_to_goal": after}
        return self._obs(), float(reward), bool(terminated), bool(truncated), info


def make_toy_vec_env(num_envs: int = 4, **kwargs) -> gym.vector.VectorEnv:
    return gym.vector.SyncVectorEnv(
        [lambda: ToyPointNav(**kwargs) for _ in range(num_envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )


# -- the toy as a training recipe (``pixelrl.recipes`` task module) ---------------------------
TOY_CONFIG = __file__.replace("toy_nav.py", "toy_nav.yaml")


def make_envs(cfg, num_envs: int, seed: int, split: str) -> gym.vector.VectorEnv:
    kwargs = dict(cfg.env.kwargs)
    if split == "eval":
        kwargs.update(cfg.env.eval_kwargs)
    return make_toy_vec_env(num_envs, **kwargs)


def make_env_fn(cfg, split: str):
    """One toy env's factory (``envs.backend=ray``: each Ray actor calls it)."""
    from functools import partial

    kwargs = dict(cfg.env.kwargs)
    if split == "eval":
        kwargs.update(cfg.env.eval_kwargs)
    return partial(ToyPointNav, **kwargs)


def make_policy(cfg, observation_space, action_space):
    from pixelrl.config import check_kwargs
    from pixelrl.embodied.policy import PointNavResNetPolicy

    kwargs = check_kwargs(PointNavResNetPolicy, cfg.policy, "policy")
    return PointNavResNetPolicy(observation_space, action_space, **kwargs)


def register_toy_recipe() -> str:
    from pixelrl.recipes import register_recipe

    register_recipe("test/toy", TOY_CONFIG, "toy_nav")
    return "test/toy"


class NextStepVecEnv(gym.vector.VectorEnv):
    """A plain ``NEXT_STEP`` vector env without ``reset_mask`` support (like ``NavVectorEnv``):
    the call after an episode ends ignores that env's action and returns its first observation."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 2, **kwargs):
        self._inner = gym.vector.SyncVectorEnv(
            [lambda: ToyPointNav(**kwargs) for _ in range(num_envs)],
            autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
        )
        self.num_envs = num_envs
        self.single_observation_space = self._inner.single_observation_space
        self.single_action_space = self._inner.single_action_space
        self.observation_space = self._inner.observation_space
        self.action_space = self._inner.action_space

    def reset(self, *, seed=None, options=None):
        if options:
            raise ValueError("NextStepVecEnv.reset takes no options")
        return self._inner.reset(seed=seed)

    def step(self, actions):
        return self._inner.step(actions)


# -- the toy in an async collector's env worker (pixelrl.rl.async_collect) --------------------
class CrashingToyPointNav(ToyPointNav):
    """Fails at step ``crash_at`` of the process: raises, or (``hard``) kills its own process
    with SIGKILL, as the OOM killer or a segfault in native code would."""

    steps_taken = 0

    def __init__(self, crash_at: int, hard: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.crash_at, self.hard = crash_at, hard

    def step(self, action):
        CrashingToyPointNav.steps_taken += 1
        if CrashingToyPointNav.steps_taken >= self.crash_at:
            if self.hard:
                import os
                import signal

                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError(f"toy env crashed on purpose at step {self.crash_at}")
        return super().step(action)


class ToySpec:
    """What the async collector's worker builds: toy envs and the toy recipe's policy
    (picklable: this module is importable in a ``spawn`` process, pyproject's pythonpath)."""

    def __init__(self, num_envs: int = 4, crash_at: int = 0, hard: bool = False, **kwargs):
        self.num_envs, self.crash_at, self.hard, self.kwargs = num_envs, crash_at, hard, kwargs

    def make_envs(self) -> gym.vector.VectorEnv:
        if not self.crash_at:
            return make_toy_vec_env(self.num_envs, **self.kwargs)
        return gym.vector.SyncVectorEnv(
            [
                lambda: CrashingToyPointNav(self.crash_at, self.hard, **self.kwargs)
                for _ in range(self.num_envs)
            ],
            autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
        )

    def make_policy(self, observation_space, action_space):
        from pixelrl.embodied.policy import PointNavResNetPolicy

        return PointNavResNetPolicy(
            observation_space,
            action_space,
            hidden_size=32,
            base_planes=8,
            ngroups=4,
            feature_size=64,
        )

    def make_teacher(self, envs):
        """A scripted teacher: always forward."""
        return lambda: np.ones(envs.num_envs, dtype=np.int64)
