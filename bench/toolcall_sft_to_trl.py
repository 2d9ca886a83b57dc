"""From our SFT to TRL's tools (issue 55 item 1): ``gui/sft`` with ``action_format: toolcall`` on
the expert's episodes of ClickButton, then (1) the share of held-out screens on which the saved
model's greedy answer parses as a tool call and clicks the target, with our codec, and (2) TRL's
``GRPOTrainer`` with ``environment_factory`` on held-out seeds: the tool calls it logs and the
reward, one step. Prints a table; CPU seconds are process CPU (user + system, this process).

    python bench/toolcall_sft_to_trl.py --steps 100 --episodes 4 --seed 1
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
from pathlib import Path

CLICK = "pixelrl/Desktop-ClickButton-v0"
SCREEN = (320, 240)


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--held-out", type=int, default=16, help="held-out seeds (odd) for (1)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import gymnasium
    import torch

    import pixelrl.envs  # noqa: F401
    from pixelrl.gui_agent.train_vlm import config_for, train
    from pixelrl.recipes import get_recipe
    from pixelrl.trl_env import environment_factory, train_dataset

    torch.set_num_threads(1)
    out = Path(tempfile.mkdtemp(prefix="toolcall-bench-"))
    cfg = config_for(get_recipe("gui/sft").config, [
        "model=tiny-qwen2_5_vl", "action_format=toolcall", "tokenizer.vocab_size=2000",
        f"data.episodes={args.episodes}", f"sft.steps={args.steps}", "sft.batch_size=2",
        "sft.lr=5e-3", "eval.grounding_items=0", "eval.interval=0", "eval.episodes=1",
        "torch_threads=1", f"seed={args.seed}", f"train.output_dir={out}", "train.progress=false",
    ])  # fmt: skip
    cfg.recipe = "gui/sft"
    start = cpu_s()
    train(cfg)
    sft_cpu = cpu_s() - start

    from pixelrl.gui_agent.train_vlm import load_policy

    cfg.init = str(out / "model")
    policy = load_policy(cfg)
    env = gymnasium.make(CLICK, screen_size=SCREEN)
    parsed = hits = 0
    seeds = [2 * k + 1 for k in range(args.held_out)]
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        c = policy.generate([obs["screenshot"]], [obs["instruction"]], do_sample=False,
                            max_new_tokens=40, screen_size=SCREEN)[0][0]  # fmt: skip
        parsed += c.parsed
        if c.parsed and c.action.kind == "click":
            x0, y0, x1, y1 = info["target_bbox"]
            hits += x0 <= c.action.x < x1 and y0 <= c.action.y < y1
    env.close()

    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl import GRPOConfig, GRPOTrainer

    start = cpu_s()
    processor = AutoProcessor.from_pretrained(out / "model", trust_remote_code=False)
    model = AutoModelForImageTextToText.from_pretrained(out / "model", trust_remote_code=False)
    grpo = GRPOConfig(output_dir=str(out / "grpo"), num_generations=4, logging_steps=1,
                      report_to=[], use_cpu=True, save_strategy="no", seed=args.seed, max_steps=1,
                      gradient_checkpointing=False, per_device_train_batch_size=4,
                      max_completion_length=300, max_tool_calling_iterations=1)  # fmt: skip
    trainer = GRPOTrainer(model=model, args=grpo, processing_class=processor,
                          train_dataset=train_dataset(CLICK, seeds[:1], screen_size=SCREEN),
                          environment_factory=environment_factory(CLICK, screen_size=SCREEN))  # fmt: skip
    trainer.train()
    trl_cpu = cpu_s() - start
    row = next(r for r in trainer.state.log_history if "reward" in r)

    n = len(seeds)
    print(
        f"\ngui/sft toolcall, {args.steps} steps, {args.episodes} expert episodes, seed {args.seed}"
    )
    print("| measure | value |\n|---|---|")
    print(f"| SFT CPU s | {sft_cpu:.1f} |")
    print(f"| held-out greedy answers that parse as a tool call | {parsed}/{n} |")
    print(f"| of which click inside the target | {hits}/{n} |")
    print(f"| TRL step 1: tool calls per rollout | {row['tools/call_frequency']:.2f} |")
    print(f"| TRL step 1: tool failures per rollout | {row['tools/failure_frequency']:.2f} |")
    print(f"| TRL step 1: reward (mean of 4 samples) | {row['reward']:.3f} |")
    print(f"| TRL step CPU s (load + 1 step) | {trl_cpu:.1f} |")


if __name__ == "__main__":
    main()
