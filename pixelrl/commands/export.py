"""``pixelrl export lerobot DATASET_DIR --out DIR``: a recorded dataset as a LeRobot v3 dataset.

The dataset is one ``pixelrl record`` wrote (or ``import``/``--agent`` recordings, the same
format); its good episodes become LeRobot v3's layout (``meta/info.json``, ``data/chunk-000/
file-000.parquet``, screenshots as lossless PNG bytes, camera frames as MP4), which
``lerobot.datasets.lerobot_dataset.LeRobotDataset(repo_id, root=DIR)`` reads. The work is
:func:`pixelrl.envs.recording.interop.export_lerobot`'s; this verb checks the paths first, so a
missing or corrupt dataset, or an ``--out`` that already holds files, is one line (exit 2) and
nothing is written.
"""

from __future__ import annotations

import argparse

from pixelrl.cli import UsageError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("export", help="export recorded episodes to another format (LeRobot)")
    formats = p.add_subparsers(dest="format", metavar="FORMAT")
    lerobot = formats.add_parser(
        "lerobot",
        help="a LeRobot v3 dataset (meta/, data/ parquet, videos/)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lerobot.add_argument("dataset", metavar="DATASET_DIR", help="folder written by pixelrl record")
    lerobot.add_argument("--out", required=True, help="new (or empty) folder for the export")
    lerobot.add_argument("--task", default=None,
                         help="one task text for every episode (default: each episode's "
                         "instruction; navigation: 'navigate to the goal')")  # fmt: skip
    lerobot.set_defaults(func=run_lerobot, prog=lerobot.prog)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def run_lerobot(args: argparse.Namespace) -> int:
    import warnings
    from pathlib import Path

    from pixelrl.envs.recording.dataset import EpisodeDataset
    from pixelrl.envs.recording.interop import export_lerobot

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        raise UsageError(f"--out {out}: exists and is not empty; name a new or empty folder")
    # missing or corrupt: a DatasetError, one line; episodes left out are listed below instead
    dataset = EpisodeDataset(args.dataset, warn=False)
    if not dataset.episodes:
        raise UsageError(f"{args.dataset}: no episodes to export")
    with warnings.catch_warnings():  # export_lerobot reads the folder again: no second warning
        warnings.simplefilter("ignore")
        path = export_lerobot(dataset.root, out, task=args.task)
    total = sum(e.length for e in dataset.episodes.values())
    print(f"wrote {path}: {len(dataset.episodes)} episode(s), {total} frames, LeRobot v3")
    for problem in dataset.problems:
        print(f"left out: {problem}")
    return 0
