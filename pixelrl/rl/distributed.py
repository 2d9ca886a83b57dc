"""DD-PPO (Wijmans et al., 2020) under ``torchrun``: many workers, one policy.

Every worker (rank) steps its own envs and computes gradients on its own rollout; before each
optimizer step the gradients are averaged across ranks (:func:`all_reduce_gradients`), so every
rank takes the same step and the parameters stay identical (rank 0's are broadcast once at start).

Straggler preemption (:class:`RolloutTracker`): a worker that finished its rollout adds 1 to a
counter in the process group's key-value store; the others stop collecting early once
``sync_fraction`` of the workers are done and they have at least ``min_fraction`` of their steps
(habitat-baselines: 0.6 and 0.25). The update then uses the shorter rollouts as they are.

Launch: ``torchrun --nproc-per-node 2 -m pixelrl train embodied/pointnav`` (gloo on CPU, nccl on
GPUs); multi-node with ``--nnodes``/``--rdzv-endpoint`` as usual. Without ``torchrun`` (no
``WORLD_SIZE`` in the environment) everything here is a no-op.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def is_distributed() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def init_distributed(backend: str = "gloo") -> DistInfo:
    """Join the process group ``torchrun`` set up (env vars); a single process otherwise."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistInfo()
    if not is_distributed():
        torch.distributed.init_process_group(backend=backend)
        # A process that exits with the group alive can die in gloo's threads at interpreter
        # teardown (SIGABRT, "terminate called without an active exception"; pytorch#190489):
        # one rank aborting fails the whole torchrun job after training has finished.
        atexit.register(_destroy_process_group)
    return DistInfo(
        rank=torch.distributed.get_rank(),
        world_size=torch.distributed.get_world_size(),
        local_rank=int(os.environ.get("LOCAL_RANK", "0")),
    )


def _destroy_process_group() -> None:
    if is_distributed():
        torch.distributed.destroy_process_group()


def world() -> DistInfo:
    if not is_distributed():
        return DistInfo()
    return DistInfo(
        torch.distributed.get_rank(),
        torch.distributed.get_world_size(),
        int(os.environ.get("LOCAL_RANK", "0")),
    )


def broadcast_parameters(module: torch.nn.Module, src: int = 0) -> None:
    """Copy rank ``src``'s parameters and buffers to every rank (start identical)."""
    if not is_distributed():
        return
    for tensor in list(module.parameters()) + list(module.buffers()):
        torch.distributed.broadcast(tensor.data, src=src)


def all_reduce_gradients(
    parameters: Iterable[torch.nn.Parameter], bucket_numel: int = 2**26
) -> None:
    """Average the gradients over all ranks, in flat buffers of at most ``bucket_numel``
    elements (one message for a small policy; a large model's gradients in ~256 MB pieces, not
    one more copy of them all)."""
    params = [p for p in parameters if p.requires_grad]
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    buckets: list[list[torch.nn.Parameter]] = [[]]
    size = 0
    for p in params:
        if buckets[-1] and size + p.numel() > bucket_numel:
            buckets.append([])
            size = 0
        buckets[-1].append(p)
        size += p.numel()
    for bucket in buckets:
        if not bucket:
            continue
        flat = torch.cat([p.grad.reshape(-1) for p in bucket])
        torch.distributed.all_reduce(flat)
        flat /= torch.distributed.get_world_size()
        offset = 0
        for p in bucket:
            p.grad.copy_(flat[offset : offset + p.numel()].view_as(p))
            offset += p.numel()


def clip_grad_norm(parameters: Iterable[torch.nn.Parameter], max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_`` for parameters that may mix FSDP2's shards (DTensor)
    with plain replicated tensors (a pointer head outside the sharded model): each kind's norm
    apart (a shard's over all ranks, a replicated one's counted once), one clip for both."""
    from torch.distributed.tensor import DTensor

    params = [p for p in parameters if p.grad is not None]
    sharded = [p for p in params if isinstance(p, DTensor)]
    if not sharded or len(sharded) == len(params):  # one kind: torch's own
        return torch.nn.utils.clip_grad_norm_(params, max_norm)
    plain = [p for p in params if not isinstance(p, DTensor)]
    norms = [torch.nn.utils.get_total_norm([p.grad for p in sharded]).full_tensor(),
             torch.nn.utils.get_total_norm([p.grad for p in plain])]  # fmt: skip
    total = torch.nn.utils.get_total_norm([n.to(norms[1].device) for n in norms])
    for group in (sharded, plain):
        torch.nn.utils.clip_grads_with_norm_(group, max_norm, total)
    return total


def all_reduce_sum(values: list[float]) -> list[float]:
    """Sum a few numbers over all ranks (frames, episode counts); unchanged when single-process."""
    if not is_distributed():
        return list(values)
    t = torch.tensor(values, dtype=torch.float64)
    torch.distributed.all_reduce(t)
    return t.tolist()


def all_gather_objects(obj: object) -> list[object]:
    """Every rank's ``obj`` (e.g. finished-episode stats) on every rank."""
    if not is_distributed():
        return [obj]
    out: list[object] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(out, obj)
    return out


class RolloutTracker:
    """DD-PPO straggler preemption through the process group's key-value store (module doc)."""

    def __init__(self, sync_fraction: float = 0.6, min_fraction: float = 0.25):
        self.sync_fraction, self.min_fraction = sync_fraction, min_fraction
        self.enabled = is_distributed() and sync_fraction > 0
        self.store = None
        if self.enabled:
            from torch.distributed import distributed_c10d

            default_store = distributed_c10d._get_default_store()
            self.store = torch.distributed.PrefixStore("rollout_tracker", default_store)
        self.world_size = world().world_size
        self.key = "done/0"

    def begin(self, update: int) -> None:
        """A fresh counter per update, so no rank has to reset a shared one (no race)."""
        self.key = f"done/{update}"

    def mark_done(self) -> None:
        if self.enabled:
            self.store.add(self.key, 1)

    def should_stop(self, step: int, num_steps: int) -> bool:
        """True when this rank may end its rollout now because enough others are done."""
        if not self.enabled or step < self.min_fraction * num_steps:
            return False
        done = self.store.add(self.key, 0)  # add 0 reads the counter without blocking
        return done >= self.sync_fraction * self.world_size
