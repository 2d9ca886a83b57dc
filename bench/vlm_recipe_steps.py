"""The first steps of every vision-language recipe at a fixed seed: a refactor's before/after check.

Runs each text-policy recipe (GUI: ``gui/sft``, ``gui/grounding-grpo``, ``gui/multiturn-grpo``,
the MiniWoB++ SFT and GRPO configs; navigation: ``embodied/vlm-sft``, ``embodied/vlm-grpo``)
through the command line, as small as it goes, with one thread, and prints what each wrote to
``history.csv`` (loss, or reward / format / KL per step) and ``eval.csv`` (the held-out figure).
Run it on two checkouts and compare the tables: a refactor that changes no behaviour prints the
same numbers. Only the public interface is used (``pixelrl train``, run-folder files), so the
script runs on the code before a change as well as after it::

    python bench/vlm_recipe_steps.py --out /tmp/after [--only gui/sft embodied/vlm-grpo]
    python bench/vlm_recipe_steps.py --compare /tmp/before /tmp/after
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

GUI = ["model=tiny-smolvlm", "torch_threads=1", "train.progress=false", "eval.interval=0"]
NAV_ENV = {"sensors": ["rgb"], "width": 32, "height": 32, "num_scenes": 2, "scene_seed": 0,
           "apartment": {"rooms": [1, 1], "clutter": 0.0}, "turn_angle": 30,
           "episode_rules": {"min_geodesic": 1.0, "max_geodesic": 3.0, "min_ratio": 1.0},
           "max_episode_steps": 24}  # fmt: skip
NAV = ["torch_threads=1", "train.progress=false", "eval.episodes=2", "eval.interval=0",
       "env.kwargs=" + json.dumps(NAV_ENV), "env.eval_kwargs={scene_seed: 7, num_scenes: 1}"]  # fmt: skip
MINIWOB = "gui_agent/configs/miniwob_vlm_{}.yaml"

# name -> (recipe or config file, overrides); {sft} / {gui_sft}: the SFT runs' models
RUNS: dict[str, tuple[str, list[str]]] = {
    # SFT long enough that its answers parse: GRPO from it then has rewards that differ
    "gui/sft": ("gui/sft", [*GUI, "data.episodes=8", "sft.steps=40", "sft.batch_size=8",
                            "sft.lr=3e-3", "eval.grounding_items=8"]),
    "gui/grounding-grpo": ("gui/grounding-grpo", [*GUI, "init={gui_sft}", "grpo.steps=3", "grpo.num_samples=3",
                                                  "grpo.prompts_per_step=2", "data.prompts=6",
                                                  "eval.grounding_items=4", "grpo.max_new_tokens=12",
                                                  "grpo.kl_coef=0.04"]),
    "gui/multiturn-grpo": ("gui/multiturn-grpo", [*GUI, "init={gui_sft}", "grpo.steps=2", "grpo.num_samples=2",
                                                  "grpo.seeds_per_step=1", "grpo.max_new_tokens=8",
                                                  "eval.episodes=2", "env.max_steps=3"]),
    "miniwob/sft": (MINIWOB.format("sft"), [*GUI, "env.tasks=[click-test]", "data.episodes=2",
                                           "sft.steps=3", "sft.batch_size=2", "eval.episodes=2"]),
    "miniwob/grpo": (MINIWOB.format("grpo"), [*GUI, "env.tasks=[click-test]", "grpo.steps=1",
                                             "grpo.num_samples=2", "grpo.seeds_per_step=1",
                                             "grpo.max_new_tokens=8", "eval.episodes=2"]),
    "embodied/vlm-sft": ("embodied/vlm-sft", [*NAV, "data.episodes=6", "sft.steps=40",
                                             "sft.batch_size=16", "sft.lr=3e-3"]),
    "embodied/vlm-grpo": ("embodied/vlm-grpo", [*NAV, "init={sft}", "grpo.steps=2",
                                               "grpo.num_samples=2", "grpo.starts_per_step=1",
                                               "grpo.kl_coef=0.04"]),
}  # fmt: skip


def run_one(name: str, out: Path) -> dict:
    recipe, overrides = RUNS[name]
    folder = out / name.replace("/", "-")
    models = {"{sft}": out / "embodied-vlm-sft" / "model", "{gui_sft}": out / "gui-sft" / "model"}
    argv = [f"train.output_dir={folder}"]
    for a in overrides:
        for key, path in models.items():
            a = a.replace(key, str(path))
        argv.append(a)
    if recipe.endswith(".yaml"):
        root = Path(__file__).resolve().parents[1]
        recipe = str(root / recipe)
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pixelrl", "train", recipe, *argv], env=env,
                       capture_output=True, text=True)  # fmt: skip
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        return {"name": name, "error": p.stderr.strip().splitlines()[-1:], "seconds": seconds}
    rows = {}
    for table in ("history", "eval"):
        path = folder / f"{table}.csv"
        rows[table] = list(csv.DictReader(open(path))) if path.exists() else []
    return {"name": name, "seconds": seconds, **rows}


# The columns that say what the run learned (clock and throughput columns differ run to run).
KEEP = (
    "step",
    "loss",
    "reward",
    "format",
    "kl",
    "policy_loss",
    "clip_fraction",
    "grad_norm",
    "steps",
    "turns",
    "success",
    "accuracy",
    "spl",
)


def fingerprint(result: dict) -> list[str]:
    lines = []
    for table in ("history", "eval"):
        for row in result.get(table, []):
            cells = [f"{k}={float(row[k]):.6g}" for k in KEEP if row.get(k) not in (None, "")]
            lines.append(f"{table}: " + " ".join(cells))
    return lines or [f"error: {result.get('error')}"]


def parse_args(doc: str, names: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """``--out`` / ``--only`` / ``--compare``, shared with ``bench/ppo_recipe_steps.py``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", help="folder for the runs and results.json")
    ap.add_argument("--only", nargs="+", choices=names, help="these recipes only")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                    help="compare two --out folders' results.json")  # fmt: skip
    return ap, ap.parse_args()


