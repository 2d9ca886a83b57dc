"""Imitation warm start: behaviour cloning of a teacher on the training envs, before PPO.

habitat's PIRLNav recipe (Ramrakhya et al., 2023) pre-trains a navigation policy by imitating
demonstrations and then fine-tunes it with RL; here the demonstrations are generated on the fly
by a teacher that sees the simulator's state (for navigation, the shortest-path follower). One
imitation update reuses PPO's machinery::

    collector.collect()        # the teacher's actions drive the envs for T steps; the policy runs
                               # alongside (TeacherForcing) so that its memory (storage.state0) and
                               # previous-action inputs are exactly what evaluate() will replay
    for epoch, minibatch (envs over the whole rollout, like PPO's):
        L = -mean(log pi(teacher's action))  +  value_coef * 0.5 * mean((V - R)^2)

``R`` is the GAE return of the teacher's rollout, so RL fine-tuning starts with a critic that
fits a competent policy (PIRLNav's critic warm-up). The optimizer is the imitation phase's own;
PPO's Adam starts fresh afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from pixelrl.rl.distributed import all_reduce_gradients, is_distributed
from pixelrl.rl.policy import Observations, PolicyStep, State
from pixelrl.rl.storage import RolloutStorage

Teacher = Callable[[], np.ndarray]  # the teacher's actions for the envs' current states


@dataclass
class ImitationConfig:
    """``imitation:`` in a recipe; ``updates: 0`` (the default) skips the warm start."""

    updates: int = 0  # rollouts of ppo.num_steps x env.num_envs teacher steps
    epochs: int = 2
    num_minibatches: int = 2
    lr: float = 1e-3
    value_coef: float = 0.5
    max_grad_norm: float = 0.5

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ImitationConfig:
        from pixelrl.config import check_kwargs  # a wrong key names the nearest valid ones

        return cls(**check_kwargs(cls, data, "imitation"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class TeacherForcing(torch.nn.Module):
    """Acts like ``policy`` (same memory, values, log-probs) but takes the ``teacher``'s actions.

    The policy's ``act`` must accept ``actions=`` (forced actions) for this.
    """

    def __init__(self, policy: torch.nn.Module, teacher: Teacher):
        super().__init__()
        self.policy, self.teacher = policy, teacher

    def initial_state(self, batch_size: int) -> State:
        return self.policy.initial_state(batch_size)

    def act(self, obs: Observations, state: State, deterministic: bool = False) -> PolicyStep:
        actions = torch.as_tensor(np.asarray(self.teacher()), dtype=torch.long)
        return self.policy.act(obs, state, actions=actions.to(next(iter(obs.values())).device))


class Imitation:
    """Behaviour-cloning updates of ``policy`` on teacher rollouts (module doc)."""

    def __init__(self, policy: torch.nn.Module, config: ImitationConfig):
        self.policy, self.config = policy, config
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr, eps=1e-5)

    def update(self, storage: RolloutStorage) -> dict[str, float]:
        """``epochs`` x ``num_minibatches`` steps on a filled storage whose returns are computed."""
        cfg = self.config
        totals: dict[str, float] = {}
        count = 0
        for _epoch in range(cfg.epochs):
            for batch in storage.minibatches(cfg.num_minibatches):
                logprobs, values, _ = self.policy.evaluate(
                    batch.obs, batch.state0, batch.actions, batch.masks
                )
                w = batch.valid
                n = w.sum().clamp_min(1.0)
                bc_loss = -(logprobs * w).sum() / n
                value_loss = 0.5 * (((values - batch.returns) ** 2) * w).sum() / n
                loss = bc_loss + cfg.value_coef * value_loss

                self.optimizer.zero_grad(set_to_none=False)
                loss.backward()
                if is_distributed():
                    all_reduce_gradients(self.policy.parameters())
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.max_grad_norm)
                self.optimizer.step()

                # how often the teacher's action is the policy's most likely one
                agree = (logprobs.detach().exp() > 0.5).float()
                terms = {"bc_loss": bc_loss, "value_loss": value_loss, "p_teacher>0.5": agree}
                for key, value in terms.items():
                    v = (value * w).sum() / n if value.dim() else value
                    totals[key] = totals.get(key, 0.0) + float(v.detach())
                count += 1
        return {key: value / count for key, value in totals.items()}
