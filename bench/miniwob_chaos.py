"""Chaos: ``gui/miniwob`` PPO with its browsers in Ray actors while a thread kills one at random.

Issue 24's fault check. The recipe's PPO runs for ``--minutes`` with ``envs.backend=ray`` (one
actor, one headless Chromium, per task), warm-started from ``--init`` (a ``gui/miniwob`` run:
its checkpoint, no behaviour cloning again). Every ``--every`` seconds a chaos thread picks one
of the actors' Chromium browsers at random and SIGKILLs it (none in the last ``--quiet-tail``
seconds, so that every kill meets a step before the run ends). The run must finish; each kill must
show up as exactly one worker fault (the actor replaced, its episode truncated with
``info["env_fault"]``; the collector gives the lost step advantage 0, see
``pixelrl.rl.collect``); success at the end, on held-out seeds with the browsers in this
process, must be within noise of the same run without kills (``--every 0``)::

    python bench/miniwob_chaos.py --init runs/miniwob --minutes 10 --every 30 --out runs/chaos
    python bench/miniwob_chaos.py --init runs/miniwob --minutes 10 --every 0 --out runs/calm

Prints kills, faults, restarts, workers taken out, frames and per-task held-out success.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def actor_browsers() -> list[int]:
    """PIDs of the Chromium browsers this run's Ray env workers started (each worker's
    chromedriver's child named chromium/chrome; the renderers and helpers are the browser's own
    children)."""
    import psutil

    browsers = []
    # this run's own workers only: the local Ray cluster this process started is its descendant
    for proc in psutil.Process().children(recursive=True):
        try:
            title = " ".join(proc.cmdline() or [])
            if not title.startswith("ray::EnvWorker"):
                continue
            for child in proc.children(recursive=True):
                parent = child.parent()
                if (
                    child.name().startswith(("chromium", "chrome"))
                    and parent is not None
                    and "chromedriver" in parent.name()
                ):
                    browsers.append(child.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return browsers


class Chaos(threading.Thread):
    """Every ``every`` seconds, SIGKILL one actor's browser at random; counts what it killed."""

    def __init__(self, every: float, seed: int, until: float) -> None:
        super().__init__(daemon=True)
        self.every, self.rng, self.until = every, random.Random(seed), until
        self.kills: list[tuple[float, int]] = []
        self.stopped = threading.Event()
        self.start_time = time.monotonic()

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            if time.monotonic() - self.start_time > self.until:
                return  # the run's last stretch: every kill must still meet a step to be seen
            browsers = actor_browsers()
            if not browsers:
                continue
            pid = self.rng.choice(browsers)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            self.kills.append((time.monotonic() - self.start_time, pid))
            print(f"\nchaos: killed browser {pid} ({len(self.kills)} so far)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--init", required=True, help="a gui/miniwob run (checkpoint or run folder)")
    ap.add_argument("--minutes", type=float, default=10.0, help="PPO wall minutes")
    ap.add_argument("--every", type=float, default=30.0, help="seconds between kills (0: none)")
    ap.add_argument(
        "--quiet-tail", type=float, default=45.0, help="no kill in the run's last seconds"
    )
    ap.add_argument("--episodes", type=int, default=20, help="held-out episodes a task at the end")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True, help="run folder")
    ap.add_argument("overrides", nargs="*", help="more config overrides (key=value)")
    args = ap.parse_intermixed_args()

    from pixelrl.checkpoint import resolve_checkpoint
    from pixelrl.train import Trainer, config_for

    init = resolve_checkpoint(args.init)
    cfg = config_for(
        "gui/miniwob",
        [
            "envs.backend=ray",
            "envs.per_worker=1",
            "envs.step_timeout=30",
            f"policy.init={init}",
            "policy.bc_steps=0",
            f"train.time_limit_minutes={args.minutes}",
            "train.total_frames=10000000",
            "train.final_eval=false",
            f"train.output_dir={args.out}",
            f"seed={args.seed}",
            *args.overrides,
        ],
    )
    trainer = Trainer(cfg)
    until = args.minutes * 60 - args.quiet_tail
    chaos = Chaos(args.every, args.seed, until) if args.every > 0 else None
    if chaos:
        chaos.start()
    tic = time.perf_counter()
    try:
        trainer.run()
    finally:
        if chaos:
            chaos.stopped.set()
            chaos.join()
    wall = time.perf_counter() - tic
    last = trainer.history[-1]
    stats = {k.removeprefix("envs/"): last[k] for k in last if k.startswith("envs/")}

    sys.path.insert(0, str(HERE))
    from miniwob_table import evaluate_tasks, print_table

    rows = evaluate_tasks(args.out, list(cfg.env.tasks), args.episodes, 0)
    print_table(rows)
    kills = len(chaos.kills) if chaos else 0
    summary = {
        "kills": kills,
        "faults": stats.get("faults", 0),
        "restarts": stats.get("restarts", 0),
        "removed_workers": stats.get("removed_workers", 0),
        "frames": trainer.frames,
        "updates": trainer.update,
        "wall_s": wall,
        "mean_success": sum(r["success"] for r in rows) / len(rows),
    }
    print("\n" + "  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                           for k, v in summary.items()))  # fmt: skip
    with open(Path(args.out) / "chaos.json", "w") as f:
        json.dump({**summary, "every": args.every, "kill_times": chaos.kills if chaos else [],
                   "rows": rows}, f, indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
