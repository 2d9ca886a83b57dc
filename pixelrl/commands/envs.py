"""``pixelrl envs``: list every registered environment id with a one-line description."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "envs",
        help="list registered environments",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--filter", default="", help="only ids containing this text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pixelrl import envs

    rows = [(i, d) for i, d in envs.list_envs() if args.filter.lower() in i.lower()]
    width = max((len(i) for i, _ in rows), default=0)
    for env_id, description in rows:
        print(f"{env_id:<{width}}  {description}")
    print(f"\n{len(rows)} environments")
    return 0
