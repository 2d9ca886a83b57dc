"""How fast ``gui/miniwob`` records the oracle's demonstrations, one task at a time against
``policy.bc_workers`` tasks side by side (``gui_agent/miniwob_task.oracle_samples``), in one run.

    python bench/miniwob_demos.py --tasks 4 --samples 800 --workers 2

Prints samples a second for each worker count, the ratio, and whether the data came out the same
(it must: task ``i``'s samples depend on its seed alone). Take the figures on a quiet machine:
each worker keeps about one core busy with its browser.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="gui_agent/configs/miniwob_wide.yaml")
    ap.add_argument("--tasks", type=int, default=4, help="the config's first N tasks")
    ap.add_argument("--samples", type=int, default=800, help="oracle steps in all")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    if args.tasks < 1 or args.samples < 1 or min(args.workers) < 1:
        ap.error("--tasks, --samples and --workers must be >= 1")
    import numpy as np

    from pixelrl.gui_agent.miniwob_task import oracle_samples
    from pixelrl.recipes import config_file
    from pixelrl.train import config_for

    path = config_file(args.config)
    if path is None:
        ap.error(f"--config: no such file: {args.config}")
    base = config_for(str(path))
    tasks = list(base.env.tasks)[: args.tasks]
    rows, first = [], None
    for workers in args.workers:
        cfg = config_for(str(path), [
            f"env.tasks=[{','.join(tasks)}]", f"env.num_envs={len(tasks)}",
            f"policy.bc_workers={workers}", "train.progress=false",
        ])  # fmt: skip
        start = time.perf_counter()
        data = oracle_samples(cfg, args.samples, int(cfg.seed))
        seconds = time.perf_counter() - start
        same = first is None or all(np.array_equal(first[k], data[k]) for k in first)
        first = data if first is None else first
        rows.append((workers, seconds, args.samples / seconds, same))
        print(f"workers {workers}: {seconds:.1f} s", flush=True)
    print(f"\n{len(tasks)} tasks ({', '.join(tasks)}), {args.samples} oracle steps")
    print(f"{'workers':>8} {'seconds':>9} {'samples/s':>10} {'x one':>7} {'same data':>10}")
    for workers, seconds, rate, same in rows:
        print(
            f"{workers:>8} {seconds:>9.1f} {rate:>10.2f} {rows[0][1] / seconds:>7.2f} {same!s:>10}"
        )


if __name__ == "__main__":
    main()
