"""Training frames/s of pixelrl's PPO against stable-baselines3's PPO, same env, same run.

Both train on ``pixelrl/PointNav-v0`` with the same observations (depth ``--size`` px, normalised
to [0, 1], plus ``pointgoal_with_gps_compass``), the same number of envs, rollout length and
habitat's PPO settings (4 epochs, 2 minibatches, clip 0.2, lr 2.5e-4, ...), one torch thread each:

- pixelrl: ``pixelrl train embodied/pointnav`` (GroupNorm ResNet + GRU actor-critic, recurrent
  PPO) through :class:`pixelrl.train.Trainer`, as the recipe ships it (``train.async=true``: the
  envs step in a worker process while the learner updates) and, as a second row, with
  ``train.async=false`` (one process: the loop before issue 29);
- SB3: ``PPO("MultiInputPolicy")`` -- NatureCNN on depth + MLP on the goal, no memory -- over a
  ``DummyVecEnv`` of the same env (depth moved channel-first, as SB3's CNN expects).

The env options are the same dict for both (``--env-option`` adds to it). Frames/s = env frames
trained on (pixelrl: real transitions, not the batched env's reset steps) / wall seconds of the
whole training call (collection and updates). The machine is shared, so the two alternate
``--repeats`` times and the medians are compared::

    .venv/bin/python bench/ppo_throughput.py                 # 64 px, 8 envs, 4096 frames each
    .venv/bin/python bench/ppo_throughput.py --size 128 --frames 8192
    .venv/bin/python bench/ppo_throughput.py --env-option 'apartment={rooms: [1, 2]}' --env-option turn_angle=30
"""

from __future__ import annotations

import argparse
import tempfile
import time

import gymnasium as gym
import numpy as np


def env_options(args: argparse.Namespace) -> dict:
    from pixelrl.config import parse_override

    options = dict(
        sensors=["depth"],
        width=args.size,
        height=args.size,
        normalize_depth=True,
        num_scenes=args.scenes,
        max_episode_steps=args.max_steps,
    )
    for text in args.env_option:
        keys, value = parse_override(text)
        options[".".join(keys)] = value
    return options


def run_pixelrl(args: argparse.Namespace, async_collect: bool = True) -> tuple[int, float]:
    from pixelrl.config import Config
    from pixelrl.train import Trainer, config_for

    with tempfile.TemporaryDirectory() as out:
        overrides = [
            f"env.num_envs={args.envs}",
            f"ppo.num_steps={args.steps}",
            f"train.total_frames={args.frames}",
            f"train.output_dir={out}",
            "train.eval_interval=0",
            "train.checkpoint_interval=0",
            "train.final_eval=false",
            "train.tensorboard=false",
            "train.time_limit_minutes=0",
            "imitation.updates=0",  # PPO alone, with SB3's settings below
            "ppo.epochs=4",
            "ppo.num_minibatches=2",
            "ppo.lr=2.5e-4",
            "torch_threads=1",
            f"seed={args.seed}",
            f"train.async={str(async_collect).lower()}",
        ]
        cfg = config_for("embodied/pointnav", overrides)
        cfg.env.kwargs = Config(env_options(args))  # exactly the options SB3's envs get
        trainer = Trainer(cfg)
        start = time.perf_counter()
        trainer.run()
        return trainer.frames, time.perf_counter() - start


