"""How many of a folder of OSWorld task files load here, why the rest are refused, and how many
of one domain run end to end on a private Xvfb in the sandbox.

    python bench/osworld_tasks.py FOLDER [--run-domain os] [--json OUT]

FOLDER: OSWorld's ``evaluation_examples/examples`` (from github.com/xlang-ai/OSWorld, Apache-2.0;
not shipped here) or any folder of task JSON files. "Runs end to end" means: the env resets
(every set-up step ran in the sandbox; a step that failed is counted apart, OSWorld logs those
and goes on), an agent that says ``done`` at once (``fail`` for an infeasible task) is scored,
postconfig and metric included, without an error. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument(
        "--run-domain", default="os", help="sub-folder whose loadable tasks to run ('' = none)"
    )
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args(argv)

    from pixelrl.envs.gui_action import Action
    from pixelrl.envs.x11.env import XDesktopEnv
    from pixelrl.envs.x11.osworld import reason_counts, survey

    folder = Path(args.folder)
    verdicts = survey(folder)
    loaded = [v for v in verdicts if v.runs]
    figures: dict = {
        "files": len(verdicts),
        "loaded": len(loaded),
        "refused": len(verdicts) - len(loaded),
        "reasons": reason_counts(verdicts),
        "per_domain": {},
    }
    for v in verdicts:
        domain = (
            Path(v.path).relative_to(folder).parts[0]
            if len(Path(v.path).relative_to(folder).parts) > 1
            else "."
        )
        row = figures["per_domain"].setdefault(domain, {"files": 0, "loaded": 0})
        row["files"] += 1
        row["loaded"] += v.runs
    print(f"{len(verdicts)} task files: {len(loaded)} load, {figures['refused']} refused")
    for domain, row in sorted(figures["per_domain"].items()):
        print(f"  {domain:<22} {row['loaded']:4d} / {row['files']:4d} load")
    print("refused, tasks per reason (a task counts once per reason):")
    for reason, count in figures["reasons"].items():
        print(f"  {count:5d}  {reason}")

    if args.run_domain:
        runs = []
        todo = [v for v in loaded if Path(v.path).parent.name == args.run_domain]
        for v in todo:
            task = v.task
            row = {"id": task.id, "ok": False}
            t0 = time.perf_counter()
            try:
                with XDesktopEnv(task, screen_size=(1280, 800)) as env:
                    env.reset(seed=0)
                    row["setup_errors"] = list(env.setup_errors)
                    last = (
                        Action.fail() if task.evaluator["func"] == ["infeasible"] else Action.done()
                    )
                    _, reward, terminated, _, _ = env.step(last)
                    row.update(ok=bool(terminated), reward=reward)
            except Exception as e:  # a figure, not a test: count it and go on
                row["error"] = f"{type(e).__name__}: {e}"[:300]
            row["seconds"] = round(time.perf_counter() - t0, 2)
            runs.append(row)
            status = "ok" if row["ok"] else "ERROR"
            print(
                f"  {status:5} {task.id}  reward {row.get('reward')}  {row['seconds']} s"
                + (f"  setup errors: {len(row['setup_errors'])}" if row.get("setup_errors") else "")
                + (f"  {row['error']}" if "error" in row else "")
            )
        clean = sum(r["ok"] and not r.get("setup_errors") for r in runs)
        ok = sum(r["ok"] for r in runs)
        print(
            f"{args.run_domain}: {len(todo)} load, {ok} run end to end "
            f"({clean} with every set-up step succeeding)"
        )
        figures["run"] = {
            "domain": args.run_domain,
            "loaded": len(todo),
            "end_to_end": ok,
            "clean_setup": clean,
            "tasks": runs,
        }
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
