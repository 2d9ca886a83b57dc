"""``NavVectorEnv``: a native ``gymnasium.vector.VectorEnv`` over N navigation agents.

All agents share one :class:`~pixelrl.envs.nav.sim.NavSim`, so a step renders every agent in a single
renderer call (threads split it) instead of N env copies rendering one by one. Autoreset follows
gymnasium 1.x's default (``NEXT_STEP``): the step after an episode ends resets that sub-env,
ignores its action and returns reward 0. With ``autoreset_mode=AutoresetMode.SAME_STEP`` the
finished sub-env starts its next episode within the same step, which returns the new episode's
first observation and puts the last one in ``infos["final_obs"]`` and its measures in
``infos["final_info"]`` (gymnasium's convention): no step is spent on resets, which matters to
training while a young policy still stops after a few steps. ``infos`` holds each measure as an
array with its ``_<key>`` mask, gymnasium's vector-info convention.

    envs = NavVectorEnv(16, task="pointnav", width=128, height=128)
    obs, infos = envs.reset(seed=0)   # sub-env i is seeded with seed + i
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from pixelrl.envs.nav.config import NavConfig
from pixelrl.envs.nav.sim import NavSim
from pixelrl.envs.nav.tasks import NavEpisodeState, action_index, action_names


class NavVectorEnv(VectorEnv):
    """N agents, one renderer call per step (see the module docstring)."""

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        **options: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        modes = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
        mode = autoreset_mode if isinstance(autoreset_mode, AutoresetMode) else None
        if mode is None:
            mode = next((m for m in modes if autoreset_mode in (m.value, m.name)), None)
        if mode not in modes:
            raise ValueError(
                f"NavVectorEnv autoreset_mode must be NEXT_STEP or SAME_STEP, got {autoreset_mode!r}"
            )
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self.cfg = NavConfig.from_options(env_id="NavVectorEnv", **options)
        if self.cfg.backend != "embedded":
            raise ValueError(
                "NavVectorEnv batches the embedded simulator; use gymnasium.vector.SyncVectorEnv for habitat"
            )
        self.num_envs = num_envs
        self.sim = NavSim(self.cfg)
        self.single_observation_space = self.sim.observation_space()
        self.single_action_space = spaces.Discrete(len(action_names(self.cfg)))
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.states: list[NavEpisodeState | None] = [None] * num_envs
        self._rngs = [np.random.default_rng(i) for i in range(num_envs)]
        self._needs_reset = np.zeros(num_envs, bool)
        self._next_index = 0

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        if options:
            raise ValueError(f"NavVectorEnv.reset takes no options, got {sorted(options)}")
        if seed is not None:
            seeds = (
                list(seed)
                if isinstance(seed, (list, tuple))
                else [seed + i for i in range(self.num_envs)]
            )
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed list must have {self.num_envs} entries, got {len(seeds)}")
            self._rngs = [np.random.default_rng(s) for s in seeds]
            self._next_index = 0
        for i in range(self.num_envs):
            self._start(i)
        self._needs_reset[:] = False
        return self.sim.render(self.states), self._infos()

    def _start(self, i: int, previous: NavEpisodeState | None = None) -> None:
        index = None
        if self.sim.episodes is not None:
            if self.cfg.shuffle:
                index = int(self._rngs[i].integers(len(self.sim.episodes)))
            else:
                index = self._next_index
                self._next_index = (self._next_index + 1) % len(self.sim.episodes)
        self.states[i] = self.sim.new_episode(self._rngs[i], index=index, previous=previous)

    def step(self, actions):
        actions = np.asarray(actions).reshape(self.num_envs)
        if actions.dtype.kind in "iuf":  # an index outside the space (-1 too) is an error
            bad = (actions < 0) | (actions >= self.single_action_space.n)
            if bad.any():
                action_index(int(actions[bad][0]), action_names(self.cfg))
        rewards = np.zeros(self.num_envs, np.float64)
        terminated = np.zeros(self.num_envs, bool)
        truncated = np.zeros(self.num_envs, bool)
        for i, state in enumerate(self.states):
            if self._needs_reset[i]:
                self._start(i, previous=state)
                continue
            rewards[i], terminated[i], truncated[i] = state.step(int(actions[i]))
        done = terminated | truncated
        final = None
        if self.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP and done.any():
            final = self._finish(np.flatnonzero(done))
        obs = self.sim.render(self.states)
        infos = self._infos()
        if final is not None:
            infos["final_obs"], infos["final_info"] = final
            infos["_final_obs"] = infos["_final_info"] = done
        else:
            self._needs_reset = done
        return obs, rewards, terminated, truncated, infos

    def _finish(self, ended: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """SAME_STEP: the last observations and measures of the ``ended`` sub-envs, which then
        start their next episodes."""
        last = self.sim.render([self.states[i] for i in ended])
        final_obs = np.full(self.num_envs, None, dtype=object)
        for row, i in enumerate(ended):
            final_obs[i] = {key: value[row] for key, value in last.items()}
        final_info = self._infos()
        mask = np.isin(np.arange(self.num_envs), ended)
        for key in list(final_info):
            if key.startswith("_"):
                final_info[key] = mask.copy()
        for i in ended:
            self._start(int(i), previous=self.states[i])
        return final_obs, final_info

    def _infos(self) -> dict[str, Any]:
        per_env = [s.measures() for s in self.states]
        infos: dict[str, Any] = {}
        for key in per_env[0]:
            infos[key] = np.array([m[key] for m in per_env])
            infos["_" + key] = np.ones(self.num_envs, bool)
        infos["collided"] = np.array([s.collided for s in self.states])
        infos["_collided"] = np.ones(self.num_envs, bool)
        return infos

    def close_extras(self, **kwargs: Any) -> None:
        self.sim.close()


def make_pointnav_vector(num_envs: int, **options: Any) -> NavVectorEnv:
    """Vector entry point of ``pixelrl/PointNav-v0``:
    ``gymnasium.make_vec(id, num_envs, vectorization_mode="vector_entry_point", ...)``."""
    return NavVectorEnv(num_envs, task="pointnav", **options)


def make_objectnav_vector(num_envs: int, **options: Any) -> NavVectorEnv:
    """Vector entry point of ``pixelrl/ObjectNav-v0``."""
    return NavVectorEnv(num_envs, task="objectnav", **options)


def make_instructnav_vector(num_envs: int, **options: Any) -> NavVectorEnv:
    """Vector entry point of ``pixelrl/InstructNav-v0`` (``instruction``: a tuple of texts)."""
    return NavVectorEnv(num_envs, task="instructnav", **options)
