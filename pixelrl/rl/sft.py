"""Supervised fine-tuning of a text-emitting policy: the token-level NLL of target action texts.

The warm start before GRPO for every vision-language recipe (GUI and embodied): each example is
a prompt (image, instruction, history) and the action text a demonstrator would write
(:class:`pixelrl.rl.text.rows.Example`); the loss
is the mean negative log-likelihood of its tokens, end token included (so the model learns to
stop), under :meth:`pixelrl.vision.vlm.VLMPolicy.score`. The loop is
:mod:`pixelrl.rl.text.sft`.
"""

from __future__ import annotations

from pixelrl.rl.text.rows import Example, prompt_columns


def sft_step(
    policy,
    optimizer,
    batch: list[Example],
    max_grad_norm: float = 1.0,
    sync=None,
    live: bool = True,
) -> float:
    """One gradient step of the token-level NLL of the target action texts; returns the loss.

    ``sync`` (:class:`pixelrl.rl.text.parallel.Parallel`, under torchrun): ``batch`` is this
    rank's share; the loss is rescaled to its part of the global token mean and the gradients
    averaged over ranks, so the step is the whole batch's. ``live=False``: a stand-in batch of
    a rank with no share this step (it joins the collectives, adds nothing); the loss returned
    is then this rank's part of the global mean."""
    from pixelrl.rl.distributed import clip_grad_norm

    images, instructions, histories = prompt_columns([e.prompt for e in batch])
    boxes = [e.box for e in batch]  # a pointer head's targets: its cross-entropy joins the NLL
    pointing = {"pointer_boxes": boxes} if any(b is not None for b in boxes) else {}
    scored = policy.score(images, instructions, [e.target for e in batch], histories, **pointing)
    loss = -(scored.logprobs * scored.mask).sum() / scored.mask.sum().clamp(min=1)
    if sync is not None:
        loss = loss * sync.scale(float(scored.mask.sum()) if live else 0.0)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = policy.trainable_parameters()
    if sync is not None:
        sync.reduce(params)
    clip_grad_norm(params, max_grad_norm)
    optimizer.step()
    return float(loss.detach())


def draw_probabilities(examples: list[Example]):
    """The examples' weights as probabilities (None: drawn uniformly)."""
    import numpy as np

    weights = [e.weight for e in examples]
    if not any(w is not None for w in weights):
        return None
    p = np.asarray(weights, dtype=np.float64)
    if len(p) != len(examples) or (p < 0).any() or p.sum() <= 0:
        raise ValueError("weights: one non-negative number per example, not all 0")
    return p / p.sum()
