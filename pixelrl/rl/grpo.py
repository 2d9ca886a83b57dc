"""Group Relative Policy Optimization for text-emitting policies (VLMs that write actions).

GRPO needs no value function: it samples G completions for the same prompt (or G episodes
from the same start state), scores each with a verifiable reward and uses the reward relative
to its group as the advantage. One training iteration::

    samples  = policy.generate(prompts, num_samples=G)          # G completions per prompt
    rewards  = reward_fn(samples)                               # pixelrl.vision.rewards, task success
    A        = group_advantages(rewards, group_size=G)          # (r - mean) / std per group
    old_lp   = policy.score(prompts, samples).logprobs.detach() # log-probs when sampled
    for epoch: grpo_update(policy, optimizer, batch, A, old_lp) # the clipped loss below

The loss, per completion token t of completion i, with ratio = exp(logp - logp_old)::

    L_t = -min(ratio * A_i, clip(ratio, 1 - eps_low, 1 + eps_high) * A_i) + beta * KL_t
    KL_t = exp(ref - logp) - (ref - logp) - 1          # the k3 estimator of KL(pi || pi_ref)

averaged over every completion token of the batch ("token" aggregation, DAPO / TRL's default)
or per completion first and then over completions ("sequence", the original GRPO).

Multi-turn tasks (whole episodes) add step-level credit the GiGPO way (verl-agent): steps of
episodes from the same seed that start from the *same observation* (an "anchor state",
found by hashing the observation) form a group of their own, and their discounted returns are
normalised within it. The advantage of a step is the episode-level advantage of its episode
plus ``step_weight`` times its step-level advantage.

References: DeepSeekMath (GRPO), DAPO (token-level loss, clip-higher), TRL's GRPOTrainer,
verl-agent's GiGPO.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch

from pixelrl.rl.distributed import clip_grad_norm
from pixelrl.rl.text.rows import Turn, prompt_columns


@dataclass
class GRPOConfig:
    """GRPO hyper-parameters; the names are the keys of the ``grpo:`` section of a recipe, and
    these defaults are the recipes' (:data:`RECIPE_DEFAULTS`): one set of values."""

    num_samples: int = 8  # G: completions per prompt (GUI-R1 / UI-R1 use 5-8)
    lr: float = 1e-4
    epochs: int = 1  # passes over one batch of samples (1: ratio is 1, the loss is plain PG)
    clip_low: float = 0.2  # eps_low
    clip_high: float = 0.28  # eps_high: DAPO's clip-higher
    kl_coef: float = 0.0  # beta; GUI recipes use 0-0.04
    scale_by_std: bool = True  # False: Dr. GRPO's (r - mean) without the division
    loss_aggregation: str = "token"  # "token" or "sequence"
    max_grad_norm: float = 1.0
    step_weight: float = 1.0  # GiGPO's omega: weight of step-level advantages
    gamma: float = 0.95  # discount for step returns in multi-turn episodes
    temperature: float = 1.0
    max_new_tokens: int = 32

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> GRPOConfig:
        """The fields of a recipe's ``grpo:`` section (other keys there belong to the recipe)."""
        return cls(**{k: v for k, v in section.items() if k in cls.__dataclass_fields__})


# The ``grpo:`` keys every text-policy recipe shares (GUI and embodied): GRPOConfig's fields
# with its defaults (but max_new_tokens, which each recipe places where its answers are set) and
# the loop's own; each recipe adds its keys (rewards, prompts or starts per step, ...).
RECIPE_DEFAULTS: dict[str, Any] = {
    **{f.name: f.default for f in fields(GRPOConfig) if f.name != "max_new_tokens"},
    "steps": 50,
    "lr_schedule": "constant",  # "linear": decays to 0 at the last step (TRL's default); "cosine"
    "warmup_ratio": 0.0,  # the share of steps of linear warm-up first (verl-agent: 0.1)
    "minibatch": 16,
}