class ChannelFirstDepth(gym.ObservationWrapper):
    """Depth H x W x 1 -> 1 x H x W: SB3's NatureCNN reads channel-first float images."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        spaces = dict(env.observation_space.spaces)
        d = spaces["depth"]
        spaces["depth"] = gym.spaces.Box(0.0, 1.0, (d.shape[2], d.shape[0], d.shape[1]), np.float32)
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, obs):
        return {**obs, "depth": np.ascontiguousarray(np.moveaxis(obs["depth"], -1, 0))}


# SB3 reads the normalised float depth as an image (NatureCNN), not as a vector for its MLP
SB3_DEPTH_POLICY = dict(
    normalize_images=False, features_extractor_kwargs=dict(normalized_image=True)
)


def run_sb3(args: argparse.Namespace) -> tuple[int, float]:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    import pixelrl.envs  # noqa: F401
    import pixelrl.envs.nav.registration  # noqa: F401

    torch.set_num_threads(1)
    options = env_options(args)
    venv = DummyVecEnv(
        [
            lambda: ChannelFirstDepth(gym.make("pixelrl/PointNav-v0", **options))
            for _ in range(args.envs)
        ]
    )
    model = PPO(
        "MultiInputPolicy",
        venv,
        n_steps=args.steps,
        batch_size=args.steps * args.envs // 2,  # 2 minibatches
        n_epochs=4,
        learning_rate=2.5e-4,
        gamma=0.99,
        gae_lambda=0.95,
        clip_range=0.2,
        ent_coef=0.01,
        vf_coef=0.5,
        max_grad_norm=0.5,
        policy_kwargs=SB3_DEPTH_POLICY,
        device="cpu",
        seed=args.seed,
        verbose=0,
    )
    start = time.perf_counter()
    model.learn(total_timesteps=args.frames)
    seconds = time.perf_counter() - start
    frames = model.num_timesteps
    venv.close()
    return frames, seconds


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--size", type=int, default=64, help="depth image side in pixels")
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=128, help="rollout length per env")
    p.add_argument("--frames", type=int, default=4096, help="frames each framework trains on")
    p.add_argument("--scenes", type=int, default=4, help="procedural apartments")
    p.add_argument("--max-steps", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip-sb3", action="store_true")
    p.add_argument("--skip-sync", action="store_true", help="no pixelrl train.async=false row")
    p.add_argument("--repeats", type=int, default=2, help="alternating runs of each trainer")
    p.add_argument(
        "--env-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra pixelrl/PointNav-v0 option for both, e.g. 'apartment={rooms: [1, 2]}'",
    )
    args = p.parse_args()

    # alternate the two, several times: the machine is shared and its load drifts by the minute
    runs: dict[str, list[tuple[int, float]]] = {"pixelrl": [], "pixelrl-sync": [], "sb3": []}
    for _ in range(args.repeats):
        runs["pixelrl"].append(run_pixelrl(args))
        if not args.skip_sync:
            runs["pixelrl-sync"].append(run_pixelrl(args, async_collect=False))
        if not args.skip_sb3:
            runs["sb3"].append(run_sb3(args))

    names = {
        "pixelrl": ("pixelrl PPO (async)", "ResNet(GroupNorm)+GRU"),
        "pixelrl-sync": ("pixelrl PPO (sync)", "ResNet(GroupNorm)+GRU"),
        "sb3": ("stable-baselines3 PPO", "NatureCNN+MLP (MultiInputPolicy)"),
    }
    print(f"\npixelrl/PointNav-v0 {env_options(args)}")
    print(
        f"{args.envs} envs x {args.steps} steps, 4 epochs x 2 minibatches, {args.repeats} alternating runs each"
    )
    print(f"{'trainer':<24}{'policy':<36}{'frames':>8}{'seconds':>10}{'frames/s':>10}")
    median: dict[str, float] = {}
    for key, results in runs.items():
        for frames, seconds in results:
            print(
                f"{names[key][0]:<24}{names[key][1]:<36}{frames:>8}{seconds:>10.1f}{frames / seconds:>10.0f}"
            )
        if results:
            median[key] = float(np.median([f / s for f, s in results]))
    if "sb3" in median:
        for key in ("pixelrl", "pixelrl-sync"):
            if key in median:
                print(
                    f"{names[key][0]}: median {median[key]:.0f} frames/s, SB3 {median['sb3']:.0f}:"
                    f" ratio {median[key] / median['sb3']:.2f}x (target >= 3x)"
                )
    if "pixelrl-sync" in median:
        print(f"async / sync: {median['pixelrl'] / median['pixelrl-sync']:.2f}x")


if __name__ == "__main__":
    main()
