"""How much faster ``pixelrl bench nav --agent vlm`` is with batched episodes (issue 42).

    .venv/bin/python bench/vlm_nav_batch_speed.py                      # a tiny random-weight agent
    .venv/bin/python bench/vlm_nav_batch_speed.py --agent RUN/model --episodes 200 --batch 8

Plays the same episodes with ``Benchmark.evaluate(agent, batch_size=1)`` (one episode at a time,
the old way) and ``batch_size=N`` in one run, alternating: the episodes are split into
``--rounds`` datasets, and each round plays its dataset both ways (batch 1 first in even rounds,
batch N first in odd ones), so a change in the machine's load falls on both. Prints episodes/s of
each, their ratio, the process's CPU time, the load average before and after (the machine is
shared when it is above its core count), and how many episodes' rows (success, spl, softspl,
distance, path length, collisions, steps) are identical both ways.

Without ``--agent`` the agent is a tiny Qwen2-VL with random weights (``tiny-qwen2_vl``): its
answers rarely parse, so nearly every turn is an idle step and every episode runs to the step
limit (``--max-steps``) -- the most turns, and so the most ``generate`` calls, an episode can take.
``--threads`` sets torch's threads (on a loaded 2-core machine 1 thread was far faster for the
tiny model than torch's default of 2: docs/results/vlm_nav.md).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from pixelrl.envs.nav.measures import HEADLINE, extra_measures

ROW = (*HEADLINE, *extra_measures())  # every registered measure, the table's first
# small PointNav episodes: 1-room apartments, 1-3 m geodesics
APARTMENT = {"rooms": [1, 2], "clutter": 0.0}
RULES = {"min_geodesic": 1.0, "max_geodesic": 3.0, "min_ratio": 1.0}


def tiny_agent(folder: Path, max_steps: int, size: int) -> Path:
    """A navigation VLM agent with random weights (tiny Qwen2-VL), saved in ``folder``."""
    from pixelrl.embodied.vlm_agent import AgentSpec, save_agent
    from pixelrl.vision.vlm import load_vlm

    spec = AgentSpec(env_kwargs={"sensors": ["rgb"], "width": size, "height": size,
                                 "turn_angle": 30, "max_episode_steps": max_steps})  # fmt: skip
    nav = spec.env_kwargs
    policy = load_vlm("tiny-qwen2_vl", codec=spec.codec(0.25, float(nav["turn_angle"])), seed=0)
    return save_agent(policy, spec, folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default=None, help="a navigation VLM agent folder (RUN/model)")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=24, help="the tiny agent's step limit")
    parser.add_argument("--size", type=int, default=64, help="the tiny agent's frames, px a side")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: torch's own, as pixelrl bench nav runs)")  # fmt: skip
    args = parser.parse_args()

    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)

    from pixelrl.embodied.benchmark import Benchmark, agent_env_options, build_agent
    from pixelrl.envs.nav.sim import generate_dataset

    tmp = Path(tempfile.mkdtemp(prefix="vlm_nav_batch_speed_"))
    folder = args.agent or tiny_agent(tmp / "agent", args.max_steps, args.size)
    options, task = agent_env_options("vlm", str(folder))
    per_round = [args.episodes // args.rounds + (r < args.episodes % args.rounds)
                 for r in range(args.rounds)]  # fmt: skip
    benches = []
    for r, n in enumerate(per_round):
        path = tmp / f"round{r}.json.gz"
        generate_dataset(str(path), n, seed=r, num_scenes=2, scene_seed=100 + r,
                         apartment=APARTMENT, episode_rules=RULES)  # fmt: skip
        benches.append(Benchmark(path, task=task, **options))
    agent = build_agent("vlm", benches[0].env, str(folder))
    sizes = (1, args.batch)
    wall = dict.fromkeys(sizes, 0.0)
    cpu = dict.fromkeys(sizes, 0.0)
    rows: dict[int, list] = {b: [] for b in sizes}
    load_before = os.getloadavg()
    for r, bench in enumerate(benches):
        spent = {}
        for b in sizes if r % 2 == 0 else sizes[::-1]:
            t, c = time.perf_counter(), time.process_time()
            bench.evaluate(agent, batch_size=b, progress=False)
            spent[b] = time.perf_counter() - t
            wall[b] += spent[b]
            cpu[b] += time.process_time() - c
            rows[b] += [tuple(row[m] for m in ROW) for row in bench.rows]
        bench.close()
        print(f"round {r + 1}/{args.rounds}: {len(bench.rows)} episodes, batch 1 {spent[1]:.1f} s, "
              f"batch {args.batch} {spent[args.batch]:.1f} s ({spent[1] / spent[args.batch]:.2f}x), "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    load_after = os.getloadavg()
    n = len(rows[1])
    same = sum(x == y for x, y in zip(rows[1], rows[args.batch]))
    steps = sum(row[-1] for row in rows[1])
    print(f"\nagent: {args.agent or f'tiny-qwen2_vl, random weights ({args.size} px rgb)'}; "
          f"{n} episodes ({steps:.0f} steps) per batch size, {args.rounds} rounds alternating; "
          f"torch threads {torch.get_num_threads()}; "
          f"{os.cpu_count()} cores, load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after")  # fmt: skip
    print("| batch | episodes | wall s | episodes/s | CPU s |")
    print("|---|---|---|---|---|")
    for b in sizes:
        print(f"| {b} | {n} | {wall[b]:.1f} | {n / wall[b]:.3f} | {cpu[b]:.1f} |")
    print(f"batch {args.batch} / batch 1: {wall[1] / wall[args.batch]:.2f}x episodes/s "
          f"(CPU time {cpu[1] / cpu[args.batch]:.2f}x less); identical rows: {same}/{n}")  # fmt: skip


if __name__ == "__main__":
    main()
