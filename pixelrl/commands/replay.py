"""``pixelrl replay DIR``: re-run each recorded episode from its seed and check it reproduces.

Prints one line per episode (exact-frame match rate, first divergent step, whether rewards,
done flags and success match) and exits 1 if any episode diverges.

The recording chooses only the env options that shape an episode (screen size, task family,
step limit, ...: :mod:`pixelrl.envs.recording.env_options`); a display, an existing-display
flag, a binary, a path or a timeout comes from ``--env-kwargs`` only. A recording that carries
one is refused (one line, exit 2) before any env is made.
"""

from __future__ import annotations

import argparse

from pixelrl.commands.args import json_object, non_negative_int


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "replay",
        help="replay recorded episodes and report fidelity",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dir", help="dataset folder written by `pixelrl record`")
    p.add_argument("--episode", type=non_negative_int, action="append",
                   help="only this episode (repeatable)")  # fmt: skip
    p.add_argument("--env-kwargs", type=json_object, default=None, metavar="JSON",
                   help="env options over the recording's; the only way to give those a "
                   "recording may not choose (display, allow_existing_display, paths, "
                   "binaries, timeouts)")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pixelrl.envs.recording.dataset import EpisodeDataset
    from pixelrl.envs.recording.format import DatasetError
    from pixelrl.envs.recording.replay import fidelity_table, replay_dataset

    dataset = EpisodeDataset(args.dir)  # DatasetError: one line
    missing = sorted(set(args.episode or ()) - set(dataset.episodes))
    if missing:
        raise DatasetError(f"{args.dir} has no (loadable) episode {missing}")
    results = replay_dataset(  # a refused env option: one line, before any env is made
        dataset, episodes=args.episode, progress=True, env_kwargs=args.env_kwargs
    )
    print(fidelity_table(results))
    for p in dataset.problems:
        print(f"left out: {p}")
    return 0 if results and all(r.ok for r in results) and not dataset.problems else 1
