"""The ``pixelrl`` command line: one sub-command per module in ``pixelrl/commands``, and the
verbs the domains register (``eval``: :mod:`pixelrl.registry`, kind ``"command"``).

Each command module exposes ``add_parser(subparsers)``, which adds its parser and sets
``func`` (called with the parsed arguments, returning an exit code). Command modules import
heavy libraries inside ``func`` so that ``pixelrl --help`` stays instant.

One error contract for every verb: a user mistake ends in one line ``pixelrl VERB: error: ...``
on stderr and exit status 2. Counts and sizes are checked while parsing
(:mod:`pixelrl.commands.args`); later mistakes surface as :class:`UsageError` or as one of the
library's own error types (:data:`USER_ERRORS`). Anything else is a bug and keeps its traceback;
``--debug`` (anywhere on the line) shows the traceback of a user mistake too.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence

from pixelrl import registry

# Order here is the order in `pixelrl --help`: a verb of pixelrl/commands, or one a domain
# registers (then found by name); the domains' other verbs follow, in registration order.
COMMANDS = [
    "envs",
    "train",
    "read",
    "serve",
    "bench",
    "record",
    "replay",
    "view",
    "export",
    "demo",
    "eval",
    "tasks",
]

# The library's error types for bad input (by qualified name, so nothing is imported for them):
# raised from a command, each is a user mistake, reported in one line. The domains add theirs
# (kind "user_error" in pixelrl.registry).
USER_ERRORS = frozenset(
    {
        "pixelrl.cli.UsageError",
        "pixelrl.config.ConfigError",
        "pixelrl.registry.UnknownName",
        "pixelrl.vision.model_source.CheckpointError",
        "pixelrl.envs.gui_action.ActionError",
        "pixelrl.envs.recording.format.DatasetError",
        "pixelrl.envs.nav.dataset.EpisodeFileError",
        "pixelrl.envs.nav.mesh_io.SceneFileError",
        "pixelrl.envs.x11.tasks.TaskError",
        "pixelrl.envs.x11.sandbox.SandboxError",
        "pixelrl.vision.reader.ReaderError",
    }
)


class UsageError(Exception):
    """A mistake in how a command was called, found after parsing (a missing file, an option
    the env does not take, ...): the command's one-line error, exit status 2."""


def is_user_error(error: BaseException) -> bool:
    names = USER_ERRORS | {
        registry.target("user_error", n).replace(":", ".") for n in registry.names("user_error")
    }
    return any(f"{c.__module__}.{c.__qualname__}" in names for c in type(error).__mro__)


def command_parsers() -> list[Callable[[argparse._SubParsersAction], None]]:
    """Each verb's ``add_parser``, in the order of ``pixelrl --help`` (a domain's verb only
    where that domain is installed)."""
    domains = registry.names("command")
    parsers = []
    for name in COMMANDS + [n for n in domains if n not in COMMANDS]:
        if name in domains:
            parsers.append(registry.resolve("command", name))
        elif importlib.util.find_spec(f"pixelrl.commands.{name}"):
            parsers.append(importlib.import_module(f"pixelrl.commands.{name}").add_parser)
    return parsers


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pixelrl",
        description="Train and evaluate agents that act from pixels (GUI and embodied).",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of a user mistake too"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add_parser in command_parsers():
        add_parser(subparsers)
    for sub in subparsers.choices.values():  # the name in error lines ("pixelrl record")
        sub.set_defaults(prog=sub.prog)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug anywhere before "--" (users add it at the end of the line that failed)
    end = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:end]
    argv = [a for i, a in enumerate(argv) if not (a == "--debug" and i < end)]
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"\n{args.prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        if debug or not is_user_error(e):
            raise
        message = " ".join(str(e).split()) or type(e).__name__  # one line, whatever the error
        print(f"{args.prog}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
