"""``pixelrl bench nav``: habitat's measures of an agent over an episode dataset.

Examples::

    pixelrl bench nav --dataset val.json.gz --agent expert
    pixelrl bench nav --dataset val.json.gz --agent checkpoint runs/embodied-pointnav-.../checkpoints/latest.pt
    pixelrl bench nav --dataset val.json.gz --agent random --episodes 50 --out bench_out/

Runs the dataset's episodes in order, prints Success, SPL, SoftSPL and DistanceToGoal (mean and
95% confidence interval), and writes ``episodes.csv`` and ``paths.png`` (top-down maps of the
first episodes) into ``--out``.
"""

from __future__ import annotations

import argparse

AGENTS = ("checkpoint", "expert", "random", "forward-only", "stop")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bench", help="benchmark agents (bench nav: Success/SPL over an episode dataset)"
    )
    kinds = p.add_subparsers(dest="bench", metavar="BENCH")
    nav = kinds.add_parser(
        "nav",
        help="navigation benchmark over a habitat .json.gz episode dataset",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    nav.add_argument("--dataset", required=True, help="habitat episode file (.json.gz)")
    nav.add_argument(
        "--agent",
        nargs="+",
        required=True,
        metavar="KIND [PATH]",
        help=f"one of {', '.join(AGENTS)}; 'checkpoint' takes the checkpoint path (or run folder)",
    )
    nav.add_argument(
        "--task",
        choices=("pointnav", "objectnav"),
        default=None,
        help="default: from the checkpoint, else pointnav",
    )
    nav.add_argument("--episodes", type=int, default=None, help="only the first N episodes")
    nav.add_argument("--out", default="bench_nav", help="folder for episodes.csv and paths.png")
    nav.add_argument("--seed", type=int, default=0)
    nav.add_argument(
        "--deterministic", action="store_true", help="checkpoint agent: argmax actions"
    )
    nav.add_argument(
        "--scene-dir", default=None, help="where relative scene ids of the dataset live"
    )
    nav.add_argument("--paths", type=int, default=6, help="episodes drawn in paths.png")
    nav.add_argument("env_options", nargs="*", help="extra env options key=value (e.g. width=128)")
    nav.set_defaults(func=run_nav)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def run_nav(args: argparse.Namespace) -> int:
    from pixelrl.checkpoint import CheckpointError
    from pixelrl.config import ConfigError, parse_override

    kind, rest = args.agent[0], args.agent[1:]
    if kind not in AGENTS:
        print(f"pixelrl bench nav: error: --agent must be one of {', '.join(AGENTS)}, got {kind!r}")
        return 2
    if (kind == "checkpoint") != bool(rest) or len(rest) > 1:
        print(
            "pixelrl bench nav: error: use '--agent checkpoint PATH' (only checkpoint takes a path)"
        )
        return 2
    try:
        options = {}
        for text in args.env_options:
            parts, value = parse_override(text)
            options[".".join(parts)] = value
    except ConfigError as e:
        print(f"pixelrl bench nav: error: {e}")
        return 2

    from pixelrl.embodied.benchmark import Benchmark, make_agent

    try:
        bench, agent = make_agent(
            kind,
            args.dataset,
            checkpoint=rest[0] if rest else None,
            task=args.task,
            seed=args.seed,
            deterministic=args.deterministic,
            scene_dir=args.scene_dir,
            **options,
        )
    except (CheckpointError, FileNotFoundError, ValueError) as e:
        print(f"pixelrl bench nav: error: {e}")
        return 2
    assert isinstance(bench, Benchmark)
    bench.evaluate(
        agent, num_episodes=args.episodes, output_dir=args.out, num_path_plots=args.paths
    )
    print(bench.table())
    print(f"\nper-episode CSV: {bench.csv_path}\npaths: {bench.png_path}")
    return 0
