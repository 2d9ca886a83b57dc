"""Running statistics for optional reward and value normalisation.

- :class:`RunningMeanStd` -- mean and variance of a stream (Chan et al.'s parallel update);
  under ``torch.distributed`` every rank adds the batches of all ranks, so statistics agree.
- :class:`RewardNormalizer` -- divides rewards by the running std of the discounted return
  (as gymnasium's ``NormalizeReward`` and SB3's ``VecNormalize``), keeping their sign and scale
  comparable across tasks.
- :class:`ValueNormalizer` -- the critic predicts normalised returns; values are de-normalised
  before GAE and targets normalised before the loss (PopArt without the output rescaling).
"""

from __future__ import annotations

import torch


class RunningMeanStd(torch.nn.Module):
    """Mean and variance of every sample seen so far (buffers, so they live in checkpoints)."""

    def __init__(self, shape: tuple[int, ...] = (), epsilon: float = 1e-4):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(epsilon, dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor, sync: bool = True) -> None:
        """Add the samples ``x`` (``(..., *shape)``); ``sync`` sums them over all ranks first.

        With ``sync`` every rank must call ``update`` the same number of times.
        """
        x = x.detach().to(torch.float64).reshape(-1, *self.mean.shape)
        stats = torch.stack(
            [
                torch.full_like(self.mean, x.shape[0]),
                x.sum(0),
                (x * x).sum(0),
            ]
        )
        if sync and torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(stats)
        n, total, total_sq = stats[0].reshape(-1)[0], stats[1], stats[2]
        batch_mean = total / n
        batch_var = (total_sq / n - batch_mean**2).clamp_min(0.0)
        delta = batch_mean - self.mean
        new_count = self.count + n
        self.mean += delta * n / new_count
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / new_count
        self.var.copy_(m2 / new_count)
        self.count.copy_(new_count)

    @property
    def std(self) -> torch.Tensor:
        return torch.sqrt(self.var + 1e-8)


class RewardNormalizer(torch.nn.Module):
    """Scale rewards by the std of the running discounted return of each env."""

    def __init__(self, num_envs: int, gamma: float, clip: float = 10.0):
        super().__init__()
        self.gamma, self.clip = gamma, clip
        self.stats = RunningMeanStd()
        self.register_buffer("discounted", torch.zeros(num_envs, dtype=torch.float64))

    @torch.no_grad()
    def forward(self, rewards: torch.Tensor, dones: torch.Tensor) -> torch.Tensor:
        self.discounted = self.discounted * self.gamma + rewards.to(torch.float64)
        self.stats.update(self.discounted, sync=False)  # per step: ranks may step unequally
        self.discounted[dones.bool()] = 0.0
        scaled = rewards / self.stats.std.to(rewards.dtype)
        return scaled.clamp(-self.clip, self.clip)


class ValueNormalizer(torch.nn.Module):
    """Map returns to zero mean, unit variance for the critic, and back."""

    def __init__(self):
        super().__init__()
        self.stats = RunningMeanStd()

    def update(self, returns: torch.Tensor) -> None:
        self.stats.update(returns)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.stats.mean) / self.stats.std).to(x.dtype)

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x * self.stats.std + self.stats.mean).to(x.dtype)
