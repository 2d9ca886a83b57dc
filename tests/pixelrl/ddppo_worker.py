"""One DD-PPO worker for test_rl_distributed.py: ``torchrun ... ddppo_worker.py OUT_DIR [slow]``.

Trains the toy recipe for 3 updates and writes this rank's parameters, buffers and per-update
rollout lengths to ``OUT_DIR/rank<r>.pt``. With ``slow``, rank 1's envs sleep each step and straggler
preemption (off otherwise) cuts its rollouts short.
"""

from __future__ import annotations

import os
import sys

import torch
from toy_nav import register_toy_recipe

from pixelrl.train import Trainer, config_for


def main() -> None:
    out, slow = sys.argv[1], "slow" in sys.argv[2:]
    rank = int(os.environ["RANK"])
    overrides = [
        f"train.output_dir={out}/run",
        f"train.total_frames={3 * 32 * 4 * 2}",  # 3 updates of 2 ranks x 4 envs x 32 steps
        "train.final_eval=false",
        # preempt once 1 of the 2 ranks is done, only in the straggler test
        f"distributed.sync_fraction={0.5 if slow else 0.0}",
        "distributed.min_fraction=0.25",
    ]
    if slow and rank == 1:
        overrides.append("env.kwargs.step_delay=0.05")
    trainer = Trainer(config_for(register_toy_recipe(), overrides))
    trainer.run()
    torch.save(
        {
            "state": trainer.policy.state_dict(),
            "steps": [row["steps"] for row in trainer.history],
            "frames": trainer.frames,
            "world_size": trainer.dist.world_size,
        },
        f"{out}/rank{rank}.pt",
    )


if __name__ == "__main__":
    main()