# -- advantages -------------------------------------------------------------------------------
def _group_index(
    n: int, group_ids: Sequence[Hashable] | None, group_size: int | None
) -> np.ndarray:
    """An integer group per item: contiguous blocks of ``group_size`` or the given ids."""
    if (group_ids is None) == (group_size is None):
        raise ValueError("give exactly one of group_ids and group_size")
    if group_size is not None:
        if group_size <= 0 or n % group_size:
            raise ValueError(f"{n} rewards do not split into groups of {group_size}")
        return np.arange(n) // group_size
    if len(group_ids) != n:
        raise ValueError(f"{n} rewards but {len(group_ids)} group ids")
    index: dict[Hashable, int] = {}
    return np.array([index.setdefault(g, len(index)) for g in group_ids], dtype=np.int64)


def group_advantages(
    rewards,
    group_ids: Sequence[Hashable] | None = None,
    group_size: int | None = None,
    scale_by_std: bool = True,
    eps: float = 1e-6,
) -> np.ndarray:
    """GRPO's advantage ``A_i = (r_i - mean_g) / std_g`` within each group g.

    Groups are contiguous blocks of ``group_size`` (how :meth:`VLMPolicy.generate` orders G
    samples of each prompt) or items sharing a ``group_ids`` value. ``std`` is the sample
    standard deviation (``ddof=1``, as ``torch.std`` in TRL); a group whose rewards are all
    equal (std < eps), or a group of one, has advantage 0 — it carries no learning signal.
    ``scale_by_std=False`` gives Dr. GRPO's ``r_i - mean_g``. Non-finite rewards are an error.
    """
    r = np.asarray(rewards, dtype=np.float64).reshape(-1)
    if not np.isfinite(r).all():
        raise ValueError(f"rewards must be finite, got {r[~np.isfinite(r)][:5]}")
    groups = _group_index(len(r), group_ids, group_size)
    advantages = np.zeros_like(r)
    for g in np.unique(groups):
        members = groups == g
        if members.sum() < 2:
            continue
        centred = r[members] - r[members].mean()
        std = r[members].std(ddof=1)
        if std < eps:
            continue
        advantages[members] = centred / std if scale_by_std else centred
    return advantages


def anchor_key(observation: Any) -> str:
    """A hash naming an observation exactly (GiGPO's anchor state): same screenshot pixels and
    same instruction -> same key. Dicts hash their items in key order; arrays their dtype,
    shape and bytes."""
    h = hashlib.blake2b(digest_size=16)

    def feed(value: Any) -> None:
        if isinstance(value, dict):
            for k in sorted(value):
                h.update(f"<{k}>".encode())
                feed(value[k])
        elif isinstance(value, np.ndarray) or torch.is_tensor(value):
            arr = np.ascontiguousarray(value.cpu().numpy() if torch.is_tensor(value) else value)
            h.update(f"{arr.dtype}{arr.shape}".encode())
            h.update(arr.tobytes())
        elif isinstance(value, (list, tuple)):
            h.update(b"[")
            for v in value:
                feed(v)
            h.update(b"]")
        else:
            h.update(repr(value).encode())

    feed(observation)
    return h.hexdigest()


def discounted_returns(rewards: Sequence[float], gamma: float) -> np.ndarray:
    """``R_t = r_t + gamma * R_{t+1}`` along one episode."""
    out = np.zeros(len(rewards))
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


@dataclass
class StepAdvantages:
    """GiGPO advantages of every step of a batch of episodes, flattened in episode order."""

    advantages: np.ndarray  # episode + step_weight * step
    episode: np.ndarray  # the episode-level part, repeated over the episode's steps
    step: np.ndarray  # the step-level (anchor-state) part
    step_groups: np.ndarray  # the anchor-state group of each step
    episode_index: np.ndarray  # which episode each step belongs to


