"""``pixelrl demo`` (what ``make demo`` runs): the main jobs on the embedded defaults, in minutes.

1. ``experts``: the scripted expert on every emulated-desktop family — a success table and a
   contact sheet of its actions (``desktop_experts.png``);
2. ``gui``: the pixel pointer policy trained with PPO on a desktop task (behaviour-cloning warm
   start, progress bar), evaluated on held-out seeds — ``learning_curve.png``, ``agent.gif``;
3. ``nav``: a small PointNav agent trained with PPO, then benchmarked against the expert, random
   and forward-only agents on held-out scenes — Success / SPL / SoftSPL table, ``paths.png``.

Everything lands under ``--out`` (default ``outputs/demo``); a summary table ends the run.
"""

from __future__ import annotations

import argparse
import time

from pixelrl.commands.args import positive_int

PARTS = ("experts", "gui", "nav")


def parts(text: str) -> list[str]:
    chosen = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in PARTS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown part(s) {', '.join(map(repr, unknown)) or repr(text)}; "
            f"choose from {', '.join(PARTS)}"
        )
    return chosen


def screen_size(text: str) -> tuple[int, int]:
    """``1280x800`` -> (1280, 800), both > 0."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must look like 1280x800, got {text!r}") from None
    if w <= 0 or h <= 0:
        raise argparse.ArgumentTypeError(f"width and height must be > 0, got {text!r}")
    return w, h


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="the main jobs on the embedded defaults: desktop experts, GUI policy, PointNav",
    )
    p.add_argument(
        "--parts",
        type=parts,
        default=list(PARTS),
        help=f"comma-separated parts to run, of {', '.join(PARTS)} (default: all)",
    )
    p.add_argument("--seeds", type=positive_int, default=5,
                   help="expert episodes per family (default 5)")  # fmt: skip
    p.add_argument("--size", type=screen_size, default=(1280, 800),
                   help="expert screen size WxH (default 1280x800)")  # fmt: skip
    p.add_argument(
        "--gui-frames", type=positive_int, default=6000,
        help="PPO frames of the GUI policy (default 6000)",
    )  # fmt: skip
    p.add_argument(
        "--nav-frames", type=positive_int, default=40_000,
        help="PPO frames of PointNav (default 40000)",
    )  # fmt: skip
    p.add_argument("--out", default="outputs/demo", help="output folder (default outputs/demo)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    parts, size = args.parts, args.size
    out = Path(args.out)
    summary: list[tuple[str, str, str, float]] = []
    ok = True

    if "experts" in parts:
        from pixelrl.gui_agent.demo import experts_demo

        start = time.perf_counter()
        rows = experts_demo(out, args.seeds, size)
        print(f"\n{'family':<22} {'success':>9} {'steps/episode':>14}")
        for family, wins, n, mean_len in rows:
            print(f"{family:<22} {wins:>4}/{n:<4} {mean_len:>14.1f}")
        wins, total = sum(r[1] for r in rows), sum(r[2] for r in rows)
        ok &= wins == total
        summary.append(
            (
                "desktop experts",
                f"{wins}/{total} episodes solved",
                str(out / "desktop_experts.png"),
                time.perf_counter() - start,
            )
        )

    if "gui" in parts:
        from pixelrl.gui_agent.demo import pointer_policy_demo

        start = time.perf_counter()
        result = pointer_policy_demo(out / "gui", total_frames=args.gui_frames, eval_episodes=50)
        overall = result["success"][-1]  # one row per family, then "all" when several
        summary.append(
            (
                "GUI pointer policy (PPO)",
                f"success {overall['success']:.2f} on {overall['n']} held-out",
                f"{result['curve']}, {result['gif']}",
                time.perf_counter() - start,
            )
        )

    if "nav" in parts:
        from pixelrl.embodied.demo import pointnav_demo

        start = time.perf_counter()
        measures = pointnav_demo(out / "pointnav", frames=args.nav_frames)
        trained = next(iter(measures.values()))
        summary.append(
            (
                "PointNav agent (PPO)",
                f"Success {trained['success']:.2f}, SPL {trained['spl']:.2f}",
                str(out / "pointnav"),
                time.perf_counter() - start,
            )
        )

    print(f"\n{'part':<26} {'result':<34} {'minutes':>7}  outputs")
    for name, result_text, outputs, seconds in summary:
        print(f"{name:<26} {result_text:<34} {seconds / 60:>7.1f}  {outputs}")
    return 0 if ok else 1
