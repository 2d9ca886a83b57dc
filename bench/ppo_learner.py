"""PPO's learner alone, pixelrl against sb3-contrib's RecurrentPPO, on the same network and rollout.

Issue 25, item 3(a). ``bench/ppo_throughput.py`` times whole training calls, where both sides
pay the same environment cost and compare different networks; this script times only the update
on a stored rollout, with the same network on both sides:

- pixelrl: ``embodied/pointnav``'s policy (GroupNorm ResNet on depth + goal embedding + a
  recurrent core, actor and critic heads) with ``policy.rnn_type=lstm``, its rollout collected
  once by the trainer's collector, then ``PPO.compute_advantages`` + ``PPO.update`` repeated;
- SB3: ``RecurrentPPO("MultiInputLstmPolicy")`` whose features extractor is the same
  :class:`~pixelrl.embodied.resnet.VisualEncoder` and goal embedding, one LSTM shared by actor
  and critic (``shared_lstm=True``, no critic LSTM, no MLP layers: the same heads), its rollout
  collected once by ``learn``, then ``train()`` repeated.

The differences left: our core also embeds the previous action (32 numbers more into the LSTM),
and SB3's buffer cuts the rollout into per-env sequences at episode ends (``RecurrentPPO``)
while ours runs each env's whole rollout as one sequence, resetting the state at episode ends.
Both: the same ``--envs`` x ``--steps`` rollout, 4 epochs, 2 minibatches, one torch thread.
The two alternate ``--repeats`` times; the figure is rollout frames per second of update (median),
and the ratio pixelrl / SB3 (issue 25's target: >= 2)::

    .venv/bin/python bench/ppo_learner.py                 # 64 px depth, 8 envs x 128 steps
    .venv/bin/python bench/ppo_learner.py --size 128 --repeats 5
    .venv/bin/python bench/ppo_learner.py --backbone nature   # SB3's NatureCNN on both sides

``--backbone nature`` is the reverse row: SB3's own image encoder (NatureCNN's three convs and
its linear layer, ``pixelrl.embodied.resnet.NatureCNN``, the same layer shapes as SB3's class)
in our trainer (``policy.backbone=nature``) and as RecurrentPPO's features extractor.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import gymnasium as gym
import numpy as np

EPOCHS, MINIBATCHES, HIDDEN, EMBED = 4, 2, 256, 32


def env_options(args: argparse.Namespace) -> dict:
    return dict(
        sensors=["depth"],
        width=args.size,
        height=args.size,
        normalize_depth=True,
        num_scenes=args.scenes,
        scene_seed=0,
        apartment={"rooms": [2, 5]},
        max_episode_steps=500,
    )


class Ours:
    """The trainer's PPO on one stored rollout (``update()`` times one update)."""

    def __init__(self, args: argparse.Namespace):
        from pixelrl.config import Config
        from pixelrl.train import Trainer, config_for

        self._dir = tempfile.TemporaryDirectory()
        overrides = [
            f"env.num_envs={args.envs}",
            f"ppo.num_steps={args.steps}",
            f"ppo.epochs={EPOCHS}",
            f"ppo.num_minibatches={MINIBATCHES}",
            "ppo.critic_warmup_updates=0",
            "policy.rnn_type=lstm",
            f"policy.backbone={args.backbone}",
            f"policy.hidden_size={HIDDEN}",
            "imitation.updates=0",
            "train.async=false",
            "train.tensorboard=false",
            f"train.output_dir={self._dir.name}",
            "torch_threads=1",
            "collect.torch_threads=1",
            f"seed={args.seed}",
        ]
        cfg = config_for("embodied/pointnav", overrides)
        cfg.env.kwargs = Config(env_options(args))
        self.trainer = Trainer(cfg)
        self.trainer.tracker.begin(0)
        self.rollout = self.trainer._collect("policy", "policy")
        self.trainer.tracker.mark_done()
        self.frames = args.envs * args.steps
        self.parameters = sum(p.numel() for p in self.trainer.policy.parameters())

    def update(self) -> float:
        trainer = self.trainer
        start = time.perf_counter()
        trainer.ppo.compute_advantages(trainer.storage, self.rollout.next_value)
        trainer.ppo.update(trainer.storage)
        return time.perf_counter() - start

    def close(self) -> None:
        self.trainer.envs.close()
        self._dir.cleanup()


