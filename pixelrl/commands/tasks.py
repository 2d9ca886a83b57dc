"""``pixelrl tasks check FOLDER``: which task files of a folder (OSWorld's or ours) would run here.

Prints one line per task file: ``runs``, or ``refused`` with every part that cannot run here
(a download, a cloud file, Chrome over CDP, a metric we lack, sudo, ...) or ``over budget`` (sleeps
that add up past the set-up or evaluation time budget, more steps or metrics than a task may have,
getters that read more files than the read budget: the defaults of
:class:`~pixelrl.envs.x11.sandbox.SandboxLimits`), then a count of tasks per reason. Exit 0 when
the folder was read (whatever the verdicts), 2 on a user mistake.
"""

from __future__ import annotations

import argparse
import os

from pixelrl.cli import UsageError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "tasks",
        help="X11 / OSWorld task files: which would run here",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="tasks_command", metavar="ACTION")
    check = sub.add_parser(
        "check",
        help="list which task files of a folder would run here, within the sandbox's default "
        "budgets, and why not",
    )
    check.add_argument("folder", help="a folder of task JSON files (searched recursively)")
    check.add_argument("--quiet", action="store_true", help="only the counts")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "tasks_command", None) != "check":
        raise UsageError("say what to do: `pixelrl tasks check FOLDER`")
    if not os.path.isdir(args.folder):
        raise UsageError(f"{args.folder}: no such folder")
    from pixelrl.envs.x11.osworld import reason_counts, summary, survey

    verdicts = survey(args.folder)
    if not verdicts:
        raise UsageError(f"{args.folder}: no .json task files in it")
    for v in verdicts:
        if args.quiet:
            continue
        name = os.path.relpath(v.path, args.folder)
        if v.runs:
            print(f"runs     {name}")
        elif v.error:
            print(f"invalid  {name}: {v.error}")
        else:
            why = summary(v.refusals)
            print(f"refused  {name}: {why}")
    runs = sum(v.runs for v in verdicts)
    print(f"\n{runs} of {len(verdicts)} task files would run here; {len(verdicts) - runs} refused")
    for reason, count in reason_counts(verdicts).items():
        print(f"  {count:5d}  {reason}")
    return 0