def compare(folders: list[str], fingerprint) -> int:
    """Which recipes of BEFORE print different numbers in AFTER; 0 when none do."""
    before, after = (json.load(open(Path(f) / "results.json")) for f in folders)
    same = 0
    for name in before:
        a, b = fingerprint(before[name]), fingerprint(after.get(name, {}))
        same += a == b
        print(f"{name:<22} {'same' if a == b else 'DIFFERENT'}")
        for x, y in zip(a, b):
            if x != y:
                print(f"    before {x}\n    after  {y}")
    print(f"\n{same} of {len(before)} recipes print the same numbers")
    return 0 if same == len(before) else 1


def run_all(ap, args, names: list[str], run_one, fingerprint) -> int:
    """Run ``names`` into the empty ``--out`` folder, print each one's figures, keep them."""
    if not args.out:
        ap.error("give --out FOLDER (or --compare BEFORE AFTER)")
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        ap.error(f"--out {out} is not empty: earlier runs there would be read back")
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in names:
        results[name] = run_one(name, out)
        print(f"== {name} ({results[name]['seconds']:.0f} s)")
        for line in fingerprint(results[name]):
            print("   ", line)
    json.dump(results, open(out / "results.json", "w"), indent=1)
    return 0


def main() -> int:
    ap, args = parse_args(__doc__, list(RUNS))
    if args.compare:
        return compare(args.compare, fingerprint)
    names = args.only or list(RUNS)
    for grpo, sft in (("embodied/vlm-grpo", "embodied/vlm-sft"),
                      ("gui/grounding-grpo", "gui/sft"), ("gui/multiturn-grpo", "gui/sft")):  # fmt: skip
        if grpo in names and sft not in names:
            names = [sft, *names]
    return run_all(ap, args, names, run_one, fingerprint)


if __name__ == "__main__":
    sys.exit(main())
