"""Where an expert step of the emulated desktop goes: thread time per step in each part.

    .venv/bin/python bench/desktop_parts.py [--size 1280x800] [--steps 1500] [--repeats 4]
    /work/main/.venv/bin/python bench/desktop_parts.py   # the same on another checkout's code

Steps ``pixelrl/Desktop-Mixed-v0`` with the scripted expert (resets included) ``--repeats`` times
from the same seed, timing each call of the env's parts (``Desktop.render``, ``a11y_tree``, the
task's build, ...) with the thread's CPU clock. The runs are identical, so each call's minimum
over the repeats after the first (which warms the text caches) drops what a shared machine adds
(preemption, another process's memory traffic); the sum of the minima per step is printed per
part. Parts nest: ``obs`` holds ``render`` and the observation copy, ``info`` holds ``a11y`` and
``plan``, ``reset`` holds ``task``; ``copy`` is ``obs`` less ``render``.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

PARTS = [  # (module, owner, method, label)
    ("pixelrl.envs.desktop.env", "DesktopEnv", "step", "step"),
    ("pixelrl.envs.desktop.env", "DesktopEnv", "reset", "reset"),
    ("pixelrl.envs.desktop.env", "DesktopEnv", "_observation", "obs"),
    ("pixelrl.envs.desktop.screen", "Desktop", "render", "render"),
    ("pixelrl.envs.desktop.env", "DesktopEnv", "_make_info", "info"),
    ("pixelrl.envs.desktop.screen", "Desktop", "a11y_tree", "a11y"),
    ("pixelrl.envs.desktop.env", None, "expert_plan", "plan"),
    ("pixelrl.envs.desktop.tasks.base", "Task", "__init__", "task"),
    ("pixelrl.envs.desktop.screen", "Desktop", "__init__", "desktop"),
    ("pixelrl.envs.desktop.screen", "Desktop", "dispatch", "dispatch"),
]


def timed(calls: list[tuple[str, float]], fn, label: str):
    def wrapper(*args, **kwargs):
        t = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            calls.append((label, time.thread_time() - t))

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="1280x800", help="screen size WxH")
    parser.add_argument("--steps", type=int, default=1500, help="expert steps a run")
    parser.add_argument("--repeats", type=int, default=4, help="runs from the same seed (>= 2)")
    args = parser.parse_args()
    if args.repeats < 2:
        raise SystemExit("--repeats must be at least 2 (the first run only warms the caches)")
    import importlib

    from pixelrl.envs.desktop.env import DesktopEnv

    calls: list[tuple[str, float]] = []
    for module_name, owner_name, method, label in PARTS:
        module = importlib.import_module(module_name)
        owner = module if owner_name is None else getattr(module, owner_name)
        setattr(owner, method, timed(calls, getattr(owner, method), label))
    width, height = map(int, args.size.split("x"))
    runs = []
    for _ in range(args.repeats):
        calls.clear()
        env = DesktopEnv("mixed", screen_size=(width, height))
        env.reset(seed=0)
        for _ in range(args.steps):
            _, _, terminated, truncated, _ = env.step(env.expert_action())
            if terminated or truncated:
                env.reset()
        runs.append(list(calls))
    labels = [label for label, _ in runs[1]]
    if any([label for label, _ in run] != labels for run in runs[2:]):
        raise SystemExit("the runs differ: the env is not deterministic")
    per_step: dict[str, float] = defaultdict(float)
    for label, *seconds in zip(labels, *[[s for _, s in run] for run in runs[1:]]):
        per_step[label] += min(seconds) / args.steps * 1e6
    per_step["copy"] = per_step["obs"] - per_step["render"]
    total = per_step["step"] + per_step["reset"]
    print(f"desktop {args.size}, expert, {args.steps} steps x {args.repeats - 1} timed runs")
    print(f"{'part':>9} {'us/step':>8} {'share':>6}")
    for label in ("render", "copy", "task", "a11y", "plan", "dispatch", "desktop"):
        print(f"{label:>9} {per_step[label]:>8.1f} {per_step[label] / total:>6.1%}")
    print(f"{'total':>9} {total:>8.1f} {'':>6}  ({1e6 / total:,.0f} steps a CPU second)")


if __name__ == "__main__":
    main()
