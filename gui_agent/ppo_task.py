"""The ``gui/ppo`` recipe's task module: desktop envs seen by the pixel pointer policy.

``make_envs`` builds ``env.num_envs`` copies of ``env.id`` (``pixelrl/Desktop-ClickButton-v0``...)
with ``env.kwargs``, each wrapped in :class:`~pixelrl.gui_agent.pointer_env.SplitSeeds` (training draws
even seeds, evaluation odd ones: held-out layouts) and :class:`~pixelrl.gui_agent.pointer_env.PointerEnv`.
``make_policy`` builds the :class:`~pixelrl.gui_agent.pointer_policy.PointerPolicy`;
``make_env_fn`` is one env's factory (the Ray backend's actors call it).

The ``policy:`` section of the recipe holds the spec the env and policy share (``image_size``,
``cell``, ``offsets``, ``kinds``, ``keys``, ``max_words``, ``buckets``), the network's options
(``backbone``, ``channels``, ``hidden``, ``text_encoder``...) and the warm start (``init``: a
checkpoint or state-dict file to start from; ``bc_steps`` > 0: behaviour cloning of the scripted
expert on ``bc_samples`` training-seed steps first, see :mod:`pixelrl.gui_agent.pointer_bc`). ``texts``
(what ``type`` can write) is the env's task vocabulary, each also with ``"\n"`` (type and
submit) unless ``submit_texts: false``; ``kinds: auto`` is ``click`` alone for families with
nothing to type, else ``click``, ``type``, ``key``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

import gymnasium as gym

from pixelrl.gui_agent.pointer_env import DEFAULT_KINDS, PointerEnv, PointerSpec, SplitSeeds

SPEC_KEYS = ("image_size", "cell", "offsets", "kinds", "keys", "max_words", "max_text_words",
             "subwords", "buckets", "texts", "submit_texts", "reader")  # fmt: skip
# Options of the behaviour-cloning warm start (pixelrl.gui_agent.pointer_bc), also in ``policy:``.
WARM_START_KEYS = ("init", "bc_samples", "bc_steps", "bc_batch_size", "bc_lr", "bc_reading",
                   "bc_named", "bc_each_target", "bc_click_margin", "bc_demos",
                   "bc_weigh_stops", "bc_workers", "bc_memory_dropout", "bc_threads", "bc_data",
                   "dagger_episodes", "dagger_steps", "dagger_lr")  # fmt: skip


def _plain(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


def env_kwargs(cfg, split: str) -> dict[str, Any]:
    kwargs = {k: _plain(v) for k, v in dict(cfg.env.kwargs).items()}
    if split == "eval":
        kwargs.update({k: _plain(v) for k, v in dict(cfg.env.eval_kwargs).items()})
    if "screen_size" in kwargs:
        kwargs["screen_size"] = tuple(kwargs["screen_size"])
    return kwargs


def _hashable(value: Any) -> Any:
    """``value`` as the cache key of :func:`_vocabulary`: mappings as sorted item tuples, lists as
    tuples (an option given as a list, even a misspelled one, then reaches the env, which names
    it, instead of failing as "unhashable type: 'list'")."""
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


@lru_cache(maxsize=32)
def _vocabulary(env_id: str, kwargs_items: tuple) -> tuple[str, ...]:
    import pixelrl.envs  # noqa: F401  (registers pixelrl/ ids)

    env = gym.make(env_id, **dict(kwargs_items))
    try:
        return tuple(getattr(env.unwrapped, "vocabulary", ()) or ())
    finally:
        env.close()


def pointer_spec(cfg) -> PointerSpec:
    """The :class:`PointerSpec` of a ``gui/ppo`` config (module doc)."""
    options = {k: _plain(v) for k, v in dict(cfg.policy).items() if k in SPEC_KEYS}
    submit = bool(options.pop("submit_texts", True))
    if "texts" not in options:
        kwargs = env_kwargs(cfg, "train")
        vocabulary = _vocabulary(cfg.env.id, _hashable(kwargs))
        # "word\n" types and presses enter (how the expert submits a field)
        options["texts"] = vocabulary + tuple(v + "\n" for v in vocabulary) * submit
    kinds = options.get("kinds", "auto")
    if kinds == "auto":  # keys and typing only where there is text to enter
        kinds = DEFAULT_KINDS if options["texts"] else ("click",)
    options["kinds"] = tuple(kinds)
    return PointerSpec.from_dict(options)


def make_env(env_id: str, spec: PointerSpec, split: str = "train", **kwargs: Any) -> PointerEnv:
    """One wrapped env (what each vector slot holds)."""
    import pixelrl.envs  # noqa: F401

    return PointerEnv(SplitSeeds(gym.make(env_id, **kwargs), split), spec)


def make_env_fn(cfg, split: str) -> Callable[[], PointerEnv]:
    """A picklable factory of one wrapped env: what each vector slot holds, here or in a Ray
    actor (``envs.backend=ray``)."""
    return partial(make_env, cfg.env.id, pointer_spec(cfg), split, **env_kwargs(cfg, split))


def make_envs(cfg, num_envs: int, seed: int, split: str) -> gym.vector.VectorEnv:
    env_fn = make_env_fn(cfg, split)
    return gym.vector.SyncVectorEnv(
        [env_fn] * num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )


def make_policy(
    cfg, observation_space: gym.spaces.Dict, action_space: gym.Space, warm_start: bool = True
):
    """The pointer policy; with ``warm_start`` its ``init`` weights and behaviour cloning,
    except when the run resumes (``train.resume``): the checkpoint's weights replace both."""
    from pixelrl.config import check_kwargs
    from pixelrl.gui_agent.pointer_policy import PointerPolicy

    if warm_start:  # gui/ppo's own warm start (gui/miniwob's passes False and runs its own)
        refuse_family_keys(cfg)
    skip = SPEC_KEYS + WARM_START_KEYS
    options = {k: _plain(v) for k, v in dict(cfg.policy).items() if k not in skip}
    kwargs = check_kwargs(PointerPolicy, options, "policy", also=skip, internal=("spec",))
    spec = pointer_spec(cfg)
    weigh_stops(cfg)  # wrong values are errors now, not after the demonstrations
    memory_dropout(cfg)
    bc_threads(cfg)
    policy = PointerPolicy.from_spaces(observation_space, action_space, spec, **kwargs)
    if warm_start and not cfg.train.get("resume"):
        _warm_start(cfg, policy, spec)
    return policy


