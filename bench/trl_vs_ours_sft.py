"""TRL's GRPOTrainer and our GRPO trainer from ONE SFT start, at equal CPU (issue 55 item 2).

1. **SFT start**: ``embodied/vlm-sft`` with ``action_format=toolcall`` (answers are TRL's
   navigation tool calls, ``<tool_call>{"name": "move_forward", "arguments": {"steps": 3}}
   </tool_call>``, the tools' schemas in the system turn), a tiny Qwen2.5-VL built from config,
   on the shortest-path follower's PointNav episodes; saved as ``OUT/sft/model``.
2. **Ours**: ``embodied/vlm-grpo init=OUT/sft/model`` for ``--steps`` steps; its process CPU
   seconds are the budget.
3. **TRL**: ``GRPOTrainer(model=OUT/sft/model, environment_factory=pixelrl.trl_env...)`` on the
   same env, the same turn rewards (``REWARDS``), the same starts (the seeds our trainer draws),
   G, learning rate, no KL, temperature 1, until it has spent the same CPU seconds (a callback
   stops it); saved as ``OUT/trl-seedS/model``.
4. **Held-out**: every model (the start, ours, TRL's) plays the same held-out episodes
   (``env.eval_kwargs``' scenes, seeds from ``EVAL_SEED_BASE``), greedy, with our evaluator
   (:func:`bench.vlm_nav_paired.play_agent`); Success with its Wilson 95% CI, SPL, the parse
   rate, and each trained model against the start and TRL against ours: McNemar's exact test
   on the episodes one solves and the other does not, and a paired bootstrap 95% CI of the
   Success difference.

What differs by construction: TRL plays a rollout as a conversation (each tool's answer, a new
frame and the goal, appended; the rollout ends at the first message without a tool call),
ours asks each turn afresh from the current frame, the goal and the last actions (the prompt
SFT taught); the held-out evaluator is ours for both (the first turn's prompt is TRL's word for
word). Process CPU = user + system of this process (one torch thread); wall times come from a
shared machine.

    python bench/trl_vs_ours_sft.py --seeds 1 2 --steps 10 --out /tmp/tvo
    python bench/trl_vs_ours_sft.py --sft /tmp/tvo/sft/model --seeds 3 --out /tmp/tvo  # reuse the start
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from trl_vs_ours import REWARDS, TOOL_ANSWER, starts  # noqa: E402
from vlm_nav_paired import measures, paired, play_agent  # noqa: E402

ENV = "pixelrl/PointNav-v0"
CONFIG = Path(__file__).parents[1] / "embodied" / "configs" / "vlm_sft_toolcall.yaml"
ENV_KWARGS = yaml.safe_load(CONFIG.read_text())["env"]["kwargs"]  # both sides' env


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def flow(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip()


def recipe_cfg(recipe: str, overrides: list[str], start: Path = CONFIG):
    """``start`` (``embodied/configs/vlm_sft_toolcall.yaml``, or the SFT run's own
    ``config.yaml``: the GRPO recipe shares its keys, so GRPO prompts as the start was taught)
    as ``recipe``, with ``overrides``."""
    from pixelrl.embodied.vlm_train import config_for

    cfg = config_for(start, overrides)
    cfg.recipe = recipe
    return cfg


def common(args) -> list[str]:
    return ["torch_threads=1", "train.progress=false", "eval.val_episodes=0", "eval.episodes=0",
            "eval.interval=0"]  # fmt: skip


def run_sft(args, out: Path) -> tuple[Path, float]:
    from pixelrl.embodied.vlm_train import NavTask
    from pixelrl.rl.text.recipe import train

    cfg = recipe_cfg("embodied/vlm-sft", [*common(args), f"seed={args.sft_seed}",
                     f"data.episodes={args.episodes}", f"sft.steps={args.sft_steps}",
                     f"train.output_dir={out}", *args.sft_set])  # fmt: skip
    start = cpu_s()
    train(cfg, NavTask(cfg))
    return out / "model", cpu_s() - start


def run_ours(args, init: Path, out: Path, seed: int) -> tuple[float, list[float]]:
    from pixelrl.embodied.vlm_train import NavTask
    from pixelrl.rl.text.recipe import train

    # the start's own config: its prompt (history, frames) and agent keys, whatever the recipe
    # file says now
    cfg = recipe_cfg("embodied/vlm-grpo", [
        *common(args), f"init={init}", f"seed={seed}", f"grpo.steps={args.steps}",
        f"grpo.num_samples={args.samples}", f"grpo.starts_per_step={args.starts}",
        f"grpo.lr={args.lr}", "grpo.kl_coef=0", "grpo.lr_schedule=constant",
        "grpo.warmup_ratio=0", "grpo.format_floor=0", "grpo.replay_failed=0",
        f"grpo.rewards={flow(REWARDS)}", f"train.output_dir={out}",
    ], init.parent / "config.yaml")  # fmt: skip
    start = cpu_s()
    train(cfg, NavTask(cfg))
    import csv

    with open(out / "history.csv") as f:
        rewards = [float(r["reward"]) for r in csv.DictReader(f)]
    return cpu_s() - start, rewards


def run_trl(args, init: Path, out: Path, seed: int, budget: float) -> tuple[float, list[dict]]:
    """TRL's GRPOTrainer from ``init`` until ``budget`` CPU seconds are spent (whole steps)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import AutoModelForImageTextToText, AutoProcessor, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from pixelrl.trl_env import environment_factory, train_dataset

    start = cpu_s()

    class Budget(TrainerCallback):  # stop after the step that reaches ours' CPU seconds
        def on_step_end(self, _args, state, control, **kw):
            control.should_training_stop = cpu_s() - start >= budget

    processor = AutoProcessor.from_pretrained(init, trust_remote_code=False)
    model = AutoModelForImageTextToText.from_pretrained(init, trust_remote_code=False)
    rows = train_dataset(ENV, starts(seed, 10 * args.steps, args.starts), **ENV_KWARGS)
    config = GRPOConfig(
        output_dir=str(out / "trainer"), max_steps=10 * args.steps,
        per_device_train_batch_size=args.starts * args.samples, num_generations=args.samples,
        max_completion_length=args.turns * (40 + TOOL_ANSWER), max_tool_calling_iterations=args.turns,
        learning_rate=args.lr, lr_scheduler_type="constant", beta=0.0, temperature=1.0,
        loss_type="dapo", shuffle_dataset=False, logging_steps=1, report_to=[], use_cpu=True,
        save_strategy="no", gradient_checkpointing=False, seed=seed, disable_tqdm=True,
    )  # fmt: skip
    trainer = GRPOTrainer(model=model, args=config, train_dataset=rows, processing_class=processor,
                          environment_factory=environment_factory(ENV, rewards=REWARDS, **ENV_KWARGS),
                          callbacks=[Budget()])  # fmt: skip
    trainer.train()
    spent = cpu_s() - start
    # an agent folder our evaluator loads: TRL's weights, the start's processor and agent json
    trainer.save_model(str(out / "model"))
    for name in ("pixelrl_nav_agent.json",):
        shutil.copy(init / name, out / "model" / name)
    shutil.copy(init.parent / "config.yaml", out / "config.yaml")
    return spent, [r for r in trainer.state.log_history if "reward" in r]


