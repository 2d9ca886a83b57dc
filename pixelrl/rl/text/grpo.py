"""One-step GRPO of a text policy: G answers to each prompt, verifiable rewards, group advantages.

items = adapter.prompts()                          # the training prompts (e.g. grounding)
for step in 1..grpo.steps:
    P items at random; G sampled answers each      # one batched generate
    r = adapter.rewards(item, answers)             # click-in-box, Gaussian, format ...
    A = (r - mean) / std within each item's group
    the clipped token-level update (+ k3 KL to the start when grpo.kl_coef > 0)
evaluate at 0, every eval.interval steps and at the end; save the model

Under torchrun (:mod:`.parallel`) every rank draws the same P items and samples, scores and
learns from its P / W of them (whole groups: the advantages are the one-process ones).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pixelrl.config import Config
from pixelrl.rl.text.adapter import TaskAdapter
from pixelrl.rl.text.parallel import Parallel
from pixelrl.rl.text.policy import load_text_policy
from pixelrl.rl.text.rows import Prompt, Turn, prompt_columns
from pixelrl.rl.text.sft import due


def one_step(
    policy,
    opt,
    lr: float,
    ref,
    prompts: Sequence[Prompt],
    rewards_of: Callable[[int, list[str]], Sequence[float]],
    gcfg,
    minibatch: int,
    sync=None,
) -> dict[str, float]:
    """One GRPO step on ``prompts``: G samples of each, ``rewards_of(i, texts)`` for prompt i,
    group-normalised advantages and the update (``lr`` already set on ``opt``). Returns the
    step's statistics and speed (:func:`pixelrl.rl.grpo.throughput`). ``sync``: under torchrun
    (:func:`pixelrl.rl.grpo.update_in_chunks`)."""
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
    stats = update_in_chunks(policy, opt, rows, advantages, ref, gcfg, minibatch, sync)
    t_end = synced_clock(policy)
    parsed = float(np.mean([s.parsed for g in groups for s in g]))
    return {"reward": float(np.mean(rewards)), "format": parsed, "lr": lr, **stats,
            **throughput(groups, advantages, gcfg, t_update - t_sample, t_end - t_update)}  # fmt: skip


def _rewards_of(adapter, items: list, i: int, texts: list[str]):
    return adapter.rewards(items[i], texts)


def run_grpo(cfg: Config, adapter: TaskAdapter) -> dict[str, Any]:
    import torch
    from tqdm import tqdm

    from pixelrl.rl.grpo import GRPOConfig, grpo_optimizer_for

    par = Parallel(cfg)
    par.share(cfg, "grpo.prompts_per_step"), par.share(cfg, "grpo.minibatch")
    run = par.run(cfg)
    policy = load_text_policy(cfg, adapter.codec(), adapter.corpus)
    if par.rank:  # each rank samples its own answers (rank 0: the one-process stream)
        torch.manual_seed(par.seed(int(cfg.seed)))
    gcfg = GRPOConfig.from_section(cfg.grpo.to_dict())
    ref = par.prepare(policy.frozen_copy(), cfg) if gcfg.kl_coef else None  # KL's reference
    policy = par.prepare(policy, cfg)
    items = adapter.prompts()
    evaluate = adapter.evaluator()
    opt, set_lr = grpo_optimizer_for(policy, cfg.grpo)
    rng = np.random.default_rng(int(cfg.seed))  # the same on every rank: the global batch
    start = par.load_checkpoint(run, policy, opt, rng)
    P, steps, interval = int(cfg.grpo.prompts_per_step), int(cfg.grpo.steps), int(cfg.eval.interval)
    if start == 0:
        par.evaluate(evaluate, run, 0, policy)
    show = bool(cfg.train.progress) and par.is_main
    bar = tqdm(range(start, steps), desc=cfg.recipe.split("/")[-1], disable=not show)
    with par.guard():
        for step in bar:
            chosen = par.mine([items[i] for i in rng.choice(len(items), P, replace=False)])
            prompts = [adapter.prompt(it) for it in chosen]
            rewards_of = functools.partial(_rewards_of, adapter, chosen)
            row = one_step(policy, opt, set_lr(step), ref, prompts, rewards_of, gcfg,
                           int(cfg.grpo.minibatch), par if par.on else None)  # fmt: skip
            row = {"step": step + 1, **par.mean_row(row)}
            run.history.append(row)
            bar.set_postfix_str(
                f"reward={row['reward']:.3f} format={row['format']:.2f}", refresh=False
            )
            if due(step + 1, interval, steps):
                par.evaluate(evaluate, run, step + 1, policy)
            par.checkpoint(run, step + 1, policy, opt, rng)  # every train.checkpoint_interval
        par.save_model(cfg, adapter, policy, run.folder / "model")
    run.write(evaluate.measure)
    return {"run_dir": str(run.folder), "eval": run.evals}
