"""The navigation VLM agent over seeds (issue 42's protocol): SFT then GRPO, each seed its own.

    .venv/bin/python bench/vlm_nav_seeds.py OUT --seeds 1 2 3 [--episodes 200] [key=value ...]

For each seed s, ``bash bench/vlm_nav_pipeline.sh OUT/seed<s> seed=s [key=value ...]`` trains
SFT and then GRPO from it (both with seed s: model init, batches and GRPO's training starts all
change), timed in CPU minutes; a seed folder that already has its ``cpu_minutes.txt`` is not
trained again, and one whose SFT stage is done (``sft.time`` and ``sft/model``) trains GRPO only. Then both models of every seed play the same ``--episodes`` held-out episodes
(the recipe's ``env.eval_kwargs`` scenes; :func:`vlm_nav_paired.play_agent`, greedy) and each
GRPO model is compared with its own SFT model on them (:func:`vlm_nav_paired.paired`: McNemar's
exact test on Success, a paired t test on SPL). The per-seed table (Success with its Wilson 95%
interval, SPL with its t interval) ends with the mean over seeds and its t interval over seeds
(the seed-to-seed spread; with 3 seeds t = 4.3) and the pooled Wilson interval of every episode;
it is printed and written to ``OUT/seeds.md`` (each seed's episodes: ``OUT/seed<s>/paired.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from vlm_nav_paired import measures, paired, play_agent  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="a folder: OUT/seed<s>/{sft,grpo} and OUT/seeds.md")
    parser.add_argument("overrides", nargs="*", help="key=value for both recipes")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the evaluation")
    args = parser.parse_intermixed_args()
    out = Path(args.out)

    import torch

    torch.set_num_threads(args.threads)

    from pixelrl.embodied.vlm_train import EVAL_SEED_BASE

    episodes = [EVAL_SEED_BASE + k for k in range(args.episodes)]
    results = []
    for seed in args.seeds:
        folder = out / f"seed{seed}"
        train(folder, seed, args.overrides)
        results.append(evaluate(folder, seed, episodes, args.envs))
    table = markdown(results, args)
    print("\n" + table)
    (out / "seeds.md").write_text(table)


def train(folder: Path, seed: int, overrides: list[str]) -> None:
    """SFT then GRPO for ``seed`` by bench/vlm_nav_pipeline.sh (skipped when already done)."""
    if (folder / "cpu_minutes.txt").is_file():
        return
    cmd = ["bash", str(HERE / "vlm_nav_pipeline.sh"), str(folder), f"seed={seed}", *overrides]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def evaluate(folder: Path, seed: int, episodes: list[int], n_envs: int) -> dict:
    """Both models of a seed on ``episodes`` (each stage's rows cached in ``paired.json``: a
    stage already played on these episodes, such as a kept SFT stage, is not played again), and
    their comparison."""
    cache = folder / "paired.json"
    rows = json.loads(cache.read_text()) if cache.is_file() else {}
    if rows.get("episodes") != episodes:
        rows = {"episodes": episodes}
    for stage in ("sft", "grpo"):
        if stage not in rows:
            rows[stage] = play_agent(folder / stage / "model", episodes, n_envs)
            cache.write_text(json.dumps(rows, default=float))
    sft, grpo = measures(rows["sft"]), measures(rows["grpo"])
    minutes = (folder / "cpu_minutes.txt").read_text().split()
    return {
        "seed": seed, "sft": sft, "grpo": grpo, "vs": paired(rows["sft"], rows["grpo"]),
        "cpu": (float(minutes[3].rstrip(",")), float(minutes[5].rstrip(","))),
        "kept": kept_step(folder / "grpo"),
    }  # fmt: skip


def kept_step(run: Path) -> str:
    """The GRPO step whose weights model/ holds (the best validation check by the run's
    ``eval.val_measure``), from val.csv."""
    import csv

    import yaml

    path = run / "val.csv"
    if not path.is_file():
        return "last"
    config = yaml.safe_load((run / "config.yaml").read_text()) or {}
    measure = (config.get("eval") or {}).get("val_measure", "success")
    with open(path) as f:
        checks = list(csv.DictReader(f))
    best = max(checks, key=lambda r: float(r[measure]))  # the first of equal ones, as kept
    return f"{best['step']} of {checks[-1]['step']}"


def mean_ci(values: list[float]) -> tuple[float, float, float]:
    """The mean of per-seed values (rates) and its t 95% interval over seeds, within [0, 1]."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float(v.mean()), float("nan"), float("nan")
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(v.mean()), max(0.0, float(v.mean() - half)), min(1.0, float(v.mean() + half))


def markdown(results: list[dict], args) -> str:
    from pixelrl.stats import wilson_interval

    def cell(m: dict) -> str:
        return f"{m['success']:.3f} [{m['ci_low']:.3f}, {m['ci_high']:.3f}]"

    lines = [
        f"{args.episodes} held-out episodes per model, the same for every seed; "
        f"overrides: {' '.join(args.overrides) or '(none)'}",
        "",
        "| seed | CPU min SFT + GRPO | GRPO model (step kept) | SFT Success [95% CI] | SFT SPL "
        "| GRPO Success [95% CI] | GRPO SPL | only GRPO / only SFT | McNemar p | SPL paired t p |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        vs = r["vs"]
        lines.append(
            f"| {r['seed']} | {r['cpu'][0]:.1f} + {r['cpu'][1]:.1f} = {sum(r['cpu']):.1f} "
            f"| {r['kept']} | {cell(r['sft'])} | {r['sft']['spl']:.3f} | {cell(r['grpo'])} "
            f"| {r['grpo']['spl']:.3f} | {vs['only_b']} / {vs['only_a']} | {vs['p_success']:.2g} "
            f"| {vs['p_spl']:.2g} |"
        )
    rows = []
    for stage in ("sft", "grpo"):
        mean, lo, hi = mean_ci([r[stage]["success"] for r in results])
        solved = sum(round(r[stage]["success"] * r[stage]["n"]) for r in results)
        n = sum(r[stage]["n"] for r in results)
        plo, phi = wilson_interval(int(solved), n)
        spl = np.mean([r[stage]["spl"] for r in results])
        rows.append(
            f"**{stage.upper()}**: mean Success {mean:.3f}, t 95% CI over seeds [{lo:.3f}, "
            f"{hi:.3f}] (pooled {n} episodes: Wilson [{plo:.3f}, {phi:.3f}]); mean SPL {spl:.3f}"
        )
    better = sum(r["vs"]["d_success"] > 0 and r["vs"]["p_success"] < 0.05 for r in results)
    rows.append(f"GRPO above its own SFT with McNemar p < 0.05 in {better} of {len(results)} seeds")
    return "\n".join(lines + [""] + [f"- {r}" for r in rows]) + "\n"


if __name__ == "__main__":
    main()
