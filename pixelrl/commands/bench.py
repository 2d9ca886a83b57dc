"""``pixelrl bench NAME``: benchmarks the domains register (``bench nav``: the navigation
benchmark, :mod:`pixelrl.embodied.cli`), each a sub-command found by name in
:mod:`pixelrl.registry` (kind ``"bench"``)."""

from __future__ import annotations

import argparse

from pixelrl import registry


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bench", help="benchmark agents (bench nav: Success/SPL over an episode dataset)"
    )
    kinds = p.add_subparsers(dest="bench", metavar="BENCH")
    for name in registry.names("bench"):
        registry.resolve("bench", name)(kinds)
    p.set_defaults(func=lambda args: p.print_help() or 2)
