"""Env groups: the episodes :func:`pixelrl.rl.text.rollout.play_episodes` plays together, in this
process (:class:`LocalGroup`) or in Ray actors (:class:`RayGroup`).

A group owns the envs; a domain gives one *player* per episode, which knows what the policy sees
and what an answer does (the group protocol itself is in :mod:`.rollout`)::

    player = make_player(env, obs, info)   # after the env's reset
    player.prompt()                        # -> the Prompt of the episode's current turn
    player.turn(env, completion)           # in this process: play the answer -> TurnResult
    player.action(completion)              # in Ray: the one env action the answer is ...
    player.observe(action, result)         # ... and what its step gave (obs, reward, ...)

A Ray group steps every env each turn (an episode already over plays the idle action, and is not
recorded) and drops an episode whose worker failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from pixelrl.config import Config, ConfigError
from pixelrl.rl.text.rollout import TurnResult
from pixelrl.rl.text.rows import Prompt


class Player(Protocol):
    """One episode's domain side (see the module doc)."""

    def prompt(self) -> Prompt: ...

    def turn(self, env, completion) -> TurnResult: ...


class LocalGroup:
    """``envs`` in this process, ``envs[i].reset(seed=seeds[i])``, one player each."""

    def __init__(self, envs: list, seeds: list[int], make_player: Callable[..., Player],
                 max_new_tokens: int, screen: tuple[int, int] | None = None) -> None:  # fmt: skip
        self.envs, self.n = envs, len(envs)
        self.max_new_tokens, self.screen = max_new_tokens, screen
        self.players = [make_player(env, *env.reset(seed=seed)) for env, seed in zip(envs, seeds)]

    def prompts(self, active: list[int]) -> list[Prompt]:
        return [self.players[i].prompt() for i in active]

    def step(self, completions: dict) -> dict[int, TurnResult | None]:
        return {i: self.players[i].turn(self.envs[i], c) for i, c in completions.items()}


class RayGroup(LocalGroup):
    """The same group in a ``RayVectorEnv`` (:func:`ray_envs`), every env reset with ``seed``."""

    def __init__(self, vector, seed: int, make_player: Callable[..., Player], idle_action: Any,
                 max_new_tokens: int, screen: tuple[int, int] | None = None) -> None:  # fmt: skip
        from pixelrl.envs.recording.wrapper import info_at, item_at

        self.vector, self.n, self.idle = vector, vector.num_envs, idle_action
        self.max_new_tokens, self.screen = max_new_tokens, screen
        batch, infos = vector.reset(seed=[seed] * self.n)
        self.players = [make_player(None, item_at(batch, i), info_at(infos, i))
                        for i in range(self.n)]  # fmt: skip

    def step(self, completions: dict) -> dict[int, TurnResult | None]:
        from pixelrl.envs.recording.wrapper import info_at, item_at

        actions = [self.idle] * self.n
        for i, completion in completions.items():
            actions[i] = self.players[i].action(completion)
        batch, rewards, terminated, truncated, infos = self.vector.step(actions)
        out: dict[int, TurnResult | None] = {}
        for i in completions:
            info = info_at(infos, i)
            info = info.get("final_info", info)  # at an episode's end: its last step's
            if info.get("env_fault"):
                out[i] = None
                continue
            action = self.idle if "action_error" in info else actions[i]  # refused: idle played
            result = (item_at(batch, i), rewards[i], terminated[i], truncated[i], info)
            out[i] = self.players[i].observe(action, result)
        return out


def check_envs(cfg: Config, group_size: int | None = None) -> None:
    """``envs`` settings no run can use, before any run folder or model exists."""
    if cfg.envs.backend not in ("sync", "ray"):
        raise ConfigError(f"envs.backend must be sync or ray, got {cfg.envs.backend!r}")
    per_worker = int(cfg.envs.per_worker)
    if per_worker < 1 or int(cfg.envs.num_workers) < 0:
        raise ConfigError("envs.per_worker must be >= 1 and envs.num_workers >= 0")
    if cfg.envs.backend == "ray" and group_size and group_size % per_worker:
        raise ConfigError(
            f"envs.per_worker={per_worker} must divide grpo.num_samples={group_size} "
            "(a group's envs fill whole workers)"
        )


def ray_envs(cfg: Config, env_id: str, kwargs: dict[str, Any], group_size: int, idle_action):
    """``group_size`` envs of ``env_id`` in Ray actors (``envs.per_worker`` each), for a
    :class:`RayGroup`; a refused action is played as ``idle_action``, as in this process."""
    from pixelrl.envs.remote import RayVectorEnv
    from pixelrl.rl.vector_envs import ray_options

    check_envs(cfg, group_size)
    per_worker = int(cfg.envs.per_worker)
    return RayVectorEnv(
        env_id,
        group_size // per_worker,
        per_worker,
        kwargs=kwargs,
        min_envs=group_size,  # a group is all of them
        refused_action=idle_action,
        **ray_options(cfg.envs),
    )