# Warm-start keys only gui/miniwob reads (its oracle's samples file, its DAgger round)
FAMILY_WARM_START_KEYS = ("bc_data", "dagger_episodes", "dagger_steps", "dagger_lr")


def refuse_family_keys(cfg) -> None:
    """gui/ppo has no samples file and no DAgger round: a key of theirs is an error here, not
    a run that quietly leaves it out."""
    given = [k for k in FAMILY_WARM_START_KEYS if k in cfg.policy]
    if given:
        raise ValueError(
            f"policy.{given[0]} is gui/miniwob's (its oracle's samples, its DAgger round); "
            f"{cfg.get('recipe', 'this recipe')} has none"
        )


def bc_options(cfg) -> dict[str, Any]:
    """``pointer_bc.behaviour_clone``'s batch, learning rate and loss weights from ``cfg.policy``
    (the ``bc_*`` keys; its steps, seed and progress are the caller's)."""
    policy = cfg.policy
    return {
        "batch_size": int(policy.get("bc_batch_size", 32)),
        "lr": float(policy.get("bc_lr", 1e-3)),
        "reading": float(policy.get("bc_reading", 0.0)),
        "named": float(policy.get("bc_named", 0.0)),
        "each_target": float(policy.get("bc_each_target", 0.0)),
        "weigh_stops": weigh_stops(cfg),
        "memory_dropout": memory_dropout(cfg),
    }


def memory_dropout(cfg) -> float:
    """``policy.bc_memory_dropout`` (``pointer_bc.behaviour_clone``'s ``memory_dropout``), checked."""
    value = cfg.policy.get("bc_memory_dropout", 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"policy.bc_memory_dropout must be a number in [0, 1], got {value!r}")
    return float(value)