def _extractor_class(backbone: str):
    import torch
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from torch import nn

    from pixelrl.embodied.resnet import VisualEncoder

    class DepthAndGoal(BaseFeaturesExtractor):
        """embodied/pointnav's visual encoder and goal embedding, as an SB3 features extractor."""

        def __init__(self, observation_space: gym.spaces.Dict, **policy):
            depth = observation_space["depth"]
            goal = observation_space["pointgoal_with_gps_compass"]
            super().__init__(observation_space, features_dim=HIDDEN + EMBED)
            self.visual = VisualEncoder(
                depth.shape[-1],
                tuple(depth.shape[:2]),
                HIDDEN,
                backbone,
                policy["base_planes"],
                policy["ngroups"],
                tuple(policy["layers"]),
                policy["feature_size"],
            )
            self.goal = nn.Linear(int(np.prod(goal.shape)), EMBED)

        def forward(self, obs: dict) -> torch.Tensor:
            image = obs["depth"].permute(0, 3, 1, 2)
            return torch.cat([self.visual(image), self.goal(obs["pointgoal_with_gps_compass"])], -1)

    return DepthAndGoal


class SB3:
    """sb3-contrib's RecurrentPPO on one stored rollout (``update()`` times one ``train()``)."""

    def __init__(self, args: argparse.Namespace):
        import torch
        from sb3_contrib import RecurrentPPO
        from stable_baselines3.common.vec_env import DummyVecEnv

        import pixelrl.envs  # noqa: F401  (registers the ids)
        from pixelrl.train import config_for

        torch.set_num_threads(1)
        policy = config_for("embodied/pointnav", []).policy
        options = env_options(args)
        venv = DummyVecEnv(
            [lambda: gym.make("pixelrl/PointNav-v0", **options) for _ in range(args.envs)]
        )
        self.model = RecurrentPPO(
            "MultiInputLstmPolicy",
            venv,
            n_steps=args.steps,
            batch_size=args.steps * args.envs // MINIBATCHES,
            n_epochs=EPOCHS,
            learning_rate=2.5e-4,
            clip_range=0.2,
            ent_coef=0.01,
            vf_coef=0.5,
            max_grad_norm=0.5,
            policy_kwargs=dict(
                features_extractor_class=_extractor_class(args.backbone),
                features_extractor_kwargs={
                    k: policy[k] for k in ("base_planes", "ngroups", "layers", "feature_size")
                },
                lstm_hidden_size=HIDDEN,
                n_lstm_layers=1,
                shared_lstm=True,
                enable_critic_lstm=False,
                net_arch=[],
                normalize_images=False,
            ),
            device="cpu",
            seed=args.seed,
            verbose=0,
        )
        self.model.learn(total_timesteps=args.steps * args.envs)  # one rollout (and one update)
        self.frames = args.envs * args.steps
        self.parameters = sum(p.numel() for p in self.model.policy.parameters())

    def update(self) -> float:
        start = time.perf_counter()
        self.model.train()
        return time.perf_counter() - start

    def close(self) -> None:
        self.model.get_env().close()


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=64, help="depth image side, px")
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=128, help="rollout length per env")
    parser.add_argument("--scenes", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3, help="updates timed per side")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--backbone",
        choices=["resnet", "nature"],
        default="resnet",
        help="image encoder, both sides",
    )
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    sides = {"pixelrl": Ours(args), "sb3-contrib": SB3(args)}
    for side in sides.values():
        side.update()  # warm up (first-call allocations)
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.repeats):
        for name, side in sides.items():
            times[name].append(side.update())
    fps = {name: sides[name].frames / statistics.median(t) for name, t in times.items()}

    print(
        f"\nPPO update on a stored rollout of {args.envs} x {args.steps} frames, depth "
        f"{args.size} px, {args.backbone} encoder + LSTM, {EPOCHS} epochs x {MINIBATCHES} minibatches, 1 thread, median of "
        f"{args.repeats}"
    )
    print(f"{'learner':<14}{'parameters':>12}{'s / update':>12}{'frames/s':>10}")
    for name, side in sides.items():
        print(
            f"{name:<14}{side.parameters:>12,}{statistics.median(times[name]):>12.2f}"
            f"{fps[name]:>10.0f}"
        )
    ratio = fps["pixelrl"] / fps["sb3-contrib"]
    print(f"ratio pixelrl / sb3-contrib: {ratio:.2f}x (issue 25's target: >= 2x)")
    for side in sides.values():
        side.close()
    return {**fps, "ratio": ratio}


if __name__ == "__main__":
    main()
