"""Steps per second of the emulated desktop in this process against the same envs in Ray actors.

    .venv/bin/python bench/remote_envs.py [--envs 4] [--seconds 5] [--size 320x240]

Steps ``pixelrl/Desktop-Mixed-v0`` (a random task family per episode) as a ``SyncVectorEnv`` of
``--envs`` envs (``SAME_STEP`` autoreset, as the trainers run it) and as a
``pixelrl.envs.remote.RayVectorEnv`` of the same envs, split into 2 actors and into one actor
per env, on a local Ray cluster of all this machine's CPUs. Actions are uniform samples drawn
before timing; episodes run back to back (resets included). Figures are env steps per wall
second, best of ``--repeats`` chunks (other processes only ever slow a chunk down), and the
ratio Ray / in-process (issue 24's target: >= 0.8 for batched envs on one machine).
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium as gym

ENV_ID = "pixelrl/Desktop-Mixed-v0"


def steps_per_second(envs: gym.vector.VectorEnv, seconds: float, repeats: int) -> float:
    """Best of ``repeats`` timed chunks of about ``seconds`` each, in env steps per second."""
    envs.action_space.seed(0)
    actions = [envs.action_space.sample() for _ in range(64)]
    envs.reset(seed=0)
    for a in actions[:4]:  # warm up: first frames, caches, Ray's object transfer paths
        envs.step(a)
    best = 0.0
    for _ in range(repeats):
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            envs.step(actions[steps % len(actions)])
            steps += 1
        best = max(best, steps * envs.num_envs / (time.perf_counter() - start))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", default="320x240", help="screen WxH")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    kwargs = {"screen_size": (width, height)}

    import ray

    from pixelrl.envs.remote import RayVectorEnv, make_registered

    local = gym.vector.SyncVectorEnv(
        [lambda: make_registered(ENV_ID, kwargs) for _ in range(args.envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    base = steps_per_second(local, args.seconds, args.repeats)
    local.close()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{ENV_ID} {width}x{height}, {args.envs} envs, {cpus} CPUs (steps/s, best chunk)")
    print(f"  in-process SyncVectorEnv        {base:8.0f}")
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    try:
        for workers in sorted({min(2, args.envs), args.envs}):
            if args.envs % workers:
                continue
            per_worker = args.envs // workers
            envs = RayVectorEnv(ENV_ID, workers, per_worker, kwargs=kwargs)
            rate = steps_per_second(envs, args.seconds, args.repeats)
            envs.close()
            label = f"Ray {workers} actors x {per_worker} envs"
            print(f"  {label:<31} {rate:8.0f}   ratio {rate / base:.2f}x")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