def bootstrap_ci(
    a: np.ndarray, b: np.ndarray, n: int = 10000, seed: int = 0
) -> tuple[float, float]:
    """Paired bootstrap 95% interval of mean(b) - mean(a) (episodes resampled together)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), (n, len(a)))
    d = b[idx].mean(1) - a[idx].mean(1)
    return float(np.quantile(d, 0.025)), float(np.quantile(d, 0.975))


def compare(base: list[dict], rows: list[dict]) -> str:
    c = paired(base, rows)
    lo, hi = bootstrap_ci(np.array([r["success"] for r in base], float),
                          np.array([r["success"] for r in rows], float))  # fmt: skip
    return (f"{c['d_success']:+.3f} [{lo:+.3f}, {hi:+.3f}] | {c['only_b']} / {c['only_a']} | "
            f"{c['p_success']:.2g}")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="a folder for the runs (kept)")
    p.add_argument("--sft", default="", help="an SFT start to reuse (OUT/sft/model)")
    p.add_argument("--sft-seed", type=int, default=1)
    p.add_argument("--episodes", type=int, default=60, help="SFT demonstrations")
    p.add_argument("--sft-steps", type=int, default=600)
    p.add_argument(
        "--sft-set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="more config overrides of the SFT start, e.g. tokenizer.tool_tokens=false",
    )
    p.add_argument("--seeds", type=int, nargs="*", default=[1, 2], help="GRPO seeds, each side")
    p.add_argument("--steps", type=int, default=10, help="our GRPO steps (TRL: the same CPU)")
    p.add_argument("--starts", type=int, default=2)
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--turns", type=int, default=8, help="TRL: tool calls a rollout at most")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--held-out", type=int, default=60, help="held-out episodes a model")
    args = p.parse_args()
    import torch

    torch.set_num_threads(1)
    from pixelrl.embodied.vlm_train import EVAL_SEED_BASE

    out = Path(args.out)
    wall = time.perf_counter()
    sft_cpu = 0.0
    if args.sft:
        init = Path(args.sft)
    else:
        init, sft_cpu = run_sft(args, out / "sft")
    held = [EVAL_SEED_BASE + k for k in range(args.held_out)]
    cache = init.parent / f"heldout-{args.held_out}.json"  # the start's episodes, played once
    if cache.is_file():
        results = {"SFT start": json.loads(cache.read_text())}
    else:
        results = {"SFT start": play_agent(init, held)}
        cache.write_text(json.dumps(results["SFT start"]))
    start = measures(results["SFT start"])
    print(f"SFT start: held-out success {start['success']:.3f}, parsed {start['parsed']:.2f} "
          f"({sft_cpu:.0f} CPU s)", flush=True)  # fmt: skip
    budgets: dict[str, float] = {}
    for seed in args.seeds:
        budget, _ = run_ours(args, init, out / f"ours-seed{seed}", seed)
        spent, logs = run_trl(args, init, out / f"trl-seed{seed}", seed, budget)
        budgets[f"ours seed {seed}"], budgets[f"TRL seed {seed}"] = budget, spent
        results[f"ours seed {seed}"] = play_agent(out / f"ours-seed{seed}" / "model", held)
        results[f"TRL seed {seed}"] = play_agent(out / f"trl-seed{seed}" / "model", held)
        calls = np.mean([r.get("tools/call_frequency", 0.0) for r in logs])
        print(f"TRL seed {seed}: {len(logs)} steps in {spent:.0f} CPU s (ours: {args.steps} "
              f"steps in {budget:.0f}); reward per step {[round(r['reward'], 2) for r in logs]}, "
              f"tool calls a rollout {calls:.2f}")  # fmt: skip
    seeds = "-".join(map(str, args.seeds))
    (out / f"results-seeds-{seeds}.json").write_text(json.dumps(results))  # per-episode rows

    made = f"{args.episodes} demos x {args.sft_steps} steps ({sft_cpu:.0f} CPU s)"
    print(f"\nPointNav held-out ({args.held_out} episodes, greedy), SFT start: "
          f"{args.sft if args.sft else made}")  # fmt: skip
    print("| model | GRPO CPU s | Success [95% CI] | SPL | parsed | final distance (m) |")
    print("|---|---:|---|---:|---:|---:|")
    for name, rows in results.items():
        m = measures(rows)
        dist = np.mean([r["distance_to_goal"] for r in rows])
        print(f"| {name} | {budgets.get(name, 0):.0f} | {m['success']:.3f} "
              f"[{m['ci_low']:.3f}, {m['ci_high']:.3f}] | {m['spl']:.3f} | {m['parsed']:.2f} "
              f"| {dist:.2f} |")  # fmt: skip
    for name, rows in results.items():  # what the unparsed answers were, most common first
        why = Counter(reason for r in rows for reason in r.get("refused", ()))
        print(f"{name}: refused answers {sum(why.values())}: {why.most_common(3)}")
    print("\n| pair | Success diff [paired bootstrap 95% CI] | only 2nd / only 1st | McNemar p |")
    print("|---|---|---|---:|")
    for seed in args.seeds:
        for name in (f"ours seed {seed}", f"TRL seed {seed}"):
            print(f"| SFT start -> {name} | {compare(results['SFT start'], results[name])} |")
        trl, ours = results[f"TRL seed {seed}"], results[f"ours seed {seed}"]
        print(f"| ours -> TRL, seed {seed} | {compare(ours, trl)} |")
    print(f"\nprocess CPU {cpu_s() / 60:.1f} min, wall {(time.perf_counter() - wall) / 60:.1f} "
          "min (shared machine)")  # fmt: skip


if __name__ == "__main__":
    main()
