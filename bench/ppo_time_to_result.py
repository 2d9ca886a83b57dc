"""Wall minutes to held-out PointNav Success 0.80: pixelrl's recipe against stable-baselines3's PPO.

Issue 25, item 3(b). ``bench/ppo_throughput.py`` and ``bench/ppo_learner.py`` compare speed;
this compares what a user waits for: training wall minutes until a checkpoint reaches Success
0.80 on held-out apartments, within the same budget (60 minutes), on the same env and
observations (``embodied/pointnav``'s: 64 px depth + GPS/compass, its training apartments and
episode rules, habitat's reward).

- pixelrl: ``pixelrl train embodied/pointnav`` as shipped (imitation of the shortest-path
  follower, a critic warm-up, then PPO; learner + env worker), a checkpoint every
  ``--every-updates``; its minutes are the trainer's own ``train_minutes`` (collection and
  updates, no evaluation).
- SB3: ``PPO("MultiInputPolicy")`` (NatureCNN on depth + MLP on the goal) with rl-zoo3's Atari
  PPO hyperparameters, the best published configuration for pixel PPO in SB3 (8 envs x 128
  steps, 4 epochs, batch 256, linear lr 2.5e-4 and clip 0.1, ent 0.01, vf 0.5), over a
  ``SubprocVecEnv`` (the envs on the other core); a checkpoint every ``--every-minutes`` of
  ``learn()``'s wall time. SB3 has no imitation phase: PPO from scratch is what it offers.

Every checkpoint is then evaluated on the same 200 held-out episodes (8 apartments no run trained
on, habitat's rules, sampled actions, eval seed 0) by :class:`pixelrl.embodied.benchmark.Benchmark`::

    .venv/bin/python bench/ppo_time_to_result.py sb3 --minutes 60 --out runs/ttr
    .venv/bin/python bench/ppo_time_to_result.py pixelrl --minutes 15 --out runs/ttr
    .venv/bin/python bench/ppo_time_to_result.py eval --out runs/ttr      # the table

Train one side at a time on a quiet machine: both use both cores.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ppo_throughput import SB3_DEPTH_POLICY, ChannelFirstDepth  # noqa: E402

RECIPE = "embodied/pointnav"
TARGET = 0.80
HELDOUT = 200  # docs/results' held-out PointNav file; --episodes scores its first N


def recipe_env(args: argparse.Namespace) -> tuple[str, dict, dict]:
    """The recipe's env id, training options and evaluation options."""
    from pixelrl.train import config_for

    cfg = config_for(RECIPE, [])
    train = cfg.env.kwargs.to_dict()
    if args.scenes:
        train["num_scenes"] = args.scenes
    return cfg.env.id, train, {**train, **cfg.env.eval_kwargs.to_dict()}


def heldout(out: Path, episodes: int) -> Path:
    """The held-out episodes of docs/results' PointNav tables (8 unseen apartments)."""
    from pixelrl.envs.nav.sim import generate_dataset

    path = out / f"heldout_{episodes}.json.gz"
    if not path.exists():
        generate_dataset(
            str(path),
            episodes,
            seed=7,
            task="pointnav",
            num_scenes=8,
            scene_seed=100000,
            apartment={"rooms": [2, 5]},
        )
    return path


