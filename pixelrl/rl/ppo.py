"""Proximal Policy Optimization with GAE, recurrent policies and DD-PPO gradient all-reduce.

Defaults are habitat-baselines' PPO: clip 0.2, 4 epochs, 2 minibatches, lr 2.5e-4,
Adam eps 1e-5, gamma 0.99, GAE lambda 0.95, value loss 0.5 with clipping, entropy 0.01,
gradient norm 0.5. One training iteration::

    collector.collect()                  # pixelrl.rl.collect: T steps of N envs -> storage
    ppo.compute_advantages(storage, v)   # GAE (values de-normalised if value_norm)
    ppo.update(storage)                  # epochs x minibatches of the clipped loss below

The loss for one minibatch, with ratio = exp(logp - logp_old) and A the advantage::

    L_policy  = -mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))
    L_value   = 0.5 * mean(max((V - R)^2, (V_old + clip(V - V_old, -eps, eps) - R)^2))
    L         = L_policy + value_coef * L_value - entropy_coef * mean(entropy)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import torch

from pixelrl.rl.distributed import all_reduce_gradients, is_distributed
from pixelrl.rl.normalize import ValueNormalizer
from pixelrl.rl.storage import RolloutStorage


@dataclass
class PPOConfig:
    """PPO hyper-parameters; the names are the keys of the ``ppo:`` section of a recipe."""

    num_steps: int = 128  # rollout length per env
    epochs: int = 4
    num_minibatches: int = 2
    lr: float = 2.5e-4
    eps: float = 1e-5  # Adam epsilon
    clip: float = 0.2
    gamma: float = 0.99
    gae_lambda: float = 0.95
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    max_grad_norm: float = 0.5
    clip_value_loss: bool = True
    normalize_advantage: bool = True
    linear_lr_decay: bool = True
    reward_norm: bool = False
    value_norm: bool = False
    # The first N updates fit only the critic head, the policy held still: after an imitation
    # warm start the critic knows the teacher's returns, not the student's, and its advantages
    # would first undo what was cloned (PIRLNav's critic warm-up).
    critic_warmup_updates: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PPOConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown PPO settings {unknown}; valid: {sorted(known)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ppo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    entropy: torch.Tensor,
    clip: float = 0.2,
    value_coef: float = 0.5,
    entropy_coef: float = 0.01,
    clip_value_loss: bool = True,
    weights: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Every term of the clipped PPO objective (module doc); ``loss`` is the one to minimise.

    ``weights`` (0/1 per sample) turn every mean into a weighted mean (reset steps weigh 0).
    """
    if weights is None:
        weights = torch.ones_like(logprobs)
    total = weights.sum().clamp_min(1.0)

    def mean(x: torch.Tensor) -> torch.Tensor:
        return (x * weights).sum() / total

    log_ratio = logprobs - old_logprobs
    ratio = log_ratio.exp()
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip, 1.0 + clip) * advantages
    policy_loss = -mean(torch.min(unclipped, clipped))

    if clip_value_loss:
        values_clipped = old_values + (values - old_values).clamp(-clip, clip)
        value_error = torch.max((values - returns).pow(2), (values_clipped - returns).pow(2))
    else:
        value_error = (values - returns).pow(2)
    value_loss = 0.5 * mean(value_error)

    entropy_mean = mean(entropy)
    loss = policy_loss + value_coef * value_loss - entropy_coef * entropy_mean
    with torch.no_grad():  # diagnostics (CleanRL's): how far the policy moved this epoch
        approx_kl = mean((ratio - 1.0) - log_ratio)
        clip_fraction = mean(((ratio - 1.0).abs() > clip).float())
    return {
        "loss": loss,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy_mean,
        "approx_kl": approx_kl,
        "clip_fraction": clip_fraction,
    }


