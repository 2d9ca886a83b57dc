"""Training recipes for vision-language GUI policies: ``gui/sft``, ``gui/grounding-grpo``,
``gui/multiturn-grpo`` (``pixelrl train gui/... [key=value ...]``, ``--model NAME_OR_PATH``).

Every recipe loads a :class:`pixelrl.vision.vlm.VLMPolicy` (``model``: ``tiny-<family>``, a model folder
or a transformers name; ``init``: a folder saved by an earlier run, e.g. SFT before GRPO),
optionally wraps it with LoRA (``lora.enabled``), trains, evaluates on held-out seeds and writes
to ``train.output_dir``: ``model/`` (``save_pretrained`` of model and processor), ``history.csv``,
``eval.csv`` and ``learning_curve.png``.

- ``gui/sft``: behaviour cloning from recorded episodes (the recording format, :mod:`pixelrl.envs.recording`;
  ``data.dataset``, or, when empty, expert episodes of ``env.families`` recorded on the spot into
  ``<output_dir>/demos``). Loss: mean negative log-likelihood of the action text's tokens (the
  end token included) given the screenshot, instruction and previous actions.
- ``gui/grounding-grpo``: one-step grounding. Prompts are (screenshot, instruction) pairs from
  training seeds (:func:`pixelrl.gui_agent.grounding.grounding_set` with ``split="train"``); ``G =
  grpo.num_samples`` completions each; reward ``grpo.reward`` (:data:`GROUNDING_REWARDS`);
  group-normalised advantages, the clipped token-level surrogate, optional k3 KL to the frozen
  start (``grpo.kl_coef``). Unparsable text scores 0 format reward and trains like any sample.
- ``gui/multiturn-grpo``: groups of ``G`` episodes played from the same seed (sampled actions;
  unparsable text is a ``wait``), the env's (shaped) rewards per step; advantages are episode-level
  plus GiGPO step-level from anchor states (:func:`pixelrl.rl.grpo.gigpo_advantages`).

Evaluation: grounding accuracy (ScreenSpot) on the held-out grounding set for the one-step
recipes, task success on held-out seeds for the multi-turn one (``eval.*``).

MiniWoB++ (issue 26's second recipe): ``env.tasks`` names MiniWoB++ tasks instead of desktop
families (``env.id`` and ``env.families`` are then unused, ``env.kwargs`` holds the MiniWoB env's
options). ``gui/sft`` clones the MiniWoB++ oracle's episodes of every task (or ``data.dataset``,
e.g. the ``gui/miniwob`` recipe's ``policy.bc_demos`` folder), ``gui/multiturn-grpo`` plays its
groups on the tasks in turn, and success is evaluated per task on held-out seeds
(``gui_agent/configs/miniwob_vlm_sft.yaml``, ``miniwob_vlm_grpo.yaml``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.config import Config, ConfigError, load_config
from pixelrl.rl.grpo import RECIPE_DEFAULTS as GRPO_DEFAULTS
from pixelrl.run_folder import Run, recipe_config

DEFAULTS: dict[str, Any] = {
    "recipe": "",
    "seed": 1,
    "device": "cpu",
    "torch_threads": 0,
    "model": "tiny-qwen2_vl",
    "dtype": None,
    "text_size": {},  # tiny-<family> only: the language model's shape (pixelrl.vision.tiny_vlm.build_tiny_vlm)
    "vision_size": {},  # tiny-<family> but llava: the vision side (pixelrl.vision.tiny_vlm.build_tiny_vlm)
    # tiny-<family>: the BPE tokenizer's size, and how many training screens per family of
    # env.families whose instructions and element names join its corpus (a label is then one
    # token, not byte pieces); 0 screens: the generic action corpus only
    "tokenizer": {"vocab_size": 600, "screens": 0},
    "init": "",  # a model folder to start from (overrides model's weights)
    "action_format": "uitars",
    # how action text's numbers map to pixels (pixelrl.envs.coordinates: relative1000,
    # smart_resize:ui-tars-1.5, ...); "": the released model's own when known, else the defaults
    "coordinates": "",
    "lora": {"enabled": False, "r": 16, "alpha": 32, "dropout": 0.0},
    "env": {
        "id": "pixelrl/Desktop-ClickButton-v0",
        "families": ["click-button"],
        "screen_size": [320, 240],
        "max_steps": 0,  # 0: the env's default
        "reward": "shaped",
        "max_fields": 0,  # fill-form: only layouts with at most this many fields (0: any)
        # MiniWoB++ task names: the recipe runs on pixelrl/MiniWoB-<task>-v0 instead of env.id /
        # env.families, with env.kwargs as their options (screen_size and reward do not apply)
        "tasks": [],
        "kwargs": {},
    },
    "data": {
        "dataset": "",  # gui/sft: recorded episodes; "" records data.episodes expert ones (0: none)
        "episodes": 200,
        "prompts": 400,  # gui/grounding-grpo: training prompts
        # gui/sft: + a click on every uniquely named element of this many training screens per
        # family (pixelrl.envs.grounding.grounding_samples)
        "grounding_screens": 0,
    },
    "sft": {"steps": 200, "batch_size": 8, "lr": 1e-3, "weight_decay": 0.0},
    "grpo": {
        **GRPO_DEFAULTS,
        "prompts_per_step": 4,
        "max_new_tokens": 24,
        "reward": "click_gaussian",
        "sigma_scale": 0.5,  # the Gaussian's σ in box sizes (click_gaussian, gui_g2)
        "seeds_per_step": 2,
    },
    "eval": {"interval": 10, "grounding_items": 100, "episodes": 20},
    "train": {"output_dir": "", "progress": True},
    # Where envs run. sync: in this process; ray: in Ray actors (pixelrl.envs.remote), per_worker
    # each. gui/multiturn-grpo: a group's envs (num_samples / per_worker workers), kept for the
    # run; an episode whose worker fails leaves its group. gui/sft: the expert's episodes are
    # recorded from num_workers workers (0: 2) into the one dataset; one a fault cut is redone
    "envs": {
        "backend": "sync",
        "num_workers": 0,
        "per_worker": 1,
        "step_timeout": 60.0,
        "max_failures": 3,
        "address": "",
        "num_cpus": 0,
        "resources_per_worker": {},
    },
}


# -- rewards ------------------------------------------------------------------------------------
def click_gaussian_reward(texts, boxes, screen_size, sigma_scale: float = 0.5) -> np.ndarray:
    """``r = R_in_box + R_gauss + 0.5 · R_format`` ∈ [0, 2.5]: click-in-box, the GUI-G² Gaussian
    point reward (σ = ``sigma_scale`` × box size; ½ in GUI-G², larger gives a denser signal to a
    model that rarely lands near the box yet) and the format reward, all from
    :mod:`pixelrl.vision.rewards`."""
    from pixelrl.vision.rewards import (
        format_reward,
        gaussian_point_reward,
        parse_points,
        point_in_box,
    )

    points = parse_points(texts, screen_size)
    return (
        point_in_box(points, boxes)
        + gaussian_point_reward(points, boxes, sigma_scale)
        + 0.5 * format_reward(texts, screen_size)
    )


def _recipe(name: str):
    def fn(texts, boxes, screen_size, sigma_scale: float = 0.5):
        import pixelrl.vision.rewards as R

        extra = {"sigma_scale": sigma_scale} if name == "gui_g2_reward" else {}
        return getattr(R, name)(texts, boxes, screen_size=screen_size, **extra)

    return fn


GROUNDING_REWARDS = {
    "click_gaussian": click_gaussian_reward,
    "ui_r1": _recipe("ui_r1_reward"),
    "gui_r1": _recipe("gui_r1_reward"),
    "se_gui": _recipe("se_gui_reward"),
    "gui_g2": _recipe("gui_g2_reward"),
}


# -- set-up -------------------------------------------------------------------------------------
def config_for(recipe_config: str | Path, overrides=()) -> Config:
    cfg = load_config(recipe_config, list(overrides), DEFAULTS)
    if cfg.env.tasks:
        task_envs(cfg)  # an unknown MiniWoB++ task is a ConfigError before any run folder
    return cfg


def gui_codec(cfg: Config, source: str):
    """The GUI action codec of ``action_format`` and ``coordinates`` (or the model's own)."""
    from pixelrl.envs.gui_codec import GUIActionCodec

    try:
        return GUIActionCodec.for_model(source, cfg.action_format, cfg.coordinates or None)
    except ValueError as e:
        key = "coordinates" if cfg.coordinates else "action_format"
        raise ConfigError(f"{key}: {e}") from None


def load_policy(cfg: Config):
    """The :class:`VLMPolicy` a config names (``init`` folder first, else ``model``), with LoRA."""
    import torch

    from pixelrl.vision.vlm import load_vlm

    torch.manual_seed(int(cfg.seed))
    source = str(cfg.init or cfg.model)
    codec = gui_codec(cfg, source)
    extra = {}
    if source.startswith("tiny-"):
        for key in ("text_size", "vision_size"):
            if getattr(cfg, key):
                extra[key] = getattr(cfg, key).to_dict()
        extra["vocab_size"] = int(cfg.tokenizer.vocab_size)
        if int(cfg.tokenizer.screens):
            from pixelrl.vision.vlm import tiny_corpus

            texts = [t for _, obs, info in training_screens(cfg, int(cfg.tokenizer.screens))
                     for t in [obs["instruction"], *(e.get("name", "") for e in info["a11y"])]]  # fmt: skip
            extra["corpus"] = tiny_corpus(codec, int(cfg.seed)) + texts
    policy = load_vlm(
        source, codec, dtype=cfg.dtype, device=cfg.device, seed=int(cfg.seed), **extra
    )  # fmt: skip
    if cfg.lora.enabled:
        policy.add_lora(
            r=int(cfg.lora.r), alpha=int(cfg.lora.alpha), dropout=float(cfg.lora.dropout)
        )
    return policy


def _screen(cfg: Config) -> tuple[int, int]:
    return tuple(int(v) for v in cfg.env.screen_size)


def _env_kwargs(cfg: Config) -> dict[str, Any]:
    if cfg.env.tasks:  # MiniWoB++: its own options; the screen is the task's
        kwargs = cfg.env.kwargs.to_dict() if hasattr(cfg.env.kwargs, "to_dict") else {}
    else:
        kwargs = {"screen_size": _screen(cfg), "reward": cfg.env.reward}
    if int(cfg.env.max_steps):
        kwargs["max_steps"] = int(cfg.env.max_steps)
    return kwargs


def task_envs(cfg: Config) -> list[tuple[str, str]]:
    """(name, env id) of each task the recipe plays: ``env.tasks`` (MiniWoB++, checked against
    the registry) or the desktop's ``env.families``."""
    if cfg.env.tasks:
        from pixelrl.gui_agent.miniwob_task import env_id, tasks_of

        return [(task, env_id(task)) for task in tasks_of(cfg)]
    from pixelrl.envs.desktop.registration import env_id

    return [(family, env_id(family)) for family in cfg.env.families]


def _play_ids(cfg: Config) -> list[str]:
    """The env ids episodes are played on: each of ``env.tasks``, else ``env.id``."""
    return [eid for _, eid in task_envs(cfg)] if cfg.env.tasks else [str(cfg.env.id)]


def task_seeds(
    cfg: Config, env_id: str, split: str, count: int, rng=None, start: int = 0
) -> list[int]:
    """``count`` seeds of ``split`` (even: train, odd: eval) for ``env_id``: random ones from
    ``rng`` (counting up from the even ``start`` without it), keeping only layouts that
    ``env.max_fields`` allows — an easier fill-form (fewer fields) with the same train/eval
    split of seeds."""
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401

    parity = {"train": 0, "eval": 1}[split]
    limit = int(cfg.env.max_fields)
    probe = gym.make(env_id, **_env_kwargs(cfg)) if limit else None
    seeds: list[int] = []
    k = 0
    while len(seeds) < count:
        if probe is not None and k >= 200 * count and not seeds:  # no layout is that small
            probe.close()
            raise ConfigError(
                f"env.max_fields={limit}: no {env_id} layout in {k} seeds has so few fields"
            )
        seed = 2 * (int(rng.integers(0, 2**30)) if rng is not None else k) + parity + start
        k += 1
        if probe is not None:
            fields = probe.reset(seed=seed)[1]["task"].get("fields", {})
            if len(fields) > limit:
                continue
        seeds.append(seed)
    if probe is not None:
        probe.close()
    return seeds


def training_screens(cfg: Config, per_family: int):
    """``(family, obs, info)`` of the first screen of ``per_family`` training seeds of each of
    ``env.families`` — the seeds :func:`record_expert_episodes` starts from, continued."""
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401

    for fi, (family, eid) in enumerate(task_envs(cfg)):
        env = gym.make(eid, **_env_kwargs(cfg))
        for seed in task_seeds(cfg, eid, "train", per_family, start=20_000 * fi):
            obs, info = env.reset(seed=seed)
            yield family, obs, info
        env.close()


def _grounding_eval(policy, cfg: Config, items) -> dict[str, float]:
    from pixelrl.gui_agent.agents import VLMAgent
    from pixelrl.gui_agent.evaluate import evaluate_grounding

    was_training = policy.model.training
    rows = evaluate_grounding(VLMAgent(policy, int(cfg.grpo.max_new_tokens)), items, progress=False)
    policy.model.train(was_training)
    overall = rows[-1]
    per_family = {r["family"]: r["accuracy"] for r in rows[:-1]} if len(rows) > 1 else {}
    return {**{k: overall[k] for k in ("accuracy", "ci_low", "ci_high", "n")}, **per_family}


def _success_eval(policy, cfg: Config) -> dict[str, float]:
    from pixelrl.gui_agent.agents import VLMAgent
    from pixelrl.gui_agent.evaluate import evaluate_success
    from pixelrl.stats import wilson_interval

    was_training = policy.model.training
    agent = VLMAgent(policy, int(cfg.grpo.max_new_tokens))
    out, successes, returns = {}, [], []
    for name, eid in task_envs(cfg) if cfg.env.tasks else [("", str(cfg.env.id))]:
        seeds = None
        if int(cfg.env.max_fields):
            rng = np.random.default_rng(int(cfg.seed))
            seeds = task_seeds(cfg, eid, "eval", int(cfg.eval.episodes), rng)
        overall = evaluate_success(
            agent, eid, int(cfg.eval.episodes), int(cfg.seed), _env_kwargs(cfg),
            progress=False, seeds=seeds,
        )[-1]  # fmt: skip
        if name:  # several tasks: each one's rate, then all episodes pooled
            out[name] = overall["success"]
        successes += [overall["success"]] * int(overall["n"])
        returns += [overall["return"]] * int(overall["n"])
    policy.model.train(was_training)
    n = len(successes)
    low, high = wilson_interval(round(sum(successes)), n)
    return {"success": float(np.mean(successes)), "ci_low": low, "ci_high": high,
            "return": float(np.mean(returns)), "n": n, **out}  # fmt: skip


def _eval(policy, cfg: Config, items) -> dict[str, float]:
    return _grounding_eval(policy, cfg, items) if items is not None else _success_eval(policy, cfg)


def _held_out(cfg: Config):
    """The held-out grounding set for one-step recipes (None for the multi-turn one)."""
    if cfg.recipe == "gui/multiturn-grpo" or not int(cfg.eval.grounding_items) or cfg.env.tasks:
        return None  # MiniWoB++ (env.tasks): task success; the grounding set is the desktop's
    from pixelrl.gui_agent.grounding import grounding_set

    return grounding_set(int(cfg.eval.grounding_items), tuple(cfg.env.families), _screen(cfg))


# -- SFT ----------------------------------------------------------------------------------------
def record_expert_episodes(cfg: Config, root: Path) -> Path:
    """Record ``data.episodes`` expert episodes of ``env.families`` (training seeds) into ``root``."""
    import gymnasium as gym
    from tqdm import tqdm

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.recording import RecordEpisodes

    tasks = task_envs(cfg)
    per_family = -(-int(cfg.data.episodes) // len(tasks))
    for fi, (family, eid) in enumerate(tasks):
        # even seeds (training), from 20,000·fi up, that env.max_fields allows
        seeds = task_seeds(cfg, eid, "train", per_family, start=20_000 * fi)
        if cfg.envs.backend == "ray":
            _record_expert_on_ray(cfg, eid, seeds, root / family)
            continue
        env = RecordEpisodes(gym.make(eid, **_env_kwargs(cfg)), root / family)
        for seed in tqdm(seeds, desc=f"expert {family}", disable=not cfg.train.progress):
            obs, info = env.reset(seed=seed)
            done = False
            while not done:
                obs, _, terminated, truncated, info = env.step(env.unwrapped.expert_action())
                done = terminated or truncated
        env.close()
    return root


def _record_expert_on_ray(cfg: Config, env_id: str, seeds: list[int], root: Path) -> None:
    """The expert's episodes of ``seeds`` played in ``envs.num_workers`` Ray workers (0: 2) and
    recorded here into the one dataset at ``root`` (:mod:`pixelrl.envs.recording.remote`)."""
    from tqdm import tqdm

    from pixelrl.envs.recording.remote import expert_actions, record_in_ray
    from pixelrl.train import ray_options

    opts = cfg.envs
    with tqdm(
        total=len(seeds), desc=f"expert {root.name} (ray)", disable=not cfg.train.progress
    ) as bar:
        record_in_ray(
            env_id,
            _env_kwargs(cfg),
            seeds,
            root,
            expert_actions,
            num_workers=int(opts.num_workers) or 2,
            per_worker=int(opts.per_worker),
            progress=lambda k: bar.update(k - bar.n),
            **ray_options(opts),
        )


def sft_examples(roots: list[Path], policy) -> list[dict[str, Any]]:
    """Every step of the recorded episodes as (screenshot, instruction, history, target text)."""
    from pixelrl.envs.recording import EpisodeDataset
    from pixelrl.envs.recording.codec import action_as_gui

    examples = []
    for root in roots:
        data = EpisodeDataset(root)
        screen = data.screen_size
        for e in data.episodes:
            rows = data.steps(e)
            history = []
            for t, text in enumerate(rows["action"]):
                action = action_as_gui(str(text), screen)
                if action is None:
                    continue
                target = policy.action_text(action, screen)
                examples.append({
                    "screenshot": data.frame(e, t),
                    "instruction": str(rows["instruction"].iloc[t]),
                    "history": list(history),
                    "target": target,
                })  # fmt: skip
                history.append(target)
    if not examples:
        raise ValueError(f"no usable steps in {[str(r) for r in roots]}")
    return examples


def grounding_examples(cfg: Config, policy) -> list[dict[str, Any]]:
    """SFT examples that point at every uniquely named element (``Click the "Stop" button.``) of
    ``data.grounding_screens`` training screens per family: many instructions per screen, so
    the model must read the instruction to know where to click."""
    from pixelrl.envs.actions import Action
    from pixelrl.envs.grounding import grounding_samples
    from pixelrl.envs.gui import bbox_center

    screen = _screen(cfg)
    examples = []
    for _, obs, info in training_screens(cfg, int(cfg.data.grounding_screens)):
        for sample in grounding_samples(info["a11y"], screen):
            target = policy.action_text(Action.click(*bbox_center(sample.bbox)), screen)
            examples.append({"screenshot": obs["screenshot"], "instruction": sample.instruction,
                             "history": [], "target": target})  # fmt: skip
    return examples


def _dataset_roots(cfg: Config, run: Run) -> list[Path]:
    if cfg.data.dataset:
        root = Path(cfg.data.dataset)
        if not root.exists():
            raise ConfigError(f"data.dataset: no such folder {root}")
        subs = [p for p in sorted(root.iterdir()) if (p / "meta" / "info.json").is_file()]
        return subs or [root]
    if not int(cfg.data.episodes):  # grounding samples only (data.grounding_screens)
        return []
    record_expert_episodes(cfg, run.dir / "demos")
    return [run.dir / "demos" / name for name, _ in task_envs(cfg)]


def run_sft(cfg: Config) -> dict[str, Any]:
    from pixelrl.rl.sft import sft_loop

    _check_envs(cfg)  # before any run folder or model
    run = Run(cfg)
    policy = load_policy(cfg)
    roots = _dataset_roots(cfg, run)
    examples = sft_examples(roots, policy) if roots else []
    if int(cfg.data.grounding_screens):
        examples += grounding_examples(cfg, policy)
    if not examples:
        raise ConfigError(
            "gui/sft has nothing to learn from: data.episodes and data.grounding_screens are 0"
        )
    items = _held_out(cfg)
    measure = "accuracy" if items is not None else "success"
    run.add_eval(0, _eval(policy, cfg, items))
    steps, interval = int(cfg.sft.steps), int(cfg.eval.interval)

    def after_step(step: int, loss: float) -> None:
        run.history.append({"step": step, "loss": loss})
        if interval and step % interval == 0 and step < steps:
            run.add_eval(step, _eval(policy, cfg, items))

    sft_loop(policy, examples, steps, int(cfg.sft.batch_size), float(cfg.sft.lr),
             float(cfg.sft.weight_decay), int(cfg.seed), "sft", bool(cfg.train.progress),
             after_step)  # fmt: skip
    run.add_eval(steps, _eval(policy, cfg, items))
    policy.save(run.dir / "model")
    run.write(measure)
    return {"run_dir": str(run.dir), "examples": len(examples), "eval": run.evals}


# -- grounding GRPO -----------------------------------------------------------------------------
def grounding_grpo_step(
    policy,
    opt,
    lr: float,
    ref,
    prompts,
    gcfg,
    reward_fn,
    screen,
    sigma_scale: float,
    minibatch: int,
) -> dict[str, float]:
    """One step of ``gui/grounding-grpo`` on ``prompts`` (:class:`GroundingItem`\\ s): G samples
    of each, the reward, group-normalised advantages and the update (``lr`` already set on
    ``opt``). Returns the step's statistics and speed (:func:`pixelrl.rl.grpo.throughput`);
    ``bench/grpo_vs_trl.py`` times this same function against TRL's ``GRPOTrainer``."""
    from pixelrl.rl.grpo import group_advantages, synced_clock, throughput, update_in_chunks

    G = gcfg.num_samples
    policy.model.eval()
    t_sample = synced_clock(policy)
    groups = policy.generate(
        [p.screenshot for p in prompts], [p.instruction for p in prompts], [[] for _ in prompts],
        num_samples=G, temperature=gcfg.temperature, max_new_tokens=gcfg.max_new_tokens,
        screen_size=screen,
    )  # fmt: skip
    t_update = synced_clock(policy)
    policy.model.train()
    rows, rewards = [], []
    for prompt, samples in zip(prompts, groups):
        texts = [s.text for s in samples]
        rewards.extend(reward_fn(texts, [prompt.bbox] * len(samples), screen, sigma_scale))
        rows.extend({"screenshot": prompt.screenshot, "instruction": prompt.instruction,
                     "history": [], "completion": s} for s in samples)  # fmt: skip
    advantages = group_advantages(rewards, group_size=G, scale_by_std=gcfg.scale_by_std)
    stats = update_in_chunks(policy, opt, rows, advantages, ref, gcfg, minibatch)
    t_end = synced_clock(policy)
    parsed = float(np.mean([s.parsed for g in groups for s in g]))
    return {"reward": float(np.mean(rewards)), "format": parsed, "lr": lr, **stats,
            **throughput(groups, advantages, gcfg, t_update - t_sample, t_end - t_update)}  # fmt: skip


def run_grounding_grpo(cfg: Config) -> dict[str, Any]:
    from tqdm import tqdm

    from pixelrl.gui_agent.grounding import grounding_set
    from pixelrl.rl.grpo import GRPOConfig, grpo_optimizer_for

    if cfg.grpo.reward not in GROUNDING_REWARDS:
        raise ConfigError(
            f"grpo.reward: {cfg.grpo.reward!r}; known: {', '.join(GROUNDING_REWARDS)}"
        )
    run = Run(cfg)
    policy = load_policy(cfg)
    gcfg = GRPOConfig.from_section(cfg.grpo.to_dict())
    ref = policy.frozen_copy() if gcfg.kl_coef else None
    screen = _screen(cfg)
    train_items = grounding_set(
        int(cfg.data.prompts), tuple(cfg.env.families), screen, split="train"
    )
    items = _held_out(cfg)
    reward_fn = GROUNDING_REWARDS[cfg.grpo.reward]
    opt, set_lr = grpo_optimizer_for(policy, cfg.grpo)
    rng = np.random.default_rng(int(cfg.seed))
    P = int(cfg.grpo.prompts_per_step)
    run.add_eval(0, _grounding_eval(policy, cfg, items))
    steps = int(cfg.grpo.steps)
    bar = tqdm(range(steps), desc="grounding-grpo", disable=not cfg.train.progress)
    for step in bar:
        prompts = [train_items[i] for i in rng.choice(len(train_items), P, replace=False)]
        row = grounding_grpo_step(policy, opt, set_lr(step), ref, prompts, gcfg, reward_fn,
                                  screen, float(cfg.grpo.sigma_scale), int(cfg.grpo.minibatch))  # fmt: skip
        row = {"step": step + 1, **row}
        run.history.append(row)
        bar.set_postfix_str(f"reward={row['reward']:.3f} format={row['format']:.2f}", refresh=False)
        if int(cfg.eval.interval) and (step + 1) % int(cfg.eval.interval) == 0 and step + 1 < steps:
            run.add_eval(step + 1, _grounding_eval(policy, cfg, items))
    run.add_eval(steps, _grounding_eval(policy, cfg, items))
    policy.save(run.dir / "model")
    run.write("accuracy")
    return {"run_dir": str(run.dir), "eval": run.evals}


# -- multi-turn GRPO ----------------------------------------------------------------------------
def play_group(
    policy,
    cfg: Config,
    seed: int,
    group_size: int,
    gcfg,
    env_id: str | None = None,
    envs=None,
) -> list[list[dict]]:
    """``group_size`` episodes of ``env_id`` (default ``env.id``) from the same seed, played
    together (one batched generate per turn); each a list of steps with the prompt, the sampled
    completion and the reward. ``envs``: a ``RayVectorEnv`` of ``group_size`` such envs to play
    them in (:func:`group_envs`) instead of envs made here; an episode whose worker failed
    (``info["env_fault"]``) is left out of the list."""
    if envs is not None:
        return _play_group_on(envs, policy, seed, gcfg)
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.actions import Action, ActionError

    env_list = [gym.make(env_id or cfg.env.id, **_env_kwargs(cfg)) for _ in range(group_size)]
    screen = tuple(env_list[0].unwrapped.screen_size)
    obs = [e.reset(seed=seed)[0] for e in env_list]
    episodes: list[list[dict]] = [[] for _ in env_list]
    histories: list[list[str]] = [[] for _ in env_list]
    active = list(range(group_size))
    while active:
        samples = _next_turn(policy, obs, histories, active, gcfg, screen)
        still = []
        for i, sample in zip(active, samples):
            completion = sample[0]
            action = completion.action  # unparsable text -> wait (parsed False)
            try:
                next_obs, reward, terminated, truncated, info = env_list[i].step(action)
            except ActionError:
                action = Action.wait()
                next_obs, reward, terminated, truncated, info = env_list[i].step(action)
            episodes[i].append(_turn(obs[i], histories[i], completion, reward, info))
            histories[i].append(policy.action_text(action, screen))
            obs[i] = next_obs
            if not (terminated or truncated):
                still.append(i)
        active = still
    for e in env_list:
        e.close()
    return episodes


def _next_turn(policy, obs, histories, active, gcfg, screen) -> list:
    """One sampled answer for each active episode of a group (one batched generate)."""
    return policy.generate(
        [obs[i]["screenshot"] for i in active], [obs[i]["instruction"] for i in active],
        [histories[i] for i in active], num_samples=1, temperature=gcfg.temperature,
        max_new_tokens=gcfg.max_new_tokens, screen_size=screen,
    )  # fmt: skip


def _turn(obs: dict, history: list, completion, reward: float, info: dict) -> dict:
    """A played turn as the update reads it: the prompt, the answer, the reward, the anchor."""
    from pixelrl.rl.grpo import anchor_key

    return {
        "screenshot": obs["screenshot"], "instruction": obs["instruction"],
        "history": list(history), "completion": completion, "reward": float(reward),
        "key": anchor_key({"screenshot": obs["screenshot"], "instruction": obs["instruction"]}),
        "success": bool(info.get("success", False)),
    }  # fmt: skip


def _check_envs(cfg: Config, group_size: int | None = None) -> None:
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


def group_envs(cfg: Config, env_id: str, group_size: int):
    """``group_size`` envs of ``env_id`` in Ray actors (``envs.per_worker`` each), for
    :func:`play_group`; a refused action is played as a ``wait``, as in this process."""
    from pixelrl.envs.actions import Action
    from pixelrl.envs.remote import RayVectorEnv
    from pixelrl.train import ray_options

    _check_envs(cfg, group_size)
    per_worker = int(cfg.envs.per_worker)
    return RayVectorEnv(
        env_id,
        group_size // per_worker,
        per_worker,
        kwargs=_env_kwargs(cfg),
        min_envs=group_size,  # a group is all of them
        refused_action=Action.wait(),
        **ray_options(cfg.envs),
    )


def _play_group_on(envs, policy, seed: int, gcfg) -> list[list[dict]]:
    """:func:`play_group` in a ``RayVectorEnv``: every env reset with ``seed``, all stepped
    each turn (an episode already over plays ``wait`` in its next one, and is not recorded)."""
    from pixelrl.envs.actions import Action
    from pixelrl.envs.recording.wrapper import info_at, item_at

    n = envs.num_envs
    screen = tuple(envs.get_attr("screen_size")[0])
    batch, _ = envs.reset(seed=[seed] * n)
    obs = [item_at(batch, i) for i in range(n)]
    episodes: list[list[dict]] = [[] for _ in range(n)]
    histories: list[list[str]] = [[] for _ in range(n)]
    faulted: set[int] = set()
    active = list(range(n))
    while active:
        samples = _next_turn(policy, obs, histories, active, gcfg, screen)
        actions = [Action.wait()] * n
        for i, sample in zip(active, samples):
            actions[i] = sample[0].action  # unparsable text -> wait (parsed False)
        batch, rewards, terminated, truncated, infos = envs.step(actions)
        still = []
        for i, sample in zip(active, samples):
            info = info_at(infos, i)
            info = info.get("final_info", info)  # at an episode's end: its last step's
            if info.get("env_fault"):  # the step never happened: the episode leaves the group
                faulted.add(i)
                continue
            action = Action.wait() if "action_error" in info else actions[i]
            episodes[i].append(_turn(obs[i], histories[i], sample[0], rewards[i], info))
            histories[i].append(policy.action_text(action, screen))
            obs[i] = item_at(batch, i)
            if not (terminated[i] or truncated[i]):
                still.append(i)
        active = still
    return [ep for i, ep in enumerate(episodes) if i not in faulted]


def run_multiturn_grpo(cfg: Config) -> dict[str, Any]:
    from pixelrl.rl.grpo import GRPOConfig, grpo_optimizer_for

    gcfg = GRPOConfig.from_section(cfg.grpo.to_dict())
    _check_envs(cfg, gcfg.num_samples)  # before any run folder or model
    run = Run(cfg)
    policy = load_policy(cfg)
    ref = policy.frozen_copy() if gcfg.kl_coef else None
    opt, set_lr = grpo_optimizer_for(policy, cfg.grpo)
    rng = np.random.default_rng(int(cfg.seed))
    run.add_eval(0, _success_eval(policy, cfg))
    steps, ids = int(cfg.grpo.steps), _play_ids(cfg)
    pools: dict[str, Any] = {}  # envs.backend=ray: each task's group of envs, kept for the run
    try:
        _multiturn_steps(cfg, run, policy, gcfg, ref, opt, set_lr, rng, steps, ids, pools)
    finally:
        for envs in pools.values():
            envs.close()
    run.add_eval(steps, _success_eval(policy, cfg))
    policy.save(run.dir / "model")
    run.write("success")
    return {"run_dir": str(run.dir), "eval": run.evals}


def _multiturn_steps(cfg, run, policy, gcfg, ref, opt, set_lr, rng, steps, ids, pools) -> None:
    """:func:`run_multiturn_grpo`'s loop: play groups, GiGPO advantages, update."""
    from tqdm import tqdm

    from pixelrl.rl.grpo import gigpo_advantages, update_in_chunks

    bar = tqdm(range(steps), desc="multiturn-grpo", disable=not cfg.train.progress)
    for step in bar:
        policy.model.eval()
        episodes, groups = [], []
        for k in range(int(cfg.grpo.seeds_per_step)):  # env.tasks: the tasks in turn
            eid = ids[(step * int(cfg.grpo.seeds_per_step) + k) % len(ids)]
            seed = task_seeds(cfg, eid, "train", 1, rng)[0]
            envs = None
            if cfg.envs.backend == "ray":
                if eid not in pools:
                    pools[eid] = group_envs(cfg, eid, gcfg.num_samples)
                envs = pools[eid]
            played = play_group(policy, cfg, seed, gcfg.num_samples, gcfg, eid, envs)
            episodes += played
            groups += [(eid, seed)] * len(played)
        policy.model.train()
        adv = gigpo_advantages(
            [[s["reward"] for s in ep] for ep in episodes], groups,
            [[s["key"] for s in ep] for ep in episodes], gamma=gcfg.gamma,
            step_weight=gcfg.step_weight, scale_by_std=gcfg.scale_by_std,
        )  # fmt: skip
        rows = [s for ep in episodes for s in ep]
        lr = set_lr(step)
        stats = update_in_chunks(
            policy, opt, rows, adv.advantages, ref, gcfg, int(cfg.grpo.minibatch)
        )
        success = float(np.mean([ep[-1]["success"] for ep in episodes]))
        ret = float(np.mean([sum(s["reward"] for s in ep) for ep in episodes]))
        parsed = float(np.mean([s["completion"].parsed for s in rows]))
        row = {"step": step + 1, "reward": ret, "success": success, "format": parsed,
               "steps": len(rows), "lr": lr, **stats}  # fmt: skip
        if pools:  # worker faults so far, counted since the start
            row["env_faults"] = sum(e.faults for e in pools.values())
        run.history.append(row)
        bar.set_postfix_str(f"return={ret:.2f} success={success:.2f}", refresh=False)
        if int(cfg.eval.interval) and (step + 1) % int(cfg.eval.interval) == 0 and step + 1 < steps:
            run.add_eval(step + 1, _success_eval(policy, cfg))


RUNNERS = {
    "gui/sft": run_sft,
    "gui/grounding-grpo": run_grounding_grpo,
    "gui/multiturn-grpo": run_multiturn_grpo,
}


def train(cfg: Config) -> dict[str, Any]:
    """Run the recipe ``cfg.recipe`` names."""
    import torch

    if cfg.recipe not in RUNNERS:
        raise ConfigError(f"recipe {cfg.recipe!r} is not a VLM recipe ({', '.join(RUNNERS)})")
    if int(cfg.torch_threads):
        torch.set_num_threads(int(cfg.torch_threads))
    return RUNNERS[cfg.recipe](cfg)


def run_recipe(
    name: str,
    overrides=(),
    model: str | None = None,
    print_config: bool = False,
    config: str | Path | None = None,
) -> dict[str, Any] | None:
    """``pixelrl train gui/...`` for the VLM recipes: config (the recipe's own, or the YAML file
    ``config`` that names this recipe), ``--model``, run, print a summary."""
    cfg = recipe_config(name, overrides, model, print_config, config, config_for)
    if cfg is None:
        return None
    result = train(cfg)
    measure = "accuracy" if "accuracy" in result["eval"][-1] else "success"
    print(f"\nrun folder: {result['run_dir']}")
    print(f"{'step':>6}{'held-out ' + measure:>22}{'95% CI':>16}{'n':>6}{'cpu s':>9}{'wall s':>9}")
    for row in result["eval"]:
        ci = f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
        print(f"{row['step']:>6}{row[measure]:>22.3f}{ci:>16}{row['n']:>6}"
              f"{row['cpu_s']:>9.0f}{row['wall_s']:>9.0f}")  # fmt: skip
    return result