def train_sb3(args: argparse.Namespace) -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.utils import LinearSchedule
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    env_id, options, _ = recipe_env(args)
    folder = args.out / "sb3"
    folder.mkdir(parents=True, exist_ok=True)

    def make(rank: int):
        def thunk() -> gym.Env:
            import pixelrl.envs  # noqa: F401  (registers the ids in the subprocess)

            return ChannelFirstDepth(gym.make(env_id, **options))

        return thunk

    vec = DummyVecEnv if args.envs_in_process else SubprocVecEnv
    venv = vec([make(i) for i in range(args.envs)])
    total = args.frames  # the linear schedules run over this many frames (the recipe's budget)
    model = PPO(
        "MultiInputPolicy",
        venv,
        n_steps=128,
        batch_size=256,
        n_epochs=4,
        learning_rate=LinearSchedule(2.5e-4, 0.0, 1.0),
        clip_range=LinearSchedule(0.1, 0.0, 1.0),
        ent_coef=0.01,
        vf_coef=0.5,
        max_grad_norm=0.5,
        gamma=0.99,
        gae_lambda=0.95,
        policy_kwargs=SB3_DEPTH_POLICY,
        device="cpu",
        seed=args.seed,
        verbose=0,
    )

    def save(minutes: float, frames: int) -> None:
        name = f"sb3_{minutes:06.2f}min".replace(".", "_")
        model.save(folder / f"{name}.zip")
        row = {"checkpoint": name, "minutes": minutes, "frames": frames}
        with open(folder / "checkpoints.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"  {row}", flush=True)

    class Clock(BaseCallback):
        """A checkpoint every ``--every-minutes`` of wall time; stop at ``--minutes``."""

        def _on_training_start(self) -> None:
            self.start, self.saved = time.perf_counter(), 0

        def _on_step(self) -> bool:
            minutes = (time.perf_counter() - self.start) / 60
            if minutes >= (self.saved + 1) * args.every_minutes or minutes >= args.minutes:
                self.saved += 1
                save(minutes, self.num_timesteps)
            return minutes < args.minutes

    print(f"SB3 PPO on {env_id}, {args.envs} envs ({vec.__name__}), {args.minutes} min", flush=True)
    clock = Clock()
    model.learn(total_timesteps=total, callback=clock)
    minutes = (time.perf_counter() - clock.start) / 60
    if minutes < args.minutes:  # the schedule's frames ran out first (as the recipe's may)
        save(minutes, model.num_timesteps)
    venv.close()


def train_pixelrl(args: argparse.Namespace) -> None:
    from pixelrl.train import Trainer, config_for

    overrides = [
        f"train.output_dir={args.out / 'pixelrl'}",
        f"train.time_limit_minutes={args.minutes}",
        f"train.checkpoint_interval={args.every_updates}",
        "train.eval_interval=0",
        "train.final_eval=false",
        f"env.num_envs={args.envs}",
        f"seed={args.seed}",
    ]
    if args.scenes:
        overrides.append(f"env.kwargs.num_scenes={args.scenes}")
    print(f"pixelrl train {RECIPE} {' '.join(overrides)}", flush=True)
    Trainer(config_for(RECIPE, overrides)).run()


class SB3Agent:
    """An SB3 checkpoint as a :class:`Benchmark` agent (sampled actions, as ours)."""

    def __init__(self, path: Path, seed: int):
        import torch
        from stable_baselines3 import PPO

        self.model = PPO.load(path, device="cpu")
        torch.manual_seed(seed)

    def reset(self) -> None:
        pass

    def act(self, obs: dict) -> int:
        obs = {**obs, "depth": np.moveaxis(obs["depth"], -1, 0)}
        action, _ = self.model.predict(obs, deterministic=False)
        return int(action)


def checkpoints(args: argparse.Namespace) -> list[tuple[str, str, float, int]]:
    """(trainer, path, training minutes, frames) of every checkpoint written so far."""
    from pixelrl.checkpoint import load_checkpoint

    rows = []
    index = args.out / "sb3" / "checkpoints.jsonl"
    if index.exists():
        for line in index.read_text().splitlines():
            row = json.loads(line)
            path = str(args.out / "sb3" / f"{row['checkpoint']}.zip")
            rows.append(("sb3", path, row["minutes"], row["frames"]))
    for path in sorted((args.out / "pixelrl" / "checkpoints").glob("update_*.pt")):
        last = load_checkpoint(path)["history"][-1]
        rows.append(("pixelrl", str(path), last["train_minutes"], int(last["frames"])))
    return sorted(rows, key=lambda r: (r[0], r[2]))


def evaluate(args: argparse.Namespace) -> None:
    from pixelrl.embodied.benchmark import Benchmark, build_agent

    _, _, eval_options = recipe_env(args)
    found = checkpoints(args)
    if not found:
        print(f"no checkpoints under {args.out}: train them first (usage in this script's doc)")
        return
    dataset = heldout(args.out, args.heldout)
    table = args.out / "time_to_result.csv"
    done = {}
    if table.exists():
        done = {r["path"]: r for r in csv.DictReader(table.open())}
    fields = ["trainer", "path", "minutes", "frames", "success", "success_half", "spl"]
    for trainer, path, minutes, frames in found:
        if path in done or (args.only and trainer != args.only):
            continue
        bench = Benchmark(dataset, task="pointnav", **eval_options)
        if trainer == "sb3":
            agent = SB3Agent(Path(path), seed=0)
        else:
            agent = build_agent("checkpoint", bench.env, path, seed=0)
        bench.evaluate(agent, num_episodes=args.episodes, seed=0, progress=False)
        bench.close()
        success, half = bench.summary["success"]
        row = dict(
            trainer=trainer, path=path, minutes=f"{minutes:.2f}", frames=frames,
            success=f"{success:.3f}", success_half=f"{half:.3f}", spl=f"{bench.summary['spl'][0]:.3f}",
        )  # fmt: skip
        done[path] = row
        new = not table.exists()
        with table.open("a", newline="") as f:
            writer = csv.DictWriter(f, fields)
            if new:
                writer.writeheader()
            writer.writerow(row)
        print(
            f"  {trainer:<8} {minutes:6.1f} min {frames:>9,} frames  Success {success:.3f}",
            flush=True,
        )
    print("\n| trainer | training minutes | frames | held-out Success [95% CI] | SPL |")
    print("|---|---|---|---|---|")
    first: dict[str, str] = {}
    for row in sorted(done.values(), key=lambda r: (r["trainer"], float(r["minutes"]))):
        s, h = float(row["success"]), float(row["success_half"])
        print(
            f"| {row['trainer']} | {float(row['minutes']):.1f} | {int(row['frames']):,} | "
            f"{s:.3f} [{max(0, s - h):.3f}, {min(1, s + h):.3f}] | {row['spl']} |"
        )
        if s >= TARGET and row["trainer"] not in first:
            first[row["trainer"]] = row["minutes"]
    for trainer in sorted({r["trainer"] for r in done.values()}):
        best = max(float(r["success"]) for r in done.values() if r["trainer"] == trainer)
        reached = first.get(trainer)
        print(
            f"{trainer}: Success >= {TARGET:.2f} first at {float(reached):.1f} training minutes"
            if reached
            else f"{trainer}: never reached {TARGET:.2f}; best Success {best:.3f}"
        )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "what", nargs="?", default="eval", choices=["sb3", "pixelrl", "eval"],
        help="train one side, or score every checkpoint so far (the default: trains nothing)",
    )  # fmt: skip
    p.add_argument("--out", type=Path, default=Path("runs/time_to_result"))
    p.add_argument("--minutes", type=float, default=60.0, help="training budget (wall)")
    p.add_argument("--every-minutes", type=float, default=10.0, help="SB3 checkpoints")
    p.add_argument("--every-updates", type=int, default=50, help="pixelrl checkpoints")
    p.add_argument("--frames", type=int, default=2_500_000, help="SB3's schedule length")
    p.add_argument("--envs", type=int, default=8, help="both sides (the recipe's 8)")
    p.add_argument("--scenes", type=int, default=0, help="training apartments (0: the recipe's)")
    p.add_argument("--envs-in-process", action="store_true", help="SB3: DummyVecEnv")
    p.add_argument("--heldout", type=int, default=HELDOUT, help="episodes in the held-out file")
    p.add_argument("--episodes", type=int, default=HELDOUT, help="of them, how many are scored")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--only", choices=["sb3", "pixelrl"], help="eval: score one side's checkpoints")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    {"sb3": train_sb3, "pixelrl": train_pixelrl, "eval": evaluate}[args.what](args)


if __name__ == "__main__":
    main()
