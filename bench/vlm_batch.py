"""Batched navigation VLM evaluation against one episode at a time (issue 57 item 2).

    .venv/bin/python bench/vlm_batch.py --agent RUN/model            # a trained agent
    .venv/bin/python bench/vlm_batch.py                              # tiny random-weight agent
    .venv/bin/python bench/vlm_batch.py --agent RUN/model --profile 8   # where batch 8's time goes

Plays the same episodes with ``Benchmark.evaluate(agent, batch_size=B)`` for each ``--batches``
size, in one process with one torch thread, and prints episodes per CPU second (the process's
own CPU time: on a shared machine wall time is mostly waiting for a core), the ratio to batch 1,
and whether every episode received exactly the same actions at every batch size (the env's
actions, recorded per episode by a wrapper: greedy answers must not depend on the batch).

Without ``--agent`` the agent is the shipped recipe's model (``embodied/vlm-sft``'s tiny SmolVLM
size) with random weights: its answers do not parse, so every turn is an idle step and every
episode runs to ``--max-steps``. With ``--profile B`` batch B runs under cProfile and the top
functions by own time are printed instead of the table.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

# the episodes: embodied/vlm-sft's apartments (1-2 rooms, some clutter), held-out scene seeds
APARTMENT = {"rooms": [1, 2], "clutter": 0.5}
RULES = {"min_geodesic": 1.0, "max_geodesic": 5.0, "min_ratio": 1.0}
# the size of embodied/vlm-sft's model (embodied/configs/vlm_sft.yaml)
TEXT_SIZE = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4}
VISION_SIZE = {"image_size": 64, "patch_size": 8, "scale_factor": 2, "embed_dim": 64,
               "num_heads": 4, "depth": 2}  # fmt: skip


class ActionLog(gym.Wrapper):
    """Records the actions each episode (by its dataset index) receives."""

    def __init__(self, env: gym.Env, log: dict[int, list]) -> None:
        super().__init__(env)
        self.log, self.episode = log, None

    def reset(self, **kwargs: Any):
        self.episode = (kwargs.get("options") or {}).get("episode_index")
        self.log[self.episode] = []
        return self.env.reset(**kwargs)

    def step(self, action: Any):
        self.log[self.episode].append(action)
        return self.env.step(action)


def logged_benchmark(bench: Any, size: int, log: dict[int, list]) -> None:
    """Wrap ``bench``'s envs (``size`` of them, for batched play) in :class:`ActionLog`."""
    bench._envs(size)
    bench.env = ActionLog(bench.env, log)
    bench._more_envs[:] = [ActionLog(e, log) for e in bench._more_envs]


def tiny_agent(folder: Path, max_steps: int) -> Path:
    """A navigation VLM agent of embodied/vlm-sft's size with random weights."""
    from pixelrl.embodied.vlm_agent import AgentSpec, NavPrompt, save_agent
    from pixelrl.vision.vlm import load_vlm

    spec = AgentSpec(prompt=NavPrompt(distance_floor=True), max_new_tokens=12,
                     env_kwargs={"sensors": ["rgb"], "width": 64, "height": 64, "turn_angle": 30,
                                 "max_episode_steps": max_steps})  # fmt: skip
    policy = load_vlm("tiny-smolvlm", codec=spec.codec(0.25, 30.0), seed=0,
                      text_size=TEXT_SIZE, vision_size=VISION_SIZE, vocab_size=800)  # fmt: skip
    return save_agent(policy, spec, folder)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default=None, help="a navigation VLM agent folder (RUN/model)")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--max-steps", type=int, default=100, help="the episodes' step limit")
    parser.add_argument("--seed", type=int, default=0, help="the dataset's seed")
    parser.add_argument(
        "--save-actions",
        default=None,
        metavar="JSON",
        help="write every episode's actions at each batch size to this file",
    )
    parser.add_argument(
        "--against",
        default=None,
        metavar="JSON",
        help="another run's --save-actions file: count episodes whose actions "
        "at batch 1 are the same as here",
    )
    parser.add_argument("--profile", type=int, default=None, metavar="B",
                        help="profile batch B (cProfile) and print where its time goes")  # fmt: skip
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from pixelrl.embodied.benchmark import Benchmark, agent_env_options, build_agent
    from pixelrl.envs.nav.sim import generate_dataset

    tmp = Path(tempfile.mkdtemp(prefix="vlm_batch_"))
    folder = args.agent or tiny_agent(tmp / "agent", args.max_steps)
    options, task = agent_env_options("vlm", str(folder))
    options["max_episode_steps"] = args.max_steps
    path = tmp / "episodes.json.gz"
    generate_dataset(str(path), args.episodes, seed=args.seed, num_scenes=8,
                     scene_seed=100_000 + args.seed, apartment=APARTMENT,
                     episode_rules=RULES)  # fmt: skip
    bench = Benchmark(path, task=task, **options)
    agent = build_agent("vlm", bench.env, str(folder))
    if args.profile is not None:
        log: dict[int, list] = {}
        logged_benchmark(bench, args.profile, log)
        profile = cProfile.Profile(time.process_time)  # CPU time: the machine may be shared
        profile.runcall(bench.evaluate, agent, batch_size=args.profile, progress=False)
        steps = sum(len(a) for a in log.values())
        print(f"batch {args.profile}: {len(log)} episodes, {steps} steps")
        stats = pstats.Stats(profile).strip_dirs()
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
        return
    bench.evaluate(agent, num_episodes=2, batch_size=1, progress=False)  # imports, first calls
    bench.close()
    logs: dict[int, dict[int, list]] = {b: {} for b in args.batches}
    cpu: dict[int, float] = {}
    wall: dict[int, float] = {}
    for b in args.batches:  # each size in fresh envs, as a user's run (scene caches cold)
        t, c = time.perf_counter(), cpu_seconds()
        bench = Benchmark(path, task=task, **options)
        logged_benchmark(bench, b, logs[b])
        bench.evaluate(agent, batch_size=b, progress=False)
        cpu[b], wall[b] = cpu_seconds() - c, time.perf_counter() - t
        bench.close()
    if args.save_actions:
        Path(args.save_actions).write_text(json.dumps({b: logs[b] for b in args.batches}))
    first = args.batches[0]
    steps = sum(len(a) for a in logs[first].values())
    print(f"agent: {args.agent or 'embodied/vlm-sft size, random weights'}; {args.episodes} "
          f"episodes ({steps} steps at batch {first}); torch threads {torch.get_num_threads()}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(
        f"| batch | episodes | CPU s | episodes / CPU s | vs batch {first} | wall s | "
        "same actions as batch 1 |"
    )
    print("|---:|---:|---:|---:|---:|---:|---|")
    for b in args.batches:
        same = sum(logs[b].get(k) == actions for k, actions in logs[first].items())
        print(
            f"| {b} | {args.episodes} | {cpu[b]:.1f} | {args.episodes / cpu[b]:.3f} | "
            f"{cpu[first] / cpu[b]:.2f}x | {wall[b]:.1f} | {same}/{len(logs[first])} |"
        )
    if args.against:
        other = json.loads(Path(args.against).read_text())[str(first)]
        same = sum(other.get(str(k)) == actions for k, actions in logs[first].items())
        print(f"batch {first} actions the same as {args.against}'s: {same}/{len(logs[first])}")


if __name__ == "__main__":
    main()