def bc_threads(cfg) -> int:
    """``policy.bc_threads``, checked: torch threads while cloning (0, the default: the thread
    policy with the waiting env workers' cores, :func:`pixelrl.threads.while_workers_wait`)."""
    value = cfg.policy.get("bc_threads", 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"policy.bc_threads must be a thread count >= 1, or 0 for the thread policy, "
            f"got {value!r}"
        )
    return value


def weigh_stops(cfg) -> bool:
    """``policy.bc_weigh_stops`` (``pointer_bc.behaviour_clone``'s ``weigh_stops``), checked."""
    value = cfg.policy.get("bc_weigh_stops", False)
    if not isinstance(value, bool):
        raise ValueError(f"policy.bc_weigh_stops must be true or false, got {value!r}")
    return value


def _warm_start(cfg, policy, spec: PointerSpec) -> None:
    load_init(cfg, policy)
    steps = int(cfg.policy.get("bc_steps", 0))
    if steps > 0:
        from pixelrl.gui_agent.pointer_bc import expert_samples
        from pixelrl.rl.budget import Budget

        stop = Budget.from_config(cfg.train).clock()  # the run's time limits bound cloning too
        env = make_env(cfg.env.id, spec, "train", **env_kwargs(cfg, "train"))
        data = expert_samples(
            env, int(cfg.policy.get("bc_samples", 3000)), int(cfg.seed),
            bool(cfg.train.progress), float(cfg.policy.get("bc_click_margin", 0.0)),
        )  # fmt: skip
        env.close()
        clone_expert(cfg, policy, data, stop)


def clone_expert(
    cfg, policy, data: dict, stop: Callable[[], str] | None = None,
    steps: int | None = None, lr: float | None = None,
) -> None:  # fmt: skip
    """The warm start's cloning (``pointer_bc.behaviour_clone``) of the expert samples ``data``
    for ``steps`` (``policy.bc_steps``) steps from learning rate ``lr`` (``policy.bc_lr``),
    until ``stop()`` says why (a time limit), then a zero value head. The env workers wait meanwhile, so their cores join the learner's
    (:func:`pixelrl.threads.while_workers_wait`; ``policy.bc_threads`` sets a count instead,
    and the run's config.yaml keeps the count used: a rerun clones bit for bit)."""
    from pixelrl.gui_agent.pointer_bc import behaviour_clone
    from pixelrl.threads import while_workers_wait

    progress = bool(cfg.train.progress)
    with while_workers_wait(bc_threads(cfg)) as threads:
        if threads is not None:
            cfg.policy.bc_threads = threads.count
            if progress:
                print(f"behaviour cloning: torch threads {threads}", flush=True)
        options = bc_options(cfg)
        if lr is not None:
            options["lr"] = lr
        behaviour_clone(
            policy, data, int(cfg.policy.bc_steps if steps is None else steps),
            seed=int(cfg.seed), progress=progress, stop=stop, **options,
        )  # fmt: skip
    zero_value_head(policy)


def load_init(cfg, policy) -> None:
    """Load ``policy.init`` (a pixelrl checkpoint or a plain state-dict file), if set."""
    import torch

    init = cfg.policy.get("init")
    if init:
        from pixelrl.checkpoint import load_checkpoint

        try:
            state = load_checkpoint(init)["policy"]
        except Exception:  # noqa: BLE001 - not a pixelrl checkpoint: a plain state dict file
            state = torch.load(init, map_location="cpu", weights_only=True)
        policy.load_state_dict(state)


def zero_value_head(policy) -> None:
    """After behaviour cloning: the critic starts at 0.

    BC trains no value head. At its random init it reads the trained trunk's large features
    (values of ~±5 against returns in [0, 1]); PPO's value gradients through the shared trunk
    then undo the cloned policy (issue 5: type-in-field 100% -> 59% in 40 updates)."""
    import torch

    torch.nn.init.zeros_(policy.value_head.weight)
    torch.nn.init.zeros_(policy.value_head.bias)
