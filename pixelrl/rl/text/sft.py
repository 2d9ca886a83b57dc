"""SFT of a text policy: the adapter's demonstrations, the token-level NLL, validation and
held-out checks.

policy   = the config's model, speaking the adapter's codec
examples = adapter.examples(run, policy)          # recorded on the spot if none are named
for step in 1..sft.steps:  a batch of examples, one gradient step of the answers' NLL
    (the rate: sft.lr_schedule after a sft.warmup_ratio share of warm-up)
evaluate at 0; validate and evaluate every eval.interval steps and at the end:
    the best-validated weights are kept; eval.patience checks without a better one: stop
save the kept model (the last one when the adapter has no validation set)

Under torchrun (:mod:`.parallel`) every rank draws the same batch and learns from its share;
every rank validates (the same weights and episodes: the same verdict on each).
"""

from __future__ import annotations

from typing import Any

from pixelrl.config import Config, ConfigError
from pixelrl.rl.text.adapter import TaskAdapter
from pixelrl.rl.text.best import Validation
from pixelrl.rl.text.parallel import Parallel
from pixelrl.rl.text.policy import load_text_policy


def due(step: int, interval: int, steps: int) -> bool:
    """Whether a held-out evaluation runs after ``step``: at 0, every ``interval`` and at the end."""
    return step in (0, steps) or bool(interval and step % interval == 0)


def run_sft(cfg: Config, adapter: TaskAdapter) -> dict[str, Any]:
    import numpy as np
    import torch
    from tqdm import tqdm

    from pixelrl.rl.schedule import check_schedule, lr_at, warmup_steps
    from pixelrl.rl.sft import draw_probabilities, sft_step

    par = Parallel(cfg)
    par.share(cfg, "sft.batch_size")
    run = par.run(cfg)
    evaluate = adapter.evaluator()
    grace = warmup_steps(float(cfg.sft.warmup_ratio), int(cfg.sft.steps))  # patience after it
    validation = Validation(adapter.validator(), int(cfg.eval.patience), grace)
    policy = par.prepare(load_text_policy(cfg, adapter.codec(), adapter.corpus), cfg)
    examples = adapter.examples(run, policy)
    if not examples:
        raise ConfigError(f"{cfg.recipe} has nothing to learn from: no demonstrations")
    steps, interval = int(cfg.sft.steps), int(cfg.eval.interval)
    schedule, lr = str(cfg.sft.lr_schedule), float(cfg.sft.lr)
    check_schedule(schedule, float(cfg.sft.warmup_ratio), "sft")
    warmup = grace
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=lr,
                            weight_decay=float(cfg.sft.weight_decay))  # fmt: skip
    rng = np.random.default_rng(int(cfg.seed))  # the same on every rank: the global batch
    extras = {"validation": validation, "adapter": adapter}  # kept by checkpoints
    start = par.load_checkpoint(run, policy, opt, rng, extras)
    p = draw_probabilities(examples)
    size = min(int(cfg.sft.batch_size), len(examples) if p is None else int((p > 0).sum()))
    if start == 0:  # (no validation of the untrained model: never the one kept)
        par.evaluate(evaluate, run, 0, policy)
    policy.model.train()
    show = bool(cfg.train.progress) and par.is_main
    bar = tqdm(range(start, steps), desc=cfg.recipe.split("/")[-1], disable=not show)
    with par.guard():
        for step in bar:
            picked = rng.choice(len(examples), size, replace=False, p=p)
            mine = par.mine(picked)
            batch = [examples[i] for i in (mine or picked[:1])]  # no share: a stand-in row
            for group in opt.param_groups:
                group["lr"] = lr_at(step, lr, schedule, steps, warmup)
            loss = sft_step(policy, opt, batch, sync=par if par.on else None, live=bool(mine))
            row = {"step": step + 1, **par.mean_row({"loss": loss})}
            run.history.append(row)
            bar.set_postfix_str(f"loss={row['loss']:.3f}", refresh=False)
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
    run.write(evaluate.measure)
    return {"run_dir": str(run.folder), "examples": len(examples), "eval": run.evals,
            **validation.summary()}  # fmt: skip
