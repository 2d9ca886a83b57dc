"""Pixel pointer policy throughput on the emulated desktop: collection and PPO update frames/s.

Prints one table: frames/s of the wrapped env alone (random actions), of collection (policy act +
env step, ``num_envs`` envs) and of the PPO update (forward + backward over a rollout), for the
``gui/ppo`` recipe's policy::

    python bench/pointer_policy_throughput.py                    # click-button, 8 envs, CPU
    python bench/pointer_policy_throughput.py --threads 2 --steps 32 env.id=pixelrl/Desktop-TypeInField-v0
"""

from __future__ import annotations

import argparse
import time


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    import torch

    from pixelrl.gui_agent import ppo_task
    from pixelrl.rl.collect import RolloutCollector
    from pixelrl.rl.ppo import PPO, PPOConfig
    from pixelrl.rl.storage import RolloutStorage
    from pixelrl.train import config_for

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=32, help="rollout length per env")
    p.add_argument("overrides", nargs="*", help="gui/ppo config overrides")
    args = p.parse_intermixed_args(argv)
    torch.set_num_threads(args.threads)
    cfg = config_for(
        "gui/ppo", ["policy.bc_steps=0", f"ppo.num_steps={args.steps}", *args.overrides]
    )
    envs = ppo_task.make_envs(cfg, int(cfg.env.num_envs), 0, "train")
    policy = ppo_task.make_policy(cfg, envs.single_observation_space, envs.single_action_space)
    n = envs.num_envs

    envs.reset(seed=0)
    tic = time.perf_counter()
    for _ in range(args.steps):
        envs.step(np.stack([envs.single_action_space.sample() for _ in range(n)]))
    env_fps = args.steps * n / (time.perf_counter() - tic)

    ppo_cfg = PPOConfig.from_dict(dict(cfg.ppo))
    storage = RolloutStorage(ppo_cfg.num_steps, n, envs.single_observation_space,
                             envs.single_action_space, {}, "cpu")  # fmt: skip
    collector = RolloutCollector(envs, policy, storage, seed=0, gamma=ppo_cfg.gamma)
    tic = time.perf_counter()
    rollout = collector.collect()
    collect_fps = rollout.frames / (time.perf_counter() - tic)
    ppo = PPO(policy, ppo_cfg)
    ppo.compute_advantages(storage, rollout.next_value)
    tic = time.perf_counter()
    ppo.update(storage)
    update_fps = rollout.frames * ppo_cfg.epochs / (time.perf_counter() - tic)
    envs.close()

    params = sum(p.numel() for p in policy.parameters())
    print(f"gui/ppo on {cfg.env.id}: {n} envs, image {tuple(cfg.policy.image_size)}, "
          f"{params / 1e6:.2f}M parameters, {args.threads} thread(s)")  # fmt: skip
    print(f"{'stage':<34}{'frames/s':>10}")
    print(f"{'env alone (random actions)':<34}{env_fps:>10.0f}")
    print(f"{'collection (act + env step)':<34}{collect_fps:>10.0f}")
    print(f"{'PPO update (fwd+bwd, per epoch)':<34}{update_fps:>10.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
