"""The PointNav part of ``make demo``: train a small agent for a few minutes, then benchmark it.

    from pixelrl.embodied.demo import pointnav_demo
    pointnav_demo("outputs/demo/pointnav")      # ~2.5 minutes on one core

Trains ``embodied/pointnav-small`` (one or two rooms, 32 px depth) with PPO, writes a held-out
episode file (other scene seeds, habitat's format), and runs the trained agent and three
baselines (expert, random, forward-only) through :class:`pixelrl.embodied.benchmark.Benchmark`.
Prints one table; leaves the run folder (learning curve, checkpoints), ``heldout.json.gz``,
``episodes.csv``, ``paths.png`` (the trained agent's first paths, with a legend) and
``measures.json`` (the table) in ``out``. ``pixelrl demo`` runs it as
``python -m pixelrl.embodied.demo`` on the second core while the GUI part trains.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def pointnav_demo(
    out: str | Path = "outputs/demo/pointnav", frames: int = 40_000, episodes: int = 30
) -> dict[str, dict[str, float]]:
    """Train, benchmark, print the table; returns ``{agent: measures}``."""
    from pixelrl.embodied.agents import ExpertAgent, ForwardOnlyAgent, PolicyAgent, RandomAgent
    from pixelrl.embodied.benchmark import Benchmark
    from pixelrl.embodied.task import env_kwargs
    from pixelrl.envs.nav.sim import generate_dataset
    from pixelrl.train import Trainer, config_for

    out = Path(out)
    cfg = config_for(
        "embodied/pointnav-small",
        [
            f"train.output_dir={out / 'run'}",
            f"train.total_frames={frames}",
            "train.final_eval=false",
        ],
    )
    print(f"training embodied/pointnav-small for {frames:,} frames ...")
    Trainer(cfg).run()

    options: dict[str, Any] = env_kwargs(cfg, "eval")
    dataset = out / "heldout.json.gz"
    source = {k: options[k] for k in ("num_scenes", "scene_seed", "apartment", "episode_rules")}
    generate_dataset(str(dataset), episodes, seed=0, **source)
    bench = Benchmark(dataset, **options)
    results: dict[str, dict[str, float]] = {}
    agents = {
        "trained (PPO)": PolicyAgent.from_checkpoint(
            out / "run", bench.env.observation_space, bench.env.action_space
        ),
        "expert": ExpertAgent(bench.env),
        "random": RandomAgent(seed=0),
        "forward-only": ForwardOnlyAgent(),
    }
    for name, agent in agents.items():
        results[name] = bench.evaluate(
            agent, output_dir=out if name == "trained (PPO)" else None, progress=False
        )
        ci = bench.summary
        results[name]["success_ci"] = ci["success"][1]
        results[name]["spl_ci"] = ci["spl"][1]
    bench.close()

    print(f"\nPointNav on {episodes} held-out episodes ({dataset})")
    print(f"{'agent':<16}{'Success':>16}{'SPL':>16}{'SoftSPL':>10}{'DistToGoal':>12}")
    for name, m in results.items():
        print(
            f"{name:<16}{m['success']:>9.2f} ±{m['success_ci']:.2f}{m['spl']:>9.2f} ±{m['spl_ci']:.2f}"
            f"{m['softspl']:>10.2f}{m['distance_to_goal']:>12.2f}"
        )
    print(
        f"learning curve: {out / 'run' / 'learning_curve.png'}; trained paths: {out / 'paths.png'}"
    )
    (out / "measures.json").write_text(json.dumps(results, indent=1) + "\n")
    return results


def main(argv: list[str] | None = None) -> int:
    """``python -m pixelrl.embodied.demo [--out DIR] [--frames N] [--episodes N]`` (how
    ``pixelrl demo`` runs this part beside the GUI part)."""
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="outputs/demo/pointnav")
    p.add_argument("--frames", type=int, default=40_000)
    p.add_argument("--episodes", type=int, default=30)
    args = p.parse_args(argv)
    pointnav_demo(args.out, args.frames, args.episodes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
