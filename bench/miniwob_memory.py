"""The pointer policy with and without memory (issue 54) on MiniWoB++ tasks, at the same CPU budget.

click-button-sequence ("click ONE, then click TWO") shows the same screen before and after the
first click, so a policy without memory gives the same greedy action twice and scores 0; with
``policy.memory=actions`` it sees where it clicked. Two tasks the memoryless policy gets right
show nothing regressed. Each arm is one ``pixelrl train gui/miniwob`` run (both run at once, so
they share the machine alike), then ``--episodes`` held-out (odd) seeds a task through
:func:`pixelrl.gui_agent.evaluate.evaluate_success` (``pixelrl eval``'s path), in the env the run
trained in (its ``env.kwargs``: ``max_steps`` 12, where a policy that repeats a click would
otherwise play MiniWoB's default 30 steps), one process a (arm, task), all at once. The table
gives each task's success with its Wilson 95% interval, and each arm's CPU minutes (the process
and the children it waited for: browsers, the async env worker)::

    python bench/miniwob_memory.py --out /tmp/mwmem                 # train both arms, evaluate
    python bench/miniwob_memory.py --out /tmp/mwmem --eval-only     # evaluate existing runs

Needs Chromium (the MiniWoB++ env starts it headless).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASKS = ["click-button-sequence", "click-test", "click-button"]
ARMS = {"none": "memory off", "actions": "memory on"}


def train_command(out: Path, memory: str, args) -> list[str]:
    return [
        sys.executable, "-m", "pixelrl", "train", "gui/miniwob",
        f"env.tasks=[{','.join(args.tasks)}]", f"env.num_envs={len(args.tasks)}",
        f"seed={args.seed}", "torch_threads=1", "policy.reader=false", f"policy.memory={memory}",
        f"policy.bc_samples={args.bc_samples}", f"policy.bc_steps={args.bc_steps}",
        "train.time_limit_minutes=0", f"train.cpu_limit_minutes={args.cpu_minutes}",
        "train.progress=false", "train.final_eval=false", f"train.output_dir={out / memory}",
    ]  # fmt: skip


def run_parallel(commands: dict[str, list[str]], logs: Path) -> dict[str, float]:
    """Run the commands at once; each one's CPU minutes (itself and the children it waited for)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    procs = {}
    for name, argv in commands.items():
        with open(logs / f"{name}.log", "w") as log:
            procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    cpu = {}
    for name, p in procs.items():
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            raise SystemExit(f"{name} failed ({p.returncode}): see {logs / f'{name}.log'}")
        cpu[name] = (usage.ru_utime + usage.ru_stime) / 60
    return cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--tasks", nargs="+", default=TASKS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cpu-minutes", type=float, default=3.0, help="train.cpu_limit_minutes")
    ap.add_argument("--bc-samples", type=int, default=600)
    ap.add_argument("--bc-steps", type=int, default=500)
    ap.add_argument("--episodes", type=int, default=100, help="held-out seeds a task")
    ap.add_argument("--eval-only", action="store_true", help="evaluate the runs in --out")
    ap.add_argument("--eval-one", nargs=2, metavar=("RUN", "TASK"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.eval_one:
        return eval_one(Path(args.eval_one[0]), args.eval_one[1], args.episodes)
    if args.out is None:
        ap.error("give --out FOLDER")
    args.out.mkdir(parents=True, exist_ok=True)
    figures = args.out / "cpu_minutes.json"
    if not args.eval_only:
        cpu = run_parallel({m: train_command(args.out, m, args) for m in ARMS}, args.out)
        figures.write_text(json.dumps({"train": cpu}))
    evals = {f"eval-{m}-{t}": [sys.executable, __file__, "--eval-one", str(args.out / m), t,
                               "--episodes", str(args.episodes)]
             for m in ARMS for t in args.tasks}  # fmt: skip
    eval_cpu = run_parallel(evals, args.out)
    cpu = json.loads(figures.read_text())["train"] if figures.exists() else {}
    rows = {m: {t: json.loads((args.out / f"eval-{m}-{t}.json").read_text()) for t in args.tasks}
            for m in ARMS}  # fmt: skip
    print(f"\n{'task':<24}" + "".join(f"{ARMS[m]:>22}" for m in ARMS))
    for task in args.tasks:
        cells = []
        for m in ARMS:
            r = rows[m][task]
            cells.append(f"{r['success']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]")
        print(f"{task:<24}" + "".join(f"{c:>22}" for c in cells))
    print(f"{'train CPU min':<24}" + "".join(f"{cpu.get(m, float('nan')):>22.1f}" for m in ARMS))
    evals_cpu = {m: sum(v for k, v in eval_cpu.items() if k.startswith(f"eval-{m}-")) for m in ARMS}
    print(f"{'eval CPU min':<24}" + "".join(f"{evals_cpu[m]:>22.1f}" for m in ARMS))


def eval_one(run: Path, task: str, episodes: int) -> None:
    """One task's held-out success of a run's policy, in the env the run trained in, written to
    ``<out>/eval-<arm>-<task>.json``."""
    import torch

    from pixelrl.checkpoint import load_checkpoint
    from pixelrl.config import Config
    from pixelrl.envs import task_family
    from pixelrl.gui_agent import evaluate, ppo_task
    from pixelrl.gui_agent.agents import load_agent

    torch.set_num_threads(1)
    agent = load_agent(str(run))
    cfg = Config(load_checkpoint(run)["config"])
    kwargs = ppo_task.env_kwargs(cfg, "eval")
    row = evaluate.evaluate_success(
        agent, task_family("miniwob").env_id(task), episodes, 0, env_kwargs=kwargs, progress=False
    )[0]
    (run.parent / f"eval-{run.name}-{task}.json").write_text(json.dumps(row))


if __name__ == "__main__":
    main()
