"""Multi-turn GRPO on PointNav through TRL's ``GRPOTrainer`` (our env as TRL tools) and through
our own trainer (``embodied/vlm-grpo``), in one run: reward curves side by side, seconds a step.

Held equal on both sides: the model (a tiny Qwen2.5-VL built from config, the same shape and
init seed; each side's tokenizer is trained on its own answer language: tool calls for TRL,
``move_forward(3)`` for ours), the task and its env settings (64x64 RGB, 1-2-room apartments),
the starts (TRL's rows are the seeds our trainer draws, in its order), the sampling budget
(``--starts`` starts x ``--samples`` episodes a step; an episode at most ``--turns`` low-level
steps, so at most that many answers, each of at most ``--tokens`` tokens: TRL bounds a whole
rollout's tokens, so its bound is ``turns x (tokens + a tool answer's tokens)``; temperature 1), the learning rate (constant), no KL, one
optimizer step a GRPO step, one torch thread, fp32.

Not equal, by construction: TRL's prompt carries the tools' JSON schemas (a few hundred tokens
more a turn), a TRL rollout ends at the first answer without a tool call while ours plays every
answer (an unparsable one is a no-op step with a format penalty), and the rewards are the same
measures (:func:`pixelrl.embodied.rewards.measure_reward`) but ours adds that format term.
Both start from random weights: a model from config writes neither language at first, so the
curves show what each trainer makes of that in a few steps, and the seconds what a step costs.

    python bench/trl_vs_ours.py                     # 8 steps a side
    python bench/trl_vs_ours.py --steps 20 --out docs/results/trl_vs_ours.png
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

ENV = "pixelrl/PointNav-v0"
TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2}  # fmt: skip


# embodied/configs/vlm_grpo.yaml's turn rewards, given to the TRL environment too
REWARDS = {
    "progress": 1.0,
    "slack": -0.01,
    "success": 2.5,
    "spl": 1.0,
    "format": 0.5,
    "early_stop": 1.0,
}
TOOL_ANSWER = 40  # tokens of a tool's answer in TRL's completion: 16 image tokens and the goal


def env_kwargs(turns: int) -> dict:
    """The env of both sides; an episode is at most ``turns`` low-level steps, so at most
    ``turns`` answers on either side (ours: an unparsable answer is one no-op step)."""
    return {"sensors": ["rgb"], "width": 64, "height": 64, "num_scenes": 8, "scene_seed": 0,
            "apartment": {"rooms": [1, 2], "clutter": 0.5}, "turn_angle": 30,
            "max_episode_steps": turns}  # fmt: skip


def starts(seed: int, steps: int, per_step: int) -> list[int]:
    """The starts our multi-turn trainer draws (``NavTask.play``), step by step."""
    rng = np.random.default_rng(seed)
    return [int(s) for _ in range(steps) for s in rng.integers(0, 2**31 - 1, per_step)]


def run_ours(args) -> tuple[list[float], float]:
    import yaml

    from pixelrl.embodied.vlm_train import NavTask, config_for
    from pixelrl.rl.text.recipe import train

    out = tempfile.mkdtemp(prefix="ours-")
    kw = env_kwargs(args.turns)
    overrides = [
        "model=tiny-qwen2_5_vl", "init=", f"seed={args.seed}", "torch_threads=1",
        f"text_size={yaml.safe_dump(TEXT, default_flow_style=True).strip()}",
        f"env.kwargs={yaml.safe_dump(kw, default_flow_style=True).strip()}",
        f"grpo.steps={args.steps}", f"grpo.num_samples={args.samples}",
        f"grpo.starts_per_step={args.starts}", f"grpo.lr={args.lr}", "grpo.kl_coef=0",
        "grpo.lr_schedule=constant", "grpo.warmup_ratio=0", f"grpo.minibatch={args.starts * args.samples * args.turns}",
        # TRL has no counterpart: no validation episodes, no format guard (which would skip
        # every update of a model that writes nothing parsable yet)
        "eval.val_episodes=0", "grpo.format_floor=0",
        f"grpo.rewards={yaml.safe_dump(REWARDS, default_flow_style=True).strip()}",
        f"agent.max_new_tokens={args.tokens}", "eval.episodes=0", "eval.interval=0",
        "train.progress=false", f"train.output_dir={out}",
    ]  # fmt: skip
    from pathlib import Path

    import pixelrl.embodied as emb

    cfg = config_for(Path(emb.__file__).parent / "configs" / "vlm_grpo.yaml", overrides)
    cfg.recipe = "embodied/vlm-grpo"
    t0 = time.perf_counter()
    train(cfg, NavTask(cfg))
    seconds = time.perf_counter() - t0
    import csv

    with open(Path(out) / "history.csv") as f:
        rewards = [float(row["reward"]) for row in csv.DictReader(f)]
    return rewards, seconds / args.steps


def run_trl(args) -> tuple[list[float], float, list[float]]:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from pixelrl.trl_env import environment_factory, tiny_tool_model, train_dataset

    kw = env_kwargs(args.turns)
    model, processor = tiny_tool_model(ENV, seed=0, text_size=TEXT, **kw)
    seeds = starts(args.seed, args.steps, args.starts)
    rows = train_dataset(ENV, seeds, **kw)
    # each start G times in a row: TRL's sampler repeats a row num_generations times itself
    assert isinstance(rows, Dataset)
    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="trl-"), max_steps=args.steps,
        per_device_train_batch_size=args.starts * args.samples, num_generations=args.samples,
        max_completion_length=args.turns * (args.tokens + TOOL_ANSWER), max_tool_calling_iterations=args.turns,
        learning_rate=args.lr, lr_scheduler_type="constant", beta=0.0, temperature=1.0,
        loss_type="dapo", shuffle_dataset=False, logging_steps=1, report_to=[], use_cpu=True,
        save_strategy="no", gradient_checkpointing=False, seed=args.seed, disable_tqdm=True,
    )  # fmt: skip
    trainer = GRPOTrainer(model=model, args=config, train_dataset=rows, processing_class=processor,
                          environment_factory=environment_factory(ENV, rewards=REWARDS, **kw))  # fmt: skip
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    logs = [r for r in trainer.state.log_history if "reward" in r]
    calls = [float(r.get("tools/call_frequency", 0.0)) for r in logs]
    return [float(r["reward"]) for r in logs], seconds / args.steps, calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--starts", type=int, default=2, help="starts (prompts) a step")
    p.add_argument("--samples", type=int, default=4, help="episodes a start (G)")
    p.add_argument("--turns", type=int, default=4, help="answers an episode at most")
    p.add_argument("--tokens", type=int, default=24, help="tokens an answer at most")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="", help="a PNG of the two reward curves")
    args = p.parse_args()
    import torch

    torch.set_num_threads(1)
    print(f"PointNav, {args.steps} steps a side: {args.starts} starts x {args.samples} episodes, "
          f"<= {args.turns} answers of <= {args.tokens} tokens; load {os.getloadavg()[0]:.2f}")  # fmt: skip
    ours, ours_s = run_ours(args)
    trl, trl_s, calls = run_trl(args)
    print(f"\n{'step':>4} {'ours reward':>12} {'TRL reward':>11} {'TRL tool calls':>15}")
    for i in range(args.steps):
        print(f"{i + 1:>4} {ours[i]:>12.3f} {trl[i]:>11.3f} {calls[i]:>15.2f}")
    print(f"\n{'trainer':<8} {'s/step':>8} {'mean reward':>12}")
    print(f"{'ours':<8} {ours_s:>8.2f} {np.mean(ours):>12.3f}")
    print(f"{'TRL':<8} {trl_s:>8.2f} {np.mean(trl):>12.3f}")
    print(f"TRL / ours seconds a step: {trl_s / ours_s:.2f}x; load {os.getloadavg()[0]:.2f}")
    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(range(1, args.steps + 1), ours, marker="o", label=f"ours ({ours_s:.1f} s/step)")
        ax.plot(
            range(1, args.steps + 1), trl, marker="s", label=f"TRL GRPOTrainer ({trl_s:.1f} s/step)"
        )
        ax.set(
            xlabel="GRPO step", ylabel="mean episode return", title="PointNav, tiny VLM from config"
        )
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.out, dpi=120)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
