"""Cost of one behaviour-cloning step of the issue-5 pointer policy, by torch thread count.

Behaviour cloning is ~90% of a ``gui_agent/configs/ppo_bc.yaml`` run, so this step's cost says
how long the recipe takes on a machine. Blocks of steps at each thread count are interleaved in
one process (figures from separate processes drift by 10% or more on a shared machine); each
block is ``pointer_bc.behaviour_clone`` itself, with the recipe's losses and batch. Prints the
median wall and CPU milliseconds a step and what the recipe's BC steps would take at that rate::

    python bench/pointer_bc_step.py                                   # check-boxes, 1 and 2 threads
    python bench/pointer_bc_step.py --threads 1 4 env.id=pixelrl/Desktop-ClickButton-v0
"""

from __future__ import annotations

import argparse
import time


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    import torch

    from pixelrl.gui_agent import ppo_task
    from pixelrl.gui_agent.pointer_bc import behaviour_clone, expert_samples
    from pixelrl.rl.allocator import keep_freed_memory
    from pixelrl.train import config_for

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=6, help="blocks per thread count")
    p.add_argument("--block", type=int, default=8, help="BC steps per block")
    p.add_argument("--samples", type=int, default=512, help="expert samples to draw batches from")
    p.add_argument("overrides", nargs="*", help="ppo_bc.yaml overrides")
    args = p.parse_intermixed_args(argv)
    keep_freed_memory()  # as pixelrl train does: no page faults on every step's activations
    cfg = config_for(
        "gui_agent/configs/ppo_bc.yaml", ["env.id=pixelrl/Desktop-CheckBoxes-v0", *args.overrides]
    )
    spec = ppo_task.pointer_spec(cfg)
    env = ppo_task.make_env(cfg.env.id, spec, "train", **ppo_task.env_kwargs(cfg, "train"))
    torch.manual_seed(0)
    policy = ppo_task.make_policy(cfg, env.observation_space, env.action_space, warm_start=False)
    data = expert_samples(env, args.samples, 0)
    env.close()
    options = ppo_task.bc_options(cfg)

    def block(seed: int) -> None:
        behaviour_clone(policy, data, args.block, seed=seed, **options)

    block(0)  # warm-up: first-call allocations
    per_step: dict[int, list[tuple[float, float]]] = {n: [] for n in args.threads}
    for r in range(args.rounds):
        for n in args.threads:
            torch.set_num_threads(n)
            wall, cpu = time.perf_counter(), time.process_time()
            block(r + 1)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            per_step[n].append((wall / args.block, cpu / args.block))

    steps = int(cfg.policy.bc_steps)
    print(f"behaviour cloning on {cfg.env.id}: batch {options['batch_size']}, "
          f"{args.rounds} x {args.block} steps per thread count, interleaved")  # fmt: skip
    print(f"{'threads':>8}{'wall ms/step':>14}{'CPU ms/step':>13}{f'{steps} steps, wall s':>20}")
    for n, rows in per_step.items():
        wall, cpu = np.median(np.array(rows), axis=0)
        print(f"{n:>8}{1000 * wall:>14.0f}{1000 * cpu:>13.0f}{steps * wall:>20.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
