"""Supervised fine-tuning of a text-emitting policy: the token-level NLL of target action texts.

The warm start before GRPO for every vision-language recipe (GUI and embodied): each example is
a prompt (image, instruction, history) and the action text a demonstrator would write
(:class:`pixelrl.rl.text.rows.Example`); the loss
is the mean negative log-likelihood of its tokens, end token included (so the model learns to
stop), under :meth:`pixelrl.vision.vlm.VLMPolicy.score`.
"""

from __future__ import annotations

from collections.abc import Callable

from pixelrl.rl.text.rows import Example, prompt_columns


def sft_step(policy, optimizer, batch: list[Example], max_grad_norm: float = 1.0) -> float:
    """One gradient step of the token-level NLL of the target action texts; returns the loss."""
    import torch

    images, instructions, histories = prompt_columns([e.prompt for e in batch])
    scored = policy.score(images, instructions, [e.target for e in batch], histories)
    loss = -(scored.logprobs * scored.mask).sum() / scored.mask.sum().clamp(min=1)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), max_grad_norm)
    optimizer.step()
    return float(loss.detach())


def sft_loop(
    policy,
    examples: list[Example],
    steps: int,
    batch_size: int,
    lr: float,
    weight_decay: float = 0.0,
    seed: int = 0,
    desc: str = "sft",
    progress: bool = True,
    after_step: Callable[[int, float], bool | None] | None = None,
    schedule: str = "constant",
    warmup_ratio: float = 0.0,
) -> list[float]:
    """``steps`` of :func:`sft_step` with AdamW on batches drawn without replacement from
    ``examples`` (in proportion to their weights when they carry them), the rate of each step
    :func:`pixelrl.rl.schedule.lr_at` (``schedule`` after a ``warmup_ratio`` share of the steps
    warming up); ``after_step(step,
    loss)`` after each (history rows, held-out evaluations; a True answer ends the loop: early
    stopping). Returns the losses."""
    import numpy as np
    import torch
    from tqdm import tqdm

    from pixelrl.rl.schedule import check_schedule, lr_at, warmup_steps

    check_schedule(schedule, warmup_ratio, "sft")
    warmup = warmup_steps(warmup_ratio, steps)
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=lr, weight_decay=weight_decay)
    rng = np.random.default_rng(seed)
    p = None
    weights = [e.weight for e in examples]
    if any(w is not None for w in weights):
        p = np.asarray(weights, dtype=np.float64)
        if len(p) != len(examples) or (p < 0).any() or p.sum() <= 0:
            raise ValueError("weights: one non-negative number per example, not all 0")
        p = p / p.sum()
    policy.model.train()
    losses = []
    bar = tqdm(range(steps), desc=desc, disable=not progress)
    for step in bar:
        size = min(batch_size, len(examples) if p is None else int((p > 0).sum()))
        picked = rng.choice(len(examples), size, replace=False, p=p)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, lr, schedule, steps, warmup)
        losses.append(sft_step(policy, opt, [examples[i] for i in picked]))
        bar.set_postfix_str(f"loss={losses[-1]:.3f}", refresh=False)
        if after_step is not None and after_step(step + 1, losses[-1]):
            break
    return losses
