"""The env loop: step a vectorized env with a policy and fill rollout storage.

This is the only place that talks to environments during training; PPO (and later GRPO and
SFT) only read the storage. Per step::

    actions, logprobs, values, state = policy.act(obs, state)
    obs, rewards, terminated, truncated, info = envs.step(actions)
    done envs: report their episode (return, length and every numeric info field, e.g. habitat's
               success / spl measures); reset their policy state (mask 0)
    storage.insert(...)

Autoreset (:class:`AutoresetStepper`): gymnasium 1.x vector envs reset finished envs either in
the same step (``SAME_STEP``, final observation in ``info["final_obs"]``) or on the next call
(``NEXT_STEP``: that call ignores the env's action and returns its first observation with reward
0). Gymnasium's own Sync/Async vector envs are reset by the collector through
``reset(options={"reset_mask": done})``, so every step is a real transition. Other ``NEXT_STEP``
envs (e.g. ``pixelrl.envs.nav``'s batched ``NavVectorEnv``) keep their reset step: it is stored with
``valid = 0`` (no weight in the PPO loss, not counted as a frame) and the observation after it
starts the new episode (mask 0).

Worker faults (``pixelrl.envs.remote``): an episode whose env worker died or hung ends truncated
with ``info["env_fault"]``; that step never happened, so its row is not a transition (``valid =
0``) and its reward is the value of the last real observation, which makes its advantage 0 and
bootstraps the step before it as a time limit would; no update learns from the lost step.

Time limits: an episode cut by ``truncated`` (not ``terminated``) did not really end, so its last
reward gets ``gamma * V(final observation)`` (Pardo et al., 2018) when ``bootstrap_truncated``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from pixelrl.rl.policy import Policy, index_state, mask_state
from pixelrl.rl.storage import RolloutStorage


def obs_to_tensors(
    obs: dict[str, Any], keys: list[str], device: torch.device | str = "cpu"
) -> dict[str, torch.Tensor]:
    """The array observations named by ``keys`` as tensors (other keys, e.g. text, are left out)."""
    return {key: torch.as_tensor(np.asarray(obs[key]), device=device) for key in keys}


def _stack_final_obs(
    final_obs: np.ndarray, rows: np.ndarray, keys: list[str]
) -> dict[str, np.ndarray]:
    return {key: np.stack([final_obs[i][key] for i in rows]) for key in keys}


def env_info(info: dict[str, Any], index: int, prefix: str = "") -> dict[str, float]:
    """Numeric scalars of env ``index`` from a vector env's info dict, nested keys joined by ``/``.

    Gymnasium vector infos hold one array per key and a ``_key`` mask saying which envs set it.
    """
    out: dict[str, float] = {}
    for key, value in info.items():
        if key.startswith("_") or key in ("final_obs", "final_info"):
            continue
        present = info.get("_" + key)
        if present is not None and not bool(np.asarray(present)[index]):
            continue
        if isinstance(value, dict):
            out.update(env_info(value, index, prefix + key + "/"))
            continue
        try:
            item = np.asarray(value)[index]
        except (IndexError, TypeError):
            continue
        if np.ndim(item) == 0 and isinstance(
            item.item() if hasattr(item, "item") else item, int | float | bool
        ):
            out[prefix + key] = float(item)
    return out


def resets_in_same_step(envs: gym.vector.VectorEnv) -> bool:
    mode = envs.metadata.get("autoreset_mode", "NextStep")
    return getattr(mode, "value", mode) == "SameStep"


@dataclass
class StepResult:
    """One vector step, normalised across autoreset modes (see :class:`AutoresetStepper`)."""

    obs: dict[str, np.ndarray]  # after the step; the first observation where an env was reset
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    valid: np.ndarray  # False where this call was only an env's reset step (NEXT_STEP)
    final_obs: np.ndarray | None  # final_obs[i]: env i's last observation (dict) where it ended
    final_info: dict[str, Any]  # vector infos holding the finished envs' measures
    fault: np.ndarray | None = None  # True where an env worker failed: no step happened


class AutoresetStepper:
    """Steps a vector env the same way whatever its autoreset mode (module doc)."""

    def __init__(self, envs: gym.vector.VectorEnv, keys: list[str]):
        self.envs, self.keys = envs, keys
        base = getattr(envs, "unwrapped", envs)
        if resets_in_same_step(envs):
            self.mode = "same_step"
        elif isinstance(base, gym.vector.SyncVectorEnv | gym.vector.AsyncVectorEnv):
            self.mode = "reset_mask"
        else:
            self.mode = "next_step"
        self.pending = np.zeros(envs.num_envs, dtype=bool)  # next call is their reset step

    def reset(self, seed: int | None = None) -> dict[str, np.ndarray]:
        self.pending[:] = False
        obs, _ = self.envs.reset(seed=seed)
        return obs

    def step(self, actions: np.ndarray) -> StepResult:
        obs, rewards, terminated, truncated, info = self.envs.step(actions)
        rewards, terminated, truncated = (
            np.asarray(rewards),
            np.asarray(terminated),
            np.asarray(truncated),
        )
        done = terminated | truncated
        valid = np.ones(len(done), dtype=bool)
        final_obs, final_info = None, info
        if self.mode == "same_step":
            final_obs, final_info = info.get("final_obs"), info.get("final_info", info)
        elif done.any():
            final_obs = np.empty(len(done), dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = {key: np.array(obs[key][i]) for key in self.keys}
        if self.mode == "reset_mask" and done.any():
            reset_obs, _ = self.envs.reset(options={"reset_mask": done})
            obs = {key: np.array(value) for key, value in obs.items()}
            for key in self.keys:
                obs[key][done] = np.asarray(reset_obs[key])[done]
        if self.mode == "next_step":
            valid = ~self.pending
            self.pending = done.copy()
        fault = np.zeros(len(done), dtype=bool)
        if "env_fault" in info:
            fault = np.asarray(info.get("_env_fault", info["env_fault"]), dtype=bool)
            valid = valid & ~fault
        return StepResult(obs, rewards, terminated, truncated, valid, final_obs, final_info, fault)


@dataclass
class Rollout:
    """What one call to :meth:`RolloutCollector.collect` produced besides the storage."""

    steps: int  # steps per env actually collected (fewer when preempted)
    frames: int  # real transitions collected (steps * num_envs less reset steps)
    next_value: torch.Tensor  # V of the observation after the last step, to bootstrap GAE
    episodes: list[dict[str, float]] = field(default_factory=list)


class RolloutCollector:
    """Keeps the envs' current observations, masks and policy state between rollouts."""

    def __init__(
        self,
        envs: gym.vector.VectorEnv,
        policy: Policy,
        storage: RolloutStorage,
        seed: int | None = None,
        gamma: float = 0.99,
        bootstrap_truncated: bool = True,
        reward_transform: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    ):
        self.envs, self.policy, self.storage = envs, policy, storage
        self.gamma, self.bootstrap_truncated = gamma, bootstrap_truncated
        self.reward_transform = reward_transform
        self.device = storage.device
        self.keys = list(storage.obs)
        self.num_envs = envs.num_envs
        self.stepper = AutoresetStepper(envs, self.keys)

        obs = self.stepper.reset(seed=seed)
        self.obs = obs_to_tensors(obs, self.keys, self.device)
        self.masks = torch.zeros(self.num_envs, device=self.device)  # every env starts an episode
        self.state = policy.initial_state(self.num_envs)
        self.episode_return = np.zeros(self.num_envs)
        self.episode_length = np.zeros(self.num_envs, dtype=np.int64)

    @torch.no_grad()
    def collect(self, should_stop: Callable[[int], bool] | None = None) -> Rollout:
        """Fill ``storage`` with up to ``storage.num_steps`` steps of every env.

        ``should_stop(steps_done)`` lets DD-PPO end a straggler's rollout early.
        """
        storage, policy = self.storage, self.policy
        storage.start(self.obs, self.masks, self.state)
        episodes: list[dict[str, float]] = []
        frames = 0
        for t in range(storage.num_steps):
            actions, logprobs, values, state = policy.act(self.obs, self.state)
            step = self.stepper.step(actions.cpu().numpy())
            done, valid = step.terminated | step.truncated, step.valid
            frames += int(valid.sum())

            rewards_t = torch.as_tensor(
                step.rewards * valid, dtype=torch.float32, device=self.device
            )
            self.episode_return += step.rewards * valid
            self.episode_length += valid
            fault = step.fault if step.fault is not None else np.zeros_like(done)
            cut = np.flatnonzero(step.truncated & ~step.terminated & ~fault)
            if self.bootstrap_truncated and len(cut) and step.final_obs is not None:
                last = _stack_final_obs(step.final_obs, cut, self.keys)
                rows = torch.as_tensor(cut, device=self.device)
                tail = policy.act(
                    obs_to_tensors(last, self.keys, self.device), index_state(state, rows)
                )
                rewards_t[rows] += self.gamma * tail.values.to(rewards_t.dtype)
            if self.reward_transform is not None:
                rewards_t = self.reward_transform(
                    rewards_t, torch.as_tensor(done, device=self.device)
                )
            if fault.any():  # module doc: a lost step has advantage 0
                rows = torch.as_tensor(np.flatnonzero(fault), device=self.device)
                rewards_t[rows] = values[rows].to(rewards_t.dtype).reshape(-1)

            for i in np.flatnonzero(done):
                stats = env_info(step.final_info, int(i))
                stats.update(
                    {
                        "return": float(self.episode_return[i]),
                        "length": float(self.episode_length[i]),
                    }
                )
                episodes.append(stats)
                self.episode_return[i], self.episode_length[i] = 0.0, 0

            self.obs = obs_to_tensors(step.obs, self.keys, self.device)
            # the next observation starts an episode after an end, and after a reset step
            self.masks = torch.as_tensor(~done & valid, dtype=torch.float32, device=self.device)
            self.state = mask_state(state, self.masks)
            valid_t = torch.as_tensor(valid, dtype=torch.float32, device=self.device)
            storage.insert(self.obs, self.masks, actions, logprobs, values, rewards_t, valid_t)
            if should_stop is not None and should_stop(t + 1):
                break
        next_value = policy.act(self.obs, self.state).values
        return Rollout(storage.step, frames, next_value, episodes)