def gigpo_advantages(
    episode_rewards: Sequence[Sequence[float]],
    episode_groups: Sequence[Hashable],
    step_keys: Sequence[Sequence[str]],
    gamma: float = 0.95,
    step_weight: float = 1.0,
    scale_by_std: bool = True,
) -> StepAdvantages:
    """Episode-level plus step-level (anchor-state) advantages for multi-turn GRPO.

    ``episode_rewards[e]`` are the per-step rewards of episode e; ``episode_groups[e]`` its
    group (episodes from the same seed / start state share one); ``step_keys[e][t]`` the
    :func:`anchor_key` of the observation at step t.

    - episode level: ``A^E_e`` = :func:`group_advantages` of the episode returns
      ``sum_t r_t`` within each episode group;
    - step level: steps whose (episode group, anchor key) agree form a group;
      ``A^S`` = :func:`group_advantages` of their discounted returns ``R_t`` within it (a state
      visited once has ``A^S = 0``);
    - ``A = A^E + step_weight * A^S`` for each step.
    """
    if not (len(episode_rewards) == len(episode_groups) == len(step_keys)):
        raise ValueError("episode_rewards, episode_groups and step_keys need one entry per episode")
    for e, (rs, ks) in enumerate(zip(episode_rewards, step_keys)):
        if len(rs) != len(ks):
            raise ValueError(f"episode {e}: {len(rs)} rewards but {len(ks)} step keys")
    totals = [float(np.sum(rs)) for rs in episode_rewards]
    episode_adv = group_advantages(
        totals, group_ids=list(episode_groups), scale_by_std=scale_by_std
    )
    returns, groups, owner = [], [], []
    for e, (rs, ks) in enumerate(zip(episode_rewards, step_keys)):
        returns.extend(discounted_returns(rs, gamma))
        groups.extend((episode_groups[e], k) for k in ks)
        owner.extend([e] * len(rs))
    owner_arr = np.array(owner, dtype=np.int64)
    if not returns:
        empty = np.zeros(0)
        return StepAdvantages(empty, empty, empty, np.zeros(0, np.int64), owner_arr)
    step_adv = group_advantages(returns, group_ids=groups, scale_by_std=scale_by_std)
    group_index = _group_index(len(groups), groups, None)
    per_step_episode = episode_adv[owner_arr]
    return StepAdvantages(
        per_step_episode + step_weight * step_adv,
        per_step_episode,
        step_adv,
        group_index,
        owner_arr,
    )


