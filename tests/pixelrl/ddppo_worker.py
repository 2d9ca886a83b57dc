"""One DD-PPO worker for test_rl_distributed.py: ``torchrun ... ddppo_worker.py OUT_DIR [slow]``.

Trains the toy recipe for 3 updates and writes this rank's parameters, buffers and per-update
rollout lengths to ``OUT_DIR/rank<r>.pt``. With ``slow``, rank 1's envs sleep each step and straggler
preemption (off otherwise) cuts its rollouts short. With ``ray``, each rank's envs run in Ray
actors (``envs.backend=ray``), and the rank also writes the Ray cluster it used.
"""

from __future__ import annotations

import os
import sys

import torch
from toy_nav import register_toy_recipe

from pixelrl.train import Trainer, config_for


def main() -> None:
    out, slow, on_ray = sys.argv[1], "slow" in sys.argv[2:], "ray" in sys.argv[2:]
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
    if on_ray:
        import ray
        import toy_nav

        ray.cloudpickle.register_pickle_by_value(toy_nav)  # the actors cannot import it
        overrides += ["envs.backend=ray", "envs.per_worker=2", "envs.num_cpus=2"]
    trainer = Trainer(config_for(register_toy_recipe(), overrides))
    trainer.run()
    torch.save(
        {
            "state": trainer.policy.state_dict(),
            "steps": [row["steps"] for row in trainer.history],
            "frames": trainer.frames,
            "world_size": trainer.dist.world_size,
            "ray": _ray_cluster(trainer) if on_ray else None,
        },
        f"{out}/rank{rank}.pt",
    )


def _ray_cluster(trainer) -> dict:
    import ray

    return {
        "envs": type(trainer.envs).__name__,
        "gcs_address": ray.get_runtime_context().gcs_address,
        "faults": trainer.envs.faults,
    }


if __name__ == "__main__":
    main()
