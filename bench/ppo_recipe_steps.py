"""The first updates of the PPO recipes at a fixed seed: a refactor's before/after check.

Runs ``gui/ppo``, ``gui/miniwob`` (two tasks) and ``embodied/pointnav`` through the command line,
as small as they go, in one process (``train.async=false``: bit-for-bit reruns), and prints the
figures of their first updates from ``history.csv`` (losses, entropy, returns; clock and
throughput columns left out). A change that keeps behaviour prints the same numbers::

    python bench/ppo_recipe_steps.py --out /tmp/before     # on the old code
    python bench/ppo_recipe_steps.py --out /tmp/after      # on the new code
    python bench/ppo_recipe_steps.py --compare /tmp/before /tmp/after

Only the public interface is used (``pixelrl train``, the run folder's ``history.csv``), so it
runs on the code before a change as well as after it. ``gui/miniwob`` needs Chromium.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

from vlm_recipe_steps import compare, parse_args, run_all  # bench/, beside this file

COMMON = ["torch_threads=1", "train.progress=false", "train.async=false", "train.tensorboard=false",
          "train.final_eval=false", "train.eval_interval=0", "train.eval_at_start=false",
          "train.checkpoint_interval=1000"]  # fmt: skip
RUNS: dict[str, tuple[str, list[str]]] = {
    "gui/ppo": ("gui/ppo", [*COMMON, "env.num_envs=2", "ppo.num_steps=8", "policy.bc_steps=5",
                            "policy.bc_samples=40", "ppo.critic_warmup_updates=1",
                            "train.total_frames=48"]),
    "gui/miniwob": ("gui/miniwob", [*COMMON, "env.tasks=[click-test,click-button]", "env.num_envs=2",
                                    "ppo.num_steps=4", "policy.bc_steps=3", "policy.bc_samples=8",
                                    "policy.reader=false", "ppo.critic_warmup_updates=1",
                                    "train.total_frames=24",
                                    "train.time_limit_minutes=0"]),
    "embodied/pointnav": ("embodied/pointnav", [*COMMON, "env.num_envs=2", "ppo.num_steps=16",
                                                "env.kwargs.num_scenes=2", "env.kwargs.width=32",
                                                "env.kwargs.height=32", "imitation.updates=2", "ppo.critic_warmup_updates=1",
                                                "train.total_frames=128"]),
}  # fmt: skip

# Columns that depend on the clock, the machine or the process: left out of the comparison.
CLOCK = ("time", "minutes", "fps", "second", "sps", "cpu", "wall", "elapsed", "memory")


def run_one(name: str, out: Path) -> dict:
    recipe, overrides = RUNS[name]
    folder = out / name.replace("/", "-")
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    start = time.perf_counter()
    argv = [
        sys.executable,
        "-m",
        "pixelrl",
        "train",
        recipe,
        f"train.output_dir={folder}",
        *overrides,
    ]
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        return {"name": name, "error": p.stderr.strip().splitlines()[-1:], "seconds": seconds}
    path = folder / "history.csv"
    rows = list(csv.DictReader(open(path))) if path.exists() else []
    return {"name": name, "seconds": seconds, "metrics": rows}


def fingerprint(result: dict) -> list[str]:
    lines = []
    for row in result.get("metrics", []):
        cells = []
        for k, v in row.items():
            if v in (None, "") or any(c in k.lower() for c in CLOCK):
                continue
            try:
                cells.append(f"{k}={float(v):.6g}")
            except ValueError:
                cells.append(f"{k}={v}")
        lines.append(" ".join(cells))
    return lines or [f"error: {result.get('error')}"]


def main() -> int:
    ap, args = parse_args(__doc__, list(RUNS))
    if args.compare:
        return compare(args.compare, fingerprint)
    return run_all(ap, args, args.only or list(RUNS), run_one, fingerprint)


if __name__ == "__main__":
    sys.exit(main())
