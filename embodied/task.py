"""The embodied recipes' task module (``pixelrl.recipes``): navigation envs and the policy.

``make_envs`` builds ``env.num_envs`` copies of ``env.id`` (``pixelrl/PointNav-v0`` or
``pixelrl/ObjectNav-v0``) with ``env.kwargs`` -- the navigation options of ``pixelrl.envs.nav``
(sensors, resolution, scenes, ...). Evaluation (``split="eval"``) applies ``env.eval_kwargs`` on
top, which in the recipes selects held-out procedural scenes (another ``scene_seed``) or an
episode dataset. The embedded simulator runs as ``pixelrl.envs.nav``'s batched ``NavVectorEnv`` (one
shared simulator, one renderer call renders every env); other backends (habitat-sim) as a
``SyncVectorEnv`` that resets finished envs in the same step.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium as gym

from pixelrl.config import Config, check_kwargs


def env_kwargs(cfg: Config, split: str) -> dict[str, Any]:
    """The navigation options for ``split`` (``"train"``, ``"eval"`` or ``"val"``), each key
    checked.

    ``env.eval_kwargs`` (``"eval"``; ``env.val_kwargs`` for ``"val"``, the validation scenes of
    the VLM recipes) overrides ``env.kwargs`` key by key, and inside dict options
    (``apartment``, ``episode_rules``) also key by key: ``episode_rules: {geodesic: exact}``
    keeps the training rules' distances.
    """
    from pixelrl.envs.nav.config import NavConfig

    plain = {k: (v.to_dict() if isinstance(v, Config) else v) for k, v in cfg.env.kwargs.items()}
    kwargs = check_kwargs(NavConfig, plain, "env.kwargs")
    if split in ("eval", "val"):
        section = f"{split}_kwargs"
        extra = {
            k: (v.to_dict() if isinstance(v, Config) else v) for k, v in cfg.env[section].items()
        }
        for key, value in check_kwargs(NavConfig, extra, f"env.{section}").items():
            base = kwargs.get(key)
            merge = isinstance(value, dict) and isinstance(base, dict)
            kwargs[key] = {**base, **value} if merge else value
    return kwargs


def make_vector_env(
    env_id: str, num_envs: int, seed: int | None = None, **kwargs: Any
) -> gym.vector.VectorEnv:
    """``num_envs`` navigation envs as one vector env (native batched one when available)."""
    import pixelrl.envs  # noqa: F401  (registers the pixelrl/ ids)
    import pixelrl.envs.nav.registration  # noqa: F401  (in case envs/__init__ does not import it yet)

    native = _native_vector_env(env_id, num_envs, kwargs)
    if native is not None:
        return native
    return gym.vector.SyncVectorEnv(
        [lambda: gym.make(env_id, **kwargs) for _ in range(num_envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )


def _native_vector_env(
    env_id: str, num_envs: int, kwargs: dict[str, Any]
) -> gym.vector.VectorEnv | None:
    """``pixelrl.envs.nav``'s batched ``NavVectorEnv`` (one shared simulator, one renderer call a step).

    Finished agents start their next episode in the same step (``SAME_STEP``), so every step
    the collector stores is a real transition (``pixelrl.rl.collect``).
    """
    task = {"pixelrl/PointNav-v0": "pointnav", "pixelrl/ObjectNav-v0": "objectnav"}.get(env_id)
    if task is None or kwargs.get("backend", "embedded") != "embedded":
        return None
    try:
        from pixelrl.envs.nav.vector_env import NavVectorEnv
    except ImportError:
        return None
    return NavVectorEnv(
        num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP, task=task, **kwargs
    )


def make_env_fn(cfg: Config, split: str) -> Callable[[], gym.Env]:
    """A picklable factory of one navigation env (``envs.backend=ray``: each actor calls it)."""
    from pixelrl.envs.remote import make_registered

    return partial(make_registered, cfg.env.id, env_kwargs(cfg, split))


def make_envs(cfg: Config, num_envs: int, seed: int, split: str) -> gym.vector.VectorEnv:
    return make_vector_env(cfg.env.id, num_envs, seed, **env_kwargs(cfg, split))


def make_teacher(cfg: Config, envs: gym.vector.VectorEnv):
    """The imitation warm start's teacher: the shortest-path follower of each training agent."""
    from pixelrl.embodied.agents import FollowerTeacher
    from pixelrl.envs.nav.vector_env import NavVectorEnv

    if not isinstance(getattr(envs, "unwrapped", envs), NavVectorEnv):
        raise ValueError(
            "imitation needs the embedded simulator's NavVectorEnv (backend='embedded')"
        )
    return FollowerTeacher(envs)


def make_policy(cfg: Config, observation_space: gym.spaces.Dict, action_space: gym.Space):
    from pixelrl.embodied.policy import PointNavResNetPolicy

    kwargs = check_kwargs(PointNavResNetPolicy, cfg.policy, "policy")
    return PointNavResNetPolicy(observation_space, action_space, **kwargs)
