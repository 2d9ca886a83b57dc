"""Multi-turn GRPO of a text policy: groups of whole episodes, GiGPO credit, verifiable rewards.

validate at 0 (the start's weights are the first kept ones)
for step in 1..grpo.steps:
    episodes, groups = adapter.play(policy, ...)   # G sampled episodes from each start
    if the answers parse less often than grpo.format_floor:   # a broken update: undo it
        back to the best-validated weights, a fresh optimizer; no update this step
    A = episode-level (returns within a group)
      + grpo.step_weight x step-level (discounted returns of turns from the same
        observation: GiGPO's anchor states)
    the clipped token-level update over every turn (+ k3 KL to the start when
        grpo.kl_coef > 0), at the rate of grpo.lr_schedule after grpo.warmup_ratio of warm-up
    every eval.interval steps and at the end: validate (keep the best weights; stop after
        eval.patience checks without a better one) and evaluate on the held-out episodes
save the kept model (the last one when the adapter has no validation set)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pixelrl.config import Config
from pixelrl.rl.text.adapter import TaskAdapter
from pixelrl.rl.text.best import Validation
from pixelrl.rl.text.policy import load_text_policy
from pixelrl.rl.text.sft import due
from pixelrl.run_folder import Run


def run_multiturn(cfg: Config, adapter: TaskAdapter) -> dict[str, Any]:
    from tqdm import tqdm

    from pixelrl.rl.grpo import GRPOConfig, gigpo_advantages, grpo_optimizer_for, update_in_chunks

    gcfg = GRPOConfig.from_section(cfg.grpo.to_dict())
    run = Run(cfg)
    evaluate = adapter.evaluator()
    validation = Validation(adapter.validator(), int(cfg.eval.patience))
    policy = load_text_policy(cfg, adapter.codec(), adapter.corpus)
    ref = policy.frozen_copy() if gcfg.kl_coef else None
    opt, set_lr = grpo_optimizer_for(policy, cfg.grpo)
    rng = np.random.default_rng(int(cfg.seed))
    steps, interval = int(cfg.grpo.steps), int(cfg.eval.interval)
    floor = float(cfg.grpo.format_floor)
    validation.check(run, 0, policy)
    evaluate.add(run, 0, policy)
    bar = tqdm(range(steps), desc=cfg.recipe.split("/")[-1], disable=not cfg.train.progress)
    try:
        for step in bar:
            policy.model.eval()
            episodes, groups = adapter.play(policy, step, rng, gcfg)
            policy.model.train()
            rows = [t for ep in episodes for t in ep.turns]
            parsed = float(np.mean([t.completion.parsed for t in rows])) if rows else 1.0
            row = {"step": step + 1, **adapter.step_row(episodes), "lr": set_lr(step)}
            if parsed < floor and validation.restore(policy):  # the language broke: undo
                opt, set_lr = grpo_optimizer_for(policy, cfg.grpo)
                row["rolled_back"] = 1
            else:
                adv = gigpo_advantages(
                    [[t.reward for t in ep.turns] for ep in episodes], groups,
                    [[t.key for t in ep.turns] for ep in episodes], gamma=gcfg.gamma,
                    step_weight=gcfg.step_weight, scale_by_std=gcfg.scale_by_std,
                )  # fmt: skip
                row.update(update_in_chunks(
                    policy, opt, rows, adv.advantages, ref, gcfg, int(cfg.grpo.minibatch)
                ))  # fmt: skip
            run.history.append(row)
            bar.set_postfix_str(
                f"return={row['reward']:.2f} success={row['success']:.2f}", refresh=False
            )
            if due(step + 1, interval, steps):
                stop = validation.check(run, step + 1, policy)
                evaluate.add(run, step + 1, policy)
                if stop:
                    break
    finally:
        adapter.close()
    validation.restore(policy)
    adapter.save(policy, run.dir / "model")
    run.write(evaluate.measure)
    return {"run_dir": str(run.dir), "eval": run.evals, **validation.summary()}
