"""Expert steps per CPU second of two code versions of the emulated desktop, interleaved.

    .venv/bin/python bench/desktop_ab.py /work/main/.venv/bin/python .venv/bin/python \
        [--size 1280x800] [--rounds 10] [--steps 1500]

On a shared machine the speed of one process drifts by tens of percent within a minute, so two
runs one after the other compare badly. Here two worker processes (one per Python, each importing
its own checkout's code) are pinned to the same core and step ``pixelrl/Desktop-Mixed-v0`` with
the scripted expert (resets included) in alternating chunks of ``--steps`` steps (order A, B then
B, A), after 3,000 warm-up steps each. Prints each chunk's steps per CPU second (the worker's
thread time), the medians and the per-round ratio B/A.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess

WORKER = r"""
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
from pixelrl.envs.desktop.env import DesktopEnv
width, height = map(int, sys.argv[2].split("x"))
env = DesktopEnv("mixed", screen_size=(width, height))
env.reset(seed=0)
def run(n):
    for _ in range(n):
        _, _, terminated, truncated, _ = env.step(env.expert_action())
        if terminated or truncated:
            env.reset()
run(3000)
print("ready", flush=True)
for line in sys.stdin:
    n = int(line)
    t = time.thread_time()
    run(n)
    print(n / (time.thread_time() - t), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("python_a", help="the Python of version A (e.g. main's .venv/bin/python)")
    parser.add_argument("python_b", help="the Python of version B")
    parser.add_argument("--size", default="1280x800", help="screen size WxH")
    parser.add_argument("--rounds", type=int, default=10, help="chunks per version")
    parser.add_argument("--steps", type=int, default=1500, help="expert steps per chunk")
    args = parser.parse_args()
    cpu = min(os.sched_getaffinity(0))
    # from / so that neither worker imports a checkout from the working directory
    workers = [
        subprocess.Popen(
            [py, "-c", WORKER, str(cpu), args.size],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd="/",
        )
        for py in (args.python_a, args.python_b)
    ]
    for w in workers:
        if w.stdout.readline().strip() != "ready":
            raise SystemExit(f"a worker failed to start: {w.args[0]}")
    sps: list[list[float]] = [[], []]
    for r in range(args.rounds):
        for i in (0, 1) if r % 2 == 0 else (1, 0):
            workers[i].stdin.write(f"{args.steps}\n")
            workers[i].stdin.flush()
            sps[i].append(float(workers[i].stdout.readline()))
    for w in workers:
        w.stdin.close()
        w.wait()
    ratios = [b / a for a, b in zip(*sps)]
    print(f"expert steps per CPU second, {args.size}, pinned to CPU {cpu}, {args.steps} a chunk")
    print(f"{'round':>5} {'A':>8} {'B':>8} {'B/A':>6}")
    for r, (a, b, q) in enumerate(zip(*sps, ratios)):
        print(f"{r:>5} {a:>8,.0f} {b:>8,.0f} {q:>6.2f}")
    print(
        f"{'median':>5} {statistics.median(sps[0]):>8,.0f} {statistics.median(sps[1]):>8,.0f} "
        f"{statistics.median(ratios):>6.2f}"
    )
    print(f"A: {args.python_a}\nB: {args.python_b}")


if __name__ == "__main__":
    main()
