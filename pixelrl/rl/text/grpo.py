"""One-step GRPO of a text policy: G answers to each prompt, verifiable rewards, group advantages.

items = adapter.prompts()                          # the training prompts (e.g. grounding)
for step in 1..grpo.steps:
    P items at random; G sampled answers each      # one batched generate
    r = adapter.rewards(item, answers)             # click-in-box, Gaussian, format ...
    A = (r - mean) / std within each item's group
    the clipped token-level update (+ k3 KL to the start when grpo.kl_coef > 0)
evaluate at 0, every eval.interval steps and at the end; save the model
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pixelrl.config import Config
from pixelrl.rl.text.adapter import TaskAdapter
from pixelrl.rl.text.policy import load_text_policy
from pixelrl.rl.text.rows import Prompt, Turn, prompt_columns
from pixelrl.rl.text.sft import due
from pixelrl.run_folder import Run


def one_step(
    policy,
    opt,
    lr: float,
    ref,
    prompts: Sequence[Prompt],
    rewards_of: Callable[[int, list[str]], Sequence[float]],
    gcfg,
    minibatch: int,
) -> dict[str, float]:
    """One GRPO step on ``prompts``: G samples of each, ``rewards_of(i, texts)`` for prompt i,
    group-normalised advantages and the update (``lr`` already set on ``opt``). Returns the
    step's statistics and speed (:func:`pixelrl.rl.grpo.throughput`)."""
    from pixelrl.rl.grpo import group_advantages, synced_clock, throughput, update_in_chunks

    G = gcfg.num_samples
    image = prompts[0].image
    screen = (image.shape[1], image.shape[0])
    policy.model.eval()
    t_sample = synced_clock(policy)
    groups = policy.generate(
        *prompt_columns(list(prompts)), num_samples=G, temperature=gcfg.temperature,
        max_new_tokens=gcfg.max_new_tokens, screen_size=screen,
    )  # fmt: skip
    t_update = synced_clock(policy)
    policy.model.train()
    rows, rewards = [], []
    for i, (prompt, samples) in enumerate(zip(prompts, groups)):
        rewards.extend(rewards_of(i, [s.text for s in samples]))
        rows.extend(Turn(prompt, s, 0.0) for s in samples)
    advantages = group_advantages(rewards, group_size=G, scale_by_std=gcfg.scale_by_std)
    stats = update_in_chunks(policy, opt, rows, advantages, ref, gcfg, minibatch)
    t_end = synced_clock(policy)
    parsed = float(np.mean([s.parsed for g in groups for s in g]))
    return {"reward": float(np.mean(rewards)), "format": parsed, "lr": lr, **stats,
            **throughput(groups, advantages, gcfg, t_update - t_sample, t_end - t_update)}  # fmt: skip


def _rewards_of(adapter, items: list, i: int, texts: list[str]):
    return adapter.rewards(items[i], texts)


def run_grpo(cfg: Config, adapter: TaskAdapter) -> dict[str, Any]:
    from tqdm import tqdm

    from pixelrl.rl.grpo import GRPOConfig, grpo_optimizer_for

    run = Run(cfg)
    policy = load_text_policy(cfg, adapter.codec(), adapter.corpus)
    gcfg = GRPOConfig.from_section(cfg.grpo.to_dict())
    ref = policy.frozen_copy() if gcfg.kl_coef else None
    items = adapter.prompts()
    evaluate = adapter.evaluator()
    opt, set_lr = grpo_optimizer_for(policy, cfg.grpo)
    rng = np.random.default_rng(int(cfg.seed))
    P, steps, interval = int(cfg.grpo.prompts_per_step), int(cfg.grpo.steps), int(cfg.eval.interval)
    evaluate.add(run, 0, policy)
    bar = tqdm(range(steps), desc=cfg.recipe.split("/")[-1], disable=not cfg.train.progress)
    for step in bar:
        chosen = [items[i] for i in rng.choice(len(items), P, replace=False)]
        prompts = [adapter.prompt(it) for it in chosen]
        rewards_of = functools.partial(_rewards_of, adapter, chosen)
        row = one_step(policy, opt, set_lr(step), ref, prompts, rewards_of, gcfg,
                       int(cfg.grpo.minibatch))  # fmt: skip
        run.history.append({"step": step + 1, **row})
        bar.set_postfix_str(f"reward={row['reward']:.3f} format={row['format']:.2f}", refresh=False)
        if due(step + 1, interval, steps):
            evaluate.add(run, step + 1, policy)
    adapter.save(policy, run.dir / "model")
    run.write(evaluate.measure)
    return {"run_dir": str(run.dir), "eval": run.evals}