# -- loss -------------------------------------------------------------------------------------
def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(pi || pi_ref): ``exp(d) - d - 1`` with ``d = ref - logp``
    (unbiased, always >= 0; Schulman's "Approximating KL divergence")."""
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1


def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    loss_aggregation: str = "token",
) -> tuple[torch.Tensor, dict[str, float]]:
    """The clipped token-level GRPO surrogate (see the module docstring) and its statistics.

    ``logprobs``, ``old_logprobs``, ``ref_logprobs`` and ``mask`` are (B, T); ``advantages``
    is (B,) — one per completion, shared by its tokens. Returns ``(loss, stats)`` with
    ``stats`` holding ``policy_loss``, ``kl``, ``clip_fraction`` and ``ratio_mean``.
    """
    if loss_aggregation not in ("token", "sequence"):
        raise ValueError(
            f"loss_aggregation must be 'token' or 'sequence', got {loss_aggregation!r}"
        )
    mask = mask.to(logprobs.dtype)
    adv = advantages.to(logprobs.dtype).unsqueeze(-1)
    ratio = torch.exp(logprobs - old_logprobs)
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    per_token = -torch.min(ratio * adv, clipped * adv)
    policy_per_token = per_token
    kl = torch.zeros_like(per_token)
    if ref_logprobs is not None and kl_coef:
        kl = kl_k3(logprobs, ref_logprobs)
        per_token = per_token + kl_coef * kl

    def aggregate(x: torch.Tensor) -> torch.Tensor:
        if loss_aggregation == "token":
            return (x * mask).sum() / mask.sum().clamp(min=1)
        per_sequence = (x * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        return per_sequence.mean()

    loss = aggregate(per_token)
    with torch.no_grad():
        was_clipped = ((ratio - clipped).abs() > 0).to(mask.dtype)
        stats = {
            "loss": float(loss),
            "policy_loss": float(aggregate(policy_per_token)),
            "kl": float(aggregate(kl)),
            "clip_fraction": float((was_clipped * mask).sum() / mask.sum().clamp(min=1)),
            "ratio_mean": float((ratio * mask).sum() / mask.sum().clamp(min=1)),
        }
    return loss, stats


# -- update -----------------------------------------------------------------------------------
def grpo_update(
    policy,
    optimizer: torch.optim.Optimizer,
    screenshots: Sequence,
    instructions: Sequence[str],
    completions: Sequence,
    advantages,
    old_logprobs: torch.Tensor | None = None,
    histories: Sequence | None = None,
    ref_policy=None,
    config: GRPOConfig | None = None,
    sync=None,
    live: bool = True,
) -> dict[str, float]:
    """One gradient step of GRPO on a batch of (prompt, completion, advantage) rows.

    ``policy`` (and ``ref_policy``, the frozen reference, when ``config.kl_coef > 0``) follow
    the VLM policy interface: ``score(screenshots, instructions, completions, histories)``
    returns per-token ``logprobs`` and ``mask``. Without ``old_logprobs`` the current
    log-probs (detached) stand in: the ratio is 1 and the step is the plain policy gradient.
    ``sync`` and ``live``: under torchrun, as :func:`pixelrl.rl.sft.sft_step`'s (the rows are
    this rank's share of the minibatch; the step is the whole minibatch's).
    """
    cfg = config or GRPOConfig()
    scored = policy.score(screenshots, instructions, completions, histories)
    logprobs, mask = scored.logprobs, scored.mask
    if old_logprobs is None:
        old_logprobs = logprobs.detach()
    ref = None
    if ref_policy is not None and cfg.kl_coef:
        with torch.no_grad():
            ref = ref_policy.score(screenshots, instructions, completions, histories).logprobs
    adv = torch.as_tensor(np.asarray(advantages), dtype=torch.float32, device=logprobs.device)
    loss, stats = grpo_loss(
        logprobs, old_logprobs.to(logprobs.device), adv, mask, cfg.clip_low, cfg.clip_high,
        ref, cfg.kl_coef, cfg.loss_aggregation,
    )  # fmt: skip
    if sync is not None:  # this rank's part of the global mean (tokens or sequences)
        count = float(mask.sum()) if cfg.loss_aggregation == "token" else float(mask.shape[0])
        loss = loss * sync.scale(count if live else 0.0)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if sync is not None:
        sync.reduce(params)
    stats["grad_norm"] = float(clip_grad_norm(params, cfg.max_grad_norm))
    optimizer.step()
    return stats


# -- training loop helpers (the GUI and embodied text-policy recipes) ---------------------------
def grpo_optimizer(
    policy, lr: float, schedule: str = "constant", steps: int = 1, warmup_ratio: float = 0.0
):
    """AdamW over the policy's trainable parameters and ``set_lr(step)``, which sets and returns
    the rate of GRPO step ``step`` (0-based): :func:`pixelrl.rl.schedule.lr_at` (linear warm-up
    over a ``warmup_ratio`` share of the steps, then ``constant``, ``linear`` decay to 0 at step
    ``steps``, TRL's default, or ``cosine`` decay)."""
    from pixelrl.rl.schedule import check_schedule, lr_at, warmup_steps

    check_schedule(schedule, warmup_ratio, "grpo")
    warmup = warmup_steps(warmup_ratio, steps)
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=lr, weight_decay=0.0)

    def set_lr(step: int) -> float:
        rate = lr_at(step, lr, schedule, steps, warmup)
        for group in opt.param_groups:
            group["lr"] = rate
        return rate

    return opt, set_lr