class PPO:
    """The PPO update for one policy: an Adam optimizer, an LR schedule and optional normalisers."""

    def __init__(self, policy: torch.nn.Module, config: PPOConfig, total_updates: int = 1):
        self.policy, self.config = policy, config
        self.total_updates = max(1, total_updates)
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr, eps=config.eps)
        self.value_normalizer = ValueNormalizer() if config.value_norm else None
        self.trainable = [p for p in policy.parameters() if p.requires_grad]
        self.critic_optimizer: torch.optim.Optimizer | None = None  # critic warm-up only
        self.critic_params: list[torch.nn.Parameter] = []

    def set_lr(self, update: int) -> float:
        """Linear decay from ``lr`` at update 0 to 0 at ``total_updates`` (if enabled)."""
        lr = self.config.lr
        if self.config.linear_lr_decay:
            lr *= max(0.0, 1.0 - update / self.total_updates)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        return lr

    @torch.no_grad()
    def compute_advantages(self, storage: RolloutStorage, next_value: torch.Tensor) -> None:
        """GAE over the filled part of ``storage``, in return units (not normalised)."""
        cfg, vn = self.config, self.value_normalizer
        T = storage.step
        if vn is not None:  # the critic predicts normalised values: back to return units
            storage.values[:T] = vn.denormalize(storage.values[:T])
            next_value = vn.denormalize(next_value)
        storage.compute_returns(next_value, cfg.gamma, cfg.gae_lambda)
        if vn is not None:
            vn.update(storage.returns[:T][storage.valid[:T] > 0])

    def update(self, storage: RolloutStorage, critic_only: bool = False) -> dict[str, float]:
        """``epochs`` passes of ``num_minibatches`` gradient steps; returns the mean loss terms.

        ``critic_only``: minimise ``value_coef * L_value`` in the critic head's parameters alone
        (``policy.critic_parameters()``), with their own Adam; the rest of the policy is unchanged.
        """
        cfg, vn = self.config, self.value_normalizer
        if critic_only:
            critic = self._critic_optimizer()
            for group in critic.param_groups:
                group["lr"] = self.optimizer.param_groups[0]["lr"]
        totals: dict[str, float] = {}
        count = 0
        for _epoch in range(cfg.epochs):
            for batch in storage.minibatches(cfg.num_minibatches):
                advantages, w = batch.advantages, batch.valid
                if cfg.normalize_advantage:  # over the real transitions only
                    n = w.sum().clamp_min(2.0)
                    mean = (advantages * w).sum() / n
                    std = (((advantages - mean) ** 2 * w).sum() / (n - 1)).sqrt()
                    advantages = (advantages - mean) / (std + 1e-8)
                returns, old_values = batch.returns, batch.old_values
                if vn is not None:
                    returns, old_values = vn.normalize(returns), vn.normalize(old_values)

                logprobs, values, entropy = self.policy.evaluate(
                    batch.obs, batch.state0, batch.actions, batch.masks
                )
                terms = ppo_loss(
                    logprobs,
                    batch.old_logprobs,
                    advantages,
                    values,
                    old_values,
                    returns,
                    entropy,
                    clip=cfg.clip,
                    value_coef=cfg.value_coef,
                    entropy_coef=cfg.entropy_coef,
                    clip_value_loss=cfg.clip_value_loss,
                    weights=w,
                )

                if critic_only:
                    grad_norm = self._step(
                        critic, cfg.value_coef * terms["value_loss"], self.critic_params
                    )
                else:
                    grad_norm = self._step(self.optimizer, terms["loss"], self.trainable)

                for key, value in terms.items():
                    totals[key] = totals.get(key, 0.0) + float(value.detach())
                totals["grad_norm"] = totals.get("grad_norm", 0.0) + float(grad_norm)
                if count == 0:  # before any step: how far the behaviour policy is behind
                    behaviour_kl = float(terms["approx_kl"])
                count += 1
        out = {key: value / count for key, value in totals.items()}
        # 0 up to rounding when the rollout was collected with these weights; with
        # train.async (pixelrl.rl.async_collect) the one-update policy lag
        out["behaviour_kl"] = behaviour_kl
        return out

    def _step(
        self, optimizer, loss: torch.Tensor, params: list[torch.nn.Parameter]
    ) -> torch.Tensor:
        """One clipped gradient step of ``optimizer`` on ``loss`` in ``params`` only."""
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        for p, g in zip(params, grads):
            p.grad = torch.zeros_like(p) if g is None else g
        if is_distributed():  # DD-PPO: every rank steps with the mean gradient
            all_reduce_gradients(params)
        grad_norm = torch.nn.utils.clip_grad_norm_(params, self.config.max_grad_norm)
        optimizer.step()
        return grad_norm

    def _critic_optimizer(self) -> torch.optim.Optimizer:
        if self.critic_optimizer is None:
            if not hasattr(self.policy, "critic_parameters"):
                raise TypeError(
                    f"ppo.critic_warmup_updates needs {type(self.policy).__name__}"
                    ".critic_parameters() (the value head's parameters)"
                )
            self.critic_params = list(self.policy.critic_parameters())
            self.critic_optimizer = torch.optim.Adam(
                self.critic_params, lr=self.config.lr, eps=self.config.eps
            )
        return self.critic_optimizer

    def state_dict(self) -> dict[str, Any]:
        state = {"optimizer": self.optimizer.state_dict()}
        if self.critic_optimizer is not None:  # resumed inside the critic warm-up
            state["critic_optimizer"] = self.critic_optimizer.state_dict()
        if self.value_normalizer is not None:
            state["value_normalizer"] = self.value_normalizer.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        if "critic_optimizer" in state:
            self._critic_optimizer().load_state_dict(state["critic_optimizer"])
        if self.value_normalizer is not None and "value_normalizer" in state:
            self.value_normalizer.load_state_dict(state["value_normalizer"])
