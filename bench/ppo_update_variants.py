"""Cheap changes to embodied/pointnav's PPO update on CPU, each against the update as it is.

Issue 25, item 4: fused Adam, channels-last convolutions and bf16 autocast, on the stored rollout
of ``bench/ppo_learner.py`` (8 envs x 128 steps of 64 px depth, ResNet + LSTM, 4 epochs x 2
minibatches, one torch thread). Every variant starts from the same weights; they alternate
``--repeats`` times after one warm-up round, and the figure is the median seconds an update::

    .venv/bin/python bench/ppo_update_variants.py [--repeats 3]

A variant worth adopting has to be faster here and keep a learning run's result.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ppo_learner  # noqa: E402


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    learner_args = argparse.Namespace(
        size=64, envs=args.envs, steps=args.steps, scenes=4, seed=0, backbone="resnet"
    )
    torch.set_num_threads(1)
    ours = ppo_learner.Ours(learner_args)
    trainer = ours.trainer
    group = trainer.ppo.optimizer.param_groups[0]
    start = copy.deepcopy(trainer.policy.state_dict())

    def adam(fused: bool) -> torch.optim.Optimizer:
        return torch.optim.Adam(
            trainer.policy.parameters(), lr=group["lr"], eps=group["eps"], fused=fused
        )

    # name -> (fused Adam, channels-last weights, autocast dtype)
    variants = {
        "as it is": (False, False, None),
        "fused Adam": (True, False, None),
        "channels-last": (False, True, None),
        "bf16 autocast": (False, False, torch.bfloat16),
    }
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for round_ in range(args.repeats + 1):  # round 0 warms up
        for name, (fused, channels_last, dtype) in variants.items():
            trainer.policy.load_state_dict(start)
            layout = torch.channels_last if channels_last else torch.contiguous_format
            trainer.policy.to(memory_format=layout)
            trainer.ppo.optimizer = adam(fused)
            autocast = torch.autocast("cpu", dtype=dtype) if dtype else contextlib.nullcontext()
            begin = time.perf_counter()
            with autocast:
                trainer.ppo.compute_advantages(trainer.storage, ours.rollout.next_value)
                trainer.ppo.update(trainer.storage)
            if round_:
                seconds[name].append(time.perf_counter() - begin)
    ours.close()
    base = statistics.median(seconds["as it is"])
    print(f"\nPPO update, {args.envs} x {args.steps} frames, median of {args.repeats}")
    print("| variant | seconds an update | speed-up |")
    print("|---|---|---|")
    result = {}
    for name, times in seconds.items():
        median = statistics.median(times)
        result[name] = base / median
        print(f"| {name} | {median:.2f} | {base / median:.2f}x |")
    return result


if __name__ == "__main__":
    main()
