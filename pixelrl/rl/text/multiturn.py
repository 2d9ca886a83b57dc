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
        eval.patience checks past the warm-up without a better one) and evaluate on the held-out episodes
save the kept model (the last one when the adapter has no validation set)

Under torchrun (:mod:`.parallel`) each rank plays 1/W of the step's groups (the adapter's
``GROUPS_PER_STEP`` key names their count) with its own seed, as the step's share numbered
``step x W + rank`` (an adapter that takes tasks in turn by step takes the one-process turns),
and the update is the whole step's; the format guard reads the whole step's answers, and every
rank validates (the same weights and episodes: the same verdict on each).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pixelrl.config import Config, ConfigError
from pixelrl.rl.text.adapter import TaskAdapter
from pixelrl.rl.text.best import Validation
from pixelrl.rl.text.parallel import Parallel
from pixelrl.rl.text.policy import load_text_policy
from pixelrl.rl.text.sft import due


def run_multiturn(cfg: Config, adapter: TaskAdapter) -> dict[str, Any]:
    import torch
    from tqdm import tqdm

    from pixelrl.rl.grpo import GRPOConfig, gigpo_advantages, grpo_optimizer_for, update_in_chunks

    par = Parallel(cfg)
    key = getattr(adapter, "GROUPS_PER_STEP", None)
    if par.on and key is None:
        raise ConfigError(
            f"{cfg.recipe} cannot run on {par.world_size} ranks: its task adapter does not say "
            "how many groups a step plays (GROUPS_PER_STEP), so the step cannot be split"
        )
    share = par.share(cfg, key) if key else None
    par.share(cfg, "grpo.minibatch")
    gcfg = GRPOConfig.from_section(cfg.grpo.to_dict())
    run = par.run(cfg)
    if share is not None and par.on:  # the adapter plays this rank's share (config.yaml: global)
        section, name = key.rsplit(".", 1)
        setattr(cfg[section], name, share)
    if par.on and cfg.get("envs", {}).get("backend") == "ray":
        from pixelrl.rl.vector_envs import join_one_ray_cluster

        join_one_ray_cluster(cfg)  # every rank's env workers in one Ray cluster
    evaluate = adapter.evaluator()
    from pixelrl.rl.schedule import warmup_steps

    grace = warmup_steps(float(cfg.grpo.warmup_ratio), int(cfg.grpo.steps))
    validation = Validation(adapter.validator(), int(cfg.eval.patience), grace)
    policy = load_text_policy(cfg, adapter.codec(), adapter.corpus)
    ref = par.prepare(policy.frozen_copy(), cfg) if gcfg.kl_coef else None  # KL's reference
    policy = par.prepare(policy, cfg)
    if par.rank:  # each rank samples its own answers (rank 0: the one-process stream)
        torch.manual_seed(par.seed(int(cfg.seed)))
    opt, set_lr = grpo_optimizer_for(policy, cfg.grpo)
    rng = np.random.default_rng(par.seed(int(cfg.seed)))  # each rank its own starts
    extras = {"validation": validation, "adapter": adapter}  # kept by checkpoints
    start = par.load_checkpoint(run, policy, opt, rng, extras)
    steps, interval = int(cfg.grpo.steps), int(cfg.eval.interval)
    floor = float(cfg.grpo.format_floor)
    if start == 0:
        validation.check(run, 0, policy)
        par.evaluate(evaluate, run, 0, policy)
    show = bool(cfg.train.progress) and par.is_main
    bar = tqdm(range(start, steps), desc=cfg.recipe.split("/")[-1], disable=not show)
    try:
        with par.guard():
            for step in bar:
                policy.model.eval()
                episodes, groups = adapter.play(policy, step * par.world_size + par.rank, rng, gcfg)
                policy.model.train()
                rows = [t for ep in episodes for t in ep.turns]
                parsed = float(np.mean([t.completion.parsed for t in rows])) if rows else 1.0
                parsed = par.mean_row({"parsed": parsed})["parsed"]  # the step's, on every rank
                row = {**adapter.step_row(episodes), "lr": set_lr(step)}
                if parsed < floor and validation.restore(policy):  # the language broke: undo
                    opt, set_lr = grpo_optimizer_for(policy, cfg.grpo)
                    row["rolled_back"] = 1
                else:
                    adv = gigpo_advantages(
                        [[t.reward for t in ep.turns] for ep in episodes], groups,
                        [[t.key for t in ep.turns] for ep in episodes], gamma=gcfg.gamma,
                        step_weight=gcfg.step_weight, scale_by_std=gcfg.scale_by_std,
                    )  # fmt: skip
                    row.update(update_in_chunks(policy, opt, rows, adv.advantages, ref, gcfg,
                                                int(cfg.grpo.minibatch), par if par.on else None))  # fmt: skip
                row = {"step": step + 1, **par.mean_row(row)}
                run.history.append(row)
                bar.set_postfix_str(
                    f"return={row['reward']:.2f} success={row['success']:.2f}", refresh=False
                )
                stop = False
                if due(step + 1, interval, steps):
                    stop = validation.check(run, step + 1, policy)
                    par.evaluate(evaluate, run, step + 1, policy)
                # every train.checkpoint_interval
                par.checkpoint(run, step + 1, policy, opt, rng, extras)
                if stop:
                    break
            validation.restore(policy)
            par.save_model(cfg, adapter, policy, run.folder / "model")
    finally:
        adapter.close()
    run.write(evaluate.measure)
    return {"run_dir": str(run.folder), "eval": run.evals, **validation.summary()}
