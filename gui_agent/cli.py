"""``pixelrl eval --env ID --policy PATH``: success rate per task family (95% CI) and grounding.

Examples::

    pixelrl eval --env pixelrl/Desktop-ClickButton-v0 --policy runs/gui-ppo-20260101-120000
    pixelrl eval --env pixelrl/Desktop-Mixed-v0 --policy runs/sft/model --episodes 200
    pixelrl eval --policy runs/grpo/model --grounding 200          # grounding table only

``--policy`` is a ``gui/ppo`` checkpoint (file, ``checkpoints/`` or run folder), a VLM model
folder saved by ``gui/sft`` / ``gui/*-grpo``, or ``tiny-<family>`` (a random baseline).
Episodes use held-out (odd) seeds; the grounding set is generated from held-out seeds too
(``pixelrl.gui_agent.grounding``). A VLM policy plays ``--batch`` episodes together (default 8),
each in its own env, with one batched ``generate`` per step; ``--batch 1`` plays one at a time.
A model folder saved by a ``gui/*`` recipe acts as it was trained: its
``pixelrl_gui_agent.json`` says how its answers are written and whether its prompt held a screen
parse. ``--screen-parse`` gives another VLM policy (an older folder, a hub model) the
Set-of-Mark screen parse (``prompt.screen_parse=true``). ``--json`` writes the rows.
"""

from __future__ import annotations

import argparse

from pixelrl.commands.args import (
    add_threads_argument,
    batch_size,
    env_id,
    non_negative_int,
    positive_int,
    use_threads,
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate a GUI policy: success per family, grounding accuracy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--env", type=env_id, help="GUI env id, e.g. pixelrl/Desktop-ClickButton-v0")
    p.add_argument("--policy", required=True,
                   help="checkpoint, model folder, hub id org/name, or tiny-<family>")  # fmt: skip
    p.add_argument("--episodes", type=positive_int, default=100)
    p.add_argument("--batch", type=batch_size, default=8, metavar="N",
                   help="VLM policies: episodes played together, one batched generate per step "
                   "over their envs (default 8; 1: one at a time, as before); the same results "
                   "for greedy answers. Checkpoints play one episode at a time")  # fmt: skip
    p.add_argument(
        "--grounding", type=non_negative_int, default=0, help="grounding items (0: skip)"
    )
    p.add_argument("--screen-size", type=positive_int, nargs=2, default=None, metavar=("W", "H"),
                   help="desktop screen size (default: the policy's training size, else 320 240)")  # fmt: skip
    p.add_argument("--screen-parse", action="store_true",
                   help="VLM policies: a Set-of-Mark parse of the screen under the instruction, as "
                   "recipes trained with prompt.screen_parse=true saw (needs the reader extra)")  # fmt: skip
    p.add_argument("--mark-actions", action="store_true",
                   help="VLM policies with --screen-parse: answers may name a mark, click(mark=7), "
                   "as recipes trained with prompt.mark_actions=true answer")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the result rows to this file")
    add_threads_argument(p, "the policy")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from pixelrl.checkpoint import CheckpointError
    from pixelrl.cli import UsageError
    from pixelrl.commands.args import make_env
    from pixelrl.gui_agent.agents import PointerAgent, VLMAgent, load_agent
    from pixelrl.gui_agent.evaluate import evaluate_grounding, evaluate_success, format_table
    from pixelrl.gui_agent.grounding import grounding_set

    if not args.env and not args.grounding:
        raise UsageError("give --env ID, --grounding N, or both")
    if args.mark_actions and not args.screen_parse:
        raise UsageError(
            "--mark-actions needs --screen-parse: a mark is a number of the screen parse"
        )
    use_threads(args)
    try:
        agent = load_agent(args.policy)
    except CheckpointError:
        raise
    except (OSError, ValueError) as e:  # transformers: not a model, not in the cache, ...
        raise UsageError(f"cannot load policy {args.policy!r}: {e}") from e
    if args.screen_parse:
        if not isinstance(agent, VLMAgent):
            raise UsageError(
                "--screen-parse applies to VLM policies (a model folder or tiny-<family>)"
            )
        from pixelrl.vision.reader import SetOfMarks

        if args.mark_actions:
            from pixelrl.envs.gui_action.codec import GUIActionCodec
            from pixelrl.gui_agent.vlm_grounding import pointing_clash

            if agent.vlm.pointer is not None:
                raise UsageError(pointing_clash(f"{args.policy}'s pointer head", "--mark-actions"))

            codec = agent.vlm.codec
            agent.vlm.codec = GUIActionCodec(codec.action_format, codec.coordinates, True)
        agent.vlm.screen_parse = SetOfMarks(agent.vlm.codec.point_text)
    screen = args.screen_size
    if screen is None and isinstance(agent, PointerAgent):
        screen = getattr(agent, "screen_size", None)
    screen = tuple(screen or (320, 240))
    result = {}
    if args.env:
        # made once here so that options it refuses, or an env that is no GUI env, are one line
        not_gui = UsageError(
            f"{args.env} is not a GUI env (no screen_size, no 'screenshot' observation); eval "
            "takes GUI envs, `pixelrl bench nav` evaluates navigation agents"
        )
        env_kwargs = {"screen_size": screen}
        try:
            env = make_env(args.env, **env_kwargs)
        except UsageError as e:
            if "option 'screen_size'" not in str(e) and "argument 'screen_size'" not in str(e):
                raise
            # a GUI env whose screen is fixed by its task (MiniWoB++), or no GUI env at all
            env_kwargs = {}
            env = make_env(args.env)
        gui = "screenshot" in getattr(env.observation_space, "spaces", {})
        env.close()
        if not gui:
            raise not_gui
        rows = evaluate_success(agent, args.env, args.episodes, args.seed, env_kwargs,
                                batch_size=args.batch)  # fmt: skip
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