def grpo_optimizer_for(policy, section):
    """:func:`grpo_optimizer` from a recipe's ``grpo:`` section (``lr``, ``lr_schedule``,
    ``warmup_ratio``, ``steps``); a value no run can use is a
    :class:`~pixelrl.config.ConfigError`."""
    from pixelrl.config import ConfigError

    try:
        return grpo_optimizer(
            policy, float(section.lr), str(section.lr_schedule), int(section.steps),
            float(section.warmup_ratio),
        )  # fmt: skip
    except ValueError as e:
        raise ConfigError(str(e)) from None


def update_in_chunks(
    policy, opt, rows: Sequence[Turn], advantages, ref, gcfg: GRPOConfig, minibatch: int, sync=None
) -> dict[str, float]:
    """:func:`grpo_update` over ``rows`` (turns: :class:`~pixelrl.rl.text.rows.Turn`, prompt
    and completion) in minibatches, ``gcfg.epochs`` passes.

    Rows with zero advantage carry no signal and are skipped unless the KL term needs them. With
    more than one pass the log-probs before the first update are the ratio's denominator (with
    one pass the ratio is 1 and the step is the plain policy gradient).

    ``sync`` (:class:`pixelrl.rl.text.parallel.Parallel`, under torchrun): ``rows`` are this
    rank's share and ``minibatch`` the global one; each rank takes ``minibatch / W`` rows a
    step, and every rank as many steps as the rank with the most (one that has run out steps
    on a stand-in row that adds nothing)."""
    keep = [i for i in range(len(rows)) if advantages[i] != 0 or gcfg.kl_coef]
    size = minibatch // sync.world_size if sync is not None else minibatch
    chunks = [keep[s : s + size] for s in range(0, len(keep), size)]
    live = [True] * len(chunks)
    if sync is not None:
        extra = sync.most(len(chunks)) - len(chunks)
        chunks, live = chunks + [[0]] * extra, live + [False] * extra

    def fields(idx):
        images, instructions, histories = prompt_columns([rows[i].prompt for i in idx])
        return images, instructions, [rows[i].completion for i in idx], histories

    old = [None] * len(chunks)
    if gcfg.epochs > 1:
        with torch.no_grad():
            for c, idx in enumerate(chunks):
                shots, instr, comps, hist = fields(idx)
                old[c] = policy.score(shots, instr, comps, hist).logprobs.detach()
    stats: dict[str, float] = {}
    n = 0
    for _ in range(max(1, gcfg.epochs)):
        for c, idx in enumerate(chunks):
            shots, instr, comps, hist = fields(idx)
            s = grpo_update(policy, opt, shots, instr, comps, advantages[idx], old_logprobs=old[c],
                            histories=hist, ref_policy=ref, config=gcfg, sync=sync,
                            live=live[c])  # fmt: skip
            if live[c]:
                for k, v in s.items():
                    stats[k] = stats.get(k, 0.0) + v
                n += 1
    return {k: v / n for k, v in stats.items()} if n else {}


def synced_clock(policy) -> float:
    """Wall seconds, after the accelerator (if any) has finished its queued work."""
    if policy.model.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def throughput(
    groups, advantages, gcfg: GRPOConfig, sample_s: float, update_s: float
) -> dict[str, float]:
    """One GRPO step's speed: completions and generated tokens per second of sampling, and
    completion tokens per second of the update (each pass over the rows that carry a signal)."""
    completions = [c for g in groups for c in g]
    generated = sum(len(c.token_ids) for c in completions)
    kept = [c for c, a in zip(completions, advantages) if a != 0 or gcfg.kl_coef]
    trained = sum(len(c.token_ids) for c in kept) * max(1, gcfg.epochs)
    return {
        "sample_s": sample_s,
        "update_s": update_s,
        "samples_per_s": len(completions) / max(sample_s, 1e-9),
        "gen_tokens_per_s": generated / max(sample_s, 1e-9),
        "update_tokens_per_s": trained / max(update_s, 1e-9),
    }