@torch.no_grad()
def run_episodes(
    envs: gym.vector.VectorEnv,
    policy: Policy,
    num_episodes: int,
    keys: list[str],
    seed: int | None = None,
    deterministic: bool = False,
    device: torch.device | str = "cpu",
    progress: Callable[[int], None] | None = None,
) -> list[dict[str, float]]:
    """Play until ``num_episodes`` episodes have finished; their stats (as ``collect`` reports).

    Each env plays at most ``ceil(num_episodes / num_envs)`` episodes, so short episodes are not
    over-represented (the rest of the envs keep stepping but are not counted). ``progress``, if
    given, is called with the number of episodes counted so far each time one more is.
    """
    n = envs.num_envs
    quota = -(-num_episodes // n)
    stepper = AutoresetStepper(envs, keys)
    obs = obs_to_tensors(stepper.reset(seed=seed), keys, device)
    state = policy.initial_state(n)
    finished = np.zeros(n, dtype=np.int64)
    returns, lengths = np.zeros(n), np.zeros(n, dtype=np.int64)
    episodes: list[dict[str, float]] = []
    while len(episodes) < num_episodes:
        actions, _, _, state = policy.act(obs, state, deterministic=deterministic)
        step = stepper.step(actions.cpu().numpy())
        done = step.terminated | step.truncated
        returns += step.rewards * step.valid
        lengths += step.valid
        for i in np.flatnonzero(done):
            if step.fault is not None and step.fault[i]:  # cut by a worker fault: no result
                returns[i], lengths[i] = 0.0, 0
                continue
            if finished[i] < quota and len(episodes) < num_episodes:
                stats = env_info(step.final_info, int(i))
                stats.update({"return": float(returns[i]), "length": float(lengths[i])})
                episodes.append(stats)
                if progress is not None:
                    progress(len(episodes))
            finished[i] += 1
            returns[i], lengths[i] = 0.0, 0
        obs = obs_to_tensors(step.obs, keys, device)
        starts = torch.as_tensor(~done & step.valid, dtype=torch.float32, device=device)
        state = mask_state(state, starts)
    return episodes
