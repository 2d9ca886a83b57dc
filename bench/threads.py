"""Thread settings on an idle and a loaded machine (issue 57): the default against --threads 1 and 2.

Times two commands a user runs, each in a fresh process, with the default thread count (the
thread policy, :mod:`pixelrl.threads`), ``--threads 1`` and ``--threads 2``:

- ``pixelrl eval`` of the tiny VLM (``tiny-smolvlm``, random weights) at batch 1 on
  ``pixelrl/Desktop-ClickButton-v0`` (the issue's 892 s against 58 s case, smaller);
- ``pixelrl bench nav`` of a navigation checkpoint (ResNet+GRU; by default the test suite's
  PointNav checkpoint) on a generated PointNav dataset.

First on the machine as it is ("idle": on a shared machine it is not, the header prints the
load average), then beside two CPU-bound processes this script starts (``while True: pass``,
killed at the end) after letting the 1-minute load average see them for ``--settle`` seconds.
Prints, per command and phase, the count each setting ran with (and why), wall and CPU seconds
(the child's own user + system time, ``os.wait4``) and the wall time against the phase's best::

    .venv/bin/python bench/threads.py                          # ~10 min on a loaded 2-core box
    .venv/bin/python bench/threads.py --episodes 2 --nav-episodes 2 --settle 20   # quicker

Wall time is what a user waits for; on a shared machine its figures move from run to run, while
the ratios within one run are the honest comparison.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETTINGS = ("default", "1", "2")


def timed(argv: list[str], threads: str, cwd: Path) -> dict:
    """Run ``pixelrl ARGV [--threads N]``: wall and CPU seconds, and the count it chose."""
    command = [sys.executable, "-m", "pixelrl", *argv]
    if threads != "default":
        command += ["--threads", threads]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("OMP_NUM_THREADS", None)  # the policy's own choice, not a variable's
    tic = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(command, cwd=cwd, env=env, stdout=err, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - tic
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read()
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({p.returncode}):\n{text[-2000:]}")
    chose = re.search(r"^threads: (.*)$", text, re.M)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "chose": chose.group(1) if chose else "?"}  # fmt: skip


def busy_processes(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def table(rows: list[tuple[str, str, str, dict]]) -> str:
    head = f"{'command':<10} {'phase':<7} {'--threads':<9} {'ran with':<44} {'wall s':>7} {'CPU s':>7} {'/ best':>7}"  # fmt: skip
    lines = [head, "-" * len(head)]
    best: dict[tuple[str, str], float] = {}
    for command, phase, _, r in rows:
        key = (command, phase)
        best[key] = min(best.get(key, float("inf")), r["wall"])
    for command, phase, setting, r in rows:
        ratio = r["wall"] / best[(command, phase)]
        lines.append(f"{command:<10} {phase:<7} {setting:<9} {r['chose'][:44]:<44} "
                     f"{r['wall']:>7.1f} {r['cpu']:>7.1f} {ratio:>6.2f}x")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=3, help="pixelrl eval episodes")
    parser.add_argument("--nav-episodes", type=int, default=4, help="bench nav episodes")
    parser.add_argument("--nav-checkpoint", default=str(REPO / "tests/data/old_layout/pointnav_checkpoint.pt"))  # fmt: skip
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound processes when loaded")
    parser.add_argument("--settle", type=float, default=30.0,
                        help="seconds the busy processes run before the first loaded command")  # fmt: skip
    parser.add_argument("--phases", nargs="+", default=["idle", "loaded"], choices=["idle", "loaded"])  # fmt: skip
    args = parser.parse_args()

    from pixelrl.envs.nav.sim import generate_dataset
    from pixelrl.threads import usable_cores

    work = Path(tempfile.mkdtemp(prefix="bench-threads-"))
    dataset = work / "pointnav.json.gz"
    generate_dataset(str(dataset), max(args.nav_episodes, 2), num_scenes=1, scene_seed=3)
    commands = {
        "eval": ["eval", "--env", "pixelrl/Desktop-ClickButton-v0", "--policy", "tiny-smolvlm",
                 "--episodes", str(args.episodes), "--batch", "1", "--seed", "0"],
        "bench nav": ["bench", "nav", "--dataset", str(dataset), "--agent", "checkpoint",
                      args.nav_checkpoint, "--episodes", str(args.nav_episodes), "--paths", "0",
                      "--out", str(work / "nav")],
    }  # fmt: skip
    print(f"{usable_cores()} cores in this process's affinity mask; load average "
          f"{os.getloadavg()[0]:.1f} at the start (a shared machine: 'idle' is not idle)")  # fmt: skip
    rows = []
    busy: list[subprocess.Popen] = []
    try:
        for phase in args.phases:
            if phase == "loaded":
                busy = busy_processes(args.busy)
                time.sleep(args.settle)
                print(f"loaded: {args.busy} busy processes for {args.settle:.0f} s, load average "
                      f"{os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
            for name, argv in commands.items():
                for setting in SETTINGS:
                    r = timed(argv, setting, work)
                    rows.append((name, phase, setting, r))
                    print(f"  {name} {phase} --threads {setting}: {r['wall']:.1f} s wall, "
                          f"{r['cpu']:.1f} s CPU, ran with {r['chose']}", flush=True)  # fmt: skip
    finally:
        for p in busy:  # only the processes this script started
            p.kill()
            p.wait()
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
