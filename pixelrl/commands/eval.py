"""``pixelrl eval --env ID --policy PATH``: success rate per task family (95% CI) and grounding.

Examples::

    pixelrl eval --env pixelrl/Desktop-ClickButton-v0 --policy runs/gui-ppo-20260101-120000
    pixelrl eval --env pixelrl/Desktop-Mixed-v0 --policy runs/sft/model --episodes 200
    pixelrl eval --policy runs/grpo/model --grounding 200          # grounding table only

``--policy`` is a ``gui/ppo`` checkpoint (file, ``checkpoints/`` or run folder), a VLM model
folder saved by ``gui/sft`` / ``gui/*-grpo``, or ``tiny-<family>`` (a random baseline).
Episodes use held-out (odd) seeds; the grounding set is generated from held-out seeds too
(``pixelrl.gui_agent.grounding``). ``--json`` writes the rows.
"""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate a GUI policy: success per family, grounding accuracy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--env", help="env id, e.g. pixelrl/Desktop-ClickButton-v0")
    p.add_argument("--policy", required=True, help="checkpoint, model folder or tiny-<family>")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--grounding", type=int, default=0, help="grounding items (0: skip)")
    p.add_argument("--screen-size", type=int, nargs=2, default=None, metavar=("W", "H"),
                   help="desktop screen size (default: the policy's training size, else 320 240)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the result rows to this file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from pixelrl.checkpoint import CheckpointError
    from pixelrl.gui_agent.agents import PointerAgent, load_agent
    from pixelrl.gui_agent.evaluate import evaluate_grounding, evaluate_success, format_table
    from pixelrl.gui_agent.grounding import grounding_set

    if not args.env and not args.grounding:
        print("pixelrl eval: give --env, --grounding N, or both")
        return 2
    try:
        agent = load_agent(args.policy)
    except (CheckpointError, OSError, ValueError) as e:
        print(f"pixelrl eval: cannot load policy {args.policy!r}: {e}")
        return 2
    screen = args.screen_size
    if screen is None and isinstance(agent, PointerAgent):
        screen = getattr(agent, "screen_size", None)
    screen = tuple(screen or (320, 240))
    result = {}
    if args.env:
        rows = evaluate_success(agent, args.env, args.episodes, args.seed, {"screen_size": screen})
        print(format_table(rows, "success", f"\n{args.env}: success on held-out seeds"))
        result["success"] = rows
    if args.grounding:
        items = grounding_set(args.grounding, screen_size=screen)
        rows = evaluate_grounding(agent, items)
        print(format_table(rows, "accuracy", "\ngrounding (ScreenSpot: point inside target box)"))
        result["grounding"] = rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0
