"""``pixelrl demo`` (what ``make demo`` runs): the main jobs on the embedded defaults, in minutes.

1. ``experts``: the scripted expert on every emulated-desktop family — a success table and a
   contact sheet of its actions (``desktop_experts.png``);
2. ``gui``: the pixel pointer policy learning ``Desktop-ClickButton`` by behaviour cloning of
   the scripted expert, held-out success plotted as it learns (``gui/learning_curve.png``), then
   evaluated on held-out seeds and filmed (``gui/agent.gif``). No PPO in this part: on this
   policy PPO after cloning changes nothing measurable (:mod:`pixelrl.gui_agent.demo`);
3. ``nav``: a small PointNav agent trained with PPO, then benchmarked against the expert, random
   and forward-only agents on held-out scenes — Success / SPL / SoftSPL table, ``paths.png``.

Each part starts with a heading; everything lands under ``--out`` (default ``outputs/demo``); a
summary table ends the run.
"""

from __future__ import annotations

import argparse
import time

from pixelrl import registry
from pixelrl.commands.args import positive_int

# Each part's function is its domain's, found by the part's name (pixelrl.registry, kind "demo";
# gui_agent and embodied register them): the spine imports no domain.
PARTS = ("experts", "gui", "nav")
HEADINGS = {
    "experts": "desktop experts: the scripted expert on every emulated-desktop family",
    "gui": "GUI pointer policy: behaviour cloning of the scripted expert on Desktop-ClickButton "
    "(no PPO in this part: see pixelrl.gui_agent.demo)",
    "nav": "PointNav: a small agent trained with PPO, then benchmarked on held-out scenes",
}
GUI_STEPS = 600  # behaviour-cloning steps
NAV_FRAMES = 40_000  # PPO frames


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
    """``1280x800`` -> (1280, 800), within the desktop's screen sizes (``theme.MIN_SCREEN`` to
    ``MAX_SCREEN``)."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must look like 1280x800, got {text!r}") from None
    from pixelrl.envs.desktop.theme import MAX_SCREEN, MIN_SCREEN  # what the desktop draws

    (w0, h0), (w1, h1) = MIN_SCREEN, MAX_SCREEN
    if not (w0 <= w <= w1 and h0 <= h <= h1):
        raise argparse.ArgumentTypeError(
            f"{w}x{h} is outside the desktop's screen sizes, {w0}x{h0} to {w1}x{h1}"
        )
    return w, h


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="the main jobs on the embedded defaults: desktop experts, GUI policy, PointNav",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--parts",
        type=parts,
        default=list(PARTS),
        help=f"comma-separated parts to run, of {', '.join(PARTS)} (default: all)",
    )
    # Each part's own flags in a group of its own, so --help says which part a flag changes.
    experts = p.add_argument_group("experts part")
    experts.add_argument("--seeds", type=positive_int, default=5,
                         help="expert episodes per family (default 5)")  # fmt: skip
    experts.add_argument("--size", type=screen_size, default=(1280, 800),
                         help="expert screen size WxH (default 1280x800)")  # fmt: skip
    p.add_argument_group("gui part").add_argument(
        "--gui-steps", type=positive_int, default=GUI_STEPS,
        help=f"behaviour-cloning steps of the GUI policy (default {GUI_STEPS})",
    )  # fmt: skip
    p.add_argument_group("nav part").add_argument(
        "--nav-frames", type=positive_int, default=NAV_FRAMES,
        help=f"PPO frames of PointNav (default {NAV_FRAMES})",
    )  # fmt: skip
    p.add_argument("--out", default="outputs/demo", help="output folder (default outputs/demo)")
    p.set_defaults(func=run)


def heading(number: int, total: int, part: str) -> None:
    text = f"[{number}/{total}] {HEADINGS[part]}"
    print(f"\n{text}\n{'=' * min(len(text), 100)}", flush=True)


class NavJob:
    """The PointNav part in a child process, on one core, its output in ``out/log.txt``; a
    thread notes when it ends (its wall time), ``getrusage`` its CPU time."""

    def __init__(self, out, frames: int, command: list[str] | None = None) -> None:
        import os
        import subprocess
        import sys
        import threading

        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        (out / "measures.json").unlink(missing_ok=True)  # a previous run's
        module = registry.target("demo", "nav").partition(":")[0]  # it runs as a script too
        command = command or [sys.executable, "-m", module, "--out", str(out),
                              "--frames", str(frames)]  # fmt: skip
        self.start = time.perf_counter()
        self.end: float | None = None
        with open(out / "log.txt", "w") as log:
            self.proc = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "OMP_NUM_THREADS": "1"},
            )
        threading.Thread(target=self._wait, daemon=True).start()

    def _wait(self) -> None:
        self.proc.wait()
        self.end = time.perf_counter()

    def finish(self) -> dict[str, dict[str, float]] | None:
        """Wait for the child; print its table (or, when it failed, its log's end)."""
        import json

        if self.proc.poll() is None:
            print("waiting for the PointNav run to finish ...", flush=True)
        self.proc.wait()
        out = self.out
        log = (out / "log.txt").read_text(errors="replace")
        if self.proc.returncode != 0 or not (out / "measures.json").exists():
            print("\n".join(log.replace("\r", "\n").splitlines()[-30:]))
            print(
                f"pixelrl demo: the PointNav part failed (exit {self.proc.returncode}); "
                f"log: {out / 'log.txt'}"
            )
            return None
        start = log.rfind("\nPointNav on")
        print(log[start + 1 :].rstrip() if start >= 0 else log[-2000:])
        return json.loads((out / "measures.json").read_text())

    def seconds(self) -> tuple[float, float]:
        """(wall, CPU) seconds of the finished child."""
        import resource

        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        end = self.end if self.end is not None else time.perf_counter()
        return end - self.start, usage.ru_utime + usage.ru_stime

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    parts, size = args.parts, args.size
    out = Path(args.out)
    summary: list[tuple[str, str, str, float, float]] = []
    number = iter(range(1, len(parts) + 1))
    begin, begin_cpu = time.perf_counter(), time.process_time()
    nav = None  # with the GUI part too: PointNav trains meanwhile, on the other core
    if "nav" in parts and "gui" in parts:
        nav = NavJob(out / "pointnav", args.nav_frames)
        print(
            f"PointNav ({args.nav_frames:,} PPO frames) is training in the background while the "
            f"other parts run; its log: {out / 'pointnav' / 'log.txt'}"
        )
    try:
        ok = _run_parts(args, parts, size, out, summary, number, nav)
    finally:
        if nav is not None:
            nav.stop()
    print(f"\n{'part':<26} {'result':<40} {'minutes':>7} {'CPU s':>6}  outputs")
    for name, result_text, outputs, seconds, cpu in summary:
        print(f"{name:<26} {result_text:<40} {seconds / 60:>7.1f} {cpu:>6.0f}  {outputs}")
    wall = time.perf_counter() - begin
    cpu = time.process_time() - begin_cpu + (nav.seconds()[1] if nav is not None else 0.0)
    note = "  (PointNav trained beside the other parts)" if nav is not None else ""
    print(f"{'total':<26} {'':<40} {wall / 60:>7.1f} {cpu:>6.0f}{note}")
    return 0 if ok else 1


def _run_parts(args, parts, size, out, summary, number, nav) -> bool:
    ok = True

    if "experts" in parts:
        experts_demo = registry.resolve("demo", "experts")
        heading(next(number), len(parts), "experts")
        start, cpu = time.perf_counter(), time.process_time()
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
                time.process_time() - cpu,
            )
        )

    if "gui" in parts:
        pointer_bc_demo = registry.resolve("demo", "gui")
        heading(next(number), len(parts), "gui")
        start, cpu = time.perf_counter(), time.process_time()
        result = pointer_bc_demo(out / "gui", steps=args.gui_steps, eval_episodes=100)
        overall = result["success"][-1]  # one row per family, then "all" when several
        before = result["points"][0][1]  # the untrained policy, on the curve's seeds
        summary.append(
            (
                "GUI pointer policy (BC)",
                f"success {overall['success']:.2f} on {overall['n']} held-out (from {before:.2f})",
                f"{result['curve']}, {result['gif']}",
                time.perf_counter() - start,
                time.process_time() - cpu,
            )
        )

    if "nav" in parts:
        pointnav_demo = registry.resolve("demo", "nav")
        heading(next(number), len(parts), "nav")
        if nav is not None:
            measures = nav.finish()
            seconds, cpu = nav.seconds()  # it ran from the start
        else:
            start, cpu = time.perf_counter(), time.process_time()
            measures = pointnav_demo(out / "pointnav", frames=args.nav_frames)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        if measures is None:
            return False
        trained = next(iter(measures.values()))
        summary.append(
            (
                "PointNav agent (PPO)",
                f"Success {trained['success']:.2f}, SPL {trained['spl']:.2f}",
                str(out / "pointnav"),
                seconds,
                cpu,
            )
        )
    return ok
