"""Train a vision-language model on a pixelrl env with TRL's ``GRPOTrainer``: the env's actions
are the model's tools, its verifiable reward is TRL's reward (:mod:`pixelrl.trl_env`).

    # a tool-calling VLM by name (downloaded by transformers; bf16 on a GPU)
    python scripts/trl_grpo.py pixelrl/Desktop-ClickButton-v0 --model Qwen/Qwen3-VL-2B-Instruct --bf16
    # a tiny model from config, on CPU (it writes no tool calls at first: a smoke run)
    python scripts/trl_grpo.py pixelrl/PointNav-v0 --model tiny --steps 2 --env-kwargs '{"width": 64, "height": 64}'
    # under accelerate / torchrun for several GPUs, as any TRL script
    accelerate launch scripts/trl_grpo.py pixelrl/PointNav-v0 --model Qwen/Qwen3-VL-2B-Instruct --bf16

Seeds ``--first-seed .. --first-seed + --seeds - 1`` are the train rows (one episode start each,
reproducible). Prints TRL's log lines, then steps/s and tokens/s of the run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _json_object(parser, value: str, flag: str) -> dict:
    try:
        out = json.loads(value)
    except ValueError as e:
        parser.error(f"{flag} must be a JSON object: {e}")
    if not isinstance(out, dict):
        parser.error(f"{flag} must be a JSON object, got {value!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("env_id", help="a registered env (pixelrl envs lists them)")
    p.add_argument("--model", default="tiny", help="'tiny' (from config) or a model name/folder")
    p.add_argument("--env-kwargs", default="{}", help="the env's options as JSON")
    p.add_argument(
        "--text-size", default="{}", help="--model tiny: the language model's shape as JSON"
    )
    p.add_argument("--seeds", type=int, default=64, help="train rows (episode starts)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--prompts", type=int, default=2, help="prompts (starts) a step")
    p.add_argument("--samples", type=int, default=4, help="rollouts a prompt (G)")
    p.add_argument("--turns", type=int, default=8, help="tool calls a rollout at most")
    p.add_argument("--max-tokens", type=int, default=1024, help="a rollout's completion tokens")
    p.add_argument("--lr", type=float, default=1e-6)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--output-dir", default="runs/trl-grpo")
    args = p.parse_args(argv)
    env_kwargs, text_size = (_json_object(p, value, flag) for value, flag in
                             ((args.env_kwargs, "--env-kwargs"), (args.text_size, "--text-size")))  # fmt: skip
    for name in ("seeds", "steps", "prompts", "samples", "turns", "max_tokens"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.samples < 2:
        p.error("--samples must be >= 2 (GRPO compares rollouts of one prompt)")

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    from pixelrl.trl_env import ToolError, environment_factory, tiny_tool_model, train_dataset

    try:
        factory = environment_factory(args.env_id, **env_kwargs)
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        rows = train_dataset(args.env_id, seeds, **env_kwargs)
    except (ToolError, ValueError, TypeError) as e:
        p.error(" ".join(str(e).split()))
    if args.model == "tiny":
        try:
            model, processor = tiny_tool_model(args.env_id, text_size=text_size, **env_kwargs)
        except ValueError as e:
            p.error(" ".join(str(e).split()))
    else:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        dtype = torch.bfloat16 if args.bf16 else torch.float32
        model = AutoModelForImageTextToText.from_pretrained(
            args.model, dtype=dtype, trust_remote_code=False
        )
        processor = AutoProcessor.from_pretrained(
            args.model, padding_side="left", trust_remote_code=False
        )
    import torch

    config = GRPOConfig(
        output_dir=args.output_dir, max_steps=args.steps, learning_rate=args.lr,
        per_device_train_batch_size=args.prompts * args.samples, num_generations=args.samples,
        max_completion_length=args.max_tokens, max_tool_calling_iterations=args.turns,
        bf16=args.bf16, use_cpu=not torch.cuda.is_available(), logging_steps=1, report_to=[], save_strategy="no",
    )  # fmt: skip
    trainer = GRPOTrainer(model=model, args=config, train_dataset=rows, processing_class=processor,
                          environment_factory=factory)  # fmt: skip
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    logs = [r for r in trainer.state.log_history if "num_tokens" in r]
    tokens = logs[-1]["num_tokens"] if logs else 0.0
    print(f"{args.steps} steps in {seconds:.1f} s: {args.steps / seconds:.3f} steps/s, "
          f"{tokens / seconds:.0f} tokens/s (prompt and completion)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
