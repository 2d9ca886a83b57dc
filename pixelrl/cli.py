"""The ``pixelrl`` command line: one sub-command per module in ``pixelrl/commands``.

Each command module exposes ``add_parser(subparsers)``, which adds its parser and sets
``func`` (called with the parsed arguments, returning an exit code). Command modules import
heavy libraries inside ``func`` so that ``pixelrl --help`` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Order here is the order in `pixelrl --help`.
COMMANDS = ["envs", "train", "bench", "record", "replay", "view", "demo", "eval"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pixelrl",
        description="Train and evaluate agents that act from pixels (GUI and embodied).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"pixelrl.commands.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
